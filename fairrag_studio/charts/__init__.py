"""Plotly figure builders for FairRAG Studio: DataFrames and arrays in, ``go.Figure`` (or bytes/str) out.

The charts follow the analyses of Kim & Diaz (2025), "Towards Fair RAG: On the Impact of Fair Ranking in
Retrieval-Augmented Generation": EE-D by α (Fig. 3), relevance and utility against EE-D (Figs. 4–5) and
attributed against retrieval disparity, plus per-document, per-provider and per-group views of one run.

Every figure uses the ``plotly_white`` template, fonts large enough for a classroom projector and a fixed
height. A table without a required column raises ``ValueError`` naming the missing column(s).
This package must stay free of Streamlit so it can be tested and reused outside the app. One module per
concern: :mod:`.style` (palette, fonts, export), :mod:`.exposure` (one query), :mod:`.curves` (α sweeps),
:mod:`.ledger` (who gets exposure), :mod:`.distribution` (its spread over thousands of providers: the Lorenz
curve and its Gini), :mod:`.fairqr` (query refinement) and :mod:`.richrag` (coverage of a query's
aspects: the documents × aspects heatmap, NCOM per list, Com-ROUGE per aspect).
"""

from .curves import attributed_vs_retrieval_disparity, ee_d_by_alpha, metric_vs_disparity, what_if_curve
from .distribution import gini, lorenz_chart
from .exposure import exposure_bars, provider_bars, rankings_grid
from .fairqr import fairqr_delta, fairqr_distributions
from .ledger import exposure_ledger_chart
from .richrag import aspect_coverage_bars, coverage_heatmap, ncom_bars
from .style import figure_html, figure_png, pio, provider_colours, text_colour_on  # noqa: F401 (pio: tests patch it)

__all__ = [
    "aspect_coverage_bars",
    "attributed_vs_retrieval_disparity",
    "coverage_heatmap",
    "ee_d_by_alpha",
    "what_if_curve",
    "exposure_bars",
    "exposure_ledger_chart",
    "fairqr_delta",
    "fairqr_distributions",
    "gini",
    "lorenz_chart",
    "figure_html",
    "figure_png",
    "metric_vs_disparity",
    "ncom_bars",
    "provider_bars",
    "provider_colours",
    "rankings_grid",
    "text_colour_on",
]
