"""The what-if replay on the Audit page's served tab and in the log report (AppTest through the data-folder route)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fairrag_core import load_collection
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.audit.store import RunStore
from fairrag_core.audit.what_if import WhatIfSettings, what_if_sampling
from fairrag_core.data import assets_dir, load_served
from fairrag_studio.services.identity import reproduce_command
from fairrag_studio.views.served import build_log_report
from fairrag_studio.views.what_if import curve_table, with_what_if

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"
PLAIN_LOG = assets_dir() / "logs" / "running-shoes.jsonl"


@pytest.fixture(autouse=True)
def _run_store(fresh_run_store):
    """A fresh run store for every test of this module (tests/studio/conftest.py)."""


def _served_audit_of(name: str, folder: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(folder))
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.switch_page("app_pages/audit.py").run()
    at.radio(key="served_source").set_value("Data folder").run()
    at.selectbox(key="served_file").set_value(name).run()
    at.button(key="served_run").click().run()
    assert not at.exception
    return at


def _interval(cell: str) -> tuple[float, float, float]:
    value, rest = cell.split(" [")
    low, high = rest.rstrip("]").split(", ")
    return float(value), float(low), float(high)


def test_a_trace_export_is_replayed_on_the_page(tmp_path, monkeypatch):
    shutil.copy(TRACES, tmp_path / TRACES.name)
    at = _served_audit_of(TRACES.name, tmp_path, monkeypatch)
    at.text_input(key="served_wi_alphas").set_value("0, 8").run()
    at.number_input(key="served_wi_n").set_value(20).run()
    at.button(key="served_wi_run").click().run()
    assert not at.exception
    table = next(f.value for f in at.dataframe if "EE-D change" in f.value.columns)
    assert table["system"].tolist() == ["as served", "α = 0", "α = 8"]
    for cell in table["EE-D"]:
        value, low, high = _interval(cell)
        assert low <= value <= high
    assert table["EE-D change"].iloc[0] == "" and "p" in table["EE-D change"].iloc[1]
    assert any("Sampling at α = 0" in m.value for m in at.markdown)
    replayed = " --what-if-alphas 0,8 --what-if-samples 20"  # the audit's settings keep the grid and N
    assert [c.value.endswith(replayed) for c in at.code] == [True]
    stored = at.multiselect(key="stored_pick")  # reopened from the run store: the replay came along
    stored.set_value(stored.options[:1]).run()
    assert not at.exception
    again = [f.value for f in at.dataframe if "EE-D change" in f.value.columns]
    assert again and again[-1].equals(table)
    # the served tab (kept in the session) and the stored run (above it and in its own view) print the same command
    assert len(at.code) == 3 and all(c.value.endswith(replayed) for c in at.code)


def test_a_log_without_scores_says_what_the_replay_needs(tmp_path, monkeypatch):
    shutil.copy(PLAIN_LOG, tmp_path / PLAIN_LOG.name)
    at = _served_audit_of(PLAIN_LOG.name, tmp_path, monkeypatch)
    at.button(key="served_wi_run").click().run()
    assert not at.exception
    assert any("No replay" in e.value and "score" in e.value for e in at.error)


def test_the_report_carries_the_replay_with_its_numbers():
    shoes = load_collection("running-shoes")
    log = load_served(TRACES, collection=shoes)
    run = audit_rag_log(log, shoes, LogAuditConfig(seed=3, n_boot=200))
    replay = what_if_sampling(log, shoes, alphas=(0, 2), n_samples=20, seed=3, audit=run, n_boot=200)
    data = replay.to_dict(details=False)
    table = curve_table(data)
    served = replay.curve.iloc[0]
    assert table["EE-D"].iloc[0] == f"{served.ee_d:.3f} [{served.ee_d_low:.3f}, {served.ee_d_high:.3f}]"
    run.record.extra["what_if"] = data
    html = build_log_report(run, shoes)
    assert "What if it had sampled?" in html and replay.findings[0].text.split(" (")[0][:40] in html
    assert "Not estimated:" in html


def test_a_replay_run_in_the_app_is_in_the_runs_reproduce_command(tmp_path):
    shoes = load_collection("running-shoes")
    log = load_served(TRACES, collection=shoes)
    run = audit_rag_log(log, shoes, LogAuditConfig(log=str(TRACES), seed=3, n_boot=200))
    before = reproduce_command(run.record)[0]
    assert "--what-if" not in before
    replay = what_if_sampling(log, shoes, WhatIfSettings(alphas=(0, math.inf), n_samples=20, seed=3), audit=run)
    data = replay.to_dict(details=False)
    kept = with_what_if(run, data)
    assert kept.record.config.what_if_alphas == (0.0, math.inf) and kept.record.config.what_if_samples == 20
    assert reproduce_command(kept.record)[0] == before + " --what-if-alphas 0,inf --what-if-samples 20"
    assert kept.record.extra["what_if"] is data and "what_if" not in run.record.extra  # the audit itself unchanged
    store = RunStore(tmp_path / "runs.duckdb")  # the store keeps both, so a reopened run prints the same command
    run_id = store.save(run)
    store.add_extra(run_id, "what_if", data, config=kept.record.config)
    reopened = store.load(run_id).record
    assert reproduce_command(reopened)[0] == reproduce_command(kept.record)[0]
    assert reopened.extra["what_if"]["n_samples"] == 20
