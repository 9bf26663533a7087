"""The Audit page finds a run's findings once (issue 30, Must have 5): they bootstrap every provider's share, seconds
at 2,000 providers, and the page runs again on every widget it draws, so a rerun reuses them
(:func:`fairrag_studio.services.resources.sweep_findings`); a new run finds its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fairrag_core.audit import comparison_findings

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(autouse=True)
def _stores(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_DATA_DIR", raising=False)
    resources.run_store.clear()
    yield
    resources.run_store.clear()


def test_a_rerun_of_the_audit_page_reuses_the_findings(monkeypatch):
    calls = []
    real = comparison_findings.sweep_findings
    monkeypatch.setattr(comparison_findings, "sweep_findings",
                        lambda run, collection, **kw: calls.append(run.record.seed) or real(run, collection, **kw))
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("app_pages/audit.py").run()
    at.text_input(key="audit_alphas").set_value("2").run()
    at.button(key="audit_run").click().run()
    assert not at.exception, at.exception
    shown = [m.value for m in at.markdown if "**" in m.value and "·" in m.value]
    assert len(calls) == 1 and shown
    at.run()
    at.run()
    assert len(calls) == 1  # two reruns: the same findings, not found again
    assert [m.value for m in at.markdown if "**" in m.value and "·" in m.value] == shown
    at.text_input(key="audit_alphas").set_value("0").run()
    at.button(key="audit_run").click().run()
    assert not at.exception, at.exception
    assert len(calls) == 2  # another run: its own findings
