"""Fairness over time as charts (the Monitor page): each provider's share of retrieval exposure per window (the top
providers, the rest summed as "all others") and EE-D per window with its interval, each with the deployment changes
as vertical marks."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from fairrag_core.audit.ledger import TOP_PROVIDERS, others_label, top_with_others

from .style import EE_D_TITLE, OTHERS_COLOUR, STOCHASTIC_COLOUR, label, provider_colours, require_columns, style

__all__ = ["shares_over_time", "ee_d_over_time"]


def _times(values: pd.Series) -> list:
    return pd.to_datetime(values, utc=True).dt.tz_localize(None).tolist()


def _marks(fig: go.Figure, changes: Sequence[dict]) -> None:
    """A dashed vertical line and its label at each change (``{"at", "label"}``)."""
    for change in changes:
        at = pd.Timestamp(change["at"]).tz_convert(None)
        fig.add_vline(x=at, line={"dash": "dash", "color": "#555555", "width": 2})
        fig.add_annotation(x=at, y=1, yref="paper", text=label(change["label"]), showarrow=False, xanchor="left",
                           yanchor="bottom", font={"size": 13})


def shares_over_time(shares: pd.DataFrame, changes: Sequence[dict] = (), *, top: int | None = TOP_PROVIDERS
                     ) -> go.Figure:
    """One line per provider: its share of retrieval exposure in each window (``window``, ``provider``,
    ``retrieval_share``), the ``top`` providers by share summed over windows, the rest as one "all others" line."""
    require_columns(shares, ["window", "provider", "retrieval_share"], "shares_over_time")
    totals = shares.groupby("provider", as_index=False)["retrieval_share"].sum()
    chosen = top_with_others(totals, group="provider", by="retrieval_share", summed=("retrieval_share",), n=top)
    names = chosen.shown["provider"].astype(str).tolist()
    colours = provider_colours(names)
    fig = go.Figure()
    for name in names:
        rows = shares[shares["provider"].astype(str) == name].sort_values("window")
        fig.add_trace(go.Scatter(x=_times(rows["window"]), y=rows["retrieval_share"].tolist(), name=label(name),
                                 mode="lines+markers", line={"color": colours[name], "width": 3},
                                 hovertemplate=f"<b>{label(name)}</b><br>%{{x|%Y-%m-%d %H:%M}}: %{{y:.1%}}"
                                               "<extra></extra>"))
    if chosen.truncated:
        rest = (shares[~shares["provider"].astype(str).isin(names)].groupby("window", as_index=False)
                ["retrieval_share"].sum().sort_values("window"))
        fig.add_trace(go.Scatter(x=_times(rest["window"]), y=rest["retrieval_share"].tolist(),
                                 name=others_label(chosen.n_others), mode="lines+markers",
                                 line={"color": OTHERS_COLOUR, "width": 3, "dash": "dot"}))
    _marks(fig, changes)
    return style(fig, title="Share of retrieval exposure per window", x_title="window start (UTC)",
                 y_title="share of retrieval exposure", height=460, legend_title="provider",
                 y_axis={"tickformat": ".0%", "rangemode": "tozero"})


def ee_d_over_time(windows: pd.DataFrame, changes: Sequence[dict] = ()) -> go.Figure:
    """EE-D per window (``window``, ``ee_d``, ``ee_d_low``, ``ee_d_high``) with its bootstrap interval."""
    require_columns(windows, ["window", "ee_d", "ee_d_low", "ee_d_high"], "ee_d_over_time")
    rows = windows.sort_values("window")
    ee_d = rows["ee_d"].astype(float)
    error = {"type": "data", "symmetric": False, "thickness": 2, "width": 6,
             "array": (rows["ee_d_high"].astype(float) - ee_d).fillna(0).clip(lower=0).tolist(),
             "arrayminus": (ee_d - rows["ee_d_low"].astype(float)).fillna(0).clip(lower=0).tolist()}
    fig = go.Figure(go.Scatter(x=_times(rows["window"]), y=ee_d.tolist(), mode="lines+markers", error_y=error,
                               name="EE-D with its 95% interval", line={"color": STOCHASTIC_COLOUR, "width": 3},
                               hovertemplate="%{x|%Y-%m-%d %H:%M}: EE-D %{y:.3f}<extra></extra>"))
    _marks(fig, changes)
    return style(fig, title="EE-D per window", x_title="window start (UTC)", y_title=EE_D_TITLE, height=380,
                 y_axis={"rangemode": "tozero"})
