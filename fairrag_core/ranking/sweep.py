"""α sweep of the fair stochastic retriever over a query set: EE-D and EE-R per query and α (no generation).

Reproduces the retrieval side of Kim & Diaz (2025), Fig. 3 (EE-D by α) and Fig. 4 (EE-R vs EE-D).
Sampling is batched over queries for each α, and every (α) draw has its own seeded stream, so a
sweep is reproducible from ``(collection, retriever, alphas, N, k, seed, candidates, min_rel)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..checks import check_alpha, check_k
from ..data import Collection
from ..errors import InvalidParameterError
from ..metrics.exposure import ee_disparity, ee_relevance, expected_exposure, target_exposure
from ..record import RunKind, RunRecord, SweepRun
from ..retrieval import Retriever, top_candidates
from ..seeds import new_seed
from ..settings import SamplingSettings
from .sampling import sample_rankings_batch

__all__ = ["SweepConfig", "DEFAULT_ALPHAS", "exposure_sweep", "summarise_sweep", "select_queries", "system_of"]

#: The paper's grid (Kim & Diaz 2025, §4).
DEFAULT_ALPHAS: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True, kw_only=True)
class SweepConfig(SamplingSettings):
    """An exposure sweep: the α grid (``inf`` = the deterministic ranker) over a query set (empty: every query
    with qrels), with the shared sampling settings."""

    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    query_ids: tuple[str, ...] = field(default=())


def select_queries(collection: Collection, query_ids: Sequence[str], *, need_qrels: bool) -> list:
    """The queries a sweep runs over: the given ids, or every query (with qrels when ``need_qrels``)."""
    if query_ids:
        queries = [collection.query(q) for q in query_ids]
    elif need_qrels:
        queries = [q for q in collection.queries if q.query_id in collection.qrels]
    else:
        queries = list(collection.queries)
    if not queries:
        raise InvalidParameterError(
            f"collection {collection.name!r} has no queries with relevance labels; add queries.jsonl and qrels.txt"
        )
    return queries


def system_of(alpha: float) -> str:
    return "deterministic" if np.isinf(alpha) else "stochastic"


def exposure_sweep(collection: Collection, retriever: Retriever, config: SweepConfig) -> SweepRun:
    """Sample and measure every (query, α) of ``config`` (exposure only, no generation).

    Returns a :class:`~fairrag_core.record.SweepRun` whose ``table`` has one row per (query, α):
    ``query_id, system, alpha, n, m, fairness_question, ee_d, ee_r, providers_reached``. ``m`` is the number
    of useful candidates (qrels ``rel ≥ min_rel``); ``fairness_question`` is False for queries with m ≤ 1,
    which the paper leaves out of fairness analyses. ``alpha = inf`` is the deterministic ranker
    (``system = "deterministic"``). ``documents`` holds every candidate's exposure and target exposure per
    (query, α), e.g. for an exposure ledger; ``record`` holds the settings and the seed actually used.
    """
    if not config.alphas:
        raise InvalidParameterError("give at least one α value, e.g. 0,1,2,4,8")
    alphas = tuple(check_alpha(a) for a in config.alphas)
    queries = select_queries(collection, config.query_ids, need_qrels=True)
    seed = config.seed if config.seed is not None else new_seed()
    scores = retriever.score_batch([q.text for q in queries])
    n_cand = len(collection) if config.candidates is None else min(config.candidates, len(collection))
    check_k(config.k, n_cand)
    cands = [top_candidates(row, n_cand) for row in scores]
    cand_scores = np.stack([c.scores for c in cands])
    useful = np.stack([collection.useful(q.query_id, min_rel=config.min_rel)[c.indices]
                       for q, c in zip(queries, cands)])
    providers = collection.providers
    doc_ids = np.array(collection.doc_ids, dtype=object)
    rows, documents = [], []
    for a_index, alpha in enumerate(alphas):
        rankings = sample_rankings_batch(
            cand_scores, alpha=alpha, n_samples=config.n_samples, k=config.k,
            seed=np.random.default_rng([seed, a_index]),
        )
        for q_index, query in enumerate(queries):
            eps = expected_exposure(rankings[q_index], n_cand)
            lab = useful[q_index]
            reached = providers[cands[q_index].indices[eps > 0]]
            rows.append(
                {
                    "query_id": query.query_id,
                    "system": system_of(alpha),
                    "alpha": alpha,
                    "n": n_cand,
                    "m": int(lab.sum()),
                    "fairness_question": bool(lab.sum() > 1),
                    "ee_d": ee_disparity(eps, config.k),
                    "ee_r": ee_relevance(eps, lab, config.k),
                    "providers_reached": int(np.unique(reached).size),
                }
            )
            documents.append(pd.DataFrame({
                "query_id": query.query_id, "alpha": alpha, "doc_id": doc_ids[cands[q_index].indices],
                "exposure": eps, "target_exposure": target_exposure(lab, config.k) if lab.any() else np.nan,
            }))
    record = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection=collection.name, retriever=retriever.name,
                       config=config, seed=seed, query_ids=tuple(q.query_id for q in queries),
                       sampled_rankings=len(rows) * config.n_samples, extra={"candidates_used": n_cand})
    return SweepRun(record=record, table=pd.DataFrame(rows), documents=pd.concat(documents, ignore_index=True))


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
