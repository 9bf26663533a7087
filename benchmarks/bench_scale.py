"""How ``evaluate-run`` grows from 10⁵ to 10⁸ lines, side by side with diazf/expeval, end to end.

Writes a stochastic run in expeval's format (``topics × samples × depth`` lines: Plackett-Luce samples over a pool of
``2 × depth`` candidates per topic) and its qrels, then runs, each in a fresh process (process start and imports
included), timed with ``/usr/bin/time`` (wall seconds and peak resident memory):

* ``python -m fairrag_core evaluate-run -u gerr --trec-eval QRELS RUN`` — expeval's own per-query lines;
* ``python -m fairrag_core evaluate-run QRELS RUN --json`` — the default report (step user, bias-corrected EE-D with
  intervals) — only with ``--report``;
* ``python EXPEVAL/expeval.py -u gerr QRELS RUN`` (``--expeval FOLDER``, a checkout of github.com/diazf/expeval), and
  the largest per-query difference between the two outputs.

Run: ``python benchmarks/bench_scale.py --expeval /tmp/expeval --sizes 1e5,1e6,1e7 [--keep /tmp/scale]``.
Prints a table; asserts nothing about time. Inputs are cached in ``--keep`` (they take a while to write at 10⁸).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def shape_of(lines: int) -> tuple[int, int, int]:
    """(topics, samples, depth) for a size: 100 samples × 100 documents per topic, topics grow (1,000 at 10⁷)."""
    samples, depth = 100, 100
    return max(1, lines // (samples * depth)), samples, depth


def write_inputs(folder: Path, lines: int, seed: int = 0) -> tuple[Path, Path]:
    """The run and qrels of one size, written once and kept in ``folder``."""
    topics, samples, depth = shape_of(lines)
    run, qrels = folder / f"run_{lines:.0e}.txt", folder / f"qrels_{lines:.0e}.txt"
    if run.exists() and qrels.exists():
        return qrels, run
    rng = np.random.default_rng(seed)
    pool = 2 * depth
    ranks = np.arange(1, depth + 1)
    with run.open("w", encoding="ascii") as out, qrels.open("w", encoding="ascii") as judged_out:
        for t in range(topics):
            quality = rng.normal(size=pool)
            grades = np.where(quality > 1.2, 2, np.where(quality > 0.5, 1, 0))
            judged = np.flatnonzero(rng.uniform(size=pool) < 0.6)
            judged_out.write("".join(f"t{t} {d % 5} t{t}-d{d} {grades[d]}\n" for d in judged))
            keys = quality[None, :] + rng.gumbel(size=(samples, pool))
            top = np.argsort(-keys, axis=1)[:, :depth]
            out.write("".join(f"t{t} s{s} t{t}-d{d} {r} {depth - r + 1} sys\n"
                              for s in range(samples) for r, d in zip(ranks, top[s])))
    return qrels, run


def timed(command: list[str], cwd: Path | None = None, file_mb: float = 0) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of a command in a fresh process; a file above the loaders' default
    limit of 1,000 MB is read with the limit raised to its size (``FAIRRAG_MAX_FILE_MB``)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if file_mb > 900:  # the loaders count MB of 10⁶ bytes; file_mb is in MiB
        env["FAIRRAG_MAX_FILE_MB"] = str(int(file_mb * 1.05) + 1)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as clock:
        done = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", clock.name, *command], cwd=cwd,
                              capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        wall, rss_kb = clock.read().split()[-2:]
    return float(wall), int(rss_kb) / 1024, done.stdout


def per_query(stdout: str) -> dict[tuple[str, str], float]:
    values = {}
    for line in stdout.splitlines():
        metric, qid, value = line.split("\t")
        values[(metric, qid)] = float(value)
    return values


def start(keep: str | None, prefix: str) -> Path:
    """Print the machine line every benchmark here starts with; the folder that keeps the inputs (a temp dir by
    default)."""
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}")
    folder = Path(keep or tempfile.mkdtemp(prefix=prefix))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e5,1e6,1e7", help="comma-separated line counts (default 1e5,1e6,1e7)")
    parser.add_argument("--expeval", default=None, help="folder with expeval.py (github.com/diazf/expeval)")
    parser.add_argument("--expeval-max", type=float, default=1e7, help="largest size to run expeval on (its memory)")
    parser.add_argument("--report", action="store_true", help="also time the default report (--json)")
    parser.add_argument("--keep", default=None, help="folder to write and keep the inputs in (default: a temp dir)")
    args = parser.parse_args()
    folder = start(args.keep, "fairrag-scale-")
    ours = [sys.executable, "-m", "fairrag_core", "evaluate-run"]
    print(f"{'lines':>8} {'file MB':>8} | {'ours s':>7} {'ours MB':>8} | {'report s':>8} {'report MB':>9} | "
          f"{'expeval s':>9} {'expeval MB':>10} | {'speed-up':>8} {'memory':>7} | max |Δ|")
    for size in (int(float(s)) for s in args.sizes.split(",")):
        qrels, run = write_inputs(folder, size)
        file_mb = run.stat().st_size / 2**20
        wall, rss, out = timed([*ours, "-u", "gerr", "--trec-eval", str(qrels), str(run)], cwd=ROOT, file_mb=file_mb)
        row = f"{size:8.0e} {run.stat().st_size / 2**20:8.0f} | {wall:7.2f} {rss:8.0f} | "
        if args.report:
            r_wall, r_rss, _ = timed([*ours, str(qrels), str(run), "--json"], cwd=ROOT, file_mb=file_mb)
            row += f"{r_wall:8.2f} {r_rss:9.0f} | "
        else:
            row += f"{'':>8} {'':>9} | "
        if args.expeval and size <= args.expeval_max:
            e_wall, e_rss, e_out = timed([sys.executable, str(Path(args.expeval) / "expeval.py"), "-u", "gerr",
                                          str(qrels), str(run)])
            mine, theirs = per_query(out), per_query(e_out)
            common = [k for k in theirs if k[1] != "all"]
            gap = max(abs(mine[k] - theirs[k]) for k in common) if set(common) <= set(mine) else float("nan")
            row += f"{e_wall:9.2f} {e_rss:10.0f} | {e_wall / wall:7.1f}× {rss / e_rss:6.2f}× | {gap:.1e}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
