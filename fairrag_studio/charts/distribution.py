"""How exposure is spread over thousands of providers: the Lorenz curve and its Gini coefficient.

A top-N chart shows who gets the most; at 2,000 providers the question is also how unequal the whole is. The Lorenz
curve (Lorenz 1905) plots, providers sorted from least to most exposed, the share of all exposure held by the
poorest fraction p of them; the diagonal is perfect equality. The Gini coefficient is twice the area between the
diagonal and the curve: 0 when every provider gets the same, (n − 1)/n when one provider gets everything.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .style import MEAN_COLOUR, numeric, require_columns, style

__all__ = ["gini", "lorenz_points", "lorenz_chart", "POINTS"]

POINTS = 400  # points drawn per curve at most: a curve over 60,000 providers stays a few kB


def gini(values: Sequence[float] | np.ndarray) -> float:
    """The Gini coefficient of non-negative ``values``: G = Σᵢ (2i − n − 1) xᵢ / (n Σ x), values sorted ascending,
    i = 1..n (the mean absolute difference over twice the mean); NaN when there is nothing to share.

    >>> gini([1, 1, 1, 1]), gini([0, 0, 0, 4]), round(gini([1, 2, 3, 4]), 4)
    (0.0, 0.75, 0.25)
    """
    x = np.sort(np.asarray(values, dtype=float))
    x = x[~np.isnan(x)]
    if x.size == 0 or x.sum() <= 0:
        return float("nan")
    if x[0] < 0:
        raise ValueError("gini: exposure cannot be negative")
    n = x.size
    i = np.arange(1, n + 1)
    return float(np.sum((2 * i - n - 1) * x) / (n * x.sum()))


def lorenz_points(values: Sequence[float] | np.ndarray, points: int = POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The Lorenz curve of ``values``: (share of providers, share of the total) from (0, 0) to (1, 1), at most
    ``points`` + 1 points (evenly spaced in the providers' share; the curve is piecewise linear between them).

    >>> p, s = lorenz_points([0, 0, 0, 4])
    >>> p.tolist(), s.tolist()
    ([0.0, 0.25, 0.5, 0.75, 1.0], [0.0, 0.0, 0.0, 0.0, 1.0])
    """
    x = np.sort(np.asarray(values, dtype=float))
    x = x[~np.isnan(x)]
    share = np.concatenate([[0.0], np.cumsum(x) / x.sum()]) if x.size and x.sum() > 0 else np.zeros(x.size + 1)
    fraction = np.arange(x.size + 1) / max(x.size, 1)
    if x.size > points:
        keep = np.unique(np.round(np.linspace(0, x.size, points + 1)).astype(int))
        fraction, share = fraction[keep], share[keep]
    return fraction, share


def lorenz_chart(table: pd.DataFrame, series: Sequence[tuple[str, str, str]], *, noun: str = "providers",
                 title: str | None = None) -> go.Figure:
    """One Lorenz curve per ``(name, column, colour)`` of ``table`` (one row per provider or group), each named
    with its Gini coefficient, over the diagonal of equality. Series whose column is missing or all NaN are left
    out (no relevance labels: no target)."""
    require_columns(table, [column for _, column, _ in series[:1]], "lorenz_chart")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="equality (Gini 0)", hoverinfo="skip",
                             line={"color": MEAN_COLOUR, "dash": "dot", "width": 1.5}))
    for name, column, colour in series:
        if column not in table or not numeric(table, column).notna().any():
            continue
        values = numeric(table, column).clip(lower=0)
        fraction, share = lorenz_points(values)
        fig.add_trace(go.Scatter(
            x=fraction, y=share, mode="lines", name=f"{name} (Gini {gini(values):.2f})",
            line={"color": colour, "width": 3},
            hovertemplate=f"the least exposed %{{x:.0%}} of {noun} get %{{y:.1%}} of the {name} exposure"
                          "<extra></extra>"))
    style(fig, title=title or f"How exposure is spread over all {len(table):,} {noun}",
          subtitle=f"Lorenz curve: {noun} from least to most exposed; the further below the diagonal, the more "
                   "unequal",
          x_title=f"share of {noun} (least exposed first)", y_title="share of exposure", height=460,
          # the legend in the upper left, above the diagonal, where no Lorenz curve goes
          layout={"legend": {"yanchor": "top", "y": 0.98, "xanchor": "left", "x": 0.02,
                             "bgcolor": "rgba(255,255,255,0.85)"}},
          x_axis={"tickformat": ".0%", "range": [0, 1]}, y_axis={"tickformat": ".0%", "range": [0, 1]})
    return fig
