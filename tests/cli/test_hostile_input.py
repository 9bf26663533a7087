"""Bad values on the command line end in one line that names the fix and exit code 2 — and, under ``--json``, in
one JSON object a script can parse (issue 19, items 3–5)."""

import argparse
import io
import json
from pathlib import Path

import pytest

from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.cli import build_parser, main
from fairrag_core.errors import InvalidParameterError
from fairrag_core.seeds import MAX_SEED, as_generator, check_seed, derive_seed
from fairrag_core.settings import SamplingSettings

MARATHON = ["--collection", "running-shoes", "--query", "best shoes for a first marathon"]


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def _commands_with(option: str) -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(name for name, parser in sub.choices.items()
                  if any(option in action.option_strings for action in parser._actions))


def test_the_seed_range_is_checked_in_one_place():
    assert check_seed(0) == 0 and check_seed(MAX_SEED) == 2**63 - 1
    for bad, words in ((-1, "is negative"), (2**63, "larger than"), (1.5, "whole number"), (True, "whole number")):
        with pytest.raises(InvalidParameterError, match=words):
            check_seed(bad)
    with pytest.raises(InvalidParameterError, match="is negative"):
        as_generator(-1)  # numpy's own ValueError before
    with pytest.raises(InvalidParameterError, match="is negative"):
        derive_seed(-5, 1)
    with pytest.raises(InvalidParameterError, match="is negative"):
        SamplingSettings(seed=-1)
    with pytest.raises(InvalidParameterError, match="is negative"):
        LogAuditConfig(seed=-1)


def test_every_command_that_takes_a_seed_refuses_a_negative_one(capsys):
    commands = _commands_with("--seed")
    assert {"rank", "exposure-sweep", "sweep", "audit-log", "evaluate-run", "compare-runs"} <= set(commands)
    for command in commands:
        for bad in ("-1", "1_0", "٣", str(2**63), "x"):
            code, text = run([command, "--seed", bad])
            err = capsys.readouterr().err
            assert code == 2 and text == "", (command, bad)
            assert "argument --seed:" in err and "Traceback" not in err, (command, bad, err)
            assert "0 to 9223372036854775807" in err or "larger than" in err, (command, bad, err)


def test_whole_numbers_are_ascii_digits_only(capsys):
    for bad in ("1_0", "٣", "0x10", "1e3", ""):
        code, _ = run(["rank", *MARATHON, "-k", bad])
        assert code == 2 and "expected a positive whole number" in capsys.readouterr().err
        code, _ = run(["rank", *MARATHON, "--min-rel", bad])
        assert code == 2 and "expected a whole number" in capsys.readouterr().err
    code, text = run(["rank", *MARATHON, "--seed", "+7", "--samples", "5", "--json"])
    assert code == 0 and json.loads(text)["seed"] == 7


def test_argument_errors_under_json_are_one_json_object(capsys):
    for argv, words in ((["rank", "--query", "x", "--samples", "abc", "--json"], "expected a positive whole number"),
                        (["rank", "--json"], "the following arguments are required: --query"),
                        (["audit-log", "--json", "--seed", "-1", "log.jsonl"], "seed=-1 is negative"),
                        (["evaluate-run", "q.txt", "r.txt", "--json", "--bogus"], "unrecognized arguments: --bogus")):
        code, text = run(argv)
        payload = json.loads(text)
        assert code == 2 and payload["exit_code"] == 2 and payload["error_type"] == "usage"
        assert words in payload["error"], payload
        assert words in capsys.readouterr().err  # the person at the terminal still reads it
    code, text = run(["rank", *MARATHON, "-k", "500", "--json"])  # a domain error after parsing
    payload = json.loads(text)
    assert code == 2 and payload["error_type"] == "InvalidParameterError" and "k=500" in payload["error"]
    code, text = run(["rank", *MARATHON, "-k", "500"])  # without --json, nothing on stdout
    assert code == 2 and text == ""


# -- item 4: no number from nothing ------------------------------------------------------------------
def test_rank_with_no_useful_document_reports_no_ee_r(capsys):
    # --min-rel above every grade: EE-R was 1.0 ("perfect") with n_useful 0
    code, text = run(["rank", *MARATHON, "--seed", "1", "--min-rel", "9", "--samples", "30", "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["n_useful"] == 0 and payload["min_rel"] == 9
    assert payload["ee_r"] is None and payload["ee_r_plug_in"] is None and payload["deterministic_ee_r"] is None
    assert "no candidate is useful (m = 0)" in payload["undefined"]["ee_r"]
    code, text = run(["rank", *MARATHON, "--seed", "1", "--min-rel", "9", "--samples", "30"])
    assert "EE-R (exposure on useful docs):    —   [deterministic —]" in text
    assert "— EE-R: no candidate is useful" in text


def test_rank_with_one_sample_gives_no_interval():
    code, text = run(["rank", *MARATHON, "--seed", "1", "--samples", "1", "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["ee_d"] is None and payload["ee_d_plug_in"] == 1.0  # one ranking: ‖ε‖²/k = 1
    assert payload["ee_r"] is None and payload["ee_r_plug_in"] is not None
    assert "one sampled ranking" in payload["undefined"]["ee_d_interval"]
    code, text = run(["rank", *MARATHON, "--seed", "1", "--samples", "1"])
    assert "EE-D (disparity, lower is fairer): 1.000 (no interval)" in text


def _log(tmp_path, rows):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return str(path)


def test_audit_log_of_one_query_and_no_citations(tmp_path):
    # one query, two served lines, citations logged but empty: EAR 0 is a measurement, EAE-D has nothing to measure
    log = _log(tmp_path, [{"query_id": "rs-q01", "ranking": ["rs-001", "rs-002"], "answer": "x", "citations": []},
                          {"query_id": "rs-q01", "ranking": ["rs-003", "rs-002"], "answer": "y", "citations": []}])
    code, text = run(["audit-log", log, "--no-store", "--seed", "0", "--json"])
    payload = json.loads(text)
    assert code == 0
    query = payload["queries"][0]
    assert query["ear_cited"] == 0.0 and query["eae_d_cited"] is None
    summary = {row["metric"]: row for row in payload["summary"]}
    assert "eae_d_cited" not in summary  # no query has a value: no headline
    # ε = (.5, 1, .5): plug-in ‖ε‖²/k = 1.5/2; shown, the unbiased Σ c(c − 1)/(N(N − 1))/k = (0 + 2 + 0)/2/2
    assert summary["ee_d"]["estimate"] == pytest.approx(0.5) and query["ee_d_plug_in"] == pytest.approx(0.75)
    assert summary["ee_d"]["low"] is None and summary["ee_d"]["high"] is None  # one query: no interval over queries
    assert "one query" in summary["ee_d"]["note"]
    for ledger in payload["ledgers"].values():
        assert all(row["retrieval_share_low"] is None for row in ledger)
    code, text = run(["audit-log", log, "--no-store", "--seed", "0"])
    assert "[—]" in text and "one query: no interval over queries" in text


def test_evaluate_run_json_leaves_expeval_stand_ins_out():
    from pathlib import Path
    data = Path(__file__).resolve().parents[1] / "data" / "expeval"
    code, text = run(["evaluate-run", str(data / "qrels_graded.txt"), str(data / "run_a.txt"), "-u", "rbp",
                      "--seed", "1", "--n-boot", "100", "--json"])
    payload = json.loads(text)
    assert code == 0
    relevance = {q["query_id"]: q["relevance"] for q in payload["queries"]}
    assert [q for q, v in relevance.items() if v is None] == ["q2", "q3", "q5"]  # one relevance level each
    mean = {m["metric"]: m for m in payload["mean"]}
    assert mean["relevance"]["n_queries"] == 2 and mean["disparity"]["n_queries"] == 5
    assert mean["relevance"]["estimate"] == pytest.approx((relevance["q1"] + relevance["q6"]) / 2)
    # the trec_eval-style lines keep expeval's own numbers (parity with the reference tool)
    code, text = run(["evaluate-run", str(data / "qrels_graded.txt"), str(data / "run_a.txt"), "-u", "rbp",
                      "--trec-eval"])
    assert "relevance\tq2\t1.000000" in text


# -- item 7: a failure never throws a finished result away -------------------------------------------
DEMO_LOG = str(Path(__file__).resolve().parents[2] / "assets" / "logs" / "running-shoes.jsonl")


def test_a_store_that_fails_keeps_the_finished_audit(monkeypatch, tmp_path, capsys):
    from fairrag_core.audit.store import RunStore
    from fairrag_core.errors import StoreError

    def full(self, run, label=None, **kwargs):
        raise StoreError(f"the run store {self.path} failed to write: No space left on device")

    monkeypatch.setattr(RunStore, "save", full)
    code, text = run(["audit-log", DEMO_LOG, "--seed", "1", "--store", str(tmp_path / "runs.duckdb"), "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["stored"] is False and payload["run_id"] is None
    assert payload["summary"] and payload["queries"]  # the audit is all there
    assert "not stored" in payload["problems"][0] and "No space left on device" in payload["problems"][0]
    assert "warning: the run was not stored" in capsys.readouterr().err
    code, text = run(["audit-log", DEMO_LOG, "--seed", "1", "--store", str(tmp_path / "runs.duckdb")])
    assert code == 0 and "Headline" in text and "Not kept: the run was not stored" in text


def test_an_unwritable_output_keeps_the_printed_result(tmp_path, capsys):
    target = tmp_path / "no-such-folder" / "table.csv"
    code, text = run(["audit-log", DEMO_LOG, "--seed", "1", "--no-store", "--output", str(target), "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["queries"] and f"{target} was not written" in payload["problems"][0]


@pytest.fixture()
def tiny_filesystem(tmp_path):
    """A 160 KB tmpfs (root only; skipped where mounting is not allowed): a disk that really fills up."""
    import os
    import subprocess

    mount = tmp_path / "fs"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and permission to mount a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_really_full_or_read_only_store(tiny_filesystem):
    import subprocess

    code, text = run(["audit-log", DEMO_LOG, "--seed", "1", "--store", str(tiny_filesystem / "runs.duckdb"),
                      "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["queries"] and payload["stored"] is False
    assert "No space left on device" in payload["problems"][0]
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_filesystem)], check=True)
    code, text = run(["audit-log", DEMO_LOG, "--seed", "1", "--store", str(tiny_filesystem / "other.duckdb"),
                      "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["queries"] and payload["stored"] is False
    assert "Read-only file system" in payload["problems"][0]


# -- item 8: reproduce commands reproduce --------------------------------------------------------------
def _copy_demo(dest):
    import shutil

    source = Path(__file__).resolve().parents[2] / "assets" / "collections" / "running-shoes"
    shutil.copytree(source, dest)
    return dest


def _rerun(command: str):
    import shlex

    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "fairrag_core"]
    return run([*words[3:], "--json"] if "--json" not in words else words[3:])


def test_a_folder_collection_is_named_by_its_path_and_reruns_from_anywhere(tmp_path, monkeypatch):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    elsewhere.mkdir()
    _copy_demo(work / "data" / "qrels_neg")
    monkeypatch.chdir(work)
    code, text = run(["exposure-sweep", "--collection", "data/qrels_neg", "--alphas", "0,2", "--samples", "10",
                      "--seed", "4", "--queries", "rs-q01,rs-q02", "--json"])
    first = json.loads(text)
    assert code == 0 and "--collection data/qrels_neg" in first["command"]  # relative: under the current folder
    assert first["config"]["collection"] == str(work / "data" / "qrels_neg")  # stored absolute
    monkeypatch.chdir(elsewhere)
    from fairrag_core.record import RunRecord

    command = RunRecord.from_dict(first["config"]).command()
    assert f"--collection {work / 'data' / 'qrels_neg'}" in command  # absolute: not under this folder
    code, text = _rerun(command)
    assert code == 0 and json.loads(text)["rows"] == first["rows"]


def test_audit_log_and_rank_commands_name_their_files_by_path(tmp_path, monkeypatch):
    import shutil

    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    elsewhere.mkdir()
    _copy_demo(work / "shoes")
    shutil.copy(DEMO_LOG, work / "served.jsonl")
    monkeypatch.chdir(work)
    code, text = run(["audit-log", "served.jsonl", "--collection", "shoes", "--seed", "2", "--no-store", "--json"])
    first = json.loads(text)
    assert code == 0 and first["command"].startswith("python -m fairrag_core audit-log served.jsonl --collection shoes")
    code, text = run(["rank", "--collection", "shoes", "--query", "best shoes for a first marathon", "--seed", "3",
                      "--samples", "12", "--json"])
    ranked = json.loads(text)
    assert code == 0 and "--collection shoes" in ranked["command"] and "--seed 3" in ranked["command"]
    monkeypatch.chdir(elsewhere)
    from fairrag_core.record import RunRecord

    command = RunRecord.from_dict(first["config"]).command()
    assert f"audit-log {work / 'served.jsonl'} --collection {work / 'shoes'}" in command
    code, text = _rerun(command + " --no-store")
    again = json.loads(text)
    assert code == 0 and again["summary"] == first["summary"] and again["queries"] == first["queries"]
    code, text = _rerun(ranked["command"].replace("--collection shoes", f"--collection {work / 'shoes'}"))
    assert code == 0 and json.loads(text)["rankings"] == ranked["rankings"]


def test_runs_show_prints_the_path(tmp_path, monkeypatch):
    store = tmp_path / "runs.duckdb"
    _copy_demo(tmp_path / "folder_coll")
    monkeypatch.chdir(tmp_path)
    code, text = run(["audit-log", DEMO_LOG, "--collection", "folder_coll", "--seed", "2", "--store", str(store),
                      "--json"])
    run_id = json.loads(text)["run_id"]
    monkeypatch.chdir(Path(DEMO_LOG).parent)
    code, text = run(["runs", "--store", str(store), "show", run_id])
    assert code == 0 and f"--collection {tmp_path / 'folder_coll'}" in text


# -- item 5: in every JSON output, `estimate` is the number the interval is for -----------------------
def _intervals(node, where=""):
    """Every object holding estimate/low/high, and every row with X, X_low, X_high, anywhere in a JSON payload."""
    if isinstance(node, dict):
        if {"estimate", "low", "high"} <= set(node):
            yield where, node["estimate"], node["low"], node["high"]
        for key in node:
            if isinstance(key, str) and f"{key}_low" in node and f"{key}_high" in node:
                yield f"{where}.{key}", node[key], node[f"{key}_low"], node[f"{key}_high"]
        for key, value in node.items():
            yield from _intervals(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _intervals(value, f"{where}[{i}]")


def _assert_inside(payload):
    found = 0
    for where, estimate, low, high in _intervals(payload):
        if low is None or high is None or estimate is None:
            continue
        found += 1
        assert low - 1e-9 <= estimate <= high + 1e-9, (where, estimate, low, high)
    return found


def test_every_json_interval_contains_its_estimate():
    data = Path(__file__).resolve().parents[1] / "data" / "expeval"
    checked = 0
    for alpha in ("0", "0.5", "1", "2", "4", "8", "inf"):  # α 0.5 and 1 put the plug-in outside before
        for seed in ("3", "4"):
            code, text = run(["rank", *MARATHON, "--alpha", alpha, "--samples", "100", "--seed", seed, "--json"])
            payload = json.loads(text)
            assert code == 0 and payload["ee_d"]["method"] == "bias-corrected"
            assert payload["ee_d"]["plug_in"] == pytest.approx(payload["ee_d_plug_in"])
            checked += _assert_inside(payload)
    for argv in (["audit-log", DEMO_LOG, "--seed", "1", "--no-store", "--json"],
                 ["evaluate-run", str(data / "qrels_graded.txt"), str(data / "run_a.txt"), "--ci", "--json",
                  "--seed", "2", "--n-boot", "100"],
                 ["compare-runs", str(data / "qrels_graded.txt"), str(data / "run_a.txt"), str(data / "run_b.txt"),
                  "--seed", "2", "--n-boot", "100", "--json"]):
        code, text = run(argv)
        assert code == 0, argv
        checked += _assert_inside(json.loads(text))
    assert checked > 40
