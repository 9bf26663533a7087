import json
import math

import duckdb
import pandas as pd
import pytest

from fairrag_core import InvalidParameterError, RagSweepConfig, SweepConfig
from fairrag_core.audit.store import RunStore
from fairrag_core.record import RunKind, RunRecord, SweepRun

#: The store's tables before runs had an owner (issue 19): what a store file made by an earlier version holds.
OLD_SCHEMA = (
    "CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, created TIMESTAMP, kind VARCHAR, collection VARCHAR, "
    "label VARCHAR, config JSON, n_rows INTEGER)",
    "CREATE TABLE run_rows (run_id VARCHAR, row_index INTEGER, data JSON)",
    "CREATE TABLE run_details (run_id VARCHAR, row_index INTEGER, data JSON)",
)


def _record(**overrides) -> RunRecord:
    fields = {"kind": RunKind.RAG_SWEEP, "collection": "running-shoes", "retriever": "bm25",
              "config": RagSweepConfig(alphas=(0.0, 2.0), k=5, seed=7), "seed": 7, "generator": "smollm2-135m",
              "attributor": "judge:qwen2.5-1.5b", "query_ids": ("q1", "q2")}
    fields.update(overrides)
    return RunRecord(**fields)


def test_save_list_load_delete(tmp_path):
    table = pd.DataFrame({"query_id": ["q1", "q2"], "alpha": [0.0, float("inf")], "ee_d": [0.1, 1.0]})
    run = SweepRun(record=_record(), table=table, documents=pd.DataFrame())
    with RunStore(tmp_path / "runs.duckdb") as store:
        run_id = store.save(run, label="first")
        listed = store.list()
        assert listed.loc[0, "run_id"] == run_id and listed.loc[0, "rows"] == 2
        assert listed.loc[0, "generator"] == "smollm2-135m" and listed.loc[0, "seed"] == 7
        assert listed.loc[0, "alphas"] == [0.0, 2.0] and listed.loc[0, "kind"] == "rag-sweep"
        loaded = store.load(run_id)
        assert loaded.run_id == run_id and loaded.record == run.record.with_inputs()  # kept with its inputs
        assert [i["role"] for i in loaded.record.extra["inputs"]] == ["collection", "queries", "qrels"]
        assert loaded.record.software == run.record.software and loaded.record.software["package"] == "fairrag-core"
        assert loaded.table["ee_d"].tolist() == [0.1, 1.0] and loaded.table["query_id"].tolist() == ["q1", "q2"]
        assert loaded.documents.empty
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
    audit = SweepRun(record=_record(kind=RunKind.AUDIT), table=table, documents=details)
    with RunStore(tmp_path / "runs.duckdb") as store:
        run_id = store.save(audit)
        back = store.load(run_id)
        assert back.record.kind is RunKind.AUDIT
        assert back.documents["doc_id"].tolist() == ["d1", "d2"]
        assert back.documents["alpha"].tolist() == [float("inf")] * 2
        attributed = back.documents["attributed_exposure"]
        assert pd.isna(attributed[0]) and attributed[1] == 0.5
        assert back.table["alpha"].tolist() == [float("inf")]


def test_runs_saved_by_earlier_versions_still_load(tmp_path):
    """Before typed records the store kept a flat ``DataFrame.attrs`` dict: it is read into a RunRecord."""
    path = tmp_path / "runs.duckdb"
    legacy = {"collection": "running-shoes", "retriever": "bm25", "generator": "smollm2-135m",
              "attributor": "judge:qwen2.5-1.5b", "alphas": [0.0, 2.0], "n_samples": 10, "k": 3, "seed": 2026,
              "candidates": 10, "metric": "rougeL", "labels": "utility", "prompt_order": "sampled", "oracle": True,
              "query_ids": ["rs-q01"], "complete": True, "wall_seconds": 12.5, "generator_calls": 40}
    con = duckdb.connect(str(path))
    for statement in OLD_SCHEMA:  # the tables as that version made them (runs without an owner)
        con.execute(statement)
    con.execute("INSERT INTO runs VALUES ('old', now(), 'rag-sweep', 'running-shoes', '', ?, 1)", [json.dumps(legacy)])
    con.execute("INSERT INTO run_rows VALUES ('old', 0, ?)", [json.dumps({"query_id": "rs-q01", "alpha": 0.0})])
    con.close()
    with RunStore(path) as store:
        run = store.load("old")
    assert run.record.config == RagSweepConfig(alphas=(0.0, 2.0), n_samples=10, k=3, seed=2026, candidates=10,
                                               metric="rougeL")  # as saved (the default is now auto)
    assert run.record.seed == 2026 and run.record.generator_calls == 40 and run.record.query_ids == ("rs-q01",)
    assert "--seed 2026" in run.record.command() and "--candidates 10" in run.record.command()


def _exposure_run(tag: str) -> SweepRun:
    record = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection=tag, retriever="bm25",
                       config=SweepConfig(alphas=(0.0, 2.0), seed=1), seed=1)
    return SweepRun(record=record, table=pd.DataFrame({"query_id": ["q1"], "alpha": [2.0], "ee_d": [0.25]}),
                    documents=pd.DataFrame())


def test_a_store_made_before_owners_gains_the_column_in_place(tmp_path):
    path = tmp_path / "runs.duckdb"
    con = duckdb.connect(str(path))  # the tables and a run as the old version wrote them
    for statement in OLD_SCHEMA:
        con.execute(statement)
    con.execute("INSERT INTO runs VALUES ('oldrun', now(), 'exposure-sweep', 'old', '', ?, 1)",
                [json.dumps(_exposure_run("old").record.to_dict())])
    con.execute("INSERT INTO run_rows VALUES ('oldrun', 0, ?)", [json.dumps({"query_id": "q1", "ee_d": 0.5})])
    con.close()
    old = RunStore(path)
    new = old.save(_exposure_run("new"), owner="a" * 48)  # the first operation adds the column
    con = duckdb.connect(str(path))
    columns = [row[0] for row in con.execute("DESCRIBE runs").fetchall()]
    con.close()
    assert columns == ["run_id", "created", "kind", "collection", "label", "config", "n_rows", "owner"]
    assert old.owner_of("oldrun") is None and old.owner_of(new) == "a" * 48
    assert set(old.list()["run_id"]) == {"oldrun", new} and old.list(owner="a" * 48)["run_id"].tolist() == [new]
    assert old.load("oldrun").table["ee_d"].tolist() == [0.5]
    assert RunStore(path).list(owner="a" * 48)["run_id"].tolist() == [new]  # a second opening: nothing to migrate


def test_record_round_trips_through_json_with_enums_and_infinity():
    record = _record(config=RagSweepConfig(alphas=(0.0, math.inf), usefulness="relevance", prompt_order="retrieval",
                                           oracle=False, query_ids=("q1",)), wall_seconds=3.5)
    text = json.dumps(record.to_dict())
    assert '"inf"' in text and '"relevance"' in text
    back = RunRecord.from_dict(json.loads(text))
    assert back == record and back.config.alphas[1] == math.inf


@pytest.mark.parametrize("record", [
    _record(),
    _record(config=RagSweepConfig(alphas=(1.0, 4.0), n_samples=12, k=3, seed=5, candidates=20, min_rel=2,
                                  usefulness="relevance", prompt_order="retrieval", oracle=False,
                                  metric="f1", query_ids=("rs-q01", "rs-q02"), per_claim=True,
                                  entail_threshold=0.6, control_margin=0.15, min_support=0.7), seed=5,
            prompt_style="grounded"),
    _record(kind=RunKind.EXPOSURE_SWEEP, config=SweepConfig(alphas=(0.0, 8.0, math.inf), n_samples=50, seed=3),
            seed=3, generator=None, attributor=None, retriever="dense:minilm"),
])
def test_reproduce_command_parses_back_to_the_same_settings(record):
    """The command a record prints is accepted by the CLI and rebuilds the record's settings."""
    import shlex

    from fairrag_core.cli import build_parser
    from fairrag_core.cli.common import settings

    words = shlex.split(record.command())
    assert words[:3] == ["python", "-m", "fairrag_core"]
    args = build_parser().parse_args(words[3:])
    config = record.config
    assert args.collection == record.collection and args.seed == record.seed
    assert (f"{args.retriever}:{args.model}" if args.model else args.retriever) == record.retriever
    # every setting is rebuilt from the parsed words (cli.common.settings reads them as the command does)
    assert settings(type(config), args) == config
    if record.answers:
        assert args.generator == record.generator and args.nli == "qwen-judge"
        assert args.prompt_style == (record.prompt_style or "short")


def test_a_result_added_later_is_kept_with_the_run_and_nothing_else_changes(tmp_path):
    table = pd.DataFrame({"query_id": ["q1"], "alpha": [2.0], "ee_d": [0.4]})
    with RunStore(tmp_path / "runs.duckdb") as store:
        run_id = store.save(SweepRun(record=_record(), table=table, documents=pd.DataFrame()), owner="me")
        store.add_extra(run_id, "what_if", {"alphas": [0.0, "inf"], "curve": [{"ee_d": 0.3}]}, owner="me")
        loaded = store.load(run_id)
        assert loaded.record.extra["what_if"] == {"alphas": [0.0, "inf"], "curve": [{"ee_d": 0.3}]}
        assert loaded.record.seed == 7 and loaded.table["ee_d"].tolist() == [0.4]
        with pytest.raises(InvalidParameterError, match="not saved from this browser"):
            store.add_extra(run_id, "what_if", {}, owner="someone else")
        with pytest.raises(InvalidParameterError, match="no run"):
            store.add_extra("nope", "what_if", {})
