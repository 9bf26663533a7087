"""Self-contained HTML audit report for FairRAG Studio (pure: no Streamlit, no network).

One HTML file holds the summary, the explanatory text, the tables, collapsible per-query drill-downs, the
reproduce command and the figures, so a report can be mailed, archived or opened offline in a classroom. The
figures are those of :mod:`fairrag_studio.charts` (Kim & Diaz 2025, Figs. 3–5), either **static** — SVG drawn by
kaleido (one headless Chromium for all figures) and embedded as ``<img>`` data, a few kB each — or
**interactive** — Plotly figures with plotly.js (~4.6 MB) inlined once. An exposure-only audit of the demo
collection weighs 4.9 MB interactive and about 0.2 MB static (``tests/studio/test_report.py`` bounds it).
Everything user-provided is HTML-escaped, and :func:`table_csv` defuses spreadsheet formulas.
"""

from __future__ import annotations

import asyncio
import base64
import html
import math
import numbers
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from fairrag_core.data.export import csv_bytes
from fairrag_core.glossary import Term, terms_in

__all__ = ["ReportSection", "audit_report_html", "table_csv", "render_svgs", "FIGURE_MODES"]

#: How figures enter the report: static SVG images (small) or interactive Plotly (plotly.js inlined).
FIGURE_MODES = ("static", "interactive")

FOOTER = (
    "Made with FairRAG Studio. Metrics: Kim &amp; Diaz (2025) Towards Fair RAG; exposure after Diaz et al. (2020) "
    "Evaluating Stochastic Rankings with Expected Exposure."
)

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; color: #1f2933;
       max-width: 1320px; margin: 2rem auto; padding: 0 1.5rem; line-height: 1.5; }
header { border-bottom: 3px solid #0072B2; margin-bottom: 1.5rem; }
h1 { font-size: 1.9rem; margin: 0 0 .3rem; }
h2 { font-size: 1.4rem; margin-top: 2.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; }
.generated { color: #52606d; margin: 0 0 1rem; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1.2rem; }
dl.summary dt { font-weight: 600; }
dl.summary dd { margin: 0; overflow-wrap: break-word; min-width: 0; }
table.table { border-collapse: collapse; margin: 1rem 0; font-size: .9rem; width: 100%; }
table.table.wide { font-size: .8rem; }
table.table th, table.table td { border: 1px solid #d0d7de; padding: .3rem .5rem; text-align: left;
                                 vertical-align: top; overflow-wrap: anywhere; min-width: 6.5ch; }
table.table th { overflow-wrap: normal; hyphens: auto; }  /* headers break between words (or hyphenated) */
table.table td { font-variant-numeric: tabular-nums; }
table.table.wide th, table.table.wide td { padding: .2rem .3rem; }
table.table thead th { background: #f0f4f8; }
.figure { margin: 1rem 0; }
.figure img { max-width: 100%; height: auto; }
pre.command { background: #f0f4f8; padding: .6rem .8rem; overflow-x: auto; white-space: pre-wrap; }
details { margin: .4rem 0; }
details > summary { cursor: pointer; font-weight: 600; }
p.note { color: #52606d; font-size: .95rem; }
ul.glossary { color: #3e4c59; font-size: .9rem; margin: .4rem 0 .8rem; padding-left: 1.2rem; }
ul.glossary li { margin: .15rem 0; }
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
    code: str = ""  # a command, shown verbatim (e.g. the one that reproduces the run)
    details: tuple[ReportSection, ...] = ()  # collapsible parts (per-query drill-down): heading, text, table
    metrics: tuple[str, ...] = ()  # metrics to explain here besides the table's (its columns, its "metric" column)

    def metric_labels(self) -> list[str]:
        """What this section shows that the glossary may explain: ``metrics``, then the table's headers and the
        values of its ``metric`` column (a headline table lists one metric per row)."""
        labels = list(self.metrics)
        if self.table is not None:
            labels += [str(c) for c in self.table.columns]
            if "metric" in self.table:
                labels += [str(v) for v in self.table["metric"]]
        return labels


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


#: From this many columns a table is set smaller (still wrapped to the page's width: nothing scrolls sideways).
WIDE_COLUMNS = 9


def _table_html(table: pd.DataFrame) -> str:
    classes = ["table", "wide"] if len(table.columns) >= WIDE_COLUMNS else "table"
    nullable = [c for c in table.columns if pd.api.types.is_extension_array_dtype(table[c])
                and pd.api.types.is_integer_dtype(table[c]) and table[c].isna().any()]
    if nullable:  # whole numbers with gaps (Int64): "—" for the gap, as for floats, not "<NA>"
        table = table.assign(**{c: table[c].astype(object).where(table[c].notna(), "—") for c in nullable})
    return table.to_html(
        index=False, float_format=lambda x: f"{x:.3f}", na_rep="—", escape=True, classes=classes
    )


def _glossary_html(terms: Sequence[Term]) -> str:
    """The glossary's line for each metric, shown beside the part where the metric first appears."""
    items = "".join(f"<li><b>{html.escape(t.key)}</b> — {html.escape(t.gloss)}</li>" for t in terms)
    return f'<ul class="glossary">{items}</ul>' if terms else ""


def render_svgs(figures: Sequence[go.Figure], *, width: int = 1000) -> list[bytes]:
    """SVG bytes of each figure, drawn by kaleido in one headless Chromium (``/usr/bin/chromium`` unless
    ``BROWSER_PATH`` says otherwise; MathJax off, so nothing is fetched). Raises ``RuntimeError`` when no
    browser can draw them. About 2 s to start the browser, then ~0.15 s per figure on 2 cores."""
    if not figures:
        return []
    import kaleido

    if not os.environ.get("BROWSER_PATH") and Path("/usr/bin/chromium").exists():
        os.environ["BROWSER_PATH"] = "/usr/bin/chromium"
    specs = [(fig.to_plotly_json(), {"format": "svg", "width": width, "height": fig.layout.height or 480})
             for fig in figures]
    result: dict[str, object] = {}

    async def draw() -> list[bytes]:
        async with kaleido.Kaleido(n=1, mathjax=False) as browser:
            return [await browser.calc_fig(fig, opts=opts) for fig, opts in specs]

    def run() -> None:  # its own thread and event loop: callers (Streamlit) may already run one
        try:
            result["svgs"] = asyncio.run(draw())
        except Exception as exc:  # kaleido raises many types (no browser, timeouts, choreographer errors)
            result["error"] = exc

    worker = threading.Thread(target=run, name="report-svg")
    worker.start()
    worker.join()
    if "error" in result:
        exc = result["error"]
        raise RuntimeError(f"static figures need Chromium (Debian package `chromium`); "
                           f"drawing failed with {type(exc).__name__}: {exc}") from exc
    return list(result["svgs"])


def _svg_img(svg: bytes, alt: str) -> str:
    """An SVG as an ``<img>`` data URI: self-contained, and scripts inside an image never run."""
    data = base64.b64encode(svg).decode("ascii")
    return f'<img src="data:image/svg+xml;base64,{data}" alt="{html.escape(alt)}">'


def _details_html(part: ReportSection) -> str:
    inner = [f"<details><summary>{html.escape(part.heading)}</summary>"]
    if part.text:
        inner.append(_paragraphs(part.text))
    if part.table is not None:
        inner.append(_table_html(part.table))
    inner.append("</details>")
    return "\n".join(inner)


def audit_report_html(
    *,
    title: str,
    summary: Mapping[str, object],
    sections: Sequence[ReportSection],
    generated_at: str | None = None,
    figures: str = "interactive",
    renderer: Callable[[Sequence[go.Figure]], list[bytes]] | None = None,
) -> str:
    """A complete, self-contained HTML audit report.

    Layout: header (title, generation time), a "Summary" definition list, one ``<section>`` per
    :class:`ReportSection` (heading, paragraphs, the glossary's line for each metric the section shows first,
    figure, table, command, collapsible details) and a footer citing the metrics. Everything user-provided is
    HTML-escaped. There are no external resources. Tables wrap to the page's width (no sideways scrolling at
    1400 px; ``tests/studio/test_report_layout.py`` measures it in Chromium).

    ``figures="interactive"`` inlines plotly.js once, with the first figure, and later figures reuse it.
    ``figures="static"`` draws every figure to SVG with ``renderer`` (default :func:`render_svgs`) and embeds
    them as images; when drawing fails (no Chromium), the report falls back to interactive figures and says so.
    ``generated_at`` defaults to the current UTC time.
    """
    if figures not in FIGURE_MODES:
        raise ValueError(f"figures={figures!r}; use one of {FIGURE_MODES}")
    stamp = generated_at if generated_at is not None else datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    drawn: dict[int, bytes] = {}
    fallback = ""
    if figures == "static":
        with_figures = [i for i, section in enumerate(sections) if section.figure is not None]
        try:
            svgs = (renderer or render_svgs)([sections[i].figure for i in with_figures])
            drawn = dict(zip(with_figures, svgs))
        except RuntimeError as err:
            fallback = f"Figures are interactive because static drawing failed: {err}"
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
    ]
    if fallback:
        parts.append(f'<p class="note">{html.escape(fallback)}</p>')
    parts.append("</header>")
    if summary:
        parts.append('<section class="summary">')
        parts.append("<h2>Summary</h2>")
        parts.append('<dl class="summary">')
        for key, value in summary.items():
            parts.append(f"<dt>{html.escape(str(key))}</dt><dd>{html.escape(_format_value(value))}</dd>")
        parts.append("</dl>")
        parts.append("</section>")

    plotlyjs_inlined = False
    explained: set[str] = set()
    for index, section in enumerate(sections):
        parts.append("<section>")
        parts.append(f"<h2>{html.escape(section.heading)}</h2>")
        if section.text:
            parts.append(_paragraphs(section.text))
        new = [t for t in terms_in(section.metric_labels()) if t.key not in explained]
        explained.update(t.key for t in new)
        if new:
            parts.append(_glossary_html(new))
        if index in drawn:
            parts.append(f'<div class="figure">{_svg_img(drawn[index], section.heading)}</div>')
        elif section.figure is not None:
            # Only the first figure carries the ~4.6 MB plotly.js bundle; the others use the global Plotly.
            figure_div = section.figure.to_html(
                full_html=False, include_plotlyjs=not plotlyjs_inlined, config={"displaylogo": False}
            )
            plotlyjs_inlined = True
            parts.append(f'<div class="figure">{figure_div}</div>')
        if section.table is not None:
            parts.append(_table_html(section.table))
        if section.code:
            parts.append(f'<pre class="command"><code>{html.escape(section.code)}</code></pre>')
        parts.extend(_details_html(part) for part in section.details)
        parts.append("</section>")

    parts += [f"<footer><p>{FOOTER}</p></footer>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def table_csv(table: pd.DataFrame) -> bytes:
    """``table`` as UTF-8 CSV bytes without the index (for a download button), formulas defused.

    Text cells starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return get a leading apostrophe,
    so a spreadsheet shows them instead of running them (user text: queries, answers, group names, headers);
    :mod:`fairrag_core.data.export` does it, for the CLI's ``--output`` files too.

    >>> table_csv(pd.DataFrame({"q": ["=HYPERLINK(1)", "-0.5", "ok"], "x": [-1, 2, 3]})).decode().splitlines()
    ['q,x', "'=HYPERLINK(1),-1", '-0.5,2', 'ok,3']
    """
    return csv_bytes(table)
