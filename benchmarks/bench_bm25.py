"""BM25 query latency on a synthetic 100k-document corpus: sparse BM25 vs rank_bm25, with a score check.

Prints figures; asserts nothing about time. Run: python benchmarks/bench_bm25.py [--docs 100000]
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from rank_bm25 import BM25Okapi

from fairrag_core.retrieval import BM25Retriever


def synthetic_corpus(n_docs: int, vocab: int, rng: np.random.Generator) -> list[list[str]]:
    """Zipf-distributed words (as in real text), document lengths 20–120 tokens."""
    words = np.array([f"w{i}" for i in range(vocab)])
    ranks = np.arange(1, vocab + 1)
    probs = (1 / ranks) / (1 / ranks).sum()
    lengths = rng.integers(20, 121, size=n_docs)
    flat = words[rng.choice(vocab, size=lengths.sum(), p=probs)]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [flat[a:z].tolist() for a, z in itertools.pairwise(bounds)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    vocab = 50_000
    docs = synthetic_corpus(args.docs, vocab, rng)
    queries = [[f"w{int(i)}" for i in rng.integers(10, 5_000, size=rng.integers(2, 6))] for _ in range(args.queries)]
    print(f"corpus: {len(docs):,} docs, {sum(map(len, docs)):,} tokens, vocabulary {vocab:,}; {len(queries)} queries")

    start = time.perf_counter()
    ours = BM25Retriever(docs, tokenizer=None)
    build_ours = time.perf_counter() - start
    start = time.perf_counter()
    reference = BM25Okapi(docs)
    build_ref = time.perf_counter() - start
    print(f"index build: ours {build_ours:.2f} s, rank_bm25 {build_ref:.2f} s")

    ours_t, ref_t, max_diff = [], [], 0.0
    for q in queries:
        start = time.perf_counter()
        a = ours.score_tokens(q)
        ours_t.append(time.perf_counter() - start)
        start = time.perf_counter()
        b = reference.get_scores(q)
        ref_t.append(time.perf_counter() - start)
        max_diff = max(max_diff, float(np.max(np.abs(a - b))))
    o, r = np.median(ours_t), np.median(ref_t)
    print(f"query latency (median): ours {o * 1e3:.2f} ms, rank_bm25 {r * 1e3:.1f} ms → {r / o:.0f}× faster")
    print(f"max |score difference| over all queries and documents: {max_diff:.2e}")


if __name__ == "__main__":
    main()
