"""The Python API gives each audit command's headline: the CLI's ``--json`` (run in-process) against the API's call on
the same inputs, number for number (issue 28: ``summarise_run(evaluate_run(...))`` printed the plug-in mean where
``evaluate-run`` printed the bias-corrected one)."""

import io
import json
from pathlib import Path

import pytest

import fairrag_core as fr
from fairrag_core.audit.compare import ComparisonConfig, System
from fairrag_core.audit.comparison_findings import with_findings
from fairrag_core.cli import main
from fairrag_core.cli.common import records
from fairrag_core.metrics.expeval import ExposureSettings
from fairrag_core.seeds import derive_seed

ROOT = Path(__file__).resolve().parents[2]
EXPEVAL = ROOT / "tests" / "data" / "expeval"
QRELS, RUN_A, RUN_B = (str(EXPEVAL / n) for n in ("qrels_graded.txt", "run_a.txt", "run_b.txt"))
LOG = str(ROOT / "assets" / "logs" / "running-shoes.jsonl")


def cli_json(argv: list[str]) -> dict:
    out = io.StringIO()
    assert main([*argv, "--json"], out=out) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def shoes_run(tmp_path_factory) -> str:
    """The demo deployment's log as a served run (expeval's format): each logged line one sample of its query."""
    lines, samples = [], {}
    for raw in Path(LOG).read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        sample = samples[entry["query_id"]] = samples.get(entry["query_id"], 0) + 1
        lines += [f"{entry['query_id']} {sample} {doc} {rank} {10 - rank} shoes-bot"
                  for rank, doc in enumerate(entry["ranking"], start=1)]
    path = tmp_path_factory.mktemp("served") / "shoes.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def reversed_log(tmp_path_factory) -> str:
    """The same deployment serving each ranking reversed: a second system that differs from the first."""
    rows = [json.loads(raw) for raw in Path(LOG).read_text(encoding="utf-8").splitlines()]
    path = tmp_path_factory.mktemp("served") / "reversed.jsonl"
    path.write_text("".join(json.dumps({**row, "ranking": row["ranking"][::-1]}) + "\n" for row in rows),
                    encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("qrels", "run", "flags", "settings"), [
    (QRELS, RUN_A, [], ExposureSettings()),
    (QRELS, RUN_B, ["-u", "gerr", "-C", "--n-boot", "300", "--level", "0.9"], ExposureSettings(user_model="gerr",
                                                                                              complete=True)),
    ("running-shoes", "shoes_run", ["-k", "3"], ExposureSettings(k=3)),
])
def test_evaluate_run_headline_is_evaluate_served(qrels, run, flags, settings, request):
    run = request.getfixturevalue(run) if run == "shoes_run" else run
    payload = cli_json(["evaluate-run", qrels, run, "--seed", "3", *flags])
    boot = {"n_boot": 300, "level": 0.9} if "--n-boot" in flags else {}
    result = fr.evaluate_served(qrels=qrels, run=run, settings=settings, seed=3, **boot)
    assert records(result.mean.reset_index()) == payload["mean"]  # the headline, to the digits JSON prints
    assert records(result.queries.reset_index()) == payload["queries"]
    assert records(result.intervals.reset_index()) == payload["intervals"]
    assert result.skipped_queries == payload["skipped_queries"]
    assert result.settings.to_dict() == payload["settings"] and result.seed == payload["seed"]
    # the plug-in mean (summarise_run over evaluate_run's table) is another number: it is not the headline
    plug_in = fr.summarise_run(fr.evaluate_run(qrels=qrels, run=run, settings=settings), seed=3)
    headline = {row["metric"]: row["estimate"] for row in payload["mean"]}
    assert plug_in.loc["disparity", "estimate"] > headline["disparity"] + 1e-4


def test_compare_runs_expeval_mode_is_compare_runs():
    payload = cli_json(["compare-runs", QRELS, RUN_A, RUN_B, "--seed", "2", "-u", "rbp", "--n-permutations", "500"])
    result = fr.compare_runs(qrels=QRELS, run_a=RUN_A, run_b=RUN_B, settings=ExposureSettings(user_model="rbp"),
                             seed=2, n_permutations=500)
    assert records(result.reset_index()) == payload["metrics"]
    assert payload["metrics"][0]["difference"] != 0  # two different systems


def test_audit_log_headline_is_audit_served_and_log_summary():
    payload = cli_json(["audit-log", LOG, "--collection", "running-shoes", "--seed", "1", "--no-store"])
    shoes = fr.load_collection("running-shoes")
    run = fr.audit_served(fr.load_served(LOG, collection=shoes), shoes, fr.LogAuditConfig(seed=1))
    assert records(fr.log_summary(run)) == payload["summary"]
    assert records(run.table) == payload["queries"]
    assert {row["metric"] for row in payload["summary"]} >= {"ee_d", "ee_r", "ear_cited"}


def test_compare_runs_with_a_collection_is_compare_systems(reversed_log):
    payload = cli_json(["compare-runs", LOG, reversed_log, "--collection", "running-shoes", "-k", "3", "--seed", "5",
                        "--no-store"])
    shoes = fr.load_collection("running-shoes")
    systems = [System(Path(path).name, fr.audit_served(fr.load_served(path, collection=shoes), shoes,
                                                       fr.LogAuditConfig(k=3, seed=derive_seed(5, i))))
               for i, path in enumerate((LOG, reversed_log))]  # each file audited with its own seed, as the CLI does
    # with each system's own findings (audit-log's), as compare-runs adds them
    result = with_findings(fr.compare_systems(systems, shoes, ComparisonConfig(k=3, seed=5)), systems, shoes)
    assert records(result.table) == payload["metrics"]
    assert records(result.documents) == payload["shares"]
    assert [f.to_dict() for f in result.findings] == payload["findings"]
    ee_d = next(row for row in payload["metrics"] if row["metric"] == "ee_d")
    assert ee_d["mean_system"] < ee_d["mean_baseline"] - 0.1  # the reversed top 3 spread exposure more


def test_rank_and_exposure_sweep_are_run_ranking_and_exposure_sweep_with_the_same_seed():
    """Issue 30: the library takes ``seed`` where the CLI takes --seed, and gives the CLI's headline estimator (EE-D
    bias-corrected inside its interval, the plug-in beside it)."""
    payload = cli_json(["rank", "--collection", "running-shoes", "--query", "best shoes for a first marathon",
                        "--alpha", "2", "--samples", "40", "--seed", "8"])
    shoes = fr.load_collection("running-shoes")
    bm25 = fr.BM25Retriever(shoes.texts)
    ranked = fr.run_ranking(shoes, bm25, "best shoes for a first marathon", fr.RankingConfig(alpha=2, n_samples=40,
                                                                                             seed=8))
    assert payload["ee_d"] == ranked.summary.ee_d.to_dict() and payload["ee_d_plug_in"] == ranked.summary.ee_d_plug_in
    swept = cli_json(["exposure-sweep", "--collection", "running-shoes", "--alphas", "0,2", "--samples", "10",
                      "--seed", "8", "--no-store"])
    run = fr.exposure_sweep(shoes, bm25, fr.SweepConfig(alphas=(0.0, 2.0), n_samples=10, seed=8))
    assert records(run.table) == swept["rows"] and records(fr.summarise_sweep(run.table)) == swept["summary"]
