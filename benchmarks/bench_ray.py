"""Exposure sweep: local backend vs the Ray backend on this machine (issue 14, item 1; docs/ray.md).

Times the same sweep (same seed, so the same table, which is checked) three ways: in this process, on a local Ray
runtime with ``--cpus`` CPUs (one actor per CPU, one task per α), and the Ray runtime's start and stop. Wall
times are medians over ``--repeats`` runs. On a shared machine the figures move with the other load: say so when
quoting them.

    python benchmarks/bench_ray.py --samples 20000 --alphas 0,0.5,1,2,4,8 --cpus 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import pandas as pd

from fairrag_core.backends.workloads import exposure_sweep_on
from fairrag_core.checks import parse_alphas
from fairrag_core.data import load_collection
from fairrag_core.ranking.sweep import SweepConfig, exposure_sweep
from fairrag_core.retrieval import BM25Retriever


def _timed(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collection", default="running-shoes")
    parser.add_argument("--alphas", default="0,0.5,1,2,4,8")
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import ray

    from fairrag_core.backends.ray_backend import RayBackend

    collection = load_collection(args.collection)
    bm25 = BM25Retriever(collection.texts)
    config = SweepConfig(alphas=parse_alphas(args.alphas), n_samples=args.samples, k=args.k, seed=1)
    local_s, local = _timed(lambda: exposure_sweep(collection, bm25, config), args.repeats)
    start = time.perf_counter()
    backend = RayBackend(num_cpus=args.cpus)
    start_s = time.perf_counter() - start
    try:
        ray_s, remote = _timed(lambda: exposure_sweep_on(backend, collection, bm25, config), args.repeats)
    finally:
        start = time.perf_counter()
        backend.close()
        stop_s = time.perf_counter() - start
    pd.testing.assert_frame_equal(remote.table, local.table)
    load = os.getloadavg()[0]
    print(f"exposure sweep on {collection.name}: {len(local.table['query_id'].unique())} queries × "
          f"{len(config.alphas)} α, N = {args.samples}, k = {args.k}; {os.cpu_count()} cores, "
          f"load average {load:.1f}; ray {ray.__version__}, {args.cpus} CPUs")
    print(f"  local backend            {local_s:7.2f} s (median of {args.repeats})")
    print(f"  ray backend (map only)   {ray_s:7.2f} s (median of {args.repeats}; actors started per sweep)")
    print(f"  ray runtime start, stop  {start_s:7.2f} s, {stop_s:.2f} s")
    print("  tables identical: yes")


if __name__ == "__main__":
    main()
