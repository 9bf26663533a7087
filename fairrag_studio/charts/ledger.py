"""The exposure ledger as a chart: who is retrieved, who is cited, who the fair target would expose — and the gaps.

The upper panel draws the three shares per group as bars; the lower panel (when the ledger has a fair target)
draws the gaps to that target as dots with their 95% intervals around a zero line, so a reader sees at a glance
which groups are over- or under-exposed and whether the interval leaves no doubt. The words (axis titles, legend
entries) come from :mod:`fairrag_core.glossary`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from fairrag_core.audit.ledger import LEDGER_COLUMNS, TOP_PROVIDERS, ledger_noun, top_with_others
from fairrag_core.glossary import GLOSSARY

from .style import (
    ATTRIBUTED_COLOUR,
    FONT_SIZE,
    OTHERS_COLOUR,
    STOCHASTIC_COLOUR,
    TARGET_COLOUR,
    axis_labels,
    clip_others,
    has_values,
    label,
    labels,
    numeric,
    require_columns,
    style,
)

__all__ = ["exposure_ledger_chart", "GAP_SERIES"]

#: The gap traces of the lower panel: (legend name, share column, interval columns when the ledger has them).
GAP_SERIES = (
    ("gap (retrieval − target)", "retrieval_share", ("share_gap_low", "share_gap_high")),
    ("gap (attributed − target)", "attributed_share", ("attributed_gap_low", "attributed_gap_high")),
)


def _and_list(words: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def _gap_trace(ledger: pd.DataFrame, groups: list[str], name: str, share: str, bounds: tuple[str, str],
               colour: str) -> tuple[go.Scatter, float] | None:
    """One gap series (share − target) as dots, with error bars where the ledger has the interval's bounds, and
    how far from zero it reaches (interval included)."""
    if share not in ledger or not has_values(numeric(ledger, share)):
        return None
    gap = numeric(ledger, share) - numeric(ledger, "target_share")
    if not has_values(gap):
        return None
    with_interval = all(b in ledger for b in bounds) and has_values(numeric(ledger, bounds[0]))
    error, low, high = None, gap, gap
    if with_interval:
        low, high = numeric(ledger, bounds[0]).fillna(gap), numeric(ledger, bounds[1]).fillna(gap)
        error = {"type": "data", "symmetric": False, "array": (high - gap).clip(lower=0).tolist(),
                 "arrayminus": (gap - low).clip(lower=0).tolist(), "thickness": 2, "width": 6}
    legend = name + (" with its 95% interval" if with_interval else " (no interval computed)")
    reach = float(np.nanmax(np.abs(np.concatenate([low.to_numpy(), high.to_numpy(), gap.to_numpy()]))))
    return go.Scatter(
        name=legend, x=groups, y=gap.tolist(), mode="markers", error_y=error, offsetgroup=share,
        marker={"color": colour, "size": 12, "symbol": "diamond" if share == "retrieval_share" else "circle",
                "line": {"width": 1, "color": "#FFFFFF"}},
        hovertemplate=f"<b>%{{x}}</b><br>{name}: %{{y:+.1%}}<extra></extra>",
    ), reach


def exposure_ledger_chart(ledger: pd.DataFrame, *, group_column: str = "group", gaps: bool = True,
                          top: int | None = TOP_PROVIDERS) -> go.Figure:
    """Each group's share of retrieval exposure, of citation (attributed) exposure and its fair target share, and
    (``gaps``, when there is a target) the gaps retrieval − target and attributed − target with their intervals.

    Upper panel: grouped bars per group, labelled as percentages. ``attributed_share`` and ``target_share`` are
    omitted when absent or all NaN (no attribution run / no relevance labels). Lower panel: one dot per group and
    gap around a zero line, with the 95% interval of ``share_gap_low/high`` (and of ``attributed_gap_low/high``
    when the ledger has them; without, the legend says that gap has no interval). The group-level counterpart of
    the EAE-D vs EE-D comparison in Kim & Diaz (2025), Figs. 4–5.

    More than ``top`` groups (:data:`~fairrag_core.audit.ledger.TOP_PROVIDERS`; ``None``: draw all): the chart
    turns on its side (:func:`_top_ledger_chart`), so names read horizontally at any number of groups.
    """
    require_columns(ledger, [group_column, "retrieval_share"], "exposure_ledger_chart")
    if top is not None and len(ledger) > top:
        return _top_ledger_chart(ledger, group_column, gaps, top)
    groups = labels(ledger[group_column].astype(str))  # user text: escaped for Plotly's HTML-like labels
    series = [
        ("retrieval (exposure share)", "retrieval_share", STOCHASTIC_COLOUR),
        ("citations (attributed share)", "attributed_share", ATTRIBUTED_COLOUR),
        ("target (fair share)", "target_share", TARGET_COLOUR),
    ]
    bars, highest = [], 0.0
    for name, column, colour in series:
        if column not in ledger.columns:
            continue
        values = numeric(ledger, column)
        if not has_values(values):
            continue
        highest = max(highest, float(values.max()))
        bars.append(go.Bar(
            name=name, x=groups, y=values.tolist(), marker_color=colour, offsetgroup=column,
            # labels only when bars are wide enough to keep neighbours' labels apart
            texttemplate="%{y:.0%}" if len(groups) * 3 <= 24 else None, textposition="outside", cliponaxis=False,
            hovertemplate=f"<b>%{{x}}</b><br>{name}: %{{y:.1%}}<extra></extra>",
        ))
    gap_traces, reach = [], 0.05
    has_target = "target_share" in ledger and has_values(numeric(ledger, "target_share"))
    if gaps and has_target:
        for (name, share, bounds), colour in zip(GAP_SERIES, (STOCHASTIC_COLOUR, ATTRIBUTED_COLOUR)):
            found = _gap_trace(ledger, groups, name, share, bounds, colour)
            if found is not None:
                gap_traces.append(found[0])
                reach = max(reach, found[1])
    words = _and_list([word for word, trace in (("retrieved", "retrieval"), ("cited", "citations"),
                                                ("deserved", "target")) if any(b.name.startswith(trace) for b in bars)])
    x_title = label(group_column)
    if not gap_traces:
        fig = go.Figure(bars)
        style(fig, title=f"Exposure ledger: {words} shares", x_title=x_title, y_title="share of exposure",
              height=480, subtitle=None if has_target or not gaps else
              "No gap to draw: the fair target needs relevance labels")
        fig.update_layout(barmode="group")
        fig.update_yaxes(tickformat=".0%", range=[0, min(1.0, highest * 1.15) if highest > 0 else 1.0])
        return fig
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.58, 0.42], vertical_spacing=0.08)
    for trace in bars:
        fig.add_trace(trace, row=1, col=1)
    for trace in gap_traces:
        fig.add_trace(trace, row=2, col=1)
    style(fig, title=f"Exposure ledger: {words} shares, and the gaps to the fair target", x_title="",
          y_title="share of exposure", height=720,
          subtitle="Gap: " + GLOSSARY["gap (retrieval − target)"].direction)
    fig.update_layout(barmode="group", scattermode="group", scattergap=0.55,
                      # above the panels, under the title: long, rotated group names below never run into it
                      legend={"orientation": "h", "yref": "paper", "yanchor": "bottom", "y": 1.02, "x": 0})
    fig.update_xaxes(title_text=x_title, row=2, col=1)
    fig.update_yaxes(tickformat=".0%", range=[0, min(1.0, highest * 1.15) if highest > 0 else 1.0], row=1, col=1)
    fig.update_yaxes(title_text="gap to the target", tickformat="+.0%", zeroline=True, zerolinewidth=2,
                     zerolinecolor="#52606D", range=[-reach * 1.15, reach * 1.15], row=2, col=1)
    fig.update_layout(margin={"t": 210}, title={"yref": "container", "y": 0.985, "yanchor": "top"})
    return fig


_SHARES = (("retrieval (exposure share)", "retrieval_share", STOCHASTIC_COLOUR),
           ("citations (attributed share)", "attributed_share", ATTRIBUTED_COLOUR),
           ("target (fair share)", "target_share", TARGET_COLOUR))


def _top_ledger_chart(ledger: pd.DataFrame, group_column: str, gaps: bool, top: int) -> go.Figure:
    """The ledger of many groups (2,000 providers): the ``top`` with the most retrieval exposure as horizontal bars
    (full names cut in the middle, given whole in the hover) and the rest summed in one hatched "all others" row;
    beside them, the gaps to the fair target with their intervals. At most ``top`` + 1 rows, whatever the number
    of groups; the spread over all of them is :func:`~.distribution.lorenz_chart`'s."""
    by = "retrieval_exposure" if "retrieval_exposure" in ledger else "retrieval_share"
    noun = ledger_noun(ledger.attrs.get("by"))
    chosen = top_with_others(ledger, group=group_column, by=by, summed=LEDGER_COLUMNS[1:], n=top, noun=noun,
                             what="retrieval exposure")
    table = chosen.with_others(group_column)
    names = axis_labels(table[group_column])
    full = labels(table[group_column].astype(str))
    hatch = [""] * (len(table) - 1) + ["/"]
    has_target = "target_share" in table and has_values(numeric(chosen.shown, "target_share"))
    panels = 2 if gaps and has_target else 1
    fig = make_subplots(rows=1, cols=panels, shared_yaxes=True, horizontal_spacing=0.04,
                        column_widths=[0.6, 0.4] if panels == 2 else None)
    series = [(name, column, colour) for name, column, colour in _SHARES
              if column in table and has_values(numeric(chosen.shown, column))]
    for name, column, colour in series:
        fig.add_trace(go.Bar(name=name, y=names, x=numeric(table, column).tolist(), orientation="h",
                             marker={"color": colour, "pattern": {"shape": hatch, "fgcolor": OTHERS_COLOUR}},
                             customdata=full, hovertemplate=f"<b>%{{customdata}}</b><br>{name}: %{{x:.1%}}"
                                                            "<extra></extra>"), row=1, col=1)
    end = clip_others(fig, chosen.shown, chosen.others or {}, [(n.split(" ")[0], c) for n, c, _ in series],
                      names[-1], value_format=".1%")
    if panels == 2:
        for (name, share, bounds), colour in zip(GAP_SERIES, (STOCHASTIC_COLOUR, ATTRIBUTED_COLOUR)):
            if share not in table or not has_values(numeric(table, share)):
                continue
            gap = numeric(table, share) - numeric(table, "target_share")
            error = None
            if all(b in table for b in bounds) and has_values(numeric(table, bounds[0])):
                low, high = numeric(table, bounds[0]).fillna(gap), numeric(table, bounds[1]).fillna(gap)
                error = {"type": "data", "symmetric": False, "array": (high - gap).clip(lower=0).tolist(),
                         "arrayminus": (gap - low).clip(lower=0).tolist(), "thickness": 2, "width": 5}
            fig.add_trace(go.Scatter(
                name=name, y=names, x=gap.tolist(), mode="markers", error_x=error, customdata=full,
                marker={"color": colour, "size": 11, "symbol": "diamond" if share == "retrieval_share" else "circle",
                        "line": {"width": 1, "color": "#FFFFFF"}},
                hovertemplate=f"<b>%{{customdata}}</b><br>{name}: %{{x:+.1%}}<extra></extra>"), row=1, col=2)
        reach = max(0.001, float(np.nanmax(np.abs((numeric(chosen.shown, "retrieval_share")
                                                   - numeric(chosen.shown, "target_share")).to_numpy()))))
        rest = chosen.others or {}
        gap = rest.get("retrieval_share", np.nan) - rest.get("target_share", np.nan)
        if gap == gap and abs(gap) > 1.3 * reach:  # all others' gap, beyond the axis: written at its edge
            fig.add_annotation(x=np.sign(gap) * reach * 1.3, y=names[-1], xref="x2", yref="y", showarrow=False,
                               xanchor="left" if gap < 0 else "right", bgcolor="rgba(255,255,255,0.9)",
                               text=("← " if gap < 0 else "") + f"{gap:+.1%}" + (" →" if gap > 0 else ""),
                               font={"size": FONT_SIZE - 2})
    style(fig, title="Exposure ledger: the most exposed, and all others", subtitle=f"Showing {chosen.rule}",
          x_title="share of exposure", y_title="", height=max(480, 230 + 34 * len(table)),
          layout={"barmode": "group", "legend": {"orientation": "h", "yanchor": "top", "y": -0.1, "x": 0},
                  "margin": {"b": 140, "l": 20}},
          y_axis={"autorange": "reversed", "automargin": True})
    small = (end[1] if end else float(numeric(table, "retrieval_share").max())) < 0.05
    fig.update_xaxes(tickformat=".1%" if small else ".0%", range=end or [0, None], row=1, col=1)
    if panels == 2:
        fig.update_xaxes(title_text="gap to the target", tickformat="+.1%" if reach < 0.05 else "+.0%",
                         zeroline=True, zerolinewidth=2, zerolinecolor="#52606D", range=[-reach * 1.3, reach * 1.3],
                         row=1, col=2)
    return fig
