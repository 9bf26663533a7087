"""HNSW recall on real sentence embeddings (issue 30): the Debian corpus encoded by MiniLM through the index store.

    FAIRRAG_INDEX=DIR python -m fairrag_core index build --collection /tmp/debian --retriever dense
    OMP_NUM_THREADS=1 FAIRRAG_INDEX=DIR python benchmarks/dense_recall_debian.py /tmp/debian [--queries 200]

docs/scale.md's dense rows use random unit vectors, the worst case for a graph index; this measures the same graph
(:class:`~fairrag_core.retrieval.dense.HnswIndex`: the store's M, efConstruction and efSearch beams) on the stored
embeddings of a real collection: recall@K (K = 20, the default candidates) against exact search, |HNSW top-K ∩ exact
top-K| / K averaged over queries, on documents of the collection used as queries and on the collection's own queries
(queries.jsonl, encoded by the same model), at each beam; and the per-query time of exact search (one matrix-vector
product and a partition) against the graph (search, then the exact cosine of its candidates), as the store times
them. Where the store dropped the graph (slower than exact search at the beam its recall needs), it is rebuilt here
from the stored embeddings with the store's parameters, and its build timed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from fairrag_core import load_collection
from fairrag_core.retrieval import build_retriever
from fairrag_core.retrieval.dense import HnswIndex, exact_top_k
from fairrag_core.retrieval.index_store import HNSW_EF_SEARCH, RECALL_K


def _recall(ann: HnswIndex, vectors: np.ndarray, queries: np.ndarray, ef: int) -> float:
    exact = exact_top_k(vectors, queries, RECALL_K)
    approx = ann.search(queries, RECALL_K, ef=ef)
    return float(np.mean([len(set(a.tolist()) & set(e.tolist())) for a, e in zip(approx, exact)]) / RECALL_K)


def _times(ann: HnswIndex, vectors: np.ndarray, queries: np.ndarray, ef: int) -> tuple[float, float]:
    """Milliseconds per query, exact and HNSW (re-scored), as :meth:`HnswIndex.query_times` measures them."""
    start = time.perf_counter()
    for q in queries:
        np.argpartition(-(vectors @ q), RECALL_K - 1)
    exact = time.perf_counter() - start
    start = time.perf_counter()
    for q in queries:
        ids = ann.search(q[None, :], RECALL_K, ef=ef)[0]
        np.asarray(vectors[ids[ids >= 0]]) @ q
    approx = time.perf_counter() - start
    return exact / len(queries) * 1e3, approx / len(queries) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("collection", help="a collection folder with corpus.jsonl and queries.jsonl")
    parser.add_argument("--queries", type=int, default=200, help="documents used as queries")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    collection = load_collection(args.collection)
    retriever = build_retriever("dense", collection.texts, collection=collection.name)
    vectors = np.ascontiguousarray(retriever.doc_vectors, dtype=np.float32)
    manifest = dict(retriever.manifest or {})
    ann, rebuilt_s = retriever.ann, None
    if ann is None:  # the store kept exact search: the same graph, rebuilt for the measurement
        start = time.perf_counter()
        ann = HnswIndex.build(vectors)
        rebuilt_s = time.perf_counter() - start
        ann.ef_search = manifest.get("hnsw", {}).get("ef_search", HNSW_EF_SEARCH[-1])
    rng = np.random.default_rng(args.seed)
    as_queries = vectors[rng.choice(len(vectors), size=args.queries, replace=False)]
    with open(Path(args.collection) / "queries.jsonl", encoding="utf-8") as handle:  # every query, judged or not
        texts = [json.loads(line)["text"] for line in handle if line.strip()]
    own = retriever.embedder.encode(texts).astype(np.float32)
    result = {"docs": len(vectors), "manifest": manifest, "graph_rebuilt_s": rebuilt_s, "ef_search": ann.ef_search}
    for name, queries in (("documents", as_queries), ("queries", own)):
        result[name] = {"n": len(queries),
                        "recall_by_ef": {ef: round(_recall(ann, vectors, queries, ef), 4) for ef in HNSW_EF_SEARCH}}
        for ef in sorted({64, ann.ef_search}):
            _times(ann, vectors, queries[:5], ef)  # warm the pages
            exact_ms, ann_ms = _times(ann, vectors, queries, ef)
            result[name][f"ms_at_ef{ef}"] = {"exact": round(exact_ms, 3), "hnsw": round(ann_ms, 3)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
