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
    hex_colour,
    label,
    style,
)

__all__ = ["fairqr_distributions", "fairqr_delta", "iteration_colours"]

# cmocean "dense" (Thyng et al. 2016): light blue → violet → dark plum, lightness falling steadily with the hue
# turning at the same time, so neighbouring iterations differ in both. Six iterations are at least ΔE00 13.9
# apart (≥ 11.2 with protanopia, deuteranopia or tritanopia simulated; tests/studio/test_palette.py), where the
# "Blues" scale used before gave six near-identical blues. The ends are trimmed: the palest blue stays visible
# on white (contrast 1.5:1, helped by the bars' dark outline) and the darkest is plum, not black. No green, so
# the bars never look like the green target diamonds.
_ITERATION_SCALE = "dense"
_ITERATION_RANGE = (0.12, 0.94)


def iteration_colours(count: int) -> list[str]:
    """``count`` colours for FAIR-QR iterations 0, 1, ...: from light (the original query) to dark (the last
    refinement), evenly spaced along the "dense" scale; a single iteration gets the dark end.

    >>> iteration_colours(3)
    ['#B4D7E4', '#7769CD', '#471238']
    """
    if count < 1:
        return []
    low, high = _ITERATION_RANGE
    positions = np.linspace(low, high, count).tolist() if count > 1 else [high]
    return [hex_colour(c) for c in pc.sample_colorscale(_ITERATION_SCALE, positions)]


def fairqr_distributions(iterations: Sequence[Mapping[str, float]], target: Mapping[str, float], *,
                         labels: Sequence[str] | None = None) -> go.Figure:
    """Group distribution of the top K at every FAIR-QR iteration (bars) against the target (diamonds).

    ``iterations`` holds one {group: share} per iteration (iteration 0 = the original query);
    ``labels`` names them (default "iteration 0", ...). Groups are the target's, in its order. The bars run
    from light (iteration 0) to dark (the last iteration): :func:`iteration_colours`.
    """
    if not iterations:
        raise ValueError("fairqr_distributions: no iterations to draw")
    groups = list(target)
    shown_groups = [label(g) for g in groups]  # user text: escaped for Plotly's HTML-like labels
    names = [label(n) for n in labels] if labels is not None else [f"iteration {i}" for i in range(len(iterations))]
    shades = iteration_colours(len(iterations))
    fig = go.Figure()
    for name, dist, colour in zip(names, iterations, shades):
        # a thin dark outline keeps the pale first bars visible on white and on a washed-out projector
        fig.add_trace(go.Bar(name=name, x=shown_groups, y=[float(dist.get(g, 0.0)) for g in groups],
                             marker={"color": colour, "line": {"width": 1, "color": MEAN_COLOUR}},
                             hovertemplate=f"<b>%{{x}}</b><br>{name}: %{{y:.0%}}<extra></extra>"))
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
    # The direction goes under the title: in the page's narrower column (2 of 5 at 1400 px) one line was cut
    style(fig, title="Δ per iteration", subtitle=GLOSSARY["Δ"].direction, x_title="iteration",
          y_title="Δ = KL(target ‖ top K)", height=360)
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(rangemode="tozero")
    return fig


