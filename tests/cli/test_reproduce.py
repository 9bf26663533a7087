"""Reproduce commands reproduce (issue 20, item 7): every command that stores a run or prints a reproduce command,
and the audits the app makes (uploads, served runs, logs, sweeps saved from the Audit page), is run once; the
command it prints is run from another folder; the numbers are the same.

The data (a folder collection, the demo log, expeval's files) lie outside both working folders, so the printed
commands name them by absolute path; a collection under the working folder is named relative to it and the stored
record names it absolutely from elsewhere (``runs show``). Models are the stand-ins of tests/fakes.py.
"""

import io
import json
import math
import shlex
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core import load_collection
from fairrag_core.audit.log_report import default_ledger_scope, log_ledger, log_summary
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.cli import main
from fairrag_core.models import catalog
from fairrag_core.rag import attribution
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.sweep import RagSweep, RagSweepConfig, Usefulness
from fairrag_core.ranking import SweepConfig, exposure_sweep
from fairrag_core.record import RunKind, RunRecord
from fairrag_core.retrieval import BM25Retriever

ROOT = Path(__file__).resolve().parents[2]
DEMO_LOG = ROOT / "assets" / "logs" / "running-shoes.jsonl"
EXPEVAL = ROOT / "tests" / "data" / "expeval"
#: A citation rule unlike both the paper's and the fitted default, as the sidebar could set it (by field name).
RULE = {"per_claim": True, "entail_threshold": 0.4, "control_margin": None, "skip_degenerate": False,
        "min_support": 0.25}


@pytest.fixture()
def place(tmp_path, monkeypatch):
    """``data`` (a copied collection, the demo log, expeval's files), the folder the run starts in and another."""
    data, here, elsewhere = tmp_path / "data", tmp_path / "here", tmp_path / "elsewhere"
    shutil.copytree(ROOT / "assets" / "collections" / "running-shoes", data / "shoes")
    shutil.copy(DEMO_LOG, data / "served.jsonl")
    for name in ("qrels_graded.txt", "run_a.txt", "run_b.txt"):
        shutil.copy(EXPEVAL / name, data / name)
    here.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.setattr(catalog, "load_language_model", lambda name, device=None: FirstDocumentModel("fake-gen"))
    monkeypatch.setattr(attribution, "load_attributor", lambda name=None, device=None: SubstringAttributor())
    return SimpleNamespace(data=data, here=here, elsewhere=elsewhere, tmp=tmp_path, chdir=monkeypatch.chdir)


def run(argv) -> dict:
    out = io.StringIO()
    code = main([*argv, "--json"] if "--json" not in argv else argv, out=out)
    assert code == 0, argv
    return json.loads(out.getvalue())


def rerun(command: str) -> dict:
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "fairrag_core"], command
    return run(words[3:])


def _numbers(payload: dict, keys) -> dict:
    return {key: payload.get(key) for key in keys}


NUMBERS = {"exposure-sweep": ("rows", "summary"), "sweep": ("rows", "table1", "table2"),
           "audit-log": ("summary", "queries", "ledgers"), "evaluate-run": ("queries", "mean", "intervals", "awrf"),
           "compare-runs": ("metrics",)}


def _same_elsewhere(place, first: dict, command: str) -> dict:
    """Run ``command`` from the other folder and check that it gives ``first``'s numbers."""
    place.chdir(place.elsewhere)
    again = rerun(command)
    keys = NUMBERS[shlex.split(command)[3]]
    assert _numbers(again, keys) == _numbers(first, keys), command
    return again


# -- commands ---------------------------------------------------------------------------------------------------
def test_exposure_sweep_reruns_from_another_folder(place):
    first = run(["exposure-sweep", "--collection", str(place.data / "shoes"), "--alphas", "0,2,inf", "--samples",
                 "12", "-k", "3", "--candidates", "15", "--min-rel", "2", "--queries", "rs-q01,rs-q03", "--seed", "4"])
    command = first["command"]
    assert f"--collection {place.data / 'shoes'}" in command and "--alphas 0,2,inf" in command
    assert "--min-rel 2" in command and "--candidates 15" in command and "--seed 4" in command
    _same_elsewhere(place, first, command)


def test_a_collection_under_the_working_folder_is_relative_there_and_absolute_elsewhere(place):
    shutil.copytree(place.data / "shoes", place.here / "coll")
    first = run(["exposure-sweep", "--collection", "coll", "--alphas", "1,4", "--samples", "8", "--seed", "9"])
    assert "--collection coll " in first["command"]
    place.chdir(place.elsewhere)
    command = RunRecord.from_dict(first["config"]).command()  # what `runs show` prints from here
    assert f"--collection {place.here / 'coll'} " in command
    assert rerun(command)["rows"] == first["rows"]


def test_sweep_with_every_setting_away_from_its_default_reruns(place):
    first = run(["sweep", "--collection", str(place.data / "shoes"), "--queries", "rs-q01,rs-q02", "--alphas", "0,8",
                 "--samples", "6", "-k", "3", "--candidates", "12", "--labels", "relevance", "--metric", "f1",
                 "--prompt-order", "retrieval", "--no-oracle", "--prompt-style", "grounded", "--per-claim",
                 "--entail-threshold", "0.4", "--control-margin", "0.05", "--min-support", "0.25",
                 "--no-skip-degenerate", "--seed", "4"])
    command = first["command"]
    for words in ("--labels relevance", "--metric f1", "--prompt-order retrieval", "--no-oracle", "--per-claim",
                  "--entail-threshold 0.4", "--control-margin 0.05", "--min-support 0.25", "--no-skip-degenerate",
                  "--prompt-style grounded", "--generator fake-gen", "--nli fake-substring", "--candidates 12"):
        assert words in command, words
    again = _same_elsewhere(place, first, command)
    assert again["config"]["config"] == first["config"]["config"]  # every setting, not only the numbers
    # the stored run prints the same command from anywhere (runs show)
    shown = run(["runs", "show", first["run_id"]])
    assert shown["command"] == command and rerun(shown["command"])["rows"] == first["rows"]


@pytest.mark.parametrize("flags", [
    ["--attribution", "logged", "-k", "3", "--min-rel", "2", "--user-model", "gerr", "--patience", "0.7",
     "--utility", "0.3", "--boot", "200", "--level", "0.9", "--seed", "5"],
    ["--attribution", "judge", "--per-claim", "--entail-threshold", "0.3", "--min-support", "0.25",
     "--no-skip-degenerate", "--user-model", "rbp", "--patience", "0.8", "--boot", "150", "--seed", "6"],
    ["--attribution", "both", "--paper-citations", "--boot", "120", "--seed", "7"],
], ids=["logged", "judge", "both-paper-rule"])
def test_audit_log_reruns_from_another_folder(place, flags):
    first = run(["audit-log", str(place.data / "served.jsonl"), "--collection", str(place.data / "shoes"), *flags])
    command = first["command"]
    assert command.startswith(f"python -m fairrag_core audit-log {place.data / 'served.jsonl'} --collection "
                              f"{place.data / 'shoes'}")
    judged = "judge" in flags or "both" in flags
    assert ("--nli fake-substring" in command) is judged and ("--min-support" in command) is judged
    _same_elsewhere(place, first, command)
    shown = run(["runs", "show", first["run_id"]])  # from the other folder, out of the store
    assert shown["command"] == command


def test_evaluate_run_and_compare_runs_rerun_from_another_folder(place):
    qrels, run_a, run_b = (str(place.data / n) for n in ("qrels_graded.txt", "run_a.txt", "run_b.txt"))
    first = run(["evaluate-run", qrels, run_a, "--ci", "-u", "rbp", "-p", "0.8", "-C", "--bounds", "corrected",
                 "--n-boot", "200", "--level", "0.9", "--awrf", "10", "--seed", "3"])
    command = first["command"]
    assert command.startswith(f"python -m fairrag_core evaluate-run {qrels} {run_a} -u rbp -p 0.8 -C --bounds "
                              "corrected")
    _same_elsewhere(place, first, command)
    place.chdir(place.here)
    first = run(["compare-runs", qrels, run_a, run_b, "-u", "gerr", "-r", "0.3", "-B", "--bounds", "corrected",
                 "--n-boot", "300", "--n-permutations", "500", "--seed", "8"])
    assert "--n-permutations 500" in first["command"] and "-B" in shlex.split(first["command"])
    _same_elsewhere(place, first, first["command"])


def test_a_fresh_seed_is_printed(place):
    qrels, run_a = str(place.data / "qrels_graded.txt"), str(place.data / "run_a.txt")
    first = run(["evaluate-run", qrels, run_a, "--ci"])  # no --seed: one is drawn and printed
    assert f"--seed {first['seed']}" in first["command"]
    _same_elsewhere(place, first, first["command"])


def test_records_of_earlier_versions_print_commands_that_parse_back(place):
    """A record stored before the citation rule and prompt styles were settings (its config lacks them) prints
    the rule it ran with (the paper's) and the original short prompt."""
    old = {"kind": "rag-sweep", "collection": "running-shoes", "retriever": "bm25", "config_type": "RagSweepConfig",
           "config": {"alphas": [0.0, "inf"], "n_samples": 10, "k": 3, "seed": 2, "candidates": None, "min_rel": 1,
                      "query_ids": ["rs-q01"], "metric": "rougeL", "usefulness": "relevance"},
           "seed": 2, "generator": "fake-gen", "attributor": "judge:qwen2.5-1.5b"}
    record = RunRecord.from_dict(old)
    command = record.command()
    assert ("--prompt-style short --no-per-claim --entail-threshold none --control-margin none "
            "--no-skip-degenerate --min-support none") in command and "--alphas 0,inf" in command
    from fairrag_core.cli import build_parser
    from fairrag_core.cli.common import settings

    assert settings(RagSweepConfig, build_parser().parse_args(shlex.split(command)[3:])) == record.config


# -- audits the app makes -------------------------------------------------------------------------------------------
def _log_numbers(run, collection) -> dict:
    """What the audit-log command prints for ``run`` (its JSON ``summary``, ``queries`` and ``ledgers``)."""
    def records(frame):
        return json.loads(frame.to_json(orient="records", default_handler=str))

    labelled_only = default_ledger_scope(run)
    return {"summary": records(log_summary(run)), "queries": records(run.table),
            "ledgers": {by: records(log_ledger(run, collection, by=by, labelled_only=labelled_only))
                        for by in ["provider", *collection.categories()]}}


def _app_log_audit(path, collection_source: str, **config):
    """The Audit page's served tab (fairrag_studio/panels/served.py): read the file as the app does, build the
    LogAuditConfig from the widgets and the sidebar's citation rule, audit."""
    from fairrag_studio.views.served import read_served

    collection = load_collection(collection_source)
    log, _ = read_served(path, collection)
    judge = config.get("attribution") in ("judge", "both")
    settings = LogAuditConfig(log=str(path), **{**RULE, **config})
    run = audit_rag_log(log, collection, settings, attributor=SubstringAttributor() if judge else None,
                        collection_source=collection_source)
    return run, collection


def _served_run_file(path: Path) -> bytes:
    """The demo log's rankings as a served run (expeval's ``qid sample docno rank score run_id``)."""
    lines, samples = [], {}
    for entry in map(json.loads, DEMO_LOG.read_text(encoding="utf-8").splitlines()):
        sample = samples[entry["query_id"]] = samples.get(entry["query_id"], 0) + 1
        lines += [f"{entry['query_id']} s{sample:03d} {doc} {rank} {10 - rank} demo"
                  for rank, doc in enumerate(entry["ranking"], 1)]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("source", ["demo log", "uploaded log, judged", "uploaded run file"])
def test_the_apps_audits_of_served_logs_and_runs_rerun(place, source):
    from fairrag_studio.views.served import DEMO_LOG as APP_DEMO_LOG
    from fairrag_studio.views.served import save_served_upload

    uploads = place.tmp / "uploads"
    if source == "demo log":
        run_, collection = _app_log_audit(APP_DEMO_LOG, "running-shoes", k=4, user_model="gerr", patience=0.6,
                                          seed=11)
    elif source == "uploaded log, judged":
        path = save_served_upload("my log (1).jsonl", DEMO_LOG.read_bytes(), uploads)
        run_, collection = _app_log_audit(path, str(place.data / "shoes"), attribution="judge", seed=12)
    else:
        path = save_served_upload("served.run", _served_run_file(place.tmp / "served.run"), uploads)
        run_, collection = _app_log_audit(path, "running-shoes", k=3, seed=13)
    command = run_.record.command()
    if source == "uploaded log, judged":  # the sidebar's rule, printed field by field
        assert "--per-claim" in command and "--min-support 0.25" in command and "--no-skip-degenerate" in command
    place.chdir(place.elsewhere)
    again = rerun(command)
    assert _numbers(again, NUMBERS["audit-log"]) == _log_numbers(run_, collection)


@pytest.mark.parametrize("answers", [False, True], ids=["exposure", "with answers"])
def test_the_apps_batch_audits_rerun(place, answers):
    """The Audit page's simulated audits (fairrag_studio/panels/sweeps.py): planned and run as the app does, saved as
    kind ``audit``; the command they print reruns from another folder with the same table."""
    collection = load_collection(str(place.data / "shoes"))
    retriever = BM25Retriever(collection.texts)
    if answers:
        config = RagSweepConfig(alphas=(0.0, 4.0), n_samples=6, k=3, seed=21, candidates=15,
                                usefulness=Usefulness.RELEVANCE, query_ids=("rs-q01", "rs-q04"), **RULE)
        sweep = RagSweep(collection, retriever, Generator(FirstDocumentModel("fake-gen"), style="grounded"),
                         SubstringAttributor(), config)
        result = sweep.collect([sweep.run(task) for task in sweep.tasks])
    else:
        config = SweepConfig(alphas=(0.0, 2.0, math.inf), n_samples=10, k=4, seed=22, candidates=20,
                             query_ids=("rs-q01", "rs-q02"))
        result = exposure_sweep(collection, retriever, config)
    audit = result.as_kind(RunKind.AUDIT)
    place.chdir(place.elsewhere)
    again = rerun(audit.record.command())
    assert again["rows"] == json.loads(audit.table.to_json(orient="records"))
