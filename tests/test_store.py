import pandas as pd
import pytest

from fairrag_core import InvalidParameterError
from fairrag_core.store import RunStore


def test_save_list_load_delete(tmp_path):
    table = pd.DataFrame({"query_id": ["q1", "q2"], "alpha": [0.0, float("inf")], "ee_d": [0.1, 1.0]})
    table.attrs.update(collection="running-shoes", generator="smollm2-135m", alphas=[0.0, 2.0], seed=7, k=5)
    with RunStore(tmp_path / "runs.duckdb") as store:
        run_id = store.save(table, kind="rag-sweep", label="first")
        listed = store.list()
        assert listed.loc[0, "run_id"] == run_id and listed.loc[0, "rows"] == 2
        assert listed.loc[0, "generator"] == "smollm2-135m" and listed.loc[0, "seed"] == 7
        loaded = store.load(run_id)
        assert loaded.attrs["seed"] == 7 and loaded.attrs["run_id"] == run_id
        assert loaded["ee_d"].tolist() == [0.1, 1.0] and loaded["query_id"].tolist() == ["q1", "q2"]
        store.delete(run_id)
        assert store.list().empty
        with pytest.raises(InvalidParameterError, match="no run"):
            store.load(run_id)
    with RunStore(tmp_path / "runs.duckdb") as again:  # the file persists across connections
        assert again.list().empty


def test_details_round_trip_and_infinite_alpha(tmp_path):
    table = pd.DataFrame({"query_id": ["q1"], "alpha": [float("inf")], "ee_d": [1.0]})
    details = pd.DataFrame({"query_id": ["q1", "q1"], "alpha": [float("inf")] * 2, "doc_id": ["d1", "d2"],
                            "exposure": [1.0, 0.0], "attributed_exposure": [float("nan"), 0.5]})
    with RunStore(tmp_path / "runs.duckdb") as store:
        plain = store.save(table, kind="audit")
        with_details = store.save(table, kind="audit", details=details)
        assert store.load_details(plain) is None
        back = store.load_details(with_details)
        assert back["doc_id"].tolist() == ["d1", "d2"] and back["alpha"].tolist() == [float("inf")] * 2
        assert pd.isna(back.loc[0, "attributed_exposure"]) and back.loc[1, "attributed_exposure"] == 0.5
        assert store.load(with_details)["alpha"].tolist() == [float("inf")]
        store.delete(with_details)
        with pytest.raises(InvalidParameterError, match="no run"):
            store.load_details(with_details)
