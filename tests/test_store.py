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
