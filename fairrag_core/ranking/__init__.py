"""Ranking: who goes where in a list — the fair stochastic retriever, re-rankers, and one-query ranking runs.

* :mod:`.sampling` — the Plackett-Luce sampler of Kim & Diaz (2025), §3.2, Eq. 2: scores min-maxed to [1, 2],
  logits s̄^α, Gumbel top-k, exact at any α and fast on large candidate sets;
* :mod:`.run` — one query: deterministic vs N sampled rankings with item and provider exposure (EE-D, EE-R);
* :mod:`.sweep` — a query set × α grid of exposure only (the retrieval half of the paper's Figures 3–4);
* :mod:`.rerank` — deterministic re-rankers used as baselines: MMR (Carbonell & Goldstein 1998) and FA*IR
  (Zehlike et al. 2017). They live here rather than under :mod:`fairrag_core.fairqr` because FAIR-QR's
  evaluation and RichRAG's baselines both use them.

Exposure metrics themselves are pure functions in :mod:`fairrag_core.metrics.exposure`.
"""

from .run import RankingConfig, RankingRun, provider_exposure, run_ranking
from .sampling import deterministic_ranking, normalise_scores, policy_logits, sample_rankings, sample_rankings_batch
from .sweep import DEFAULT_ALPHAS, SweepConfig, exposure_sweep, summarise_sweep

__all__ = [
    "RankingConfig", "RankingRun", "provider_exposure", "run_ranking",
    "deterministic_ranking", "normalise_scores", "policy_logits", "sample_rankings", "sample_rankings_batch",
    "DEFAULT_ALPHAS", "SweepConfig", "exposure_sweep", "summarise_sweep",
]
