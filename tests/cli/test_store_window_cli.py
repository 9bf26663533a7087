"""audit-log and compare-runs take a `collect` store's service and window (--service, --since, --until) and
--target-shares; compare-runs finds each system's own findings (the label-free ones too) and names systems by file."""

import json
import shlex

import pytest

from fairrag_core.data.store_window import StoreWindow, load_store
from tests.cli.test_compare import exports, run  # noqa: F401  (a fixture)
from tests.data.test_collector_window import make_store

WINDOW = ["--service", "svc-a", "--since", "2026-11-27T10", "--until", "2026-11-27T12"]
STATED = "retrieval share − stated share"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("collected") / "store"
    make_store(folder)
    return folder


def test_audit_log_audits_a_service_and_window_of_the_store_and_reproduces_it(store):
    expected = load_store(store, StoreWindow("svc-a", "2026-11-27T10", "2026-11-27T12"))
    code, text = run(["audit-log", str(store), *WINDOW, "--provider-from", "domain:metadata.url", "--seed", "1",
                      "--boot", "100", "--no-store"])
    assert code == 0
    assert text.startswith(f"Trace export {store}: {len(expected):,} requests (traces), ")
    assert any(line.startswith("note: ") and "started outside the window (service svc-a, 2026-11-27T10:00:00Z to "
               "2026-11-27T12:00:00Z)" in line for line in text.splitlines())
    command = text.split("Reproduce with: ")[1].strip()
    assert command.endswith("--provider-from domain:metadata.url --service svc-a --since 2026-11-27T10:00:00Z "
                            "--until 2026-11-27T12:00:00Z")
    code, first = run([*shlex.split(command)[3:], "--no-store", "--json"])
    code_again, again = run([*shlex.split(command)[3:], "--no-store", "--json"])
    payload = json.loads(first)
    assert code == code_again == 0 and payload["summary"] == json.loads(again)["summary"]
    assert (payload["config"]["config"]["service"], payload["config"]["config"]["until"]) == (
        "svc-a", "2026-11-27T12:00:00Z")
    log_input = payload["config"]["extra"]["inputs"][0]  # a trace export's rankings are its requests
    assert (log_input["rankings"], log_input["lines"], log_input["format"]) == (len(expected), expected.file_lines,
                                                                                 "otlp")


@pytest.mark.parametrize(("extra", "message"), [
    (["--service", "svc-x"], "no service 'svc-x'; the store holds services svc-a, svc-b from 2026-11-27T10 to "
                             "2026-11-27T12; choose --service and --since/--until among them"),
    (["--since", "2026-12-01"], "no hour of the store is in the window (2026-12-01T00:00:00Z to the end); the store "
                                "holds services svc-a, svc-b from 2026-11-27T10 to 2026-11-27T12"),
    (["--since", "2026-11-27T12", "--until", "2026-11-27T11"], "--since 2026-11-27T12:00:00Z is not before --until"),
])
def test_a_selection_of_nothing_is_one_line_naming_what_the_store_holds(store, capsys, extra, message):
    code, _ = run(["audit-log", str(store), *extra, "--provider-from", "metadata.source", "--no-store"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_window_of_a_file_that_is_no_store_is_refused(exports, capsys):  # noqa: F811
    code, _ = run(["audit-log", str(exports[0]), "--since", "2026-11-27", "--provider-from", "metadata.source",
                   "--no-store"])
    assert code == 2 and "is not one (a folder of <service>/<hour>.jsonl files): drop them" in capsys.readouterr().err


def test_compare_runs_compares_two_services_of_a_window_with_each_systems_findings(store, tmp_path):
    shares = tmp_path / "stated.csv"
    code, text = run(["audit-log", str(store), "--provider-from", "domain:metadata.url", "--no-store", "--json",
                      "--boot", "50"])
    providers = sorted({row["group"] for row in json.loads(text)["ledgers"]["provider"]})
    shares.write_text("provider,share\n" + "".join(f"{p},{1 / len(providers)}\n" for p in providers), encoding="utf-8")
    argv = ["compare-runs", str(store / "svc-a"), str(store / "svc-b"), "--since", "2026-11-27T10", "--until",
            "2026-11-27T12", "--provider-from", "domain:metadata.url", "--seed", "3", "--n-boot", "200",
            "--n-permutations", "500", "--no-store"]
    code, text = run([*argv, "--target-shares", str(shares), "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["config"]["extra"]["systems"] == ["svc-a", "svc-b"]
    stated = [f for f in payload["findings"] if f["metric"] == STATED]
    assert {f["subject"].rsplit(" (", 1)[1] for f in stated} == {"svc-a)", "svc-b)"}
    assert all(f["text"].startswith(("svc-a: ", "svc-b: ")) for f in stated)
    # the label-free findings as audit-log finds them: citations given exposure, for each system
    assert {f["text"].split(":")[0] for f in payload["findings"] if "citations" in f["text"]} >= {"svc-a", "svc-b"}
    assert payload["command"].endswith(f"--since 2026-11-27T10:00:00Z --until 2026-11-27T12:00:00Z --target-shares "
                                       f"{shares}")
    code, without = run([*argv, "--json"])
    assert code == 0 and not [f for f in json.loads(without)["findings"] if f["metric"] == STATED]
    code, plain = run([*argv, "--target-shares", str(shares)])
    assert code == 0 and "\n  svc-a · sha256 " in plain and "\n  svc-b · sha256 " in plain  # named by their folder
    assert "\n  - svc-a: " in plain and "\n  - svc-b: " in plain


def test_stored_runs_are_named_by_id_and_file_and_the_baseline_by_either(exports, tmp_path):  # noqa: F811
    store = str(tmp_path / "runs.duckdb")
    ids = []
    for path in exports:
        code, text = run(["audit-log", str(path), "--provider-from", "metadata.source", "--seed", "1", "--boot", "100",
                          "--store", store, "--multi-retrieval", "first", "--json"])
        ids.append(json.loads(text)["run_id"])
    base = ["compare-runs", f"run:{ids[0]}", str(exports[1]), "--provider-from", "metadata.source",
            "--multi-retrieval", "first", "--seed", "2", "--n-boot", "100", "--n-permutations", "200", "--store",
            store, "--no-store", "--json"]
    code, text = run([*base, "--baseline", str(exports[1])])
    payload = json.loads(text)
    assert code == 0 and payload["config"]["extra"]["systems"] == [f"run:{ids[0]} · A.otlp.jsonl", "B.otlp.jsonl"]
    assert payload["config"]["extra"]["baseline"] == "B.otlp.jsonl"
    code, text = run([*base, "--baseline", f"run:{ids[0]}"])
    assert code == 0 and json.loads(text)["config"]["extra"]["baseline"] == f"run:{ids[0]} · A.otlp.jsonl"
