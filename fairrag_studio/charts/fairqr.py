"""FAIR-QR (Chen & Fang): group shares per refinement iteration against the target, and Δ per iteration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

from fairrag_core.glossary import GLOSSARY

from .style import (
    MEAN_COLOUR,
    STOCHASTIC_COLOUR,
    TARGET_COLOUR,
    label,
    style,
)

__all__ = ["fairqr_distributions", "fairqr_delta"]


def fairqr_distributions(iterations: Sequence[Mapping[str, float]], target: Mapping[str, float], *,
                         labels: Sequence[str] | None = None) -> go.Figure:
    """Group distribution of the top K at every FAIR-QR iteration (bars) against the target (diamonds).

    ``iterations`` holds one {group: share} per iteration (iteration 0 = the original query);
    ``labels`` names them (default "iteration 0", ...). Groups are the target's, in its order.
    """
    if not iterations:
        raise ValueError("fairqr_distributions: no iterations to draw")
    groups = list(target)
    shown_groups = [label(g) for g in groups]  # user text: escaped for Plotly's HTML-like labels
    names = [label(n) for n in labels] if labels is not None else [f"iteration {i}" for i in range(len(iterations))]
    shades = pc.sample_colorscale("Blues", np.linspace(0.35, 0.95, len(iterations)).tolist())
    fig = go.Figure()
    for name, dist, colour in zip(names, iterations, shades):
        fig.add_trace(go.Bar(name=name, x=shown_groups, y=[float(dist.get(g, 0.0)) for g in groups],
                             marker_color=colour, hovertemplate=f"<b>%{{x}}</b><br>{name}: %{{y:.0%}}<extra></extra>"))
    fig.add_trace(go.Scatter(name="target", x=shown_groups, y=[float(target[g]) for g in groups], mode="markers",
                             marker={"symbol": "diamond", "size": 14, "color": TARGET_COLOUR,
                                     "line": {"width": 1, "color": MEAN_COLOUR}},
                             hovertemplate="<b>%{x}</b><br>target: %{y:.0%}<extra></extra>"))
    style(fig, title="Group shares in the top K, iteration by iteration", x_title="group",
           y_title="share of the top K", height=440)
    fig.update_layout(barmode="group")
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    return fig


def fairqr_delta(deltas: Sequence[float], *, chosen: int | None = None) -> go.Figure:
    """Δ = KL(target ‖ current) per FAIR-QR iteration; the loop stops when it no longer decreases.

    ``chosen`` marks the iteration whose list was re-ranked (the lowest Δ).
    """
    if not deltas:
        raise ValueError("fairqr_delta: no Δ values to draw")
    x = list(range(len(deltas)))
    fig = go.Figure(go.Scatter(x=x, y=[float(d) for d in deltas], mode="lines+markers", name="Δ",
                               line={"color": STOCHASTIC_COLOUR, "width": 3}, marker={"size": 10},
                               hovertemplate="iteration %{x}<br>Δ = %{y:.4f}<extra></extra>"))
    if chosen is not None and 0 <= chosen < len(deltas):
        fig.add_trace(go.Scatter(x=[chosen], y=[float(deltas[chosen])], mode="markers", name="kept (lowest Δ)",
                                 marker={"size": 18, "symbol": "star", "color": TARGET_COLOUR},
                                 hovertemplate="kept: iteration %{x}<extra></extra>"))
    style(fig, title=f"Δ per iteration ({GLOSSARY['Δ'].direction})", x_title="iteration",
           y_title="Δ = KL(target ‖ top K)", height=360)
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(rangemode="tozero")
    return fig


