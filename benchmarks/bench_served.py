"""Served-run audit speed: a run of 50 topics × 100 samples × 20 documents (100,000 lines) loaded and evaluated.

Times, on the machine at hand: writing the run (expeval's format) and its qrels; loading them; evaluate_run for
gerr and rbp (normalised, incomplete) and for the step model; the sample bootstrap (1,000 resamples per query);
the query bootstrap and a paired comparison of two runs; nDCG@20/AWRF@20. With ``--expeval PATH`` it also times
expeval itself on the same files and reports the largest per-query difference. Prints figures; asserts nothing
about time.
Run: python benchmarks/bench_served.py [--expeval /tmp/expeval]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from fairrag_core import (
    bootstrap_run,
    compare_runs,
    evaluate_run,
    evaluate_run_awrf,
    load_judgments,
    load_run,
    summarise_run,
)


def write_inputs(folder: Path, *, topics: int = 50, samples: int = 100, depth: int = 20, pool: int = 200,
                 seed: int = 0) -> tuple[Path, Path, Path]:
    """A stochastic run (Plackett-Luce over ``pool`` candidates per topic), a flatter second run, and qrels."""
    rng = np.random.default_rng(seed)
    qrels_lines, runs = [], {"A": [], "B": []}
    for t in range(topics):
        quality = rng.normal(size=pool)
        grades = np.where(quality > 1.2, 2, np.where(quality > 0.5, 1, 0))
        judged = np.flatnonzero(rng.uniform(size=pool) < 0.6)  # 60% of the pool judged
        qrels_lines.extend(f"t{t} {d % 4}|{(d // 4) % 3 + 4} doc{t}-{d} {grades[d]}" for d in judged)
        for name, sharp in (("A", 2.0), ("B", 0.5)):
            keys = quality[None, :] * sharp + rng.gumbel(size=(samples, pool))
            top = np.argsort(-keys, axis=1)[:, :depth]
            runs[name].extend(f"t{t} s{s} doc{t}-{d} {r + 1} {depth - r} sys{name}"
                              for s in range(samples) for r, d in enumerate(top[s]))
    qrels = folder / "qrels.txt"
    qrels.write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    paths = []
    for name, lines in runs.items():
        path = folder / f"run_{name}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return qrels, paths[0], paths[1]


def timed(label: str, fn):
    start = time.perf_counter()
    result = fn()
    print(f"  {label:<58} {time.perf_counter() - start:7.3f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--expeval", default=None, help="folder with expeval.py: also time expeval on the same run")
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, numpy {np.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        qrels_path, run_a_path, run_b_path = timed("write 2 runs (100,000 lines each) + qrels",
                                                   lambda: write_inputs(folder))
        run_a = timed("load run A (100,000 lines)", lambda: load_run(run_a_path))
        run_b = load_run(run_b_path)
        qrels = timed("load qrels", lambda: load_judgments(qrels_path))
        print(f"  run: {len(run_a)} topics × {run_a[run_a.query_ids[0]].n_samples} samples, {run_a.n_lines} lines")
        table = timed("evaluate_run gerr (normalised, incomplete)",
                      lambda: evaluate_run(qrels=qrels, run=run_a, user_model="gerr"))
        timed("evaluate_run rbp, complete, groups", lambda: evaluate_run(qrels=qrels, run=run_a, user_model="rbp",
                                                                        complete=True, groups=True))
        timed("evaluate_run step k=5", lambda: evaluate_run(qrels=qrels, run=run_a, user_model="step", k=5))
        timed("load + evaluate from paths (gerr)",
              lambda: evaluate_run(qrels=qrels_path, run=run_a_path, user_model="gerr"))
        timed("bootstrap_run: 1,000 resamples of the samples per topic",
              lambda: bootstrap_run(qrels=qrels, run=run_a, n_boot=1000, seed=0))
        timed("summarise_run: 1,000 resamples of the topics", lambda: summarise_run(table, seed=0))
        timed("compare_runs A vs B (bootstrap + 10,000 sign flips)",
              lambda: compare_runs(qrels=qrels, run_a=run_a, run_b=run_b, seed=0))
        timed("evaluate_run_awrf nDCG@20 / AWRF@20", lambda: evaluate_run_awrf(qrels=qrels, run=run_a, cutoff=20))
        if args.expeval:
            script = Path(args.expeval) / "expeval.py"
            out = timed("expeval.py on the same files (its own loading included)",
                        lambda: subprocess.run(["python3", str(script), str(qrels_path), str(run_a_path)],
                                               capture_output=True, text=True, check=True).stdout)
            theirs = {(q, m): float(v) for m, q, v in (line.split("\t") for line in out.splitlines())}
            worst = max(abs(table.loc[q, m] - v) for (q, m), v in theirs.items())
            print(f"  largest |ours − expeval| over {len(theirs)} printed values (expeval prints 6 decimals): "
                  f"{worst:.2e}")


if __name__ == "__main__":
    main()
