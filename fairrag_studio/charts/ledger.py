"""The exposure ledger as a chart: who is retrieved, who is cited, and who the fair target would expose."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from .style import (
    ATTRIBUTED_COLOUR,
    STOCHASTIC_COLOUR,
    TARGET_COLOUR,
    has_values,
    label,
    labels,
    numeric,
    require_columns,
    style,
)

__all__ = ["exposure_ledger_chart"]


def _and_list(words: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def exposure_ledger_chart(ledger: pd.DataFrame, *, group_column: str = "group") -> go.Figure:
    """Each group's share of retrieval exposure, of citation (attributed) exposure and its fair target share.

    Grouped bars per group, labelled as percentages. ``attributed_share`` and ``target_share`` are omitted
    when absent or all NaN (no attribution run / no relevance labels). The group-level counterpart of the
    EAE-D vs EE-D comparison in Kim & Diaz (2025), Figs. 4–5.
    """
    require_columns(ledger, [group_column, "retrieval_share"], "exposure_ledger_chart")
    groups = labels(ledger[group_column].astype(str))  # user text: escaped for Plotly's HTML-like labels
    series = [
        ("retrieval (exposure share)", "retrieval_share", STOCHASTIC_COLOUR),
        ("citations (attributed share)", "attributed_share", ATTRIBUTED_COLOUR),
        ("target (fair share)", "target_share", TARGET_COLOUR),
    ]
    fig = go.Figure()
    highest = 0.0
    for name, column, colour in series:
        if column not in ledger.columns:
            continue
        values = numeric(ledger, column)
        if not has_values(values):
            continue
        highest = max(highest, float(values.max()))
        fig.add_trace(
            go.Bar(
                name=name, x=groups, y=values.tolist(), marker_color=colour,
                # labels only when bars are wide enough to keep neighbours' labels apart
                texttemplate="%{y:.0%}" if len(groups) * 3 <= 24 else None, textposition="outside", cliponaxis=False,
                hovertemplate=f"<b>%{{x}}</b><br>{name}: %{{y:.1%}}<extra></extra>",
            )
        )
    style(
        fig,
        title="Exposure ledger: " + _and_list([
            word for word, trace in (("retrieved", "retrieval"), ("cited", "citations"), ("deserved", "target"))
            if any(t.name.startswith(trace) for t in fig.data)]) + " shares",
        x_title=label(group_column),
        y_title="share of exposure",
        height=480,
    )
    fig.update_layout(barmode="group")
    fig.update_yaxes(tickformat=".0%", range=[0, min(1.0, highest * 1.15) if highest > 0 else 1.0])
    return fig


