"""RichRAG (Wang et al.): the documents × aspects coverage heatmap, NCOM per ranked list, Com-ROUGE per aspect.

Coverage φ(d, a_i) is ROUGE recall of the i-th sub-answer by document d (``fairrag_core.richrag.coverage``); the
heatmap uses the perceptually uniform, colour-blind-safe Cividis scale, and the bars the palette of :mod:`.style`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from fairrag_core.glossary import GLOSSARY

from .style import DETERMINISTIC_COLOUR, STOCHASTIC_COLOUR, TARGET_COLOUR, label, labels, style

__all__ = ["coverage_heatmap", "ncom_bars", "aspect_coverage_bars", "LIST_COLOURS"]

#: One colour per kind of list: baselines blue, the trained ranker orange, the oracle (an upper bound) green.
LIST_COLOURS = {"relevance": STOCHASTIC_COLOUR, "mmr": STOCHASTIC_COLOUR, "round-robin": STOCHASTIC_COLOUR,
                "oracle": TARGET_COLOUR}


def _colour(name: str) -> str:
    return LIST_COLOURS.get(name, DETERMINISTIC_COLOUR if name.startswith("ranker") else STOCHASTIC_COLOUR)


def coverage_heatmap(phi: np.ndarray, documents: Sequence[str], aspects: Sequence[str], *,
                     title: str = "Coverage φ(d, aᵢ): ROUGE recall of each sub-answer", height: int | None = None,
                     compact: bool = False) -> go.Figure:
    """Documents (rows, in the given order) × aspects (columns), coloured by φ ∈ [0, 1], values written in.

    ``compact``: a small multiple (no colour bar, no axis titles, tight margins) to sit beside a ranked list.
    """
    phi = np.asarray(phi, dtype=np.float64)
    if phi.shape != (len(documents), len(aspects)):
        raise ValueError(f"coverage_heatmap: phi has shape {phi.shape}, expected ({len(documents)}, {len(aspects)})")
    # user text (aspects, document ids and titles, a list's name): escaped for Plotly's HTML-like labels
    shown = labels(a if len(a) <= 28 else a[:27] + "…" for a in aspects)
    fig = go.Figure(go.Heatmap(
        z=phi, x=shown, y=labels(documents), zmin=0, zmax=1, colorscale="Cividis", text=np.round(phi, 2),
        texttemplate="%{text:.2f}", colorbar={"title": "φ"},
        customdata=np.array([[label(a)] * len(documents) for a in aspects], dtype=object).T if aspects else None,
        hovertemplate="<b>%{y}</b><br>aspect: %{customdata}<br>φ = %{z:.3f}<extra></extra>"))
    style(fig, title=label(title), x_title="aspect", y_title="document",
          height=height or max(260, 90 + 26 * len(documents)))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", tickangle=-20)
    if compact:
        fig.update_traces(showscale=False)
        fig.update_layout(margin={"t": 40, "l": 60, "r": 10, "b": 30}, title={"font": {"size": 15}})
        fig.update_xaxes(title_text="", tickangle=0)
        fig.update_yaxes(title_text="")
    return fig


def ncom_bars(ncom: Mapping[str, float], *, k: int | None = None) -> go.Figure:
    """NCOM@k of each ranked list (the oracle is the greedy silver list: 1 by definition)."""
    names = list(ncom)
    values = [float(ncom[n]) for n in names]
    fig = go.Figure(go.Bar(x=labels(names), y=values, marker_color=[_colour(n) for n in names],
                           text=[f"{v:.3f}" for v in values], textposition="outside",
                           hovertemplate="<b>%{x}</b><br>NCOM = %{y:.3f}<extra></extra>"))
    style(fig, title=f"Coverage of the sub-aspects by each list (NCOM: {GLOSSARY['NCOM'].direction}; oracle = 1)",
          x_title="ranked list",
          y_title="NCOM" + (f"@{k}" if k else ""), height=380)
    fig.update_yaxes(range=[0, max(1.1, max(values, default=1) + 0.1)])
    return fig


def aspect_coverage_bars(aspects: Sequence[str], recall: Sequence[Sequence[float]], weights: Sequence[float]
                         ) -> go.Figure:
    """Com-ROUGE parts of a rich answer: ROUGE-2 and ROUGE-L recall of each sub-answer, with its weight δᵢ."""
    rec = np.asarray(recall, dtype=np.float64).reshape(len(aspects), 3)
    shown = [f"{label(a if len(a) <= 28 else a[:27] + '…')} (δ={w:.2f})" for a, w in zip(aspects, weights)]
    fig = go.Figure([
        go.Bar(name="ROUGE-2 recall", x=shown, y=rec[:, 1], marker_color=STOCHASTIC_COLOUR),
        go.Bar(name="ROUGE-L recall", x=shown, y=rec[:, 2], marker_color=TARGET_COLOUR),
    ])
    style(fig, title="How much of each aspect's sub-answer the answer covers", x_title="aspect (weight δᵢ)",
          y_title="recall of the sub-answer", height=380)
    fig.update_yaxes(range=[0, 1])
    fig.update_layout(barmode="group")
    return fig
