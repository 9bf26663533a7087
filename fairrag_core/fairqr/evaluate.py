"""FAIR-QR against baselines over a query set: the layout of Chen & Fang, Table 1.

Systems (all return a top-``cutoff`` list of collection positions per query):

* ``BM25`` — the first-stage ranking;
* ``Dense`` — cosine similarity of sentence embeddings (offline MiniLM by default; the paper used SBERT);
* ``MMR`` — Maximal Marginal Relevance (λ = 0.5) over the BM25 pool, TF-IDF cosine as similarity;
* ``FA*IR`` — Zehlike et al. (2017) over the BM25 pool, protecting the group that is most
  under-represented in BM25's list relative to the target, with p = that group's target share;
* ``FAIR-QR [no re-rank]`` and ``FAIR-QR`` — the chosen iteration's list, before and after the BM25
  re-rank with the original query.

Metrics per query and category: nDCG@cutoff and AWRF@cutoff with the TREC Fair 2022 discount, and their
product. FAIR-QR is compared with each baseline by a paired t-test over queries (scipy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import Collection
from ..errors import InvalidParameterError
from ..metrics.group_fairness import awrf, group_distribution, most_under_represented, ndcg
from ..metrics.group_targets import groups_for
from ..metrics.t_tests import paired_t_p_value
from ..ranking.rerank import fair_topk, mmr, protected_group_mask, tfidf_cosine
from ..retrieval import Retriever, top_candidates
from .loop import FairQRConfig, FairQRResult, fair_qr
from .refiners import Refiner

__all__ = ["FairQREvalConfig", "FAIRQR", "FAIRQR_NO_RERANK", "evaluate_fair_qr", "compare_systems", "table1",
           "paired_tests", "win_tie_loss", "iteration_statistics"]

FAIRQR, FAIRQR_NO_RERANK = "FAIR-QR", "FAIR-QR [no re-rank]"


@dataclass(frozen=True)
class FairQREvalConfig:
    categories: tuple[str, ...] = ("gender", "region")
    cutoff: int = 20
    top_k: int = 20  # FAIR-QR's K
    max_iterations: int = 5
    pool: int = 60  # candidates MMR and FA*IR re-rank
    mmr_lambda: float = 0.5
    fair_alpha: float = 0.1
    background_weight: float = 0.0
    query_ids: tuple[str, ...] = ()


def evaluate_fair_qr(collection: Collection, bm25: Retriever, refiner_for: Callable[[str], Refiner],
                     config: FairQREvalConfig, *, dense: Retriever | None = None,
                     progress: Callable[[int, int], None] | None = None) -> tuple[pd.DataFrame, list[FairQRResult]]:
    """One row per (query, category, system) with ``ndcg``, ``awrf`` and ``ndcg_x_awrf``; and the FAIR-QR traces.

    ``refiner_for(category)`` builds the refiner for one category (the corpus-keyword refiner needs it).
    """
    if config.cutoff < 1 or config.top_k < config.cutoff:
        raise InvalidParameterError(f"need 1 ≤ cutoff ≤ top_k, got cutoff={config.cutoff}, top_k={config.top_k}")
    queries = ([collection.query(q) for q in config.query_ids] if config.query_ids
               else [q for q in collection.queries if q.query_id in collection.qrels])
    if not queries:
        raise InvalidParameterError(f"{collection.name!r} has no queries with qrels to evaluate on")
    rows, traces = [], []
    total, done = len(queries) * len(config.categories), 0
    for category in config.categories:
        refiner = refiner_for(category)
        for query in queries:
            trace = fair_qr(collection, bm25, refiner, query.text,
                            FairQRConfig(categories=(category,), top_k=config.top_k,
                                         max_iterations=config.max_iterations,
                                         background_weight=config.background_weight))
            traces.append(trace)
            scored = compare_systems(collection, bm25, trace, config, dense=dense)
            scored.insert(0, "category", category)
            scored.insert(0, "query_id", query.query_id)
            rows.extend(scored.to_dict(orient="records"))
            done += 1
            if progress is not None:
                progress(done, total)
    table = pd.DataFrame(rows)
    table.attrs.update(collection=collection.name, cutoff=config.cutoff, top_k=config.top_k,
                       max_iterations=config.max_iterations, refiner=traces[0].refiner if traces else "",
                       pool=config.pool, mmr_lambda=config.mmr_lambda, fair_alpha=config.fair_alpha,
                       background_weight=config.background_weight)
    return table, traces


def compare_systems(collection: Collection, bm25: Retriever, trace: FairQRResult, config: FairQREvalConfig, *,
                    dense: Retriever | None = None) -> pd.DataFrame:
    """nDCG@k, AWRF@k and their product of every system for the query and categories of one FAIR-QR trace.

    The target is the trace's own (so a custom or uniform target in the app is scored against itself);
    nDCG needs the query's qrels and is NaN for a free query.
    """
    query = trace.original_query
    groups = groups_for(collection, trace.categories)
    target = pd.Series(trace.target)
    relevance = collection.relevance(trace.query_id).astype(float) if trace.query_id in collection.qrels else None
    texts = collection.texts
    scores = bm25.score(query)
    pool = top_candidates(scores, min(max(config.pool, config.cutoff), len(collection))).indices
    systems: dict[str, np.ndarray] = {"BM25": pool[: config.cutoff]}
    if dense is not None:
        systems["Dense"] = top_candidates(dense.score(query), config.cutoff).indices
    similarity = tfidf_cosine([texts[i] for i in pool])
    systems["MMR"] = pool[mmr(scores[pool], similarity, config.cutoff, lambda_=config.mmr_lambda)]
    bm25_dist = group_distribution(groups[pool[: config.cutoff]], support=list(target.index))
    protected = most_under_represented(target, bm25_dist)
    share = float(np.clip(target[protected], 0.02, 0.98))
    systems["FA*IR"] = pool[fair_topk(scores[pool], protected_group_mask(groups[pool], protected), config.cutoff,
                                      p=share, alpha=config.fair_alpha)]
    systems[FAIRQR_NO_RERANK] = np.array([collection.index_of(d) for d in trace.without_rerank])
    systems[FAIRQR] = np.array([collection.index_of(d) for d in trace.reranked])
    rows = []
    for system, ranking in systems.items():
        top = ranking[: config.cutoff]
        n = ndcg(relevance[top], relevance[relevance > 0], cutoff=config.cutoff) if relevance is not None else np.nan
        a = awrf(groups[top], target, cutoff=config.cutoff)
        rows.append({"system": system, "ndcg": n, "awrf": a, "ndcg_x_awrf": n * a,
                     "refinements": trace.refinements if system.startswith("FAIR-QR") else np.nan})
    return pd.DataFrame(rows)


def table1(results: pd.DataFrame) -> pd.DataFrame:
    """Mean nDCG@k, AWRF@k and nDCG×AWRF per system (rows) and category (column groups), as in Table 1."""
    order = list(dict.fromkeys(results["system"]))
    means = results.pivot_table(index="system", columns="category", values=["ndcg", "awrf", "ndcg_x_awrf"],
                                aggfunc="mean")
    means = means.swaplevel(0, 1, axis=1)
    categories = list(dict.fromkeys(results["category"]))
    columns = [(c, m) for c in categories for m in ("ndcg", "awrf", "ndcg_x_awrf")]
    return means.reindex(index=order, columns=pd.MultiIndex.from_tuples(columns))


def paired_tests(results: pd.DataFrame, *, system: str = FAIRQR, level: float = 0.05) -> pd.DataFrame:
    """Paired t-tests of ``system`` against every other system, per category and metric.

    p-values from :func:`~fairrag_core.metrics.t_tests.paired_t_p_value` (scipy's ``ttest_rel``, defined
    when the differences do not vary).
    """
    rows = []
    for category, part in results.groupby("category", sort=False):
        wide = {m: part.pivot(index="query_id", columns="system", values=m) for m in ("ndcg", "awrf", "ndcg_x_awrf")}
        for other in dict.fromkeys(part["system"]):
            if other == system:
                continue
            for metric, table in wide.items():
                diff = table[system] - table[other]
                p = paired_t_p_value(table[system].to_numpy(), table[other].to_numpy())
                rows.append({"category": category, "baseline": other, "metric": metric,
                             "mean_difference": float(diff.mean()), "p_value": p,
                             "better": bool(diff.mean() > 0 and p < level),
                             "worse": bool(diff.mean() < 0 and p < level)})
    return pd.DataFrame(rows)


def win_tie_loss(results: pd.DataFrame, *, system: str = FAIRQR, baseline: str = "BM25",
                 tolerance: float = 1e-9) -> pd.DataFrame:
    """Per category and metric: on how many queries ``system`` beats, ties or trails ``baseline``."""
    rows = []
    for category, part in results.groupby("category", sort=False):
        for metric in ("ndcg", "awrf", "ndcg_x_awrf"):
            wide = part.pivot(index="query_id", columns="system", values=metric)
            diff = wide[system] - wide[baseline]
            rows.append({"category": category, "metric": metric, "better": int((diff > tolerance).sum()),
                         "same": int((diff.abs() <= tolerance).sum()), "worse": int((diff < -tolerance).sum())})
    return pd.DataFrame(rows)


def iteration_statistics(traces: Sequence[FairQRResult]) -> pd.DataFrame:
    """Refinements kept per query and category: max, mean and 75th percentile (the paper's §3.2 figures)."""
    frame = pd.DataFrame({"category": [" × ".join(t.categories) for t in traces],
                          "refinements": [t.refinements for t in traces]})
    return frame.groupby("category", sort=False)["refinements"].agg(
        queries="size", max="max", mean="mean", p75=lambda s: float(np.percentile(s, 75))).reset_index()
