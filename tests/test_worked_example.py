"""The worked example (issue 32, Must have 4): docs/worked-example.md is what examples/close_the_loop.py writes,
word for word once times, ports, run ids and the traces' sha256 are masked (the slow test runs the script: about 30 s
on the 2-core machine); the example's policy fails the deterministic week and passes the fair one on the doc's own
numbers; the docs link the walk-through."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "worked-example.md"
SCRIPT = ROOT / "examples" / "close_the_loop.py"


def close_the_loop():
    """The example script as a module (examples/ is no package)."""
    spec = importlib.util.spec_from_file_location("close_the_loop", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def doc_headlines() -> list[dict[str, tuple[float, float, float]]]:
    """Each week's EE-D and EE-R (estimate, low, high) as docs/worked-example.md prints them."""
    pattern = re.compile(r"^EE-D ([\d.]+) \[([\d.]+), ([\d.]+)\] \(lower = fairer\), "
                         r"EE-R ([\d.]+) \[([\d.]+), ([\d.]+)\]", re.M)
    weeks = [tuple(map(float, m.groups())) for m in pattern.finditer(DOC.read_text(encoding="utf-8"))]
    return [{"ee_d": w[:3], "ee_r": w[3:]} for w in weeks]


def test_the_policy_fails_week_one_and_passes_week_two_on_the_docs_numbers():
    """The committed policy on the doc's headline numbers (no findings): week 1's EE-D interval reaches 1 (the same
    k documents every time) and breaks the fail rule; week 2's upper end is under 0.95 and every rule holds."""
    from fairrag_core.audit.policy import FAILED, PASSED, Headline, Level, evaluate, load_policy

    module = close_the_loop()
    policy = load_policy(str(ROOT / module.POLICY))
    assert [(r.name, r.level) for r in policy.rules] == [
        ("EE-D at most 0.95, beyond noise", Level.FAIL), ("no brand under-exposed beyond noise", Level.FAIL),
        ("no segment under-exposed beyond noise", Level.WARN), ("EE-R at least 0.7", Level.WARN)]
    week1, week2 = doc_headlines()
    verdicts = [evaluate(policy, [], {m: Headline(m, m, *values) for m, values in week.items()})
                for week in (week1, week2)]
    assert week1["ee_d"] == (1.0, 1.0, 1.0)
    assert [v.exit_code() for v in verdicts] == [FAILED, PASSED]
    assert [o.rule.name for o in verdicts[0].failed] == ["EE-D at most 0.95, beyond noise"]
    # the doc shows the policy file as it is
    assert (ROOT / module.POLICY).read_text(encoding="utf-8").rstrip("\n") in DOC.read_text(encoding="utf-8")


def test_normalise_masks_only_what_differs_between_runs(tmp_path):
    module = close_the_loop()
    text = (f"$ python -m fairrag_core collect --store {tmp_path}/store --port 40123 &\n"
            "--since 2026-11-28T07:48:37Z --until 2026-11-28T07:48:40Z\n"
            "run:4e16f5e1653b · shoe-shop is fairer than run:8cc2d263eef0 · sha256 02f77fe7f989…\n"
            "EE-D 0.899 [0.858, 0.938] at α = 5 in 2026-11-28")
    assert module.normalise(text, tmp_path, {"4e16f5e1653b": "week 1", "8cc2d263eef0": "week 2"}) == (
        "$ python -m fairrag_core collect --store /tmp/loop/store --port <port> &\n"
        "--since <time> --until <time>\n"
        "run:<week 1> · shoe-shop is fairer than run:<week 2> · sha256 <sha256>…\n"
        "EE-D 0.899 [0.858, 0.938] at α = 5 in 2026-11-28")


def test_the_walk_through_is_linked_and_filled():
    text = DOC.read_text(encoding="utf-8")
    assert "{{" not in text and "}}" not in text
    assert "(docs/worked-example.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(worked-example.md)" in (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_script_writes_the_doc_again(tmp_path):
    """A new run of the example (offline: loopback only) prints the numbers docs/worked-example.md gives, and the
    gate's exit codes 1 then 0 (the script stops otherwise)."""
    pytest.importorskip("llama_index.core")
    pytest.importorskip("openinference.instrumentation.llama_index")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    out = tmp_path / "loop"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "(exit code 1)" in done.stdout and "(exit code 0)" in done.stdout
    written = (out / "worked-example.md").read_text(encoding="utf-8")
    assert written == DOC.read_text(encoding="utf-8")
