"""One query through the fair stochastic retriever: deterministic vs sampled rankings and their exposure.

This is the retrieval half of the Fair RAG pipeline (Kim & Diaz 2025, Fig. 2): score candidates,
sample N top-k rankings at α, and measure item and provider exposure with EE-D / EE-R.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..checks import check_k
from ..data import Collection, Query
from ..errors import InvalidParameterError
from ..metrics.exposure import ExposureSummary, summarise_exposure, target_exposure
from ..option_types import alpha_arg
from ..options import option
from ..retrieval import Retriever, check_query, top_candidates
from ..seeds import new_seed
from ..settings import SamplingSettings
from .sampling import deterministic_ranking, sample_rankings, separation_note

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["RankingConfig", "RankingRun", "run_ranking", "provider_exposure", "providers_among"]


@dataclass(frozen=True, kw_only=True)
class RankingConfig(SamplingSettings):
    """Everything that determines a ranking run (with the retriever and the collection): α and the sampling."""

    alpha: float = option("--alpha", parse=alpha_arg, cli_default=2.0, always=True,
                          help="fairness knob α ≥ 0 (0 = uniform, inf = deterministic)")


@dataclass(frozen=True)
class RankingRun:
    """Result of :func:`run_ranking`. Indices are into ``candidate_indices`` (the candidate set)."""

    collection: Collection
    query_text: str
    query: Query | None
    retriever: str
    config: RankingConfig
    seed: int
    candidate_indices: np.ndarray  # collection positions of the candidates, best first
    scores: np.ndarray  # retrieval score of each candidate
    deterministic: np.ndarray  # (k,) positions in the candidate set
    rankings: np.ndarray  # (N, k) positions in the candidate set
    labels: np.ndarray | None  # usefulness of each candidate, when the query has qrels
    summary: ExposureSummary
    deterministic_summary: ExposureSummary

    @property
    def notes(self) -> tuple[str, ...]:
        """What the reader should know before trusting the numbers (e.g. that α hardly separates the top documents
        among this many candidates, :func:`~fairrag_core.ranking.sampling.separation_note`)."""
        note = separation_note(self.scores, self.config.alpha)
        return () if note is None else (note,)

    @property
    def doc_ids(self) -> list[str]:
        return [self.collection.documents[i].doc_id for i in self.candidate_indices]

    def documents_table(self) -> pd.DataFrame:
        """One row per candidate: id, provider, score, useful, exposure (sampled and deterministic), target."""
        import pandas as pd

        docs = [self.collection.documents[i] for i in self.candidate_indices]
        table = pd.DataFrame(
            {
                "doc_id": [d.doc_id for d in docs],
                "title": [d.title for d in docs],
                "provider": [d.provider for d in docs],
                "score": self.scores,
                "useful": self.labels if self.labels is not None else pd.NA,
                "exposure": self.summary.exposure,
                "deterministic_exposure": self.deterministic_summary.exposure,
                "target_exposure": (
                    target_exposure(self.labels, self.config.k) if self.labels is not None else np.nan
                ),
            }
        )
        return table

    def providers_table(self) -> pd.DataFrame:
        return provider_exposure(self.documents_table())


def providers_among(in_candidates: int, in_collection: int, candidates: int) -> str:
    """The one wording for how many providers a run could reach: ``12 of the 14 providers are among the top K = 20
    candidates`` (all of them: ``all 14 providers are among the 92 candidates``).

    >>> providers_among(12, 14, 20)
    '12 of the 14 providers are among the top K = 20 candidates'
    """
    if in_candidates == in_collection:
        return f"all {in_collection} providers are among the {candidates} candidates"
    return f"{in_candidates} of the {in_collection} providers are among the top K = {candidates} candidates"


def provider_exposure(documents: pd.DataFrame) -> pd.DataFrame:
    """Sum document exposure by provider (columns ``exposure``, ``deterministic_exposure``, ``target_exposure``).

    A provider's exposure is the expected number of its documents in the top k.
    """
    import pandas as pd

    grouped = documents.groupby("provider", sort=False)
    table = grouped.agg(
        documents=("doc_id", "size"),
        useful=("useful", lambda s: int(np.nansum(pd.to_numeric(s, errors="coerce")))),
        exposure=("exposure", "sum"),
        deterministic_exposure=("deterministic_exposure", "sum"),
        target_exposure=("target_exposure", lambda s: s.sum(min_count=1)),
    )
    return table.sort_values(["exposure", "target_exposure"], ascending=False).reset_index()


def run_ranking(
    collection: Collection,
    retriever: Retriever,
    query: str,
    config: RankingConfig,
    *,
    scores: np.ndarray | None = None,
    useful: np.ndarray | None = None,
    n_boot: int = 1000,
) -> RankingRun:
    """Score, sample and measure one query.

    Args:
        collection: the corpus (the retriever must index ``collection.texts`` in order).
        retriever: any :class:`~fairrag_core.retrieval.Retriever`.
        query: free text. If it equals a query of the collection, that query's qrels give the
            usefulness labels (``rel ≥ config.min_rel``) and EE-R is reported; otherwise EE-R is None.
        config: α, N, k, seed, first-stage cut-off.
        scores: precomputed scores of all documents (skips retrieval; the app caches them per query).
        useful: usefulness of every document (e.g. utility labels); overrides the qrels-based labels.
    """
    text = check_query(query)
    if retriever.n_docs != len(collection):
        raise InvalidParameterError(
            f"the retriever indexes {retriever.n_docs} texts but the collection has {len(collection)}; "
            "build the retriever from collection.texts"
        )
    seed = config.seed if config.seed is not None else new_seed()
    n_cand = len(collection) if config.candidates is None else config.candidates
    if scores is None:  # the retriever's own top K (a dense one may search an HNSW graph: retrieval.index_store)
        cand = retriever.retrieve(text, n_cand)
    else:
        cand = top_candidates(np.asarray(scores, dtype=np.float64), n_cand)
    check_k(config.k, cand.indices.size)
    rng = np.random.default_rng(seed)
    rankings = sample_rankings(cand.scores, alpha=config.alpha, n_samples=config.n_samples, k=config.k, seed=rng)
    det = deterministic_ranking(cand.scores, config.k)
    matched = collection.find_query(text)
    labels = None
    if useful is not None:
        useful = np.asarray(useful, dtype=bool)
        if useful.shape != (len(collection),):
            raise InvalidParameterError(f"useful must have one entry per document ({len(collection)})")
        labels = useful[cand.indices]
    elif matched is not None and matched.query_id in collection.qrels:
        labels = collection.useful(matched.query_id, min_rel=config.min_rel)[cand.indices]
    summary = summarise_exposure(rankings, cand.indices.size, labels=labels, n_boot=n_boot, seed=rng)
    det_summary = summarise_exposure(det[None, :], cand.indices.size, labels=labels, n_boot=1, seed=rng)
    return RankingRun(
        collection=collection,
        query_text=text,
        query=matched,
        retriever=retriever.name,
        config=config,
        seed=seed,
        candidate_indices=cand.indices,
        scores=cand.scores,
        deterministic=det,
        rankings=rankings,
        labels=labels,
        summary=summary,
        deterministic_summary=det_summary,
    )
