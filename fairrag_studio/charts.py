"""Plotly figure builders for FairRAG Studio: DataFrames and arrays in, ``go.Figure`` (or bytes/str) out.

The charts follow the analyses of Kim & Diaz (2025), "Towards Fair RAG: On the Impact of Fair Ranking in
Retrieval-Augmented Generation": EE-D by α (Fig. 3), relevance and utility against EE-D (Figs. 4–5) and
attributed against retrieval disparity, plus per-document, per-provider and per-group views of one run.

Every figure uses the ``plotly_white`` template, fonts large enough for a classroom projector and a fixed
height. A table without a required column raises ``ValueError`` naming the missing column(s).
This module must stay free of Streamlit so it can be tested and reused outside the app.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.colors as pc
import plotly.graph_objects as go
import plotly.io as pio

__all__ = [
    "attributed_vs_retrieval_disparity",
    "ee_d_by_alpha",
    "exposure_bars",
    "exposure_ledger_chart",
    "fairqr_delta",
    "fairqr_distributions",
    "figure_html",
    "figure_png",
    "metric_vs_disparity",
    "provider_bars",
    "provider_colours",
    "rankings_grid",
]

TEMPLATE = "plotly_white"
FONT_SIZE = 16
TITLE_SIZE = 22
EE_D_TITLE = "EE-D (expected exposure disparity; lower = fairer)"
ALPHA_TITLE = "α (0 = uniform sampling; larger = closer to the deterministic ranking)"

# Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
STOCHASTIC_COLOUR = "#0072B2"
DETERMINISTIC_COLOUR = "#E69F00"
TARGET_COLOUR = "#009E73"
ATTRIBUTED_COLOUR = "#CC79A7"
MEAN_COLOUR = "#222222"

_CHROMIUM = "/usr/bin/chromium"
_PNG_HINT = "PNG export needs Chromium (Debian package `chromium`): run `make install` or `apt-get install chromium`"


def _hex(colour: str) -> str:
    if colour.startswith("#"):
        return colour.upper()
    red, green, blue = pc.unlabel_rgb(colour)
    return f"#{int(red):02X}{int(green):02X}{int(blue):02X}"


# Safe (colour-blind friendly, 11 colours) first; Dark24 only extends it for larger provider sets.
_PROVIDER_PALETTE: tuple[str, ...] = tuple(
    dict.fromkeys(_hex(c) for c in (*pc.qualitative.Safe, *pc.qualitative.Dark24))
)


def provider_colours(names: Sequence[str]) -> dict[str, str]:
    """Map each distinct provider (or group) name to a hex colour, deterministically.

    Names are de-duplicated and sorted, then take the colours of ``plotly.colors.qualitative.Safe`` in order,
    followed by ``Dark24`` (35 distinct colours; beyond that the palette repeats). The same set of names
    therefore gives every provider the same colour in every chart.

    >>> provider_colours(["b", "a", "b"])
    {'a': '#88CCEE', 'b': '#CC6677'}
    """
    unique = sorted({str(name) for name in names})
    return {name: _PROVIDER_PALETTE[i % len(_PROVIDER_PALETTE)] for i, name in enumerate(unique)}


def _text_colour_on(background: str) -> str:
    red, green, blue = (int(background[i : i + 2], 16) for i in (1, 3, 5))
    return "#000000" if 0.299 * red + 0.587 * green + 0.114 * blue > 150 else "#FFFFFF"


def _require_columns(table: pd.DataFrame, columns: Sequence[str], chart: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{chart}: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(
            f"{chart}: missing column(s) {', '.join(repr(c) for c in missing)}; "
            f"the table has {[str(c) for c in table.columns]}"
        )
    if table.empty:
        raise ValueError(f"{chart}: the table has no rows to plot")


def _numeric(table: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(table[column], errors="coerce").astype(float)


def _has_values(values: pd.Series) -> bool:
    return bool(values.notna().any())


def _style(
    fig: go.Figure,
    *,
    title: str,
    x_title: str,
    y_title: str,
    height: int,
    subtitle: str | None = None,
    legend_title: str | None = None,
) -> go.Figure:
    title_spec: dict[str, object] = {"text": title, "font": {"size": TITLE_SIZE}, "x": 0.01, "xanchor": "left"}
    if subtitle:
        title_spec["subtitle"] = {"text": subtitle, "font": {"size": FONT_SIZE - 1}}
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        font={"size": FONT_SIZE},
        title=title_spec,
        legend={"title": {"text": legend_title or ""}, "font": {"size": FONT_SIZE - 1}},
        hoverlabel={"font": {"size": FONT_SIZE - 1}},
        margin={"t": 110 if subtitle else 80, "l": 80, "r": 30, "b": 70},
    )
    fig.update_xaxes(title_text=x_title, title_font={"size": FONT_SIZE + 1}, tickfont={"size": FONT_SIZE - 1})
    fig.update_yaxes(title_text=y_title, title_font={"size": FONT_SIZE + 1}, tickfont={"size": FONT_SIZE - 1})
    return fig


def _alpha_label(alpha: float) -> str:
    return "∞" if math.isinf(alpha) else f"{alpha:g}"


def _deterministic_mask(table: pd.DataFrame, alpha: pd.Series) -> pd.Series:
    """Rows of the deterministic retriever: ``system == "deterministic"`` or ``alpha == inf``."""
    mask = pd.Series(np.isinf(alpha.to_numpy(dtype=float, na_value=np.nan)), index=table.index)
    if "system" in table.columns:
        mask |= table["system"].astype(str).str.lower().eq("deterministic")
    return mask


# -- one query: the sampled rankings -------------------------------------------------------------------------------
_ROW_GAP = 0.5  # extra space between the deterministic row and sample 1, so the baseline stands apart


def rankings_grid(
    doc_ids: Sequence[str],
    providers: Sequence[str],
    titles: Sequence[str],
    rankings: np.ndarray,
    deterministic: np.ndarray,
    *,
    max_rows: int = 50,
) -> go.Figure:
    """Grid of sampled top-k rankings: one row per ranking, one column per rank, cells coloured by provider.

    The deterministic ranking is the top row, set apart by a dashed rule; below it come sampled rankings
    1..min(N, max_rows) of the stochastic retriever (Plackett–Luce sampling with knob α, Kim & Diaz 2025).
    Each cell shows the document id; hovering gives id, title, provider, rank and sample. One bar trace per
    provider, so the legend lists the providers that appear. The grid makes visible what Fig. 3 summarises:
    low α spreads the top k over many providers, high α repeats the deterministic list.

    ``doc_ids``, ``providers`` and ``titles`` describe the n candidates; ``rankings`` is an (N, k) integer
    array of candidate positions and ``deterministic`` a (k,) integer array.
    """
    n = len(doc_ids)
    if len(providers) != n or len(titles) != n:
        raise ValueError(
            f"rankings_grid: doc_ids, providers and titles must have the same length "
            f"(got {n}, {len(providers)}, {len(titles)})"
        )
    samples = np.asarray(rankings)
    baseline = np.asarray(deterministic)
    if samples.ndim != 2:
        raise ValueError(f"rankings_grid: rankings must be an (N, k) array, got shape {samples.shape}")
    k = samples.shape[1]
    if k == 0:
        raise ValueError("rankings_grid: rankings have k = 0 columns; nothing to draw")
    if baseline.shape != (k,):
        raise ValueError(f"rankings_grid: deterministic must have shape ({k},) like a ranking, got {baseline.shape}")
    for name, array in (("rankings", samples), ("deterministic", baseline)):
        if array.size and not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"rankings_grid: {name} must hold integer candidate positions, got dtype {array.dtype}")
        if array.size and (array.min() < 0 or array.max() >= n):
            raise ValueError(f"rankings_grid: {name} holds positions outside 0..{n - 1} (n = {n} candidates)")
    if max_rows < 1:
        raise ValueError(f"rankings_grid: max_rows must be ≥ 1, got {max_rows}")

    total = samples.shape[0]
    shown = min(total, max_rows)
    rows: list[tuple[str, float, np.ndarray]] = [("deterministic", 0.0, baseline)]
    rows += [(f"sample {s + 1}", s + 1 + _ROW_GAP, samples[s]) for s in range(shown)]

    provider_names = [str(p) for p in providers]
    colours = provider_colours(provider_names)
    cells: dict[str, list[tuple[float, int, list[object]]]] = {}
    for label, y, positions in rows:
        for rank, position in enumerate(positions.tolist(), start=1):
            provider = provider_names[position]
            info = [str(doc_ids[position]), str(titles[position]), provider, rank, label]
            cells.setdefault(provider, []).append((y, rank, info))

    fig = go.Figure()
    for provider in sorted(cells):
        entries = cells[provider]
        colour = colours[provider]
        # Horizontal bars of length 1 starting at rank − ½ fill each cell whatever the figure width.
        fig.add_trace(
            go.Bar(
                orientation="h",
                name=provider,
                y=[y for y, _, _ in entries],
                x=[1.0] * len(entries),
                base=[rank - 0.5 for _, rank, _ in entries],
                width=0.86,
                marker={"color": colour, "line": {"color": "white", "width": 1}},
                text=[info[0] for _, _, info in entries],
                textposition="inside",
                insidetextanchor="middle",
                textfont={"size": 11, "color": _text_colour_on(colour)},
                customdata=np.array([info for _, _, info in entries], dtype=object),
                hovertemplate=(
                    "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>provider: %{customdata[2]}"
                    "<br>rank %{customdata[3]} · %{customdata[4]}<extra></extra>"
                ),
            )
        )
    fig.add_shape(
        type="line", x0=0.5, x1=k + 0.5, y0=0.5 + _ROW_GAP / 2, y1=0.5 + _ROW_GAP / 2,
        line={"color": "#555555", "width": 2, "dash": "dash"},
    )
    subtitle = f"showing {shown} of {total} samples" if total > max_rows else f"{total} sampled rankings"
    _style(
        fig,
        title="Sampled top-k rankings, coloured by provider",
        subtitle=subtitle,
        x_title="rank",
        y_title="",
        height=max(320, int(170 + 26 * (shown + 1 + _ROW_GAP))),
        legend_title="provider",
    )
    fig.update_layout(barmode="overlay", bargap=0, uniformtext={"minsize": 8, "mode": "hide"},
                      margin={"t": 150})
    fig.update_xaxes(side="top", range=[0.5, k + 0.5], tickvals=list(range(1, k + 1)), showgrid=False,
                     zeroline=False)
    fig.update_yaxes(
        tickvals=[y for _, y, _ in rows],
        ticktext=["<b>deterministic</b>"] + [label for label, _, _ in rows[1:]],
        range=[rows[-1][1] + 0.6, -0.6],  # reversed, so the deterministic row is on top
        showgrid=False,
        zeroline=False,
    )
    return fig


# -- one query: exposure per document / provider --------------------------------------------------------------------
def _exposure_series_bars(table: pd.DataFrame, category: str, hover_label: str) -> list[go.Bar]:
    """The three bar series shared by the document and provider charts; target omitted if all NaN."""
    categories = table[category].astype(str).tolist()
    series = [
        ("stochastic (sampled)", "exposure", STOCHASTIC_COLOUR),
        ("deterministic", "deterministic_exposure", DETERMINISTIC_COLOUR),
        ("target", "target_exposure", TARGET_COLOUR),
    ]
    extra = table["provider"].astype(str).tolist() if category != "provider" else categories
    bars = []
    for name, column, colour in series:
        values = _numeric(table, column)
        if column == "target_exposure" and not _has_values(values):
            continue
        # Horizontal bars: names stay readable in a narrow column (no rotated, overlapping tick labels).
        bars.append(
            go.Bar(
                name=name,
                y=categories,
                x=values.tolist(),
                orientation="h",
                marker_color=colour,
                customdata=extra,
                hovertemplate=(
                    f"<b>%{{y}}</b><br>{hover_label}: %{{customdata}}<br>{name}: %{{x:.3f}}<extra></extra>"
                ),
            )
        )
    return bars


def _by_sampled_exposure(table: pd.DataFrame) -> pd.DataFrame:
    """Rows by sampled exposure, largest first (ties keep their order)."""
    return table.assign(_sort=_numeric(table, "exposure")).sort_values("_sort", ascending=False, kind="stable")


def _horizontal_layout(fig: go.Figure, n_rows: int) -> None:
    """Largest first at the top, legend above the plot, height growing with the number of rows."""
    fig.update_layout(barmode="group", height=max(380, 190 + 26 * n_rows * max(1, len(fig.data)) // 2),
                      legend=dict(orientation="h", yanchor="top", y=-0.12, xanchor="left", x=0),
                      margin={"b": 120})
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_xaxes(rangemode="tozero")


def exposure_bars(documents: pd.DataFrame, *, top: int | None = 20) -> go.Figure:
    """Expected exposure of each document: sampled (stochastic), deterministic and fair target, side by side.

    A document's expected exposure is the probability that it appears in the top k (Diaz et al. 2020);
    the target is the exposure a fair policy gives it (equal for equally useful documents). Documents are
    sorted by sampled exposure and only the first ``top`` are drawn (``None`` draws all). The target series
    is omitted when ``target_exposure`` is all NaN (no relevance labels). The per-query view behind
    Kim & Diaz (2025), Fig. 3.
    """
    _require_columns(
        documents, ["doc_id", "provider", "exposure", "deterministic_exposure", "target_exposure"], "exposure_bars"
    )
    if top is not None and top < 1:
        raise ValueError(f"exposure_bars: top must be ≥ 1 or None, got {top}")
    ordered = _by_sampled_exposure(documents)
    shown = ordered if top is None else ordered.head(top)
    fig = go.Figure(_exposure_series_bars(shown, "doc_id", "provider"))
    truncated = len(shown) < len(documents)
    subtitle = f"top {len(shown)} of {len(documents)} documents by sampled exposure" if truncated else None
    _style(
        fig,
        title="Expected exposure per document",
        subtitle=subtitle,
        x_title="expected exposure (P[in top k])",
        y_title="document (sorted by sampled exposure)",
        height=520,
    )
    _horizontal_layout(fig, len(shown))
    return fig


def provider_bars(providers: pd.DataFrame) -> go.Figure:
    """Expected exposure of each provider: sampled, deterministic and fair target, side by side.

    A provider's exposure is the expected number of its documents in the top k (sum of its documents'
    exposure). Providers are sorted by sampled exposure; the target series is omitted when
    ``target_exposure`` is all NaN. Provider-level view of the item fairness in Kim & Diaz (2025), Fig. 3.
    """
    _require_columns(providers, ["provider", "exposure", "deterministic_exposure", "target_exposure"], "provider_bars")
    ordered = _by_sampled_exposure(providers)
    fig = go.Figure(_exposure_series_bars(ordered, "provider", "provider"))
    _style(
        fig,
        title="Expected exposure per provider",
        x_title="expected # in the top k",
        y_title="provider",
        height=480,
    )
    _horizontal_layout(fig, len(ordered))
    return fig


# -- sweeps over α (paper Figs. 3–5) ------------------------------------------------------------------------------
def ee_d_by_alpha(table: pd.DataFrame) -> go.Figure:
    """EE-D against α, as in Kim & Diaz (2025), Fig. 3.

    The thick line is the mean EE-D over queries at each α with a ±1 standard-error band; faint grey lines
    are the individual queries. Rows of the deterministic retriever (``system == "deterministic"`` or
    ``alpha == inf``) are averaged into one horizontal dashed line labelled "deterministic". Without a
    ``system`` column every finite-α row counts as stochastic. Several rows for one (query, α) are averaged
    first, so each query weighs the same.
    """
    _require_columns(table, ["query_id", "alpha", "ee_d"], "ee_d_by_alpha")
    alpha = _numeric(table, "alpha")
    if alpha.isna().any():
        raise ValueError("ee_d_by_alpha: every alpha must be a number (use inf for the deterministic retriever)")
    data = pd.DataFrame({"query_id": table["query_id"].astype(str), "alpha": alpha, "ee_d": _numeric(table, "ee_d")})
    deterministic_rows = _deterministic_mask(table, alpha)
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
            names += [str(query_id)] * len(rows) + [None]
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
    _style(
        fig,
        title="Exposure disparity (EE-D) by α",
        subtitle=f"{n_queries} {'query' if n_queries == 1 else 'queries'}; line = mean, band = ±1 standard error",
        x_title=ALPHA_TITLE,
        y_title=EE_D_TITLE,
        height=520,
    )
    fig.update_yaxes(range=[0, 1.05])
    if alphas.size:
        fig.update_xaxes(type="linear", tickvals=alphas.tolist(), ticktext=[_alpha_label(a) for a in alphas])
    return fig


def _alpha_colours(alphas: Sequence[float]) -> list[str]:
    # Viridis is ordered and colour-blind safe; stop before its pale yellow end, which vanishes on white.
    if len(alphas) == 1:
        return pc.sample_colorscale("Viridis", [0.0])
    return pc.sample_colorscale("Viridis", [0.85 * i / (len(alphas) - 1) for i in range(len(alphas))])


def _metric_scatter(table: pd.DataFrame, metric: str, *, label: str, title: str, chart: str) -> go.Figure:
    _require_columns(table, ["alpha", "ee_d", metric], chart)
    alpha = _numeric(table, "alpha")
    data = pd.DataFrame(
        {
            "alpha": alpha,
            "ee_d": _numeric(table, "ee_d"),
            "value": _numeric(table, metric),
            "query_id": table["query_id"].astype(str) if "query_id" in table.columns else "",
            "deterministic": _deterministic_mask(table, alpha),
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
        name = f"α = {_alpha_label(alpha_value)}"
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
                customdata=[_alpha_label(a) for a in curve["alpha"]],
                line={"color": MEAN_COLOUR, "width": 3}, marker={"size": 8, "symbol": "square"},
                hovertemplate=f"α = %{{customdata}}<br>mean EE-D = %{{x:.3f}}<br>mean {label} = %{{y:.3f}}"
                "<extra></extra>",
            )
        )
    _style(
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
    label = "EAE-D (attributed exposure disparity; lower = fairer)"
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


# -- who is retrieved, who is cited ----------------------------------------------------------------------------------
def _and_list(words: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def exposure_ledger_chart(ledger: pd.DataFrame, *, group_column: str = "group") -> go.Figure:
    """Each group's share of retrieval exposure, of citation (attributed) exposure and its fair target share.

    Grouped bars per group, labelled as percentages. ``attributed_share`` and ``target_share`` are omitted
    when absent or all NaN (no attribution run / no relevance labels). The group-level counterpart of the
    EAE-D vs EE-D comparison in Kim & Diaz (2025), Figs. 4–5.
    """
    _require_columns(ledger, [group_column, "retrieval_share"], "exposure_ledger_chart")
    groups = ledger[group_column].astype(str).tolist()
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
        values = _numeric(ledger, column)
        if not _has_values(values):
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
    _style(
        fig,
        title="Exposure ledger: " + _and_list([
            word for word, trace in (("retrieved", "retrieval"), ("cited", "citations"), ("deserved", "target"))
            if any(t.name.startswith(trace) for t in fig.data)]) + " shares",
        x_title=group_column,
        y_title="share of exposure",
        height=480,
    )
    fig.update_layout(barmode="group")
    fig.update_yaxes(tickformat=".0%", range=[0, min(1.0, highest * 1.15) if highest > 0 else 1.0])
    return fig


# -- FAIR-QR (Chen & Fang): the iterations of query refinement -------------------------------------------------------
def fairqr_distributions(iterations: Sequence[Mapping[str, float]], target: Mapping[str, float], *,
                         labels: Sequence[str] | None = None) -> go.Figure:
    """Group distribution of the top K at every FAIR-QR iteration (bars) against the target (diamonds).

    ``iterations`` holds one {group: share} per iteration (iteration 0 = the original query);
    ``labels`` names them (default "iteration 0", ...). Groups are the target's, in its order.
    """
    if not iterations:
        raise ValueError("fairqr_distributions: no iterations to draw")
    groups = list(target)
    names = list(labels) if labels is not None else [f"iteration {i}" for i in range(len(iterations))]
    shades = pc.sample_colorscale("Blues", np.linspace(0.35, 0.95, len(iterations)).tolist())
    fig = go.Figure()
    for name, dist, colour in zip(names, iterations, shades):
        fig.add_trace(go.Bar(name=name, x=groups, y=[float(dist.get(g, 0.0)) for g in groups], marker_color=colour,
                             hovertemplate=f"<b>%{{x}}</b><br>{name}: %{{y:.0%}}<extra></extra>"))
    fig.add_trace(go.Scatter(name="target", x=groups, y=[float(target[g]) for g in groups], mode="markers",
                             marker={"symbol": "diamond", "size": 14, "color": TARGET_COLOUR,
                                     "line": {"width": 1, "color": MEAN_COLOUR}},
                             hovertemplate="<b>%{x}</b><br>target: %{y:.0%}<extra></extra>"))
    _style(fig, title="Group shares in the top K, iteration by iteration", x_title="group",
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
    _style(fig, title="Δ per iteration (lower = closer)", x_title="iteration",
           y_title="Δ = KL(target ‖ top K)", height=360)
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(rangemode="tozero")
    return fig


# -- export -----------------------------------------------------------------------------------------------------------
def figure_png(fig: go.Figure, *, width: int = 1000, height: int | None = None, scale: float = 2) -> bytes:
    """Render ``fig`` to PNG bytes with kaleido (which drives a headless Chromium).

    Uses ``/usr/bin/chromium`` when ``BROWSER_PATH`` is unset; any failure becomes a ``RuntimeError``
    that says how to install Chromium. ``height`` defaults to the figure's own height.
    """
    if not os.environ.get("BROWSER_PATH") and Path(_CHROMIUM).exists():
        os.environ["BROWSER_PATH"] = _CHROMIUM
    try:
        return pio.to_image(fig, format="png", width=width, height=height, scale=scale)
    except Exception as exc:  # kaleido raises many types (missing browser, timeouts, choreographer errors)
        raise RuntimeError(f"{_PNG_HINT}. Export failed with {type(exc).__name__}: {exc}") from exc


def figure_html(fig: go.Figure, *, include_plotlyjs: bool | str = True) -> str:
    """A complete HTML page for ``fig``; by default plotly.js is inlined, so it works offline (no CDN)."""
    return fig.to_html(full_html=True, include_plotlyjs=include_plotlyjs)
