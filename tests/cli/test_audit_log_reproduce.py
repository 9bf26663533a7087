"""Every input and option of ``audit-log`` and ``compare-runs`` lives in its settings (issue 28, Must have 2): the
reproduce command is derived from the stored record alone, so ``runs show ID`` in a fresh process (and the app's run
page) prints the command the run printed, and that command reproduces the run's JSON.

Each command runs in its own ``python -m fairrag_core`` process, as a user runs it: a process that has imported
nothing but what the command itself imports (the store must read its records without help).
"""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fairrag_core import load_collection
from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.audit.store import RunStore
from fairrag_core.data import assets_dir
from fairrag_core.errors import InvalidParameterError
from fairrag_core.options import settings_argv
from fairrag_studio.services.identity import reproduce_command

ROOT = Path(__file__).resolve().parents[2]
TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"
#: What differs between two runs of the same command: where and whether it was stored, and how long it took.
VOLATILE = {"run_id", "stored", "problems", "wall_seconds"}


def cli(*words: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "fairrag_core", *words], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def steady(value):
    """``value`` without what differs between two runs of one command."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def agent_export(path: Path) -> Path:
    """A trace export whose query id and answer sit in the app's own attributes, with two retrieval spans."""
    def kv(key, value):
        return {"key": key, "value": {"stringValue": value}}

    spans = [{"traceId": "a1", "spanId": "r", "startTimeUnixNano": "1772442960000000000",
              "attributes": [kv("app.qid", "rs-q01"), kv("app.answer", "yes")]}]
    for n, doc in enumerate(load_collection("running-shoes").doc_ids[:2]):
        spans.append({"traceId": "a1", "spanId": f"s{n}", "parentSpanId": "r", "startTimeUnixNano": str(n + 1),
                      "attributes": [kv("openinference.span.kind", "RETRIEVER"),
                                     kv("retrieval.documents.0.document.id", doc)]})
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}), encoding="utf-8")
    return path


def provider_map(path: Path) -> Path:
    ids = load_collection("running-shoes").doc_ids
    path.write_text("doc_id,provider,tier\n" + "".join(f"{d},P{i % 4},{'big' if i % 2 else 'small'}\n"
                                                      for i, d in enumerate(ids)), encoding="utf-8")
    return path


CASES = {
    # the trace map and the choice among several retrievals (the export named as the command names it: the run's
    # inputs keep the path as given)
    "trace-map": lambda here: [agent_export(here / "agent.json").name, "--collection", "running-shoes",
                               "--trace-map", "answer=app.answer", "--trace-map", "query_id=app.qid",
                               "--multi-retrieval", "last", "--seed", "0"],
    # providers from the log's metadata (no collection), and the what-if grid and N
    "provider-from+what-if": lambda here: [str(TRACES), "--provider-from", "domain:metadata.url", "--boot", "100",
                                           "--what-if-alphas", "0,2,inf", "--what-if-samples", "20", "--seed", "2"],
    # providers from a CSV, named relative to the working folder
    "provider-map": lambda here: [str(TRACES), "--provider-map", provider_map(here / "providers.csv").name,
                                  "--boot", "100", "--seed", "1"],
}
#: What each case's reproduce command must say.
SAYS = {
    "trace-map": "--collection running-shoes --attribution none --seed 0 --trace-map query_id=app.qid "
                 "--trace-map answer=app.answer --multi-retrieval last",
    "provider-from+what-if": "--attribution logged --boot 100 --seed 2 --provider-from domain:metadata.url "
                             "--what-if-alphas 0,2,inf --what-if-samples 20",
    "provider-map": "--attribution logged --boot 100 --seed 1 --provider-map providers.csv",
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_stored_audit_log_run_reopens_with_its_command_and_the_command_reproduces_it(case, tmp_path, monkeypatch):
    here, store = tmp_path / "here", str(tmp_path / "runs.duckdb")
    here.mkdir()
    first = json.loads(cli("audit-log", *CASES[case](here), "--store", store, "--json", cwd=here))
    command = first["command"]
    assert command.startswith("python -m fairrag_core audit-log ") and command.endswith(SAYS[case])
    assert ("--collection" in command) is (case == "trace-map")  # the providers came from the log otherwise
    shown = json.loads(cli("runs", "show", first["run_id"], "--store", store, "--json", cwd=here))
    assert shown["command"] == command  # reopened from the store: the same command, not a shorter one
    assert f"Reproduce with: {command}\n" in cli("runs", "show", first["run_id"], "--store", store, cwd=here)
    monkeypatch.chdir(here)
    with RunStore(store) as opened:  # reopened in the app: its run page prints the same command
        assert reproduce_command(opened.load(first["run_id"]).record)[0] == command
    again = json.loads(cli(*shlex.split(command)[3:], "--no-store", "--json", cwd=here))
    assert steady(again) == steady(first)
    assert ("what_if" in first) is (case == "provider-from+what-if")


def test_a_stored_comparison_reopens_with_its_inputs(tmp_path):
    """``compare-runs``' inputs are its settings' positional values: the stored record names them."""
    here, store = tmp_path / "here", str(tmp_path / "runs.duckdb")
    here.mkdir()
    log = ROOT / "assets" / "logs" / "running-shoes.jsonl"
    first = json.loads(cli("compare-runs", str(log), str(TRACES), "--collection", "running-shoes", "--n-boot", "100",
                           "--n-permutations", "200", "--seed", "5", "--store", store, "--json", cwd=here))
    command = first["command"]
    assert shlex.split(command)[3:6] == ["compare-runs", str(log), str(TRACES)]
    assert json.loads(cli("runs", "show", first["run_id"], "--store", store, "--json", cwd=here))["command"] == command
    again = json.loads(cli(*shlex.split(command)[3:], "--no-store", "--json", cwd=here))
    assert steady(again) == steady(first)


def test_the_log_audits_settings_hold_the_reading_options_one_way():
    """The trace map in the trace fields' order (as the command prints it), an empty what-if grid as none, and a bad
    map refused when the settings are made, with the fix."""
    config = LogAuditConfig(log="/srv/log.jsonl", trace_map=["answer=app.reply ", "query_id=app.qid"],
                            what_if_alphas=())
    assert config.trace_map == ("query_id=app.qid", "answer=app.reply") and config.what_if_alphas is None
    assert settings_argv(config, skip_groups=("citation",)) == [
        "/srv/log.jsonl", "--trace-map", "query_id=app.qid", "--trace-map", "answer=app.reply"]
    assert LogAuditConfig.from_dict(config.to_dict()) == config
    with pytest.raises(InvalidParameterError, match="--trace-map maps 'answer' twice"):
        LogAuditConfig(trace_map=("answer=a", "answer=b"))
