"""Fairness over time (audit/monitor.py, audit/drift.py, ``audit-log --window``): each window's numbers are
``audit-log --since/--until``'s on that window; a change of α in the traces and a user's change file are marked; a
halved share alarms, equality does not; the drift test's false alarms stay under α in a small simulation."""

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from benchmarks.calibrate_drift import simulate
from fairrag_core.audit.drift import DriftAlarm, drift_alarms, mixture_log_e, reference_band
from fairrag_core.audit.monitor import Change, read_changes
from fairrag_core.audit.windows import window_arg, window_bounds
from fairrag_core.errors import DataFormatError
from tests.audit.monitor_store import make_days_store
from tests.cli.test_compare import run

READ = ["--provider-from", "metadata.source", "--boot", "100", "--seed", "1"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("monitor")
    return {"drop": make_days_store(root / "drop", halve="Capital Courier", from_day=3, alpha_from=4),
            "equal": make_days_store(root / "equal", seed=7)}


@pytest.fixture(scope="module")
def monitored(stores):
    code, text = run(["audit-log", str(stores["drop"]), "--window", "1d", *READ, "--json"])
    assert code == 0
    return json.loads(text)


def test_each_window_is_audit_log_on_that_window(stores, monitored):
    assert [w["window"] for w in monitored["windows"]] == [f"2026-11-{d}T00:00:00Z" for d in range(16, 22)]
    assert [w["requests"] for w in monitored["windows"]] == [40] * 6
    for window in monitored["windows"][::2]:
        code, text = run(["audit-log", str(stores["drop"]), "--since", window["window"], "--until", window["end"],
                          *READ, "--no-store", "--json"])
        assert code == 0
        alone = json.loads(text)
        ee_d = next(row for row in alone["summary"] if row["metric"] == "ee_d")
        assert (window["ee_d"], window["ee_d_low"], window["ee_d_high"]) == (ee_d["estimate"], ee_d["low"],
                                                                             ee_d["high"])
        shares = {row["provider"]: (row["retrieval_share"], row["retrieval_share_low"], row["attributed_share"])
                  for row in monitored["shares"] if row["window"] == window["window"]}
        assert shares == {row["group"]: (row["retrieval_share"], row["retrieval_share_low"], row["attributed_share"])
                          for row in alone["ledgers"]["provider"]}
        assert ([f["text"] for f in monitored["findings"][window["window"]]]
                == [f["text"] for f in alone["findings"] if not f["detail"]])


def test_the_change_of_alpha_in_the_traces_is_marked_and_a_change_file_adds_marks(stores, monitored, tmp_path):
    assert monitored["changes"] == [{"at": "2026-11-20T00:00:00Z", "label": "α 1.0 → 2.0", "source": "traces"}]
    assert [w["deployed_alpha"] for w in monitored["windows"]] == ["1.0"] * 4 + ["2.0"] * 2
    changes = tmp_path / "changes.csv"
    changes.write_text("time,label\n2026-11-18T09:30+01:00,new index\n", encoding="utf-8")
    assert read_changes(changes) == [Change("2026-11-18T08:30:00Z", "new index", "file")]
    code, text = run(["audit-log", str(stores["drop"]), "--window", "1d", *READ, "--changes", str(changes)])
    assert code == 0
    assert ("  - 2026-11-18T08:30:00Z: new index (given)\n"
            "  - 2026-11-20T00:00:00Z: α 1.0 → 2.0 (from the traces)") in text
    changes.write_text("2026-11-18\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="line 1 is not time,label"):
        read_changes(changes)


def test_a_halved_share_alarms_and_equality_does_not(stores, monitored):
    alarms = monitored["alarms"]
    assert monitored["reference_windows"] == ["2026-11-16T00:00:00Z", "2026-11-17T00:00:00Z", "2026-11-18T00:00:00Z"]
    assert [(a["provider"], a["direction"], a["since"]) for a in alarms] == [
        ("Capital Courier", "fell", "2026-11-19T00:00:00Z")]
    alarm = alarms[0]
    assert alarm["reference"] == pytest.approx(0.35, abs=0.01) and alarm["current"] == pytest.approx(0.193, abs=0.01)
    assert alarm["p"] <= 0.05 and alarm["text"].startswith("Capital Courier's share of retrieval exposure fell from "
                                                           "35.0 % to 19.3 % since 2026-11-19; always-valid p = ")
    code, text = run(["audit-log", str(stores["equal"]), "--window", "1d", *READ])
    assert code == 0
    assert "Drift alarms" in text and "  - none: no provider's share moved beyond noise." in text


def test_the_text_is_a_table_of_windows_by_providers(stores):
    code, text = run(["audit-log", str(stores["drop"]), "--window", "1d", *READ])
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == ("Fairness over time: 6 daily windows (UTC), shares of retrieval exposure per provider (all 6 "
                        "providers); EE-D with its interval; seed 1.")
    assert lines[2].split()[:3] == ["window", "requests", "Capital"]
    assert lines[3].startswith("2026-11-16 00:00") and lines[3].split()[2] == "40"


def test_the_output_table_and_the_refusals(stores, tmp_path, capsys):
    out = tmp_path / "monitor.csv"
    assert run(["audit-log", str(stores["drop"]), "--window", "1d", *READ, "--output", str(out)])[0] == 0
    import pandas as pd

    table = pd.read_csv(out)
    assert len(table) == 36 and {"window", "provider", "retrieval_share", "ee_d", "ee_d_low"} <= set(table.columns)
    capsys.readouterr()
    assert run(["audit-log", str(stores["drop"]), "--changes", str(out), *READ])[0] == 2
    assert "--changes marks a timeline; add --window 1d (or 1h, 7d)" in capsys.readouterr().err
    log = tmp_path / "log.jsonl"
    log.write_text('{"query_id": "q", "ranking": ["rs-001"]}\n', encoding="utf-8")
    assert run(["audit-log", str(log), "--window", "1d", "--collection", "running-shoes"])[0] == 2
    assert "--window audits a `collect` store window by window; " in capsys.readouterr().err


def test_windows_align_to_utc_hours_days_and_mondays():
    first, last = datetime(2026, 11, 27, 10, 30, tzinfo=UTC), datetime(2026, 12, 1, 1, tzinfo=UTC)
    assert [a.isoformat() for a, _ in window_bounds(first, last, "7d")] == ["2026-11-23T00:00:00+00:00",
                                                                             "2026-11-30T00:00:00+00:00"]
    assert window_bounds(first, first, "1h")[0][0] == datetime(2026, 11, 27, 10, tzinfo=UTC)
    assert window_arg(" 1D ") == "1d"
    with pytest.raises(Exception, match="unknown window '2d'; give one of 1h, 1d, 7d"):
        window_arg("2d")


def test_the_e_process_is_a_fair_bet_at_the_reference_and_grows_under_a_drift():
    rng = np.random.default_rng(0)
    same = rng.binomial(5, 0.2, size=(400, 1)) / 5
    assert mixture_log_e(same, np.array([0.2]))[-1, 0] < np.log(20)
    fell = rng.binomial(5, 0.1, size=(400, 1)) / 5
    assert mixture_log_e(fell, np.array([0.2]))[-1, 0] > np.log(1000)
    mean, low, high = reference_band(same)
    assert low[0] < mean[0] < high[0] and high[0] - low[0] < 0.06
    alarms = drift_alarms(same, fell, [200, 400], ["A"], starts=["2026-11-01", "2026-11-02"])
    assert [(a.provider, a.looks, a.direction) for a in alarms] == [("A", 1, "fell")]
    assert drift_alarms(same, rng.binomial(5, 0.2, size=(400, 1)) / 5, [200, 400], ["A"],
                        starts=["2026-11-01", "2026-11-02"]) == []
    assert DriftAlarm("A", 0.11, 0.052, 0.003, "2026-11-20T00:00:00Z", "2026-11-27", 8, 6).text == (
        "A's share of retrieval exposure fell from 11.0 % to 5.2 % since 2026-11-20; always-valid p = 0.003 after 8 "
        "daily looks (Bonferroni over 6 providers).")


def test_a_small_simulation_keeps_false_alarms_under_alpha_and_finds_a_halved_large_share():
    result = simulate(20, days=10, reference=3, seed=5, chunk=10, shares=(0.34, 0.24, 0.15, 0.11, 0.10, 0.06))
    assert result["false_alarms"] == 0
    assert result["halved"][0]["detected"] == 1.0 and result["halved"][0]["median_delay"] <= 3


def test_the_e_process_is_taken_in_pieces_within_the_memory_budget(monkeypatch):
    x = np.random.default_rng(1).random((3000, 6))
    whole = mixture_log_e(x, np.full(6, 0.5))
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "1")  # 1 MB: pieces of about 700 requests
    assert np.allclose(mixture_log_e(x, np.full(6, 0.5)), whole, rtol=0, atol=1e-9)


def test_citation_shares_ee_r_and_too_small_a_reference_are_said(tmp_path):
    from tests.data.test_collector_window import make_store

    make_store(tmp_path / "store")
    code, text = run(["audit-log", str(tmp_path / "store"), "--window", "1h", "--service", "svc-a", "--collection",
                      "running-shoes", "--boot", "100", "--seed", "1"])
    assert code == 0
    lines = text.splitlines()
    assert lines[0].startswith("Fairness over time: 3 hourly windows (UTC), shares of retrieval exposure per provider "
                               "(all 14 providers)")
    cited = lines.index("Shares of citations (attributed exposure) per provider:")
    assert [line[:16] for line in lines[cited + 2:cited + 5]] == ["2026-11-27 10:00", "2026-11-27 11:00",
                                                                  "2026-11-27 12:00"]
    assert any(line.startswith("EE-R per window: 2026-11-27 10:00 0.") for line in lines)
    assert lines[-1] == ("note: the reference windows hold 32 requests, fewer than the 100 the drift test's reference "
                         "band needs: no drift alarms (monitor a longer span)")


def test_a_change_of_retriever_between_windows_is_marked(tmp_path):
    from datetime import timedelta

    from fairrag_core.audit.monitor import deployment_changes
    from fairrag_core.data.collector import TraceStore
    from fairrag_core.data.store_window import StoreWindow, select_files
    from fairrag_core.data.traces import slim_export

    store, start = TraceStore(tmp_path / "store"), datetime(2026, 11, 16, tzinfo=UTC)
    for day, name in enumerate(["BM25Retriever.retrieve", "BM25Retriever.retrieve", "VectorIndexRetriever.retrieve"]):
        when = start + timedelta(days=day, hours=9)
        ns = str(int(when.timestamp()) * 10**9)
        span = {"traceId": f"{day:032x}", "spanId": f"{day:016x}", "name": name, "kind": 1, "startTimeUnixNano": ns,
                "endTimeUnixNano": ns, "attributes": [{"key": "openinference.span.kind",
                                                       "value": {"stringValue": "RETRIEVER"}}]}
        export = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                                  "value": {"stringValue": "bot"}}]},
                                     "scopeSpans": [{"scope": {"name": "x"}, "spans": [span]}]}]}
        store.append([slim_export(export)], now=when)
    bounds = window_bounds(start, start + timedelta(days=2, hours=9), "1d")
    deployed, changes = deployment_changes(select_files(tmp_path / "store", StoreWindow("bot")), bounds)
    assert [d["retriever"] for d in deployed] == ["BM25Retriever.retrieve"] * 2 + ["VectorIndexRetriever.retrieve"]
    assert changes == [Change("2026-11-18T00:00:00Z", "retriever BM25Retriever.retrieve → "
                                                      "VectorIndexRetriever.retrieve", "traces")]
