"""Retrieval: the first-stage scorers behind one interface (:class:`Retriever`: ``score``, ``score_batch``,
``retrieve``), whose scores feed the Plackett-Luce sampler (Kim & Diaz 2025, §3.2).

* :mod:`.bm25` — Okapi BM25 (Robertson & Zaragoza 2009) on a term-major sparse index; scores equal
  ``rank_bm25.BM25Okapi`` on the same tokens;
* :mod:`.dense` — sentence-transformers bi-encoders (offline all-MiniLM-L6-v2; the paper's Contriever by hub id);
* :mod:`.base` — the interface, query checks and the top-K candidate cut-off;
* :mod:`.index_store` — both indexes persisted on disk (memory-mapped), shared by every process, keyed by the
  texts' sha256 and the tokenizer or model weights; HNSW (FAISS) for large dense collections.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidParameterError
from .base import Candidates, Retriever, RetrieverKind, check_query, top_candidates
from .bm25 import BM25Retriever
from .index_store import IndexStore, default_index_store

__all__ = [
    "Retriever", "RetrieverKind", "Candidates", "BM25Retriever", "DenseRetriever", "IndexStore",
    "build_retriever", "top_candidates", "check_query", "default_index_store",
]


def __getattr__(name: str):  # the dense retriever pulls in torch: import it only when asked for
    if name == "DenseRetriever":
        from .dense import DenseRetriever

        return DenseRetriever
    raise AttributeError(name)


def build_retriever(kind: RetrieverKind | str, texts: Sequence[str], *, model: str | None = None,
                    device: str | None = None, store: IndexStore | bool = True,
                    collection: str | None = None) -> Retriever:
    """Build a retriever by kind (``"bm25"`` or ``"dense"``) over ``texts``.

    ``model`` and ``device`` apply to the dense retriever (default model: the offline MiniLM). ``store``: the
    persistent index store (:mod:`.index_store`) — ``True`` is :func:`default_index_store` (off with
    ``FAIRRAG_INDEX=off``), ``False`` builds in memory only; ``collection`` names the texts in ``index list``.
    """
    try:
        kind = RetrieverKind(kind)
    except ValueError:
        choices = ", ".join(k.value for k in RetrieverKind)
        raise InvalidParameterError(f"unknown retriever {kind!r}; choose one of: {choices}") from None
    if kind is RetrieverKind.BM25 and model is not None:
        raise InvalidParameterError("BM25 takes no model; drop --model or use --retriever dense")
    if store is True:
        store = default_index_store()
    store = store or None
    if kind is RetrieverKind.BM25:
        return BM25Retriever.cached(texts, store=store, collection=collection)
    from .dense import DenseRetriever

    return DenseRetriever(texts, model=model, device=device, store=store, collection=collection)
