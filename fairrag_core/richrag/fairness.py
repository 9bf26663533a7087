"""Fairness meets coverage: who gets exposure when lists are built for coverage (issue 13, item 7).

RichRAG's lists are judged by coverage (NCOM), Fair RAG's by how exposure spreads over providers (EE-D, Kim & Diaz
2025, Eq. 16). Two questions join them:

* **Deterministic lists.** :func:`provider_exposure` compares the providers a coverage-aware list (round robin, the
  trained ranker, the oracle) reaches with those a relevance-only list reaches: distinct providers in the top k,
  the concentration of provider exposure (Herfindahl index Σ_p s_p², s_p = provider p's share of the k slots; 1/k
  when every slot goes to a different provider, 1 when one provider takes all) and the largest provider's share.
* **Stochastic lists.** Plackett-Luce over a system's per-document scores with the fairness knob α
  (:func:`~fairrag_core.ranking.sampling.sample_rankings`: scores min-max normalised to [1, 2], p ∝ exp(s̄^α)).
  For the ranker the scores are its first decoding step's pointer logits (h^1·F/τ: coverage-aware relevance of
  every candidate before anything is picked); for relevance, the retriever's scores. :func:`fairness_coverage_curve`
  returns, per (system, α), the mean over queries of EE-D (expected exposure of the pooled documents over N sampled
  top-k lists) and of the sampled lists' NCOM@k: the Disparity-curve idea, EE-D against NCOM as α moves
  (α = ∞ is the deterministic sort by score: EE-D = 1). The ranker's own greedy decoding, which re-scores after every
  pick, is added as a ``greedy`` row for reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..checks import check_k, check_positive_int
from ..data import Collection
from ..metrics.exposure import ee_disparity, expected_exposure
from ..ranking.sampling import sample_rankings
from ..seeds import derive_seed
from .coverage import ncom
from .train import QueryPool

__all__ = ["provider_exposure", "provider_summary", "fairness_coverage_curve"]


def _providers(collection: Collection, qp: QueryPool) -> list[str]:
    return [collection.documents[int(i)].provider for i in qp.pool.indices]


def provider_exposure(collection: Collection, pools: Sequence[QueryPool],
                      lists: Mapping[str, Sequence[Sequence[int]]], k: int) -> pd.DataFrame:
    """One row per (system, query): distinct providers in the top k, Herfindahl index of provider shares, largest
    provider share, and NCOM@k."""
    k = check_k(k)
    rows = []
    for system, per_pool in lists.items():
        for qp, ranking in zip(pools, per_pool):
            top = list(ranking)[:k]
            providers = _providers(collection, qp)
            _, counts = np.unique([providers[j] for j in top], return_counts=True)
            shares = counts / counts.sum()
            rows.append({"system": system, "query_id": qp.query_id, "k": len(top),
                         "providers": int(counts.size), "provider_hhi": float(shares @ shares),
                         "top_provider_share": float(shares.max()), "ncom": ncom(qp.phi, top)})
    return pd.DataFrame(rows)


def provider_summary(per_query: pd.DataFrame) -> pd.DataFrame:
    """Means over queries of :func:`provider_exposure` per system (in the order the systems first appear)."""
    columns = ["providers", "provider_hhi", "top_provider_share", "ncom"]
    return per_query.groupby("system", sort=False)[columns].mean().reset_index()


def fairness_coverage_curve(pools: Sequence[QueryPool], scores: Mapping[str, Sequence[np.ndarray]],
                            alphas: Sequence[float], *, k: int = 5, n_samples: int = 100, seed: int = 0,
                            greedy: Mapping[str, Sequence[Sequence[int]]] | None = None) -> pd.DataFrame:
    """EE-D and NCOM@k as α moves, per system: the table behind the fairness-vs-coverage chart.

    ``scores[system][q]`` holds one score per pooled document of ``pools[q]``; ``greedy[system][q]`` (optional) a
    deterministic list added as a row with ``policy = "greedy"`` (α NaN, EE-D 1). Columns: system, policy
    (``plackett-luce`` or ``greedy``), alpha, ee_d, ncom (means over queries), their spreads over queries
    (``ee_d_sd``, ``ncom_sd``) and queries.
    """
    n_samples = check_positive_int(n_samples, "n_samples", hint="sampled rankings per query, e.g. 100")
    rows = []
    for s_index, (system, per_pool) in enumerate(scores.items()):
        for a_index, alpha in enumerate(alphas):
            ee, cov = [], []
            for q, (qp, values) in enumerate(zip(pools, per_pool)):
                kk = min(check_k(k), len(qp.documents))
                rankings = sample_rankings(np.asarray(values, dtype=np.float64), alpha=alpha, n_samples=n_samples,
                                           k=kk, seed=derive_seed(seed, s_index, a_index, q))
                ee.append(ee_disparity(expected_exposure(rankings, len(qp.documents)), kk))
                cov.append(float(np.mean([ncom(qp.phi, r) for r in rankings.tolist()])))
            rows.append({"system": system, "policy": "plackett-luce", "alpha": float(alpha),
                         "ee_d": float(np.mean(ee)), "ncom": float(np.mean(cov)), "ee_d_sd": float(np.std(ee)),
                         "ncom_sd": float(np.std(cov)), "queries": len(ee)})
    for system, per_pool in (greedy or {}).items():
        values = [ncom(qp.phi, list(r)[: min(k, len(qp.documents))]) for qp, r in zip(pools, per_pool)]
        rows.append({"system": system, "policy": "greedy", "alpha": float("nan"), "ee_d": 1.0,
                     "ncom": float(np.mean(values)), "ee_d_sd": 0.0, "ncom_sd": float(np.std(values)),
                     "queries": len(values)})
    return pd.DataFrame(rows)
