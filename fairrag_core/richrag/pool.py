"""The multi-faceted retriever (RichRAG §3.3, Eq. 3–4): top N per ``q ∘ s_i``, merged into a pool of capacity M.

Wang et al. retrieve the top ``N`` documents for every sub-aspect ``s_i`` with the query prepended
(``D_i = R(q ∘ s_i, C)``, "to avoid topic drift"), merge them, and keep a document retrieved by several aspects
once, remembering the set ``s(d)`` of aspects that retrieved it (Eq. 4); the pool holds at most ``M`` documents
(App. B: N = 50, M = 270–290 on Wikipedia; our defaults N = 10, M = 40 suit the 402-document demo collection).

Choices the paper leaves open (documented, settable):

* ``q ∘ s_i`` is ``f"{q} {s_i}"`` (a space); with no aspects the query alone is retrieved (``s(d)`` then empty);
* **merge order** and the **cut at M**: documents enter by their best rank over the aspects (every aspect's
  rank 1, then rank 2, …), ties by the aspect's position, so when the union exceeds M every aspect keeps its
  best documents (no aspect is crowded out by a wordy sibling);
* ranks start at **1**; a document an aspect did not retrieve has rank 0 and score NaN for it.

Pure and fast: one :meth:`~fairrag_core.retrieval.Retriever.score_batch` over the m aspect queries (BM25 or
dense), then numpy.

>>> from fairrag_core.retrieval import BM25Retriever
>>> texts = ["compost greens and browns", "compost smells and pests", "running shoes", "browns like dry leaves"]
>>> pool = build_pool(BM25Retriever(texts), "compost", ["greens browns", "smells"], PoolSettings(per_aspect=2))
>>> pool.indices.tolist(), pool.ranks.tolist()  # both aspects retrieved both documents: kept once each
([0, 1], [[1, 2], [2, 1]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import check_positive_int
from ..errors import InvalidParameterError
from ..retrieval.base import Candidates, Retriever, check_query, top_candidates
from ..settings import Settings

__all__ = ["PoolSettings", "Pool", "build_pool", "aspect_query"]


@dataclass(frozen=True, kw_only=True)
class PoolSettings(Settings):
    """How the pool is built: ``per_aspect`` = N documents per ``q ∘ s_i``, ``capacity`` = M documents at most."""

    per_aspect: int = 10
    capacity: int = 40

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive_int(self.per_aspect, "per_aspect", hint="documents retrieved per aspect (N)")
        check_positive_int(self.capacity, "capacity", hint="the pool's maximum size (M)")


def aspect_query(query: str, aspect: str) -> str:
    """``q ∘ s_i``: the query with the aspect appended (Eq. 3).

    >>> aspect_query("How do I start composting?", "avoiding smells")
    'How do I start composting? avoiding smells'
    """
    return f"{query} {aspect}".strip()


@dataclass(frozen=True)
class Pool:
    """The candidate pool P with s(d): ``indices[j]`` is the j-th pool document's position in the retriever's texts.

    ``ranks[j, i]`` (1-based; 0 = not retrieved) and ``scores[j, i]`` (NaN = not retrieved) say how aspect i
    retrieved pool document j; ``per_aspect[i]`` holds aspect i's own top N, before merging.
    """

    query: str
    aspects: tuple[str, ...]
    indices: np.ndarray
    ranks: np.ndarray
    scores: np.ndarray
    per_aspect: tuple[Candidates, ...]
    settings: PoolSettings

    def __len__(self) -> int:
        return int(self.indices.size)

    @property
    def membership(self) -> np.ndarray:
        """``(len(pool), n_aspects)`` booleans: which aspects retrieved each document (s(d) as a matrix)."""
        return self.ranks > 0

    def aspects_of(self, j: int) -> tuple[int, ...]:
        """s(d) of the j-th pool document, as aspect indices in aspect order."""
        return tuple(int(i) for i in np.flatnonzero(self.ranks[j] > 0))

    def aspect_texts_of(self, j: int) -> tuple[str, ...]:
        """s(d) of the j-th pool document, as the aspects' texts (the ranker's input, Eq. 5)."""
        return tuple(self.aspects[i] for i in self.aspects_of(j))

    def best_rank(self) -> np.ndarray:
        """Each pool document's best (smallest) rank over the aspects that retrieved it."""
        masked = np.where(self.ranks > 0, self.ranks, np.iinfo(np.int64).max)
        return masked.min(axis=1) if self.ranks.shape[1] else np.zeros(len(self), dtype=np.int64)


def _check_aspects(aspects: Sequence[str]) -> tuple[str, ...]:
    if isinstance(aspects, str):
        raise InvalidParameterError("aspects must be a list of texts, not one string; wrap it in a list")
    cleaned = []
    for a in aspects:
        if not isinstance(a, str) or not a.strip():
            raise InvalidParameterError("every aspect must be a non-empty text; drop empty aspects")
        cleaned.append(" ".join(a.split()))
    return tuple(cleaned)


def build_pool(retriever: Retriever, query: str, aspects: Sequence[str],
               settings: PoolSettings = PoolSettings()) -> Pool:
    """Retrieve the top N for every ``q ∘ s_i`` and merge them into a pool of at most M documents (Eq. 3–4).

    With no aspects, the query alone is retrieved (a one-aspect pool whose ``aspects`` is empty).
    """
    query = check_query(query)
    aspects = _check_aspects(aspects)
    texts = [aspect_query(query, a) for a in aspects] or [query]
    all_scores = retriever.score_batch(texts)
    found = tuple(top_candidates(row, settings.per_aspect) for row in all_scores)

    n_aspects = len(found)
    ranks: dict[int, np.ndarray] = {}
    scores: dict[int, np.ndarray] = {}
    for i, cands in enumerate(found):
        for r, (doc, score) in enumerate(zip(cands.indices.tolist(), cands.scores.tolist()), start=1):
            if doc not in ranks:
                ranks[doc] = np.zeros(n_aspects, dtype=np.int64)
                scores[doc] = np.full(n_aspects, np.nan)
            ranks[doc][i], scores[doc][i] = r, score

    def merge_key(doc: int) -> tuple[int, int, int]:  # best rank, then the first aspect reaching it, then the index
        hit = np.where(ranks[doc] > 0, ranks[doc], np.iinfo(np.int64).max)
        return int(hit.min()), int(hit.argmin()), doc

    order = sorted(ranks, key=merge_key)[: settings.capacity]
    width = len(aspects)  # the no-aspect pool keeps the query's ranks out of the aspect matrix
    rank_mat = np.array([ranks[d][:width] for d in order], dtype=np.int64).reshape(len(order), width)
    score_mat = np.array([scores[d][:width] for d in order], dtype=np.float64).reshape(len(order), width)
    return Pool(query, aspects, np.array(order, dtype=np.int64), rank_mat, score_mat, found, settings)
