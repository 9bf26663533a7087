"""``check``, the fairness gate: exit codes (pass, fail, warnings, --strict, a bad policy, a bad input), JUnit XML
parsed back, the Markdown summary (and $GITHUB_STEP_SUMMARY), on the demo log, its trace export, a collected window,
and stored runs read in a fresh process."""

import io
import json
import os
import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fairrag_core.cli import main
from fairrag_core.data.traces import NO_RELEVANCE_LABELS
from tests.data.test_collector_window import make_store

ROOT = Path(__file__).resolve().parents[2]
DEMO_LOG = ROOT / "assets" / "logs" / "running-shoes.jsonl"
TRACES = ROOT / "assets" / "logs" / "running-shoes.otlp.jsonl"
FAST = ["--boot", "200"]  # the gate's seed is 0 by default: every verdict below is the same on every run

UNDER_CITED = '[[rule]]\nname = "no provider under-cited beyond noise"\nfinding = "under-cited"\nby = "provider"\n'
EE_D = '[[rule]]\nmetric = "ee_d"\nmax = {max}\nseverity = "{severity}"\n'
EE_R = '[[rule]]\nmetric = "ee_r"\nmin = 0.5\nbound = "low"\n'


def run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


@pytest.fixture()
def policy(tmp_path):
    def write(*rules: str) -> str:
        path = tmp_path / "policy.toml"
        path.write_text("\n".join(rules), encoding="utf-8")
        return str(path)
    return write


@pytest.fixture(scope="module")
def unfair_log(tmp_path_factory, shoes) -> Path:
    """40 served answers of 5 random documents each, citing the first two shown that are not Pebblepath's: Pebblepath
    is shown in 11.5 % of the slots and never cited."""
    providers = dict(zip(shoes.doc_ids, shoes.providers))
    rng = random.Random(0)
    rows = []
    for q in range(40):
        ranking = rng.sample(shoes.doc_ids, 5)
        rows.append({"query_id": f"q{q:02d}", "ranking": ranking, "answer": "a",
                     "citations": [d for d in ranking if providers[d] != "Pebblepath"][:2]})
    path = tmp_path_factory.mktemp("unfair") / "unfair.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _demo(policy_path: str, *extra: str):
    return run(["check", str(DEMO_LOG), "--collection", "running-shoes", "--policy", policy_path, *FAST, *extra])


def test_a_policy_that_holds_passes_with_code_0_and_every_junit_testcase_green(policy, tmp_path):
    junit = tmp_path / "gate.xml"
    code, text = _demo(policy(UNDER_CITED, EE_D.format(max=0.7, severity="fail"), EE_R), "--junit", str(junit))
    assert code == 0
    assert text.splitlines()[0] == (f"Fairness check of RAG log {DEMO_LOG} (200 lines, 20 queries) against "
                                    f"{tmp_path / 'policy.toml'}: passed (0 failed, 0 warned, 0 skipped, 3 rules)")
    assert "  [ok] ee_d ≤ 0.7: EE-D 0.663 [" in text
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "0", "0")
    assert [list(case) for case in suite.findall("testcase")] == [[], [], []]


def test_a_broken_fail_rule_exits_1_with_its_numbers_in_junit(policy, tmp_path):
    junit = tmp_path / "gate.xml"
    code, text = _demo(policy(EE_D.format(max=0.5, severity="fail")), "--junit", str(junit))
    assert code == 1 and "failed (1 failed, 0 warned, 0 skipped, 1 rules)" in text
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure.get("message").startswith("EE-D 0.663 [") and failure.get("message").endswith(
        "0.663 is above the maximum 0.5")
    assert failure.text.startswith("ee_d (estimate): 0.66") and failure.text.endswith("; max: 0.5")


def test_warnings_pass_with_code_0_and_fail_with_code_3_under_strict(policy, tmp_path, monkeypatch):
    path = policy(EE_D.format(max=0.5, severity="warn"))
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    code, text = _demo(path, "--summary", str(tmp_path / "summary.md"))
    assert code == 0 and "passed with warnings (0 failed, 1 warned" in text
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### ✅ Fairness check passed with warnings\n\nRAG log ")
    assert "| ee_d ≤ 0.5 | warn | WARN | EE-D 0.663 [" in summary
    code, text = _demo(path, "--strict", "--junit", str(tmp_path / "strict.xml"))
    assert code == 3 and "failed on warnings (--strict)" in text
    assert ET.parse(tmp_path / "strict.xml").getroot().get("failures") == "1"
    # the job's summary keeps what earlier steps wrote and gets one summary per check
    written = step.read_text(encoding="utf-8")
    assert written.startswith("earlier step\n### ✅ Fairness check passed with warnings")
    assert written.count("### ") == 2 and "### ❌ Fairness check failed on warnings (--strict)" in written


def test_an_under_cited_provider_fails_the_gate_with_the_findings_sentence(policy, unfair_log, tmp_path):
    code, text = run(["check", str(unfair_log), "--collection", "running-shoes", "--policy", policy(UNDER_CITED),
                      *FAST, "--junit", str(tmp_path / "gate.xml"), "--json"])
    assert code == 1
    verdict = json.loads(text)
    assert (verdict["result"], verdict["exit_code"], verdict["failed"]) == ("failed", 1, 1)
    (rule,) = verdict["rules"]
    assert rule["status"] == "broken" and rule["message"].startswith(
        "Pebblepath is under-cited for how often it is shown: 0 % (not once) of citations vs a retrieval share of "
        "11.5 %")
    assert rule["findings"][0]["subject"] == "Pebblepath" and rule["findings"][0]["p"] < 0.001
    case = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite/testcase")
    assert case.get("name") == "no provider under-cited beyond noise"
    assert case.find("failure").get("message") == rule["message"]
    assert case.find("failure").text.startswith("Pebblepath: ") and ", severity serious" in case.find("failure").text


def test_the_default_policy_fails_the_unfair_log_and_passes_the_demo_log(unfair_log):
    code, text = run(["check", str(unfair_log), "--collection", "running-shoes", *FAST])
    assert code == 1 and "against the default policy: failed" in text
    assert "[FAIL] no provider under-cited beyond noise: " in text
    code, text = run(["check", str(DEMO_LOG), "--collection", "running-shoes", *FAST])
    assert code == 0 and "against the default policy: passed (0 failed, 0 warned, 0 skipped, 2 rules)" in text


def test_a_bad_policy_exits_2_with_one_line_naming_the_line_and_key(policy, capsys, tmp_path):
    path = policy('[[rule]]\nmetric = "ee_d"\nmaximum = 0.5\n')
    code, text = _demo(path, "--junit", str(tmp_path / "gate.xml"))
    err = capsys.readouterr().err
    assert code == 2 and text == "" and not (tmp_path / "gate.xml").exists()
    assert err == (f"error: {path}, line 3: rule 1: unknown key 'maximum'; a rule takes name, severity, finding, "
                   "provider, by, at_least, metric, max, min, bound (docs/check.md)\n")
    code, text = _demo(path, "--json")
    assert code == 2 and json.loads(text)["error_type"] == "DataFormatError"


def test_a_bad_input_exits_2_naming_the_fix(policy, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q"}\n', encoding="utf-8")
    assert run(["check", str(bad), "--collection", "running-shoes"])[0] == 2
    assert 'line 1: missing field "ranking"' in capsys.readouterr().err
    assert run(["check", str(DEMO_LOG), "--collection", "running-shoes", "--junit", str(tmp_path / "no" / "x.xml"),
                *FAST])[0] == 2
    assert "cannot write " in capsys.readouterr().err
    assert run(["check", str(DEMO_LOG), "--level", "95"])[0] == 2  # argparse: a usage error, the CLI's code
    assert run(["check", "run:nope", "--store", str(tmp_path / "runs.duckdb")])[0] == 2
    assert "no run 'nope'" in capsys.readouterr().err


def test_a_trace_export_without_a_collection_skips_ee_r_with_the_reason(policy, tmp_path):
    code, text = run(["check", str(TRACES), "--provider-from", "metadata.source", "--policy",
                      policy(EE_R, EE_D.format(max=0.7, severity="fail")), *FAST, "--junit", str(tmp_path / "g.xml")])
    assert code == 0
    assert text.splitlines()[0].startswith("note: 2 of 202 traces left out")
    assert f"Fairness check of trace export {TRACES} (200 requests (traces), 20 queries)" in text
    assert f"  [skipped] ee_r (interval's low end) ≥ 0.5: ee_r has no value: {NO_RELEVANCE_LABELS}" in text
    skipped = ET.parse(tmp_path / "g.xml").getroot().find("testsuite/testcase/skipped")
    assert skipped.get("message") == f"ee_r has no value: {NO_RELEVANCE_LABELS}"


def test_a_collected_window_is_checked_as_audit_log_reads_it(policy, tmp_path):
    store = tmp_path / "store"
    make_store(store)
    window = ["--service", "svc-a", "--since", "2026-11-27T10", "--until", "2026-11-27T12"]
    code, text = run(["check", str(store), *window, "--provider-from", "domain:metadata.url", "--policy",
                      policy(EE_D.format(max=0.01, severity="warn")), *FAST, "--json"])
    verdict = json.loads(text)
    assert code == 0 and verdict["subject"].startswith(f"trace export {store} (")
    assert any("started outside the window (service svc-a" in note for note in verdict["notes"])
    assert verdict["rules"][0]["status"] == "broken" and verdict["result"] == "passed with warnings"


def _fresh(*args: str) -> subprocess.CompletedProcess:
    """A new interpreter: nothing of the package is imported before the command runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, "-m", "fairrag_core", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


def test_a_stored_run_is_checked_in_a_fresh_process_as_it_was_audited(policy, tmp_path):
    store = str(tmp_path / "runs.duckdb")
    rules = policy(UNDER_CITED, EE_D.format(max=0.5, severity="warn"), EE_R)
    code, stored = run(["audit-log", str(DEMO_LOG), "--collection", "running-shoes", "--seed", "0", *FAST,
                        "--store", store, "--json"])
    assert code == 0
    run_id = json.loads(stored)["run_id"]
    done = _fresh("check", f"run:{run_id}", "--store", store, "--policy", rules, "--json")
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["subject"] == f"stored run run:{run_id} (audit of running-shoes.jsonl, 20 queries)"
    # the same verdict, word for word, as checking the log itself with the audit's seed
    code, direct = run(["check", str(DEMO_LOG), "--collection", "running-shoes", "--policy", rules, *FAST, "--json"])
    assert code == 0 and [r["message"] for r in verdict["rules"]] == [r["message"] for r in json.loads(direct)["rules"]]
    assert [r["status"] for r in verdict["rules"]] == ["holds", "broken", "holds"]
    done = _fresh("check", f"run:{run_id}", "--store", store, "--policy", rules, "--strict")
    assert done.returncode == 3 and "[WARN] ee_d ≤ 0.5: EE-D 0.663 [" in done.stdout


def test_a_stored_comparison_is_checked_on_its_findings(policy, tmp_path):
    store = str(tmp_path / "runs.duckdb")
    code, text = run(["compare-runs", str(DEMO_LOG), str(TRACES), "--collection", "running-shoes", "--seed", "2",
                      "--n-boot", "50", "--n-permutations", "50", "--store", store, "--json"])
    assert code == 0
    run_id = json.loads(text)["run_id"]
    rules = policy('[[rule]]\nfinding = "less fair"\n', '[[rule]]\nfinding = "no difference"\nat_least = "info"\n'
                   'severity = "warn"\n', EE_D.format(max=0.5, severity="fail"))
    done = _fresh("check", f"run:{run_id}", "--store", store, "--policy", rules, "--json")
    verdict = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert verdict["subject"].startswith(f"stored comparison run:{run_id} (")
    assert [r["status"] for r in verdict["rules"]] == ["holds", "broken", "skipped"]
    assert verdict["rules"][2]["message"].startswith("ee_d has no value")


def test_the_docs_example_is_what_the_command_prints(tmp_path):
    docs = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    policy_text = re.findall(r"```toml\n(.*?)```", docs, re.S)[1]
    shown = re.search(r"On the demo log it passes:\n\n```text\n\$ (python -m fairrag_core check .*?)\n(.*?)```",
                      docs, re.S)
    (tmp_path / "fairness.toml").write_text(policy_text, encoding="utf-8")
    argv = shown.group(1).split()[3:]
    argv[argv.index("assets/logs/running-shoes.jsonl")] = str(DEMO_LOG)
    argv[argv.index("fairness.toml")] = str(tmp_path / "fairness.toml")
    code, text = run(argv)
    expected = shown.group(2).replace("assets/logs/running-shoes.jsonl", str(DEMO_LOG)).replace(
        "against fairness.toml", f"against {tmp_path / 'fairness.toml'}")
    assert code == 0 and text == expected


def test_a_stored_run_refuses_the_reading_options_and_an_unwritable_step_summary_only_warns(policy, tmp_path,
                                                                                             capsys, monkeypatch):
    assert run(["check", "run:abc", "--collection", "running-shoes", "--service", "svc-a"])[0] == 2
    assert capsys.readouterr().err == ("error: run:abc is checked as it was audited, with its own collection and "
                                       "reading; drop --collection, --service (or check the log itself with them)\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "summary.md"))
    code, text = _demo(policy(EE_D.format(max=0.5, severity="fail")))
    assert code == 1 and "[FAIL] ee_d ≤ 0.5" in text
    assert capsys.readouterr().err.startswith(f"warning: $GITHUB_STEP_SUMMARY: cannot write {tmp_path}/no/summary.md")


def test_the_docs_python_example_runs_and_agrees_with_the_command(tmp_path, monkeypatch):
    docs = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    (tmp_path / "fairness.toml").write_text(re.findall(r"```toml\n(.*?)```", docs, re.S)[1], encoding="utf-8")
    code = re.search(r"## From Python\n\n```python\n(.*?)```", docs, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "assets").symlink_to(ROOT / "assets")
    namespace = {}
    exec(code, namespace)  # the docs' own example, from a folder holding assets/
    verdict = namespace["verdict"]
    assert verdict.exit_code(strict=True) == 0 and verdict.result() == "passed" and len(verdict.outcomes) == 6
    assert verdict.outcomes[2].message.startswith("EE-D 0.663 [")
