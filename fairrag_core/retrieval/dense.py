"""Dense retrieval: cosine similarity between sentence embeddings of the query and each document."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..models.embedder import Embedder
from .base import Retriever, check_query

__all__ = ["DenseRetriever"]


class DenseRetriever(Retriever):
    """Scores = cosine similarity in ``[-1, 1]`` (negative scores are normal; the sampler handles them).

    Document embeddings are computed once, lazily, in batches; pass an :class:`Embedder` to share a
    loaded model between retrievers.
    """

    def __init__(self, texts: Sequence[str], *, model: str | Embedder | None = None, device: str | None = None,
                 batch_size: int = 64) -> None:
        self.texts = list(texts)
        self.embedder = model if isinstance(model, Embedder) else Embedder(model, device=device,
                                                                            batch_size=batch_size)
        self.name = f"dense:{self.embedder.spec.name}"
        self._doc_vectors: np.ndarray | None = None

    @property
    def n_docs(self) -> int:
        return len(self.texts)

    @property
    def doc_vectors(self) -> np.ndarray:
        if self._doc_vectors is None:
            self._doc_vectors = self.embedder.encode(self.texts)
        return self._doc_vectors

    def score(self, query: str) -> np.ndarray:
        return (self.doc_vectors @ self.embedder.encode(check_query(query))).astype(np.float64)

    def score_batch(self, queries: Sequence[str]) -> np.ndarray:
        checked = [check_query(q) for q in queries]
        if not checked:
            return np.zeros((0, self.n_docs))
        return (self.embedder.encode(checked) @ self.doc_vectors.T).astype(np.float64)
