import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from fairrag_studio.views.report import ReportSection, audit_report_html, table_csv

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


def test_csv_defuses_spreadsheet_formulas():
    table = pd.DataFrame({"=cmd": ["=1+1", "+SUM(A1)", "-2+3", "@x", "-0.25", "plain", EVIL], "n": range(7)})
    text = table_csv(table).decode("utf-8").splitlines()
    assert text[0] == "'=cmd,n"
    assert [line.rsplit(",", 1)[0] for line in text[1:]] == ["'=1+1", "'+SUM(A1)", "'-2+3", "'@x", "-0.25", "plain",
                                                             EVIL]


def test_static_figures_are_images_and_fall_back_when_drawing_fails():
    sections = [ReportSection("One", figure=small_figure("a")), ReportSection("Two", text="no figure"),
                ReportSection("Three", figure=small_figure("b"), code="python -m x <y>",
                              details=(ReportSection("q1 <b>", "detail", table=pd.DataFrame({"a": [EVIL]})),))]
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    html = audit_report_html(title="t", summary={}, sections=sections, figures="static",
                             renderer=lambda figs: [svg] * len(figs))
    assert html.count('<img src="data:image/svg+xml;base64,') == 2 and "plotly.js v" not in html
    assert "<script" not in html.lower()  # an SVG inside <img> cannot run scripts
    assert '<pre class="command"><code>python -m x &lt;y&gt;</code></pre>' in html
    assert "<details><summary>q1 &lt;b&gt;</summary>" in html and f"<td>{EVIL}</td>" not in html

    def broken(figs):
        raise RuntimeError("no browser")

    fallback = audit_report_html(title="t", summary={}, sections=sections, figures="static", renderer=broken)
    assert "Figures are interactive because static drawing failed: no browser" in fallback
    assert fallback.count("plotly.js v") == 1
    with pytest.raises(ValueError, match="figures='flat'"):
        audit_report_html(title="t", summary={}, sections=sections, figures="flat")


@pytest.mark.slow
def test_real_svg_rendering_of_a_report():
    html = audit_report_html(title="t", summary={}, sections=[ReportSection("One", figure=small_figure("a"))],
                             figures="static")
    assert html.count('<img src="data:image/svg+xml;base64,') == 1 and len(html.encode()) < 60_000


def test_user_text_inside_a_figure_cannot_close_its_script():
    """Figures are inline JSON inside <script>: provider names, queries and titles in a chart must not end it."""
    closing = "</script><script>alert(2)</script>"
    figure = go.Figure(go.Bar(x=[closing, "=1+1"], y=[1, 2], name=closing), layout={"title": {"text": closing}})
    report = audit_report_html(title="t", summary={}, sections=[ReportSection(heading="h", figure=figure)],
                               generated_at="now")
    assert "alert(2)" in report  # the text is there, as data
    assert closing not in report and "<script>alert" not in report
    assert report.lower().count("<script") == report.lower().count("</script>")
