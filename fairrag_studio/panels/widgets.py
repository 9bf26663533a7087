"""Small Streamlit building blocks the pages share: a chart with its downloads, an explainer, a metric with CI."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from fairrag_core.glossary import terms_in

from ..charts import figure_html, figure_png
from ..views.report import table_csv

__all__ = ["explainer", "chart_with_downloads", "metric_with_ci", "fmt", "markdown_text", "FLAG_WORDS",
           "glossary_note", "glossary_markdown"]

#: How the page names a degenerate answer's flags (fairrag_core.rag.degenerate.AnswerFlag values).
FLAG_WORDS = {"empty": "empty", "echo": "repeats the prompt", "loop": "repetition loop", "cut": "cut mid-sentence",
              "defers": "points to the documents"}

_MARKDOWN_SPECIALS = str.maketrans({c: "\\" + c for c in "\\`*_{}[]<>()#+-.!|~:$"})


def markdown_text(text: str) -> str:
    """``text`` shown literally inside Streamlit Markdown (user and model text never becomes markup or HTML).

    >>> markdown_text("Crumb & Crust [1] *best*")
    'Crumb & Crust \\\\[1\\\\] \\\\*best\\\\*'
    """
    return text.translate(_MARKDOWN_SPECIALS)


def glossary_markdown(labels, skip=()) -> str:
    """The glossary's line (:mod:`fairrag_core.glossary`) of each metric the ``labels`` name (those ``skip`` names
    left out: explained further up), as Markdown lines."""
    done = {t.key for t in terms_in(skip)}
    return "  \n".join(f"**{markdown_text(t.key)}** — {markdown_text(t.gloss)}" for t in terms_in(labels)
                        if t.key not in done)


def glossary_note(labels, container=None, *, skip=()) -> None:
    """Under a table or tiles: the glossary's line for each metric they show first (the words of the report)."""
    text = glossary_markdown(labels, skip)
    if text:
        (container or st).caption(text)


def explainer(text: str) -> None:
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(text)


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def metric_with_ci(column, label: str, interval, help: str | None = None, *, value: float | None = None,
                   reason: str | None = None, compact: bool = False) -> None:
    """A metric tile: the estimate inside the interval (``interval.estimate``), the interval underneath, and what
    they are; for a bias-corrected estimate also the plug-in over the samples (same text as the CLI's).

    Without an interval the tile shows ``value`` (e.g. the plug-in of a single sampled ranking) or "—", and
    ``reason`` underneath: why there is no number, or no interval. ``compact`` (a presenter's tour step, one
    1280×720 screen): only the interval underneath."""
    if interval is None:
        column.metric(label, "—" if value is None else f"{value:.3f}", help=help)
        if reason and not compact:
            column.caption(reason[:1].upper() + reason[1:])
        return
    column.metric(label, f"{interval.estimate:.3f}", help=help)
    if compact:
        column.caption(f"{interval.level:.0%} CI [{interval.low:.3f}, {interval.high:.3f}]")
        return
    caption = f"{interval.level:.0%} CI [{interval.low:.3f}, {interval.high:.3f}] · {interval.method_text}"
    if interval.plug_in != interval.estimate:
        caption += f" · plug-in {interval.plug_in:.3f}"
    column.caption(caption)


def chart_with_downloads(fig: go.Figure, data: pd.DataFrame, name: str, *, key: str) -> None:
    """Show ``fig`` and offer its data (CSV), a PNG (rendered on click) and a self-contained HTML file."""
    st.plotly_chart(fig, key=f"{key}_chart", config={"displaylogo": False})
    with st.container(horizontal=True):
        st.download_button("CSV", table_csv(data), file_name=f"{name}.csv", mime="text/csv", key=f"{key}_csv",
                           help="The data behind this chart")
        # Rendering a PNG drives a headless Chromium (~2 s): defer it to the click.
        st.download_button("PNG", lambda: figure_png(fig), file_name=f"{name}.png", mime="image/png",
                           key=f"{key}_png")
        st.download_button("HTML", lambda: figure_html(fig), file_name=f"{name}.html", mime="text/html",
                           key=f"{key}_html", help="Interactive chart, works offline")
