"""Sweeps over α: EE-D by α (Kim & Diaz 2025, Fig. 3), EE-R / EU / EAR against EE-D (Figs. 4–5) and attributed
against retrieval disparity (EAE-D vs EE-D with y = x)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.colors as pc
import plotly.graph_objects as go

from fairrag_core.glossary import GLOSSARY
from fairrag_core.metrics.registry import METRICS

from .style import (
    ALPHA_TITLE,
    DETERMINISTIC_COLOUR,
    EE_D_TITLE,
    FONT_SIZE,
    MEAN_COLOUR,
    STOCHASTIC_COLOUR,
    alpha_label,
    deterministic_mask,
    label,
    labels,
    numeric,
    require_columns,
    style,
)

__all__ = ["ee_d_by_alpha", "metric_vs_disparity", "attributed_vs_retrieval_disparity", "what_if_curve"]


def ee_d_by_alpha(table: pd.DataFrame) -> go.Figure:
    """EE-D against α, as in Kim & Diaz (2025), Fig. 3.

    The thick line is the mean EE-D over queries at each α with a ±1 standard-error band; faint grey lines
    are the individual queries. Rows of the deterministic retriever (``system == "deterministic"`` or
    ``alpha == inf``) are averaged into one horizontal dashed line labelled "deterministic". Without a
    ``system`` column every finite-α row counts as stochastic. Several rows for one (query, α) are averaged
    first, so each query weighs the same.
    """
    require_columns(table, ["query_id", "alpha", "ee_d"], "ee_d_by_alpha")
    alpha = numeric(table, "alpha")
    if alpha.isna().any():
        raise ValueError("ee_d_by_alpha: every alpha must be a number (use inf for the deterministic retriever)")
    data = pd.DataFrame({"query_id": table["query_id"].astype(str), "alpha": alpha, "ee_d": numeric(table, "ee_d")})
    deterministic_rows = deterministic_mask(table, alpha)
    data = data[data["ee_d"].notna()]
    stochastic = data[~deterministic_rows.loc[data.index]]
    baseline = data[deterministic_rows.loc[data.index]]
    if stochastic.empty and baseline.empty:
        raise ValueError("ee_d_by_alpha: no EE-D values to plot (every ee_d is NaN)")

    per_query = stochastic.groupby(["query_id", "alpha"], as_index=False)["ee_d"].mean()
    stats = per_query.groupby("alpha")["ee_d"].agg(["mean", "std", "count"]).sort_index()
    stats["se"] = (stats["std"] / np.sqrt(stats["count"])).fillna(0.0)
    alphas = stats.index.to_numpy(dtype=float)

    fig = go.Figure()
    if not per_query.empty:
        xs: list[float | None] = []
        ys: list[float | None] = []
        names: list[str | None] = []
        for query_id, rows in per_query.groupby("query_id", sort=True):
            rows = rows.sort_values("alpha")
            xs += rows["alpha"].tolist() + [None]
            ys += rows["ee_d"].tolist() + [None]
            names += [label(query_id)] * len(rows) + [None]
        # One trace with gaps instead of one per query keeps the legend and the browser light.
        fig.add_trace(
            go.Scatter(
                x=xs, y=ys, text=names, mode="lines", name="individual queries",
                line={"color": "rgba(120, 120, 120, 0.35)", "width": 1},
                hovertemplate="query %{text}<br>α = %{x}<br>EE-D = %{y:.3f}<extra></extra>",
            )
        )
        upper = (stats["mean"] + stats["se"]).tolist()
        lower = (stats["mean"] - stats["se"]).tolist()
        fig.add_trace(
            go.Scatter(
                x=alphas.tolist() + alphas[::-1].tolist(), y=upper + lower[::-1], mode="lines", fill="toself",
                fillcolor="rgba(0, 114, 178, 0.18)", line={"width": 0}, hoverinfo="skip",
                name="±1 standard error",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=alphas.tolist(), y=stats["mean"].tolist(), mode="lines+markers", name="mean over queries",
                line={"color": STOCHASTIC_COLOUR, "width": 3}, marker={"size": 9},
                customdata=np.column_stack([stats["se"], stats["count"]]),
                hovertemplate="α = %{x}<br>mean EE-D = %{y:.3f} ± %{customdata[0]:.3f}"
                "<br>%{customdata[1]} queries<extra></extra>",
            )
        )
    if not baseline.empty:
        level = float(baseline.groupby("query_id")["ee_d"].mean().mean())
        span = [float(alphas.min()), float(alphas.max())] if alphas.size else [0.0, 1.0]
        if span[0] == span[1]:
            span = [span[0] - 0.5, span[1] + 0.5]
        fig.add_trace(
            go.Scatter(
                x=span, y=[level, level], mode="lines", name="deterministic",
                line={"color": DETERMINISTIC_COLOUR, "width": 3, "dash": "dash"},
                hovertemplate="deterministic: mean EE-D = %{y:.3f}<extra></extra>",
            )
        )
        fig.add_annotation(
            x=span[1], y=level, text="deterministic", showarrow=False, xanchor="right", yanchor="bottom",
            font={"color": DETERMINISTIC_COLOUR, "size": FONT_SIZE},
        )
    n_queries = data["query_id"].nunique()
    style(
        fig,
        title="Exposure disparity (EE-D) by α",
        subtitle=f"{n_queries} {'query' if n_queries == 1 else 'queries'}; line = mean, band = ±1 standard error",
        x_title=ALPHA_TITLE,
        y_title=EE_D_TITLE,
        height=520,
    )
    fig.update_yaxes(range=[0, 1.05])
    if alphas.size:
        fig.update_xaxes(type="linear", tickvals=alphas.tolist(), ticktext=[alpha_label(a) for a in alphas])
    return fig


def _alpha_colours(alphas: Sequence[float]) -> list[str]:
    # Viridis is ordered and colour-blind safe; stop before its pale yellow end, which vanishes on white.
    if len(alphas) == 1:
        return pc.sample_colorscale("Viridis", [0.0])
    return pc.sample_colorscale("Viridis", [0.85 * i / (len(alphas) - 1) for i in range(len(alphas))])


def _metric_scatter(table: pd.DataFrame, metric: str, *, label: str, title: str, chart: str) -> go.Figure:
    require_columns(table, ["alpha", "ee_d", metric], chart)
    alpha = numeric(table, "alpha")
    data = pd.DataFrame(
        {
            "alpha": alpha,
            "ee_d": numeric(table, "ee_d"),
            "value": numeric(table, metric),
            "query_id": labels(table["query_id"].astype(str)) if "query_id" in table.columns else "",
            "deterministic": deterministic_mask(table, alpha),
        }
    )
    data = data.dropna(subset=["ee_d", "value"])
    if data.empty:
        raise ValueError(f"no {metric} values to plot: all {len(table)} rows have NaN {metric} or ee_d")
    stochastic = data[~data["deterministic"]]
    if stochastic["alpha"].isna().any():
        raise ValueError(f"{chart}: every alpha must be a number (use inf for the deterministic retriever)")
    baseline = data[data["deterministic"]]
    hover = f"query %{{customdata}}<br>EE-D = %{{x:.3f}}<br>{label} = %{{y:.3f}}"

    fig = go.Figure()
    alphas = sorted(stochastic["alpha"].unique().tolist())
    for alpha_value, colour in zip(alphas, _alpha_colours(alphas)):
        rows = stochastic[stochastic["alpha"] == alpha_value]
        name = f"α = {alpha_label(alpha_value)}"
        fig.add_trace(
            go.Scatter(
                x=rows["ee_d"].tolist(), y=rows["value"].tolist(), customdata=rows["query_id"].tolist(),
                mode="markers", name=name, legendgroup=name,
                marker={"color": colour, "size": 10, "opacity": 0.75, "line": {"color": "white", "width": 0.5}},
                hovertemplate=hover + f"<br>{name}<extra></extra>",
            )
        )
    if not baseline.empty:
        fig.add_trace(
            go.Scatter(
                x=baseline["ee_d"].tolist(), y=baseline["value"].tolist(), customdata=baseline["query_id"].tolist(),
                mode="markers", name="deterministic",
                marker={"color": DETERMINISTIC_COLOUR, "size": 12, "symbol": "diamond",
                        "line": {"color": MEAN_COLOUR, "width": 1}},
                hovertemplate=hover + "<br>deterministic<extra></extra>",
            )
        )
    if not stochastic.empty:
        curve = stochastic.groupby("alpha", as_index=False)[["ee_d", "value"]].mean()
        curve = curve.sort_values(["ee_d", "alpha"], kind="stable")
        fig.add_trace(
            go.Scatter(
                x=curve["ee_d"].tolist(), y=curve["value"].tolist(), mode="lines+markers", name="mean per α",
                customdata=[alpha_label(a) for a in curve["alpha"]],
                line={"color": MEAN_COLOUR, "width": 3}, marker={"size": 8, "symbol": "square"},
                hovertemplate=f"α = %{{customdata}}<br>mean EE-D = %{{x:.3f}}<br>mean {label} = %{{y:.3f}}"
                "<extra></extra>",
            )
        )
    style(
        fig,
        title=title,
        subtitle=f"{len(data)} runs (query × α); the line joins the mean of each α, ordered by EE-D",
        x_title=EE_D_TITLE,
        y_title=label,
        height=540,
        legend_title="retriever",
    )
    fig.update_xaxes(range=[-0.03, max(1.05, float(data["ee_d"].max()) * 1.03)])
    return fig


def metric_vs_disparity(table: pd.DataFrame, metric: str, *, label: str | None = None) -> go.Figure:
    """A relevance or utility metric against EE-D for every (query, α) run, as in Kim & Diaz (2025), Figs. 4–5.

    Points are coloured by α (one legend entry per α, deterministic runs as orange diamonds); the black
    line joins the per-α means of the stochastic runs, ordered by mean EE-D, i.e. the fairness–utility
    trade-off curve. Rows whose metric (or EE-D) is NaN are dropped; if none is left a ``ValueError``
    says so. ``label`` names the metric on the y axis (default: the column name).
    """
    shown = label or metric
    return _metric_scatter(
        table, metric, label=shown, title=f"{shown} vs exposure disparity", chart="metric_vs_disparity"
    )


def attributed_vs_retrieval_disparity(table: pd.DataFrame) -> go.Figure:
    """Attributed-exposure disparity (EAE-D) against retrieval exposure disparity (EE-D) per (query, α) run.

    Same layout as :func:`metric_vs_disparity` with the ``eae_d`` column, plus a dashed y = x line: points
    below it are runs whose citations spread exposure more fairly than the retrieved lists did, points above
    it are runs where the generator concentrates credit on fewer documents (Kim & Diaz 2025, EAE-D vs EE-D).
    """
    label = GLOSSARY["EAE-D"].axis_title  # "EAE-D (attributed exposure disparity; lower = fairer)"
    fig = _metric_scatter(
        table, "eae_d", label=label, title="Citation disparity vs retrieval disparity",
        chart="attributed_vs_retrieval_disparity",
    )
    plotted = [v for trace in fig.data for v in (*trace.x, *trace.y) if v is not None]
    top = max([1.0, *plotted])
    bottom = min([-0.03, *(v * 1.05 for v in plotted)])
    fig.add_trace(
        go.Scatter(
            x=[0.0, top], y=[0.0, top], mode="lines", name="y = x (citations as fair as retrieval)",
            line={"color": "#777777", "width": 2, "dash": "dash"}, hoverinfo="skip",
        )
    )
    fig.update_yaxes(range=[bottom, top * 1.05])
    return fig




def what_if_curve(curve: pd.DataFrame) -> go.Figure:
    """The what-if replay of a served log (:mod:`fairrag_core.audit.what_if`): mean EE-D and EE-R at each α of the
    grid with their percentile intervals over queries, against the system as served (dashed lines and their bands).

    ``curve`` is :attr:`~fairrag_core.audit.what_if.WhatIf.curve` (or its JSON records): the ``as served`` row
    first, then one row per α (``label`` "α = 2", "α = ∞").
    """
    require_columns(curve, ["system", "label", "ee_d", "ee_d_low", "ee_d_high"], "what_if_curve")
    served = curve[curve["system"] == "as served"]
    grid = curve[curve["system"] != "as served"]
    fig = go.Figure()
    ee_d, ee_r = METRICS["ee_d"], METRICS["ee_r"]  # a comparison with the system as served: its directions
    metrics = [("ee_d", ee_d.label, ee_d.in_comparison, STOCHASTIC_COLOUR)]
    if "ee_r" in curve and numeric(curve, "ee_r").notna().any():
        metrics.append(("ee_r", ee_r.label, ee_r.in_comparison, DETERMINISTIC_COLOUR))
    x = grid["label"].tolist()
    for column, short, meaning, colour in metrics:
        value, low, high = (numeric(grid, c) for c in (column, f"{column}_low", f"{column}_high"))
        fig.add_trace(go.Scatter(
            x=x, y=value, mode="lines+markers", name=f"{short} sampled at α ({meaning})",
            line={"color": colour, "width": 3}, marker={"size": 10},
            error_y={"type": "data", "symmetric": False, "array": (high - value).clip(lower=0).tolist(),
                     "arrayminus": (value - low).clip(lower=0).tolist(), "thickness": 1.5},
            hovertemplate="%{x}<br>" + short + " = %{y:.3f}<extra></extra>"))
        if not served.empty and pd.notna(served[column].iloc[0]):
            level = float(served[column].iloc[0])
            band_low, band_high = served[f"{column}_low"].iloc[0], served[f"{column}_high"].iloc[0]
            band = (f" [{float(band_low):.3f}, {float(band_high):.3f}]"
                    if pd.notna(band_low) and pd.notna(band_high) else "")
            # a legend entry, not an annotation: the two "as served" levels can be a hair apart
            fig.add_trace(go.Scatter(x=x, y=[level] * len(x), mode="lines", name=f"{short} as served {level:.3f}"
                                     f"{band}", line={"color": colour, "dash": "dash", "width": 2},
                                     hovertemplate=f"{short} as served = {level:.3f}{band}<extra></extra>"))
            if band:
                fig.add_hrect(y0=float(band_low), y1=float(band_high), fillcolor=colour, opacity=0.08, line_width=0)
    fig.update_xaxes(type="category")
    style(fig, title="What if the system had sampled?", x_title=ALPHA_TITLE, y_title="mean over queries",
          height=560, subtitle="bars and bands: 95% percentile bootstrap intervals over queries")
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.28, "x": 0})
    fig.update_layout(margin={"b": 170})
    return fig
