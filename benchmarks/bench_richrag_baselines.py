"""NCOM@k of the untrained RichRAG lists on the 60 multi-faceted queries, and what one query costs.

For every query: its shipped aspects drive the multi-faceted pool (top N = 10 per ``q ∘ s_i``, capacity M = 40,
BM25 or dense), φ is computed against its sub-answers (the released recipe), and the relevance, MMR, per-aspect
round-robin and greedy-oracle lists are scored with NCOM@k. Means with 95% percentile-bootstrap intervals over
queries (2,000 resamples, seed 0). All 60 queries are used: nothing here is trained. Figures only; run:

    python benchmarks/bench_richrag_baselines.py [--retriever bm25|dense] [-k 5 10]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from fairrag_core import load_collection
from fairrag_core.retrieval import build_retriever
from fairrag_core.richrag.aspects import AspectSet, AspectSource
from fairrag_core.richrag.flow import rich_rank
from fairrag_core.richrag.pool import PoolSettings

RESULTS = Path(__file__).parent / "results"


def bootstrap(values: np.ndarray, rng: np.random.Generator, n: int = 2000) -> tuple[float, float]:
    means = values[rng.integers(0, values.size, size=(n, values.size))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retriever", default="bm25")
    parser.add_argument("-k", type=int, nargs="+", default=[5, 10])
    args = parser.parse_args()
    collection = load_collection("multi-faceted")
    retriever = build_retriever(args.retriever, collection.texts)
    settings = PoolSettings(per_aspect=10, capacity=40)
    rng = np.random.default_rng(0)
    summary: dict = {"retriever": args.retriever, "pool": settings.to_dict(), "queries": len(collection.queries)}
    for k in args.k:
        scores: dict[str, list[float]] = {}
        seconds, sizes = [], []
        for q in collection.queries:
            aspects = AspectSet(q.text, tuple(a.aspect for a in q.aspects), AspectSource.COLLECTION)
            start = time.perf_counter()
            result = rich_rank(collection, retriever, aspects, k=k, settings=settings, ranker_stages=())
            seconds.append(time.perf_counter() - start)
            sizes.append(len(result.pool))
            for name, value in result.ncom.items():
                scores.setdefault(name, []).append(value)
        print(f"\nNCOM@{k}, {args.retriever} pool (N = 10, M = 40; mean size {np.mean(sizes):.1f}), "
              f"{len(collection.queries)} queries; {np.median(seconds) * 1000:.0f} ms per query (median: pool, φ, "
              "lists, NCOM)")
        summary[f"k={k}"] = {"seconds_median": float(np.median(seconds)), "pool_size_mean": float(np.mean(sizes))}
        for name, values in scores.items():
            arr = np.array(values)
            low, high = bootstrap(arr, rng)
            print(f"  {name:<12} {arr.mean():.3f}  [{low:.3f}, {high:.3f}]")
            summary[f"k={k}"][name] = {"mean": float(arr.mean()), "ci95": [low, high]}
    (RESULTS / f"richrag_baselines.{args.retriever}.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
