"""How an exposure-only audit of a RAG log grows with its lines: ``audit-log LOG --attribution none`` end to end.

Writes logs of ``--sizes`` lines with ``bench_rag_log.write_log`` (running-shoes, 200 query ids, a Plackett-Luce
ranking of the BM25 scores at α = 2, k = 5, an answer, citations, a session and a timestamp per line: about 250
bytes a line) and times the command in a fresh process with ``/usr/bin/time`` (wall seconds, peak resident
memory). An exposure-only audit reads the log column-wise (``fairrag_core.data.log_columns``).
Inputs are cached in ``--keep``. Prints a table; asserts nothing about time.

Run: ``python benchmarks/bench_log_scale.py --sizes 1e5,1e6,1e7 --keep /tmp/scale``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from bench_rag_log import write_log  # noqa: E402 (the benchmarks folder is not a package)
from bench_scale import ROOT, start, timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e5,1e6", help="comma-separated line counts (default 1e5,1e6)")
    parser.add_argument("--keep", default=None, help="folder to write and keep the logs in (default: a temp dir)")
    args = parser.parse_args()
    folder = start(args.keep, "fairrag-logs-")
    print(f"{'lines':>8} {'file MB':>8} | {'audit s':>8} {'peak MB':>8}")
    for size in (int(float(s)) for s in args.sizes.split(",")):
        log = folder / f"log_{size:.0e}.jsonl"
        if not log.exists():
            write_log(log, size, 200)
        file_mb = log.stat().st_size / 2**20
        wall, rss, _ = timed([sys.executable, "-m", "fairrag_core", "audit-log", str(log), "--collection",
                              "running-shoes", "--attribution", "none", "--seed", "1", "--no-store"], cwd=ROOT,
                             file_mb=file_mb)
        print(f"{size:8.0e} {file_mb:8.0f} | {wall:8.2f} {rss:8.0f}", flush=True)


if __name__ == "__main__":
    main()
