"""One interface for every retriever: scores over a fixed candidate set, and top-K first-stage candidates."""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import MAX_QUERY_CHARS, check_positive_int
from ..errors import InvalidParameterError

__all__ = ["Retriever", "RetrieverKind", "Candidates", "top_candidates", "check_query"]

#: Longest query accepted, in characters: longer input is almost surely a pasted document.


class RetrieverKind(str, enum.Enum):
    """Retrievers available by name (CLI ``--retriever``, app sidebar)."""

    BM25 = "bm25"
    DENSE = "dense"


@dataclass(frozen=True)
class Candidates:
    """First-stage result: indices into the indexed texts, best first, with their scores."""

    indices: np.ndarray
    scores: np.ndarray


def check_query(query: object) -> str:
    """Return the stripped query, or raise naming the fix (empty, not text, or too long)."""
    if not isinstance(query, str):
        raise InvalidParameterError(f"query must be text, got {type(query).__name__}")
    text = query.strip()
    if not text:
        raise InvalidParameterError("query is empty; type a question or pick an example query")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidParameterError(
            f"query is {len(text):,} characters long; shorten it to at most {MAX_QUERY_CHARS:,} characters"
        )
    return text


def top_candidates(scores: np.ndarray, k: int) -> Candidates:
    """The ``k`` best-scoring indices (ties in index order), in O(n + k log k)."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.size
    k = min(check_positive_int(k, "candidates", hint="how many top documents to keep"), n)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # keep all items tied with the k-th score out of the partition's arbitrary choice: stable by index
        kth = scores[part].min()
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)[: k - above.size]
        part = np.concatenate([above, tied])
    else:
        part = np.arange(n)
    order = np.lexsort((part, -scores[part]))
    idx = part[order]
    return Candidates(idx, scores[idx])


class Retriever(ABC):
    """Scores a fixed list of texts for a query. Higher scores mean more relevant."""

    #: short name shown to users, e.g. "bm25" or "dense:minilm"
    name: str

    @property
    @abstractmethod
    def n_docs(self) -> int:
        """Number of indexed texts."""

    @abstractmethod
    def score(self, query: str) -> np.ndarray:
        """Scores of all indexed texts for ``query``: float array of shape ``(n_docs,)``."""

    def score_batch(self, queries: Sequence[str]) -> np.ndarray:
        """Scores for several queries: ``(len(queries), n_docs)``."""
        if isinstance(queries, str):
            raise InvalidParameterError("score_batch takes a list of queries; use score() for one query")
        return np.stack([self.score(q) for q in queries]) if queries else np.zeros((0, self.n_docs))

    def retrieve(self, query: str, k: int) -> Candidates:
        """Top-``k`` first-stage candidates for ``query`` (k is clipped to the corpus size)."""
        return top_candidates(self.score(query), k)
