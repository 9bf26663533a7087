"""One query: the sampled rankings as a grid, and exposure per document and per provider (stochastic vs
deterministic vs the fair target; Kim & Diaz 2025, Eq. 5–6)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from fairrag_core.audit.ledger import TOP_PROVIDERS, others_label, top_with_others

from .style import (
    DETERMINISTIC_COLOUR,
    OTHERS_COLOUR,
    STOCHASTIC_COLOUR,
    TARGET_COLOUR,
    axis_labels,
    clip_others,
    has_values,
    label,
    labels,
    numeric,
    provider_colours,
    require_columns,
    style,
    text_colour_on,
)

__all__ = ["rankings_grid", "exposure_bars", "provider_bars"]


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
    in_cells = [provider_names[p] for _, _, positions in rows for p in positions.tolist()]
    colours = provider_colours(provider_names, counts=Counter(in_cells))
    cells: dict[str, list[tuple[float, int, list[object]]]] = {}
    for row_label, y, positions in rows:
        for rank, position in enumerate(positions.tolist(), start=1):
            provider = provider_names[position]
            info = [label(doc_ids[position]), label(titles[position]), label(provider), rank, row_label]
            cells.setdefault(provider, []).append((y, rank, info))

    fig = go.Figure()
    grey = sorted(p for p in cells if colours[p] == OTHERS_COLOUR)  # past TOP_PROVIDERS: one legend entry for all
    for provider in sorted(cells):
        entries = cells[provider]
        colour = colours[provider]
        legend = ({"legendgroup": "others", "showlegend": provider == grey[0], "name": others_label(len(grey))}
                  if colour == OTHERS_COLOUR else {"name": label(provider)})
        # Horizontal bars of length 1 starting at rank − ½ fill each cell whatever the figure width.
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=[y for y, _, _ in entries],
                x=[1.0] * len(entries),
                base=[rank - 0.5 for _, rank, _ in entries],
                width=0.86,
                marker={"color": colour, "line": {"color": "white", "width": 1}},
                text=[info[0] for _, _, info in entries],
                textposition="inside",
                insidetextanchor="middle",
                textfont={"size": 11, "color": text_colour_on(colour)},
                customdata=np.array([info for _, _, info in entries], dtype=object),
                hovertemplate=(
                    "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>provider: %{customdata[2]}"
                    "<br>rank %{customdata[3]} · %{customdata[4]}<extra></extra>"
                ),
                **legend,
            )
        )
    fig.add_shape(
        type="line", x0=0.5, x1=k + 0.5, y0=0.5 + _ROW_GAP / 2, y1=0.5 + _ROW_GAP / 2,
        line={"color": "#555555", "width": 2, "dash": "dash"},
    )
    subtitle = f"showing {shown} of {total} samples" if total > max_rows else f"{total} sampled rankings"
    style(
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
        ticktext=["<b>deterministic</b>"] + [row_label for row_label, _, _ in rows[1:]],
        range=[rows[-1][1] + 0.6, -0.6],  # reversed, so the deterministic row is on top
        showgrid=False,
        zeroline=False,
    )
    return fig


def _exposure_series_bars(table: pd.DataFrame, category: str, hover_label: str,
                          others: bool = False) -> list[go.Bar]:
    """The three bar series shared by the document and provider charts; target omitted if all NaN. Provider names
    are cut in the middle on the axis (:func:`~.style.axis_labels`) and given in full in the hover; with
    ``others`` the last row is "all others", drawn hatched."""
    series = [
        ("stochastic (sampled)", "exposure", STOCHASTIC_COLOUR),
        ("deterministic", "deterministic_exposure", DETERMINISTIC_COLOUR),
        ("target", "target_exposure", TARGET_COLOUR),
    ]
    if category == "provider":
        categories = axis_labels(table[category])
        extra = labels(table["provider"].astype(str))  # the full name, in the hover
    else:
        categories = labels(table[category].astype(str))  # user text: escaped for Plotly's HTML-like labels
        extra = labels(table["provider"].astype(str))
    hatch = {"pattern": {"shape": [""] * (len(table) - 1) + ["/"], "fgcolor": OTHERS_COLOUR}} if others else {}
    bars = []
    for name, column, colour in series:
        values = numeric(table, column)
        if column == "target_exposure" and not has_values(values):
            continue
        # Horizontal bars: names stay readable in a narrow column (no rotated, overlapping tick labels).
        bars.append(
            go.Bar(
                name=name,
                y=categories,
                x=values.tolist(),
                orientation="h",
                marker={"color": colour, **hatch},
                customdata=extra,
                hovertemplate=(
                    f"<b>%{{y}}</b><br>{hover_label}: %{{customdata}}<br>{name}: %{{x:.3f}}<extra></extra>"
                ),
            )
        )
    return bars


def _by_sampled_exposure(table: pd.DataFrame) -> pd.DataFrame:
    """Rows by sampled exposure, largest first (ties keep their order)."""
    return table.assign(_sort=numeric(table, "exposure")).sort_values("_sort", ascending=False, kind="stable")


def _horizontal_layout(fig: go.Figure, n_rows: int) -> dict[str, dict]:
    """Largest first at the top, legend under the plot, height growing with the number of rows: the ``layout``,
    ``x_axis`` and ``y_axis`` arguments of :func:`style`."""
    return {"layout": {"barmode": "group", "height": max(380, 190 + 26 * n_rows * max(1, len(fig.data)) // 2),
                       "legend": {"orientation": "h", "yanchor": "top", "y": -0.12, "xanchor": "left", "x": 0},
                       "margin": {"b": 120}},
            "y_axis": {"autorange": "reversed", "automargin": True},
            "x_axis": {"rangemode": "tozero"}}


def exposure_bars(documents: pd.DataFrame, *, top: int | None = 20) -> go.Figure:
    """Expected exposure of each document: sampled (stochastic), deterministic and fair target, side by side.

    A document's expected exposure is the probability that it appears in the top k (Diaz et al. 2020);
    the target is the exposure a fair policy gives it (equal for equally useful documents). Documents are
    sorted by sampled exposure and only the first ``top`` are drawn (``None`` draws all). The target series
    is omitted when ``target_exposure`` is all NaN (no relevance labels). The per-query view behind
    Kim & Diaz (2025), Fig. 3.
    """
    require_columns(
        documents, ["doc_id", "provider", "exposure", "deterministic_exposure", "target_exposure"], "exposure_bars"
    )
    if top is not None and top < 1:
        raise ValueError(f"exposure_bars: top must be ≥ 1 or None, got {top}")
    ordered = _by_sampled_exposure(documents)
    shown = ordered if top is None else ordered.head(top)
    fig = go.Figure(_exposure_series_bars(shown, "doc_id", "provider"))
    truncated = len(shown) < len(documents)
    subtitle = f"top {len(shown)} of {len(documents)} documents by sampled exposure" if truncated else None
    style(
        fig,
        title="Expected exposure per document",
        subtitle=subtitle,
        x_title="expected exposure (P[in top k])",
        y_title="document (sorted by sampled exposure)",
        height=520,
        **_horizontal_layout(fig, len(shown)),
    )
    return fig


def provider_bars(providers: pd.DataFrame, *, top: int | None = TOP_PROVIDERS) -> go.Figure:
    """Expected exposure of each provider: sampled, deterministic and fair target, side by side.

    A provider's exposure is the expected number of its documents in the top k (sum of its documents'
    exposure). Providers are sorted by sampled exposure; the target series is omitted when
    ``target_exposure`` is all NaN. Provider-level view of the item fairness in Kim & Diaz (2025), Fig. 3.

    With more than ``top`` providers (:data:`~fairrag_core.audit.ledger.TOP_PROVIDERS`; ``None``: all), the first
    ``top`` by sampled exposure are drawn and the rest summed in one hatched "all others (N providers)" bar, so the
    chart keeps at most ``top`` + 1 rows at 2,000 providers; when that sum dwarfs the others, the axis ends past
    the largest provider and a note gives the sum (the distribution is :func:`~.distribution.lorenz_chart`'s).
    """
    require_columns(providers, ["provider", "exposure", "deterministic_exposure", "target_exposure"], "provider_bars")
    ordered = _by_sampled_exposure(providers).drop(columns="_sort")
    chosen = top_with_others(ordered, group="provider", by="exposure", what="sampled exposure", n=top,
                             summed=[c for c in ("documents", "useful", *_SERIES) if c in ordered])
    shown = chosen.with_others("provider")
    fig = go.Figure(_exposure_series_bars(shown, "provider", "provider", others=chosen.truncated))
    layout = _horizontal_layout(fig, len(shown))
    if chosen.truncated:
        names = [(bar.name.split(" ")[0], column) for bar, column in zip(fig.data, _SERIES)]
        end = clip_others(fig, chosen.shown, chosen.others, names, axis_labels(shown["provider"])[-1])
        if end is not None:
            layout["x_axis"] = {**layout["x_axis"], "range": end}
    style(
        fig,
        title="Expected exposure per provider",
        subtitle=f"Showing {chosen.rule}" if chosen.truncated else None,
        x_title="expected # in the top k",
        y_title="provider",
        height=480,
        **layout,
    )
    return fig


_SERIES = ("exposure", "deterministic_exposure", "target_exposure")


