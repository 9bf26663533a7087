"""Sampler speed: exact head/tail Gumbel top-k vs the naive full-argsort Gumbel method.

Prints figures; asserts nothing about time (timings flake on a busy machine).
Run: python benchmarks/bench_sampler.py  [--quick]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from fairrag_core import normalise_scores, sample_rankings, sample_rankings_batch


def naive_sample(scores: np.ndarray, alpha: float, n_samples: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Reference method: Gumbel noise for every item, full argsort, keep the top k — per sample."""
    logits = normalise_scores(scores) ** alpha
    out = np.empty((n_samples, k), dtype=np.int64)
    for i in range(n_samples):
        out[i] = np.argsort(-(logits + rng.gumbel(size=logits.size)))[:k]
    return out


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller naive runs (extrapolated)")
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, numpy {np.__version__}")
    rng = np.random.default_rng(0)
    n, n_samples, k = 1_000_000, 100, 5
    scores = rng.random(n)
    naive_n = 10 if args.quick else n_samples
    print(f"\nsingle query: n = {n:,}, N = {n_samples}, k = {k}")
    for alpha in (0.0, 2.0, 8.0):
        ours = best_of(lambda alpha=alpha: sample_rankings(scores, alpha=alpha, n_samples=n_samples, k=k, seed=1), 3)
        naive = best_of(lambda alpha=alpha: naive_sample(scores, alpha, naive_n, k, np.random.default_rng(1)), 1)
        naive *= n_samples / naive_n
        print(f"  α = {alpha:>3}: ours {ours * 1e3:8.1f} ms   naive full argsort {naive * 1e3:9.1f} ms"
              f"   speed-up {naive / ours:6.1f}×")

    q, n2 = 1_000, 1_000
    batch_scores = rng.random((q, n2))
    print(f"\nbatched: {q} queries × {n2} candidates, N = {n_samples}, k = {k}, α = 2")
    batched = best_of(lambda: sample_rankings_batch(batch_scores, alpha=2.0, n_samples=n_samples, k=k, seed=1), 2)
    loop = best_of(lambda: [sample_rankings(row, alpha=2.0, n_samples=n_samples, k=k, seed=1)
                            for row in batch_scores], 1)
    naive_q = 20 if args.quick else 100
    naive = best_of(lambda: [naive_sample(row, 2.0, n_samples, k, np.random.default_rng(1))
                             for row in batch_scores[:naive_q]], 1) * q / naive_q
    print(f"  sample_rankings_batch {batched:6.2f} s   per-query loop {loop:6.2f} s   "
          f"naive loop {naive:6.2f} s (from {naive_q} queries)")
    print(f"  → {q * n_samples / batched:,.0f} rankings/s batched")


if __name__ == "__main__":
    main()
