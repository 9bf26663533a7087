"""Self-contained HTML audit report for FairRAG Studio (pure: no Streamlit, no network).

One HTML file holds the summary, the explanatory text, the tables and the interactive Plotly figures
(plotly.js inlined once), so a report can be mailed, archived or opened offline in a classroom. The
figures are those of :mod:`fairrag_studio.charts` (Kim & Diaz 2025, Figs. 3–5).
"""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go

__all__ = ["ReportSection", "audit_report_html", "table_csv"]

FOOTER = (
    "Made with FairRAG Studio. Metrics: Kim &amp; Diaz (2025) Towards Fair RAG; exposure after Diaz et al. (2020) "
    "Evaluating Stochastic Rankings with Expected Exposure."
)

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; color: #1f2933;
       max-width: 1100px; margin: 2rem auto; padding: 0 1.5rem; line-height: 1.5; }
header { border-bottom: 3px solid #0072B2; margin-bottom: 1.5rem; }
h1 { font-size: 1.9rem; margin: 0 0 .3rem; }
h2 { font-size: 1.4rem; margin-top: 2.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; }
.generated { color: #52606d; margin: 0 0 1rem; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1.2rem; }
dl.summary dt { font-weight: 600; }
dl.summary dd { margin: 0; }
table.table { border-collapse: collapse; margin: 1rem 0; font-size: .95rem; }
table.table th, table.table td { border: 1px solid #d0d7de; padding: .3rem .6rem; text-align: left; }
table.table thead th { background: #f0f4f8; }
.figure { margin: 1rem 0; }
footer { margin-top: 3rem; padding-top: .8rem; border-top: 1px solid #d0d7de; color: #52606d; font-size: .9rem; }
@media print {
  body { max-width: none; margin: 0; }
  section, .figure, table.table { page-break-inside: avoid; break-inside: avoid; }
  h2 { page-break-after: avoid; break-after: avoid; }
}
""".strip()


@dataclass(frozen=True, eq=False)  # eq=False: DataFrames and figures neither compare nor hash element-wise
class ReportSection:
    """One part of the report: a heading, explanatory text (blank lines separate paragraphs), a figure, a table."""

    heading: str
    text: str = ""
    table: pd.DataFrame | None = None
    figure: go.Figure | None = None


def _format_value(value: object) -> str:
    """Summary values: floats to 3 decimals, sequences joined with ", ", missing as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        return "—" if math.isnan(number) else f"{number:.3f}"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return ", ".join(_format_value(item) for item in items)
    return str(value)


def _paragraphs(text: str) -> str:
    blocks = [block.strip() for block in re.split(r"\n\s*\n", text or "")]
    return "\n".join(f"<p>{html.escape(block)}</p>" for block in blocks if block)


def _table_html(table: pd.DataFrame) -> str:
    return table.to_html(
        index=False, float_format=lambda x: f"{x:.3f}", na_rep="—", escape=True, classes="table"
    )


def audit_report_html(
    *,
    title: str,
    summary: Mapping[str, object],
    sections: Sequence[ReportSection],
    generated_at: str | None = None,
) -> str:
    """A complete, self-contained HTML audit report.

    Layout: header (title, generation time), a "Summary" definition list, one ``<section>`` per
    :class:`ReportSection` (heading, paragraphs, interactive figure, table) and a footer citing the metrics.
    Everything user-provided is HTML-escaped. There are no external resources: plotly.js is inlined once,
    with the first figure, and later figures reuse it. ``generated_at`` defaults to the current UTC time.
    """
    stamp = generated_at if generated_at is not None else datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="generated">Generated {html.escape(stamp)}</p>',
        "</header>",
    ]
    if summary:
        parts.append('<section class="summary">')
        parts.append("<h2>Summary</h2>")
        parts.append('<dl class="summary">')
        for key, value in summary.items():
            parts.append(f"<dt>{html.escape(str(key))}</dt><dd>{html.escape(_format_value(value))}</dd>")
        parts.append("</dl>")
        parts.append("</section>")

    plotlyjs_inlined = False
    for section in sections:
        parts.append("<section>")
        parts.append(f"<h2>{html.escape(section.heading)}</h2>")
        if section.text:
            parts.append(_paragraphs(section.text))
        if section.figure is not None:
            # Only the first figure carries the ~4.8 MB plotly.js bundle; the others use the global Plotly.
            figure_div = section.figure.to_html(
                full_html=False, include_plotlyjs=not plotlyjs_inlined, config={"displaylogo": False}
            )
            plotlyjs_inlined = True
            parts.append(f'<div class="figure">{figure_div}</div>')
        if section.table is not None:
            parts.append(_table_html(section.table))
        parts.append("</section>")

    parts += [f"<footer><p>{FOOTER}</p></footer>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def table_csv(table: pd.DataFrame) -> bytes:
    """``table`` as UTF-8 CSV bytes without the index (for a download button)."""
    return table.to_csv(index=False).encode("utf-8")
