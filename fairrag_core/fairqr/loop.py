"""FAIR-QR: group-fair retrieval by iterative query refinement (Chen & Fang, "FAIR-QR: Enhancing
Fairness-aware Information Retrieval through Query Refinement", §2.2 and Fig. 1).

The loop, for one fairness category (or several, intersectionally):

1. retrieve the top K documents for the current query;
2. ε_L = share of each group among them (unweighted, as in the paper's g_i = Σ g^{d_i} / n);
3. Δ = KL(ε* ‖ ε_L), smoothed (:func:`~fairrag_core.metrics.group_fairness.kl_divergence`): the target
   comes first, so a group the target wants but the list lacks costs the most;
4. ĝ = the most under-represented group (largest ε* − ε_L);
5. a refiner appends a few keywords about ĝ to the query; go to 1;

until Δ stops decreasing or ``max_iterations`` refinements were made. The list with the lowest Δ is then
re-ranked by BM25 with the **original** query, so relevance comes back to the top.

One guard the paper leaves to the LLM's judgement ("with less jeopardize relevance"): a refinement that would
cost relevance is refused and the loop stops there, saying why (issue 31: "french european poetry" appended to
"award-winning film directors"). A refinement is refused when one of its keywords occurs in none of the
documents that match the original query best (its top 3K with a BM25 score above 0: "paz" for "award-winning
film directors"), or, with relevance labels, when its list, re-ranked as the final one would be, holds fewer
useful documents (:meth:`Collection.useful`) in its top ``relevance_cutoff`` than the original query's.

Every iteration is kept (query, added keywords, distribution, Δ, ĝ, retrieved ids, notes): the trace is
the method's explanation, and the app draws it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ..checks import check_non_negative, check_positive_int
from ..data import Collection
from ..errors import InvalidParameterError
from ..metrics.group_fairness import group_distribution, kl_divergence, most_under_represented
from ..metrics.group_targets import TargetKind, groups_for, target_distribution
from ..retrieval import BM25Retriever, Retriever, check_query, top_candidates
from .refiners import RefinementRequest, Refiner

__all__ = ["FairQRConfig", "Iteration", "FairQRResult", "fair_qr"]


@dataclass(frozen=True)
class FairQRConfig:
    """FAIR-QR settings. ``categories``: one fairness category, or several for intersectional groups."""

    categories: tuple[str, ...]
    top_k: int = 20
    max_iterations: int = 5  # the paper's choice (§3.2: 75th percentile of iterations was 4)
    target: TargetKind = TargetKind.RELEVANT
    background_weight: float = 0.0  # TREC 2022 mixes the relevant distribution 50/50 with the corpus
    custom_target: Mapping[str, float] | None = None
    smoothing: float = 1e-3
    relevance_cutoff: int = 10  # a refinement may not lower the useful documents in the final top this many


@dataclass(frozen=True)
class Iteration:
    index: int  # 0 = the original query
    query: str
    added_keywords: str
    retrieved: tuple[str, ...]  # doc ids of the top K, retrieval order
    distribution: dict[str, float]
    delta: float
    under_represented: str
    note: str = ""


@dataclass(frozen=True)
class FairQRResult:
    original_query: str
    query_id: str | None
    categories: tuple[str, ...]
    refiner: str
    target: dict[str, float]
    iterations: tuple[Iteration, ...]
    chosen: int  # the iteration whose list is re-ranked (lowest Δ)
    stop_reason: str
    reranked: tuple[str, ...]  # the chosen list re-ranked by BM25 on the original query
    config: dict = field(default_factory=dict)

    @property
    def refinements(self) -> int:
        """How many refinements were kept (the paper's iteration count)."""
        return self.chosen

    @property
    def without_rerank(self) -> tuple[str, ...]:
        return self.iterations[self.chosen].retrieved

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False, default=str)


def fair_qr(collection: Collection, retriever: Retriever, refiner: Refiner, query: str, config: FairQRConfig, *,
            reranker: Retriever | None = None) -> FairQRResult:
    """Run FAIR-QR for one query and return the full trace.

    Args:
        collection: documents with groups (a missing group counts as the group "Unknown").
        retriever: the first-stage retriever the refined queries go to (BM25 in the paper).
        refiner: :class:`LLMRefiner` (the paper), :class:`CorpusKeywordRefiner`, or any :class:`Refiner`.
        query: the user's query. If it is one of the collection's queries, its qrels give the relevant-
            document target; other targets (uniform, custom) work for free queries too.
        reranker: scores the final list with the original query (default: ``retriever`` when it is BM25,
            else a BM25 index built over the collection).
    """
    text = check_query(query)
    if not config.categories:
        raise InvalidParameterError("give at least one fairness category, e.g. gender")
    top_k = check_positive_int(config.top_k, "top_k", hint="documents per retrieval, e.g. 20")
    if top_k > len(collection):
        raise InvalidParameterError(f"top_k must be between 1 and the {len(collection)} documents, got {top_k}")
    iterations = check_non_negative(config.max_iterations, "max_iterations", hint="the paper uses 5")
    if iterations != int(iterations):
        raise InvalidParameterError(f"max_iterations must be a whole number ≥ 0, got {config.max_iterations}")
    groups = groups_for(collection, config.categories)
    matched = collection.find_query(text)
    target = target_distribution(collection, matched.query_id if matched else None, config.categories,
                                 kind=config.target, background_weight=config.background_weight,
                                 custom=config.custom_target)
    support = list(target.index)
    category = " × ".join(config.categories)
    doc_ids = collection.doc_ids

    def retrieve(q: str) -> np.ndarray:
        return top_candidates(retriever.score(q), config.top_k).indices

    if reranker is None:  # the paper re-ranks with BM25; reuse the first stage when it is BM25 already
        reranker = retriever if isinstance(retriever, BM25Retriever) else BM25Retriever(collection.texts)
    original_scores = reranker.score(text)

    def rerank(top: np.ndarray) -> np.ndarray:  # stable: ties keep the retrieval order
        return top[np.lexsort((np.arange(top.size), -original_scores[top]))]

    labelled = matched is not None and matched.query_id in collection.qrels
    relevance = collection.useful(matched.query_id) if labelled else None
    cutoff = check_positive_int(config.relevance_cutoff, "relevance_cutoff", hint="e.g. 10")
    near = [int(i) for i in top_candidates(original_scores, min(3 * top_k, len(collection))).indices
            if original_scores[i] > 0]

    def useful(top: np.ndarray) -> int:
        return int(np.count_nonzero(relevance[rerank(top)[:cutoff]]))

    def refusal(keywords: str, new_top: np.ndarray, first_top: np.ndarray) -> str:
        """Why adding ``keywords`` is refused ("" when it is not)."""
        unrelated = [w for w in keywords.split() if not np.any(reranker.score(w)[near] > 0)]
        if unrelated:
            return (f"{', '.join(repr(w) for w in unrelated)} occurs in none of the {len(near)} documents that match "
                    "the query best")
        if relevance is not None and (after := useful(new_top)) < (before := useful(first_top)):
            return f"adding '{keywords}' would lower the useful documents in the top {cutoff} from {before} to {after}"
        return ""

    def measure(top: np.ndarray) -> tuple[pd.Series, float, str]:
        current = group_distribution(groups[top], support=support)
        return current, kl_divergence(target, current, smoothing=config.smoothing), most_under_represented(target,
                                                                                                          current)

    top = first_top = retrieve(text)
    current, delta, group = measure(top)
    iterations = [Iteration(0, text, "", tuple(doc_ids[i] for i in top), current.to_dict(), delta, group)]
    best, stop_reason, current_query = 0, f"reached the maximum of {config.max_iterations} refinements", text
    for step in range(1, config.max_iterations + 1):
        if delta <= 0:
            stop_reason = "the top K already matches the target (Δ = 0)"
            break
        request = RefinementRequest(original_query=text, current_query=current_query, category=category,
                                    target=target.to_dict(), current=current.to_dict(), top_k=config.top_k,
                                    group=group, retrieved=tuple(int(i) for i in top))
        refinement = refiner.refine(request)
        if not refinement.keywords:
            stop_reason = "the refiner proposed no usable keywords"
            iterations[-1] = Iteration(**{**asdict(iterations[-1]), "note": "; ".join(
                filter(None, [iterations[-1].note, refinement.note or "no usable keywords"]))})
            break
        new_query = f"{current_query} {refinement.keywords}"
        new_top = retrieve(new_query)
        new_current, new_delta, new_group = measure(new_top)
        refused = refusal(refinement.keywords, new_top, first_top)
        note = "; ".join(filter(None, [refinement.note, refused and f"kept the query: {refused}"]))
        iterations.append(Iteration(step, new_query, refinement.keywords, tuple(doc_ids[i] for i in new_top),
                                    new_current.to_dict(), new_delta, new_group, note))
        if refused:
            stop_reason = f"refinement {step} was refused: {refused}"
            break
        if new_delta >= delta:
            stop_reason = f"Δ stopped decreasing at refinement {step} ({new_delta:.4f} ≥ {delta:.4f})"
            break
        best, current_query, top, current, delta, group = step, new_query, new_top, new_current, new_delta, new_group

    chosen = rerank(np.array([collection.index_of(d) for d in iterations[best].retrieved]))
    return FairQRResult(
        original_query=text, query_id=matched.query_id if matched else None, categories=tuple(config.categories),
        refiner=refiner.name, target=target.to_dict(), iterations=tuple(iterations), chosen=best,
        stop_reason=stop_reason, reranked=tuple(doc_ids[i] for i in chosen),
        config={"top_k": config.top_k, "max_iterations": config.max_iterations, "target": config.target.value,
                "background_weight": config.background_weight, "smoothing": config.smoothing,
                "relevance_cutoff": cutoff, "retriever": retriever.name},
    )
