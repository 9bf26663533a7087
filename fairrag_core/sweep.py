"""α sweep of the fair stochastic retriever over a query set: EE-D and EE-R per query and α.

Reproduces the retrieval side of Kim & Diaz (2025), Fig. 3 (EE-D by α) and Fig. 4 (EE-R vs EE-D).
Sampling is batched over queries for each α, and every (α) draw has its own seeded stream, so a
sweep is reproducible from ``(collection, retriever, alphas, N, k, seed, candidates, min_rel)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .corpus import Collection
from .errors import InvalidParameterError
from .exposure import ee_disparity, ee_relevance, expected_exposure
from .ranking import new_seed
from .retrieval import Retriever, top_candidates
from .sampling import check_alpha, sample_rankings_batch

__all__ = ["SweepConfig", "DEFAULT_ALPHAS", "exposure_sweep", "summarise_sweep"]

#: The paper's grid (Kim & Diaz 2025, §4).
DEFAULT_ALPHAS: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True)
class SweepConfig:
    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    n_samples: int = 100
    k: int = 5
    seed: int | None = None
    candidates: int | None = None
    min_rel: int = 1
    query_ids: tuple[str, ...] = field(default=())  # empty = every query with qrels


def exposure_sweep(collection: Collection, retriever: Retriever, config: SweepConfig) -> pd.DataFrame:
    """Tidy table, one row per (query, α): ``query_id, alpha, n, m, ee_d, ee_r, providers_reached``.

    ``m`` is the number of useful candidates (qrels ``rel ≥ min_rel``); ``fairness_question`` is False
    for queries with m ≤ 1, which the paper leaves out of fairness analyses. Attributes of the
    returned frame (``df.attrs``) record the configuration and the seed actually used.
    """
    if not config.alphas:
        raise InvalidParameterError("give at least one α value, e.g. 0,1,2,4,8")
    alphas = tuple(check_alpha(a) for a in config.alphas)
    if config.query_ids:
        queries = [collection.query(q) for q in config.query_ids]
    else:
        queries = [q for q in collection.queries if q.query_id in collection.qrels]
    if not queries:
        raise InvalidParameterError(
            f"collection {collection.name!r} has no queries with relevance labels; add queries.jsonl and qrels.txt"
        )
    seed = config.seed if config.seed is not None else new_seed()
    scores = retriever.score_batch([q.text for q in queries])
    n_cand = len(collection) if config.candidates is None else min(config.candidates, len(collection))
    if config.k > n_cand:
        raise InvalidParameterError(f"k={config.k} is larger than the {n_cand} candidate(s); set k ≤ {n_cand}")
    cands = [top_candidates(row, n_cand) for row in scores]
    cand_scores = np.stack([c.scores for c in cands])
    labels = np.stack([collection.useful(q.query_id, min_rel=config.min_rel)[c.indices] for q, c in zip(queries, cands)])
    providers = collection.providers
    rows = []
    for a_index, alpha in enumerate(alphas):
        rankings = sample_rankings_batch(
            cand_scores, alpha=alpha, n_samples=config.n_samples, k=config.k, seed=np.random.default_rng([seed, a_index])
        )
        for q_index, query in enumerate(queries):
            eps = expected_exposure(rankings[q_index], n_cand)
            lab = labels[q_index]
            reached = providers[cands[q_index].indices[eps > 0]]
            rows.append(
                {
                    "query_id": query.query_id,
                    "alpha": alpha,
                    "n": n_cand,
                    "m": int(lab.sum()),
                    "fairness_question": bool(lab.sum() > 1),
                    "ee_d": ee_disparity(eps, config.k),
                    "ee_r": ee_relevance(eps, lab, config.k),
                    "providers_reached": int(np.unique(reached).size),
                }
            )
    table = pd.DataFrame(rows)
    table.attrs.update(
        collection=collection.name, retriever=retriever.name, alphas=list(alphas), n_samples=config.n_samples,
        k=config.k, seed=seed, candidates=n_cand, min_rel=config.min_rel,
    )
    return table


def summarise_sweep(table: pd.DataFrame) -> pd.DataFrame:
    """Mean EE-D, EE-R and providers reached per α over the queries that carry a fairness question."""
    kept = table[table["fairness_question"]]
    if kept.empty:
        kept = table
    summary = kept.groupby("alpha", as_index=False).agg(
        queries=("query_id", "nunique"),
        ee_d=("ee_d", "mean"),
        ee_r=("ee_r", "mean"),
        providers_reached=("providers_reached", "mean"),
    )
    return summary
