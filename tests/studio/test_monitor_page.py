"""The Monitor page: a store of the data folder spanning six days, audited per day with the providers from the
documents' metadata; the shares and EE-D charts with the change of α marked, the alarm's sentence for the halved
provider, the windows table and each window's findings — the numbers audit-log --window prints."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from fairrag_studio.charts.monitor import ee_d_over_time, shares_over_time
from fairrag_studio.views.monitor import changes_table, monitor_served, windows_table
from tests.audit.monitor_store import make_days_store

APP = str(Path(__file__).resolve().parents[2] / "app.py")
MONITOR = "app_pages/monitor.py"


def test_the_monitor_page_shows_shares_ee_d_changes_and_the_alarm(tmp_path, monkeypatch):
    data = tmp_path / "data"
    make_days_store(data / "collected", halve="Capital Courier", from_day=3, alpha_from=4)
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(data))
    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(MONITOR).run()
    assert not at.exception
    assert at.selectbox(key="monitor_store").options == ["collected"]
    assert at.selectbox(key="monitor_service").options == ["every service", "news-bot"]
    at.button(key="monitor_run").click().run()
    assert not at.exception
    alarms = [e.value.replace("\\", "") for e in at.error]  # markdown_text escapes . - ( )
    assert len(alarms) == 1 and alarms[0].startswith("Capital Courier's share of retrieval exposure fell from 35.0 % "
                                                     "to 19.3 % since 2026-11-19; always-valid p = ")
    assert len(at.get("plotly_chart")) == 2
    tables = at.dataframe
    assert tables[0].value["change"].tolist() == ["α 1.0 → 2.0"]
    assert tables[1].value["requests"].tolist() == [40] * 6
    assert [e.label for e in at.expander if e.label.startswith("2026-")] == [f"2026-11-{d} 00:00"
                                                                            for d in range(16, 22)]


def test_the_views_and_charts_hold_the_monitors_numbers(tmp_path):
    store = make_days_store(tmp_path / "store", alpha_from=4, days=4, per_day=20)
    result = monitor_served(store, window="1d", provider_from="metadata.source", n_boot=100)
    table = windows_table(result)
    assert table["window (UTC)"].tolist() == [f"2026-11-{d}T00:00:00Z" for d in range(16, 20)]
    assert table["α"].tolist() == ["1.0"] * 4 and not result.alarms
    assert changes_table(result).empty
    shares = result.shares_table()
    fig = shares_over_time(shares, top=2)
    assert [t.name for t in fig.data] == ["Capital Courier", "Harbour Herald", "all others (4 providers)"]
    others = shares[~shares["provider"].isin(["Capital Courier", "Harbour Herald"])].groupby("window")[
        "retrieval_share"].sum()
    assert list(fig.data[2].y) == others.sort_index().tolist()
    ee_d = ee_d_over_time(result.headline_table(), [{"at": "2026-11-18T00:00:00Z", "label": "new index"}])
    assert list(ee_d.data[0].y) == result.headline_table()["ee_d"].tolist()
    assert [a.text for a in ee_d.layout.annotations] == ["new index"]
