import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from fairrag_studio.report import ReportSection, audit_report_html, table_csv

EVIL = "<script>alert(1)</script>"


def small_figure(title: str) -> go.Figure:
    return go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout={"title": {"text": title}})


@pytest.fixture
def report():
    table = pd.DataFrame({"provider": ["acme", EVIL], "exposure": [0.123456, np.nan], "documents": [3, 1]})
    sections = [
        ReportSection(
            heading="Exposure <by> provider",
            text="First paragraph with <b>tags</b>.\n\nSecond paragraph & more.",
            table=table,
            figure=small_figure("first"),
        ),
        ReportSection(heading="EE-D by α", figure=small_figure("second")),
        ReportSection(heading="Notes only", text="Just text."),
    ]
    summary = {"collection": "running-shoes", "EE-D": 0.87654, "alphas": [0, 1, 2.5], "k": 5, EVIL: EVIL}
    return audit_report_html(title=EVIL, summary=summary, sections=sections, generated_at="2025-01-02 03:04 UTC")


def test_report_is_one_complete_document(report):
    assert report.startswith("<!doctype html>")
    assert report.count("<html") == 1 and report.rstrip().endswith("</html>")
    assert '<meta charset="utf-8">' in report
    assert "<style>" in report
    assert "Generated 2025-01-02 03:04 UTC" in report
    assert "Made with FairRAG Studio. Metrics: Kim &amp; Diaz (2025) Towards Fair RAG" in report
    assert "Diaz et al. (2020) Evaluating Stochastic Rankings with Expected Exposure." in report


def test_report_inlines_plotly_once_and_loads_nothing(report):
    assert report.count("plotly.js v") == 1
    assert report.count('class="plotly-graph-div"') == 2
    # the bundle comes before the first figure's Plotly.newPlot call
    assert report.index("plotly.js v") < report.index("Plotly.newPlot")
    assert "<script src=" not in report.lower()
    assert "<link" not in report.lower()
    # outside inline scripts (the plotly bundle mentions URLs in its code) no markup points anywhere
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "", report, flags=re.DOTALL | re.IGNORECASE)
    assert "<script" not in markup.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", markup)


def test_report_escapes_user_content(report):
    assert EVIL not in report
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f"<title>{escaped}</title>" in report
    assert f"<h1>{escaped}</h1>" in report
    assert f"<dt>{escaped}</dt><dd>{escaped}</dd>" in report
    assert f"<td>{escaped}</td>" in report
    assert "<h2>Exposure &lt;by&gt; provider</h2>" in report
    assert "<p>First paragraph with &lt;b&gt;tags&lt;/b&gt;.</p>" in report
    assert "<p>Second paragraph &amp; more.</p>" in report


def test_report_summary_and_tables(report):
    assert "<h2>Summary</h2>" in report
    assert "<dt>EE-D</dt><dd>0.877</dd>" in report
    assert "<dt>alphas</dt><dd>0, 1, 2.500</dd>" in report
    assert "<dt>k</dt><dd>5</dd>" in report
    assert report.count('class="dataframe table"') == 1
    assert "<td>0.123</td>" in report
    assert "<td>—</td>" in report
    assert "<td>acme</td>" in report
    assert "<h2>Notes only</h2>\n<p>Just text.</p>" in report


def test_report_without_figures_has_no_plotly():
    html = audit_report_html(title="t", summary={}, sections=[ReportSection(heading="h", text="x")])
    assert "plotly.js v" not in html
    assert "<h2>Summary</h2>" not in html
    assert "Generated " in html  # default timestamp


def test_report_section_is_frozen():
    section = ReportSection(heading="h")
    with pytest.raises(AttributeError):
        section.heading = "other"  # type: ignore[misc]


def test_table_csv_utf8():
    data = table_csv(pd.DataFrame({"provider": ["Über", "b"], "ee_d": [0.5, 1.0]}))
    assert data == "provider,ee_d\nÜber,0.5\nb,1.0\n".encode()
