import json
import math

import pandas as pd
import pytest

from fairrag_core import InvalidParameterError, RagSweepConfig, SweepConfig
from fairrag_core.audit.store import RunStore
from fairrag_core.record import RunKind, RunRecord, SweepRun


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
        assert loaded.run_id == run_id and loaded.record == run.record
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
    import duckdb

    path = tmp_path / "runs.duckdb"
    RunStore(path).list()  # creates the file and its tables
    legacy = {"collection": "running-shoes", "retriever": "bm25", "generator": "smollm2-135m",
              "attributor": "judge:qwen2.5-1.5b", "alphas": [0.0, 2.0], "n_samples": 10, "k": 3, "seed": 2026,
              "candidates": 10, "metric": "rougeL", "labels": "utility", "prompt_order": "sampled", "oracle": True,
              "query_ids": ["rs-q01"], "complete": True, "wall_seconds": 12.5, "generator_calls": 40}
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO runs VALUES ('old', now(), 'rag-sweep', 'running-shoes', '', ?, 1)", [json.dumps(legacy)])
    con.execute("INSERT INTO run_rows VALUES ('old', 0, ?)", [json.dumps({"query_id": "rs-q01", "alpha": 0.0})])
    con.close()
    with RunStore(path) as store:
        run = store.load("old")
    assert run.record.config == RagSweepConfig(alphas=(0.0, 2.0), n_samples=10, k=3, seed=2026, candidates=10)
    assert run.record.seed == 2026 and run.record.generator_calls == 40 and run.record.query_ids == ("rs-q01",)
    assert "--seed 2026" in run.record.command() and "--candidates 10" in run.record.command()


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

    words = shlex.split(record.command())
    assert words[:3] == ["python", "-m", "fairrag_core"]
    args = build_parser().parse_args(words[3:])
    config = record.config
    assert args.collection == record.collection and args.seed == record.seed
    assert args.alphas == config.alphas and args.samples == config.n_samples and args.k == config.k
    assert args.candidates == config.candidates and args.min_rel == config.min_rel
    assert (tuple(args.queries.split(",")) if args.queries else ()) == config.query_ids
    assert (f"{args.retriever}:{args.model}" if args.model else args.retriever) == record.retriever
    if record.answers:
        assert args.generator == record.generator and args.nli == "qwen-judge"
        assert args.prompt_style == (record.prompt_style or "short")
        assert (args.per_claim, args.entail_threshold, args.control_margin, args.skip_degenerate,
                args.min_support) == (config.per_claim, config.entail_threshold, config.control_margin,
                                      config.skip_degenerate, config.min_support)
        assert args.labels == config.usefulness.value and args.prompt_order == config.prompt_order.value
        assert args.metric == config.metric.value and args.no_oracle == (not config.oracle)
