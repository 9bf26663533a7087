"""Persistent retrieval indexes that every process shares: BM25's arrays and dense document embeddings on disk.

Building BM25 over 63,666 documents takes seconds, and embedding them with MiniLM takes most of an hour on a CPU;
both were repeated by every CLI call, every app restart and every Ray worker (issue 30). An index is built once per

* **BM25**: (the texts' content sha256, the tokenizer's identity, k1, b, ε, idf variant),
* **dense**: (the texts' content sha256, the embedder's weights identity
  (:func:`~fairrag_core.models.identity.source_identity`)),

and kept in a folder named by the SHA-256 of those parts (:func:`~fairrag_core.data.disk_cache.cache_key`) under
``$FAIRRAG_INDEX`` (a folder), else ``indexes/`` in ``$FAIRRAG_CACHE`` or ``~/.cache/fairrag``
(:func:`~fairrag_core.data.disk_cache.cache_root`, the disk cache's root). ``FAIRRAG_INDEX=off`` turns the store
off (every process then builds its own index in memory, as before).

Each index is a folder of ``.npy`` arrays opened memory-mapped (``np.load(mmap_mode="r", allow_pickle=False)``:
nothing is unpickled, and processes share the pages through the OS page cache), plus ``manifest.json`` (the key's
parts, sizes, build time, package version). It is written into a temporary folder beside its final place and then
renamed (``rename(2)`` is atomic on one file system): a process never sees half an index, and when two build the
same index at once the first rename wins and the other's copy is discarded.

Dense collections of at least :data:`ANN_MIN_DOCS` documents also get an HNSW graph (Malkov & Yashunin 2020, TPAMI
42(4); FAISS ``IndexHNSWFlat``, inner product) stored beside the embeddings; its recall@K against exact search is
measured at build on :data:`RECALL_QUERIES` documents used as queries and kept in the manifest (``index list``
shows it), and the search beam is the smallest that reaches :data:`RECALL_TARGET` on them. The graph is kept only
when, at that beam, it answers faster than exact search (both timed at build on documents as queries).
"""

from __future__ import annotations

from ..data.array_store import (
    FORMAT,
    INDEX_ENV,
    MANIFEST,
    IndexEntry,
    IndexStore,
    content_sha256,
    default_index_root,
    default_index_store,
    package_version,
)

__all__ = ["IndexStore", "IndexEntry", "default_index_store", "default_index_root", "content_sha256",
           "package_version", "INDEX_ENV", "ANN_MIN_DOCS", "HNSW_M", "HNSW_EF_CONSTRUCTION", "HNSW_EF_SEARCH",
           "RECALL_TARGET", "RECALL_QUERIES", "RECALL_K", "MANIFEST", "FORMAT"]

#: Dense collections with at least this many documents are searched through an HNSW graph (exact below): at 50,000
#: × 384 dimensions exact search reads 77 MB per query, about 10 ms on one core; HNSW a few hundred vectors.
ANN_MIN_DOCS = 50_000
#: HNSW graph degree and build beam (FAISS ``IndexHNSWFlat(d, M)``, ``efConstruction``).
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 80
#: Search beams (``efSearch``; at least K) tried at build, smallest first: the graph keeps the first whose recall@K
#: reaches :data:`RECALL_TARGET` (else the largest). Larger is slower and closer to exact.
HNSW_EF_SEARCH = (64, 128, 256, 512, 1024, 2048)
#: The recall@K against exact search that the search beam is chosen for.
RECALL_TARGET = 0.95
#: Documents used as queries to measure the HNSW graph's recall@K at build, and that K (the default candidates).
RECALL_QUERIES, RECALL_K = 100, 20
