"""Dense retrieval: cosine similarity between sentence embeddings of the query and each document.

With an :class:`~.index_store.IndexStore` the document embeddings are computed once per (texts, model weights)
and memory-mapped from disk afterwards; collections of at least :data:`~.index_store.ANN_MIN_DOCS` documents also
get an HNSW graph (FAISS) that :meth:`DenseRetriever.retrieve` searches for the top K, whose candidates are then
re-scored with the exact cosine — where the graph, at the search beam its recall needs, answers faster than exact
search (both timed at build); else search stays exact. :meth:`DenseRetriever.score` is always exact (every document).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..checks import check_memory, check_positive_int
from ..models.embedder import Embedder
from .base import Candidates, Retriever, check_query, top_candidates
from .index_store import (
    ANN_MIN_DOCS,
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    HNSW_M,
    RECALL_K,
    RECALL_QUERIES,
    RECALL_TARGET,
    IndexStore,
    content_sha256,
)

__all__ = ["DenseRetriever", "HnswIndex", "embedder_identity", "exact_top_k"]

_HNSW_FILE = "hnsw.faiss"


def embedder_identity(embedder: Embedder) -> str:
    """The weights behind ``embedder`` (:func:`~fairrag_core.models.identity.source_identity`: a folder's
    fingerprint, a hub id's cached commit) and how its vectors are made (normalised, float32)."""
    from ..models.identity import source_identity

    return f"sentence-transformers:{source_identity(embedder.spec.source)}:normalised-float32"


def exact_top_k(vectors: np.ndarray, queries: np.ndarray, k: int, *, chunk: int = 16) -> np.ndarray:
    """Indices of the ``k`` largest inner products of each query (rows of ``queries``) with ``vectors``, by exact
    search ``chunk`` queries at a time (each chunk holds ``chunk × n`` float32 scores); order within a row is
    arbitrary."""
    n = vectors.shape[0]
    k = min(k, n)
    out = np.empty((queries.shape[0], k), dtype=np.int64)
    for start in range(0, queries.shape[0], chunk):
        scores = queries[start:start + chunk] @ vectors.T
        out[start:start + chunk] = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return out


class HnswIndex:
    """An HNSW graph (Malkov & Yashunin 2020) over unit vectors, inner-product metric: FAISS ``IndexHNSWFlat``.

    Built with :data:`~.index_store.HNSW_M` neighbours per node and ``efConstruction`` =
    :data:`~.index_store.HNSW_EF_CONSTRUCTION`; searched with ``efSearch`` = max(``ef_search``, k), where
    ``ef_search`` is chosen at build by :meth:`tune` and kept in the index's manifest.
    """

    def __init__(self, index, *, ef_search: int = HNSW_EF_SEARCH[-1]) -> None:
        self.index = index
        self.ef_search = int(ef_search)

    @classmethod
    def build(cls, vectors: np.ndarray) -> HnswIndex:
        import faiss

        n, dim = vectors.shape
        # the graph holds a copy of the vectors and ~2·M neighbour ids per node
        check_memory(n * (dim * 4 + 2 * HNSW_M * 4 + 16), f"an HNSW graph over {n:,} vectors of {dim} dimensions",
                     fix="index fewer documents")
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        step = 65_536  # add in slices, so that a memory-mapped source is copied a slice at a time
        for start in range(0, n, step):
            index.add(np.ascontiguousarray(vectors[start:start + step], dtype=np.float32))
        return cls(index)

    @classmethod
    def read(cls, path: Path, *, ef_search: int = HNSW_EF_SEARCH[-1]) -> HnswIndex:
        import faiss

        return cls(faiss.read_index(str(path), faiss.IO_FLAG_MMAP), ef_search=ef_search)

    def write(self, path: Path) -> None:
        import faiss

        faiss.write_index(self.index, str(path))

    def search(self, queries: np.ndarray, k: int, *, ef: int | None = None) -> np.ndarray:
        """Approximate top-``k`` indices per query row (``-1`` pads rows with fewer hits)."""
        import faiss

        params = faiss.SearchParametersHNSW(efSearch=max(ef or self.ef_search, k))
        _, ids = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k, params=params)
        return ids

    @staticmethod
    def _sample(vectors: np.ndarray, n_queries: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        picks = rng.choice(vectors.shape[0], size=min(n_queries, vectors.shape[0]), replace=False)
        return np.asarray(vectors[np.sort(picks)], dtype=np.float32)

    def recall(self, vectors: np.ndarray, *, k: int = RECALL_K, n_queries: int = RECALL_QUERIES, seed: int = 0,
               ef: int | None = None, exact: np.ndarray | None = None) -> float:
        """recall@k against exact search, mean over ``n_queries`` documents (drawn with ``seed``) used as queries:
        |ANN top-k ∩ exact top-k| / k (``exact``: those queries' exact top-k, when already known)."""
        queries = self._sample(vectors, n_queries, seed)
        exact = exact_top_k(vectors, queries, k) if exact is None else exact
        approx = self.search(queries, k, ef=ef)
        hits = [len(set(a.tolist()) & set(e.tolist())) for a, e in zip(approx, exact)]
        return float(np.mean(hits) / exact.shape[1])

    def tune(self, vectors: np.ndarray, *, k: int = RECALL_K, n_queries: int = RECALL_QUERIES,
             seed: int = 0) -> dict[int, float]:
        """Set :attr:`ef_search` to the smallest of :data:`~.index_store.HNSW_EF_SEARCH` whose recall@k reaches
        :data:`~.index_store.RECALL_TARGET` (else the largest); returns the recall of each beam tried."""
        exact = exact_top_k(vectors, self._sample(vectors, n_queries, seed), k)
        tried: dict[int, float] = {}
        for ef in HNSW_EF_SEARCH:
            tried[ef] = self.recall(vectors, k=k, n_queries=n_queries, seed=seed, ef=ef, exact=exact)
            self.ef_search = ef
            if tried[ef] >= RECALL_TARGET:
                break
        return tried


    def query_times(self, vectors: np.ndarray, *, k: int = RECALL_K, n_queries: int = 20,
                    seed: int = 1) -> tuple[float, float]:
        """Milliseconds per query of exact search (one matrix-vector product and a partition) and of this graph
        (search, then the exact cosine of its candidates), on ``n_queries`` documents used as queries."""
        queries = self._sample(vectors, n_queries, seed)
        start = time.perf_counter()
        for q in queries:
            np.argpartition(-(vectors @ q), min(k, vectors.shape[0]) - 1)
        exact = time.perf_counter() - start
        start = time.perf_counter()
        for q in queries:
            ids = self.search(q[None, :], k)[0]
            np.asarray(vectors[ids[ids >= 0]]) @ q
        approx = time.perf_counter() - start
        return exact / len(queries) * 1e3, approx / len(queries) * 1e3


class DenseRetriever(Retriever):
    """Scores = cosine similarity in ``[-1, 1]`` (negative scores are normal; the sampler handles them).

    Document embeddings are computed once, lazily, in batches — and with a ``store``, once per texts and model
    weights across processes (see the module docstring); pass an :class:`Embedder` to share a loaded model between
    retrievers. ``collection`` names the texts in the store's listing.
    """

    def __init__(self, texts: Sequence[str], *, model: str | Embedder | None = None, device: str | None = None,
                 batch_size: int = 64, store: IndexStore | None = None, collection: str | None = None) -> None:
        self.texts = list(texts)
        self.embedder = model if isinstance(model, Embedder) else Embedder(model, device=device,
                                                                            batch_size=batch_size)
        self.name = f"dense:{self.embedder.spec.name}"
        self.store = store
        self.collection = collection
        self._doc_vectors: np.ndarray | None = None
        self._ann: HnswIndex | None = None
        self.manifest: dict | None = None  # the stored index's manifest, once loaded

    @property
    def n_docs(self) -> int:
        return len(self.texts)

    def _encode_corpus(self) -> np.ndarray:
        check_memory(self.n_docs * self.embedder.dimension * 4,
                     f"the embeddings of {self.n_docs:,} documents", fix="index fewer documents")
        return self.embedder.encode(self.texts)

    def _from_store(self) -> np.ndarray:
        store = self.store
        key = store.key("dense", content_sha256(self.texts), embedder_identity(self.embedder))
        found = store.load(key)
        if found is None:
            start = time.perf_counter()
            vectors = self._encode_corpus()
            encoded = time.perf_counter() - start
            extra, manifest = {}, {"kind": "dense", "collection": self.collection or "", "n_docs": self.n_docs,
                                   "model": self.embedder.spec.name, "weights": embedder_identity(self.embedder),
                                   "dimension": int(vectors.shape[1]), "encode_seconds": round(encoded, 3),
                                   "ann": False}
            if self.n_docs >= ANN_MIN_DOCS:
                start = time.perf_counter()
                ann = HnswIndex.build(vectors)
                tried = ann.tune(vectors)
                exact_ms, ann_ms = ann.query_times(vectors)
                # the graph is kept only where it answers faster than exact search (at the beam the recall needs)
                manifest.update(ann=ann_ms < exact_ms, hnsw={"M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION,
                                                             "ef_search": ann.ef_search},
                                ann_seconds=round(time.perf_counter() - start, 3),
                                recall=round(tried[ann.ef_search], 4), recall_k=RECALL_K,
                                recall_queries=RECALL_QUERIES, recall_by_ef={str(e): round(r, 4)
                                                                             for e, r in tried.items()},
                                exact_ms=round(exact_ms, 3), ann_ms=round(ann_ms, 3))
                if manifest["ann"]:
                    extra[_HNSW_FILE] = ann.write
            manifest["build_seconds"] = round(encoded + manifest.get("ann_seconds", 0.0), 3)
            if not store.try_save(key, {"embeddings": vectors}, manifest, extra=extra):
                return vectors
            found = store.load(key)
            if found is None:
                return vectors
        arrays, self.manifest = found
        if self.manifest.get("ann"):
            self._ann = HnswIndex.read(store.path(key) / _HNSW_FILE, ef_search=self.manifest["hnsw"]["ef_search"])
        return arrays["embeddings"]

    @property
    def doc_vectors(self) -> np.ndarray:
        if self._doc_vectors is None:
            self._doc_vectors = self._from_store() if self.store is not None else self._encode_corpus()
        return self._doc_vectors

    @property
    def ann(self) -> HnswIndex | None:
        """The HNSW graph that :meth:`retrieve` searches (``None``: exact search)."""
        _ = self.doc_vectors
        return self._ann

    def score(self, query: str) -> np.ndarray:
        return (self.doc_vectors @ self.embedder.encode(check_query(query))).astype(np.float64)

    def score_batch(self, queries: Sequence[str]) -> np.ndarray:
        checked = [check_query(q) for q in queries]
        if not checked:
            return np.zeros((0, self.n_docs))
        return (self.embedder.encode(checked) @ self.doc_vectors.T).astype(np.float64)

    def retrieve(self, query: str, k: int) -> Candidates:
        """Top-``k`` candidates: through the HNSW graph when there is one (then re-scored with the exact cosine and
        ordered as :func:`~.base.top_candidates` orders, ties by index), else exact."""
        k = check_positive_int(k, "candidates", hint="how many top documents to keep")
        ann = self.ann
        if ann is None or k >= self.n_docs:
            return super().retrieve(query, k)
        vector = self.embedder.encode(check_query(query))
        ids = ann.search(vector[None, :], k)[0]
        ids = np.unique(ids[ids >= 0])
        exact = (np.asarray(self.doc_vectors[ids]) @ vector).astype(np.float64)
        best = top_candidates(exact, k)
        return Candidates(ids[best.indices], best.scores)
