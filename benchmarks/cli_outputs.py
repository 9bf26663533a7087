"""Every CLI output, JSON and report on the demo collections, written to a folder so that two checkouts can be diffed
(issue 28: "behaviour is otherwise unchanged ... compare before/after and say how").

    python benchmarks/cli_outputs.py OUT_DIR [--checkout PATH]

runs each command below with ``PYTHONPATH=PATH`` (default: this checkout) from PATH, and writes ``NAME.out``,
``NAME.err`` and ``NAME.code`` per command, with what legitimately differs between two runs masked: wall-clock
timings, run ids and creation times, the checkout's own path, and the temporary folder. Then

    diff -r OLD_DIR NEW_DIR

lists every output that changed. Seeds are fixed, no language model runs (audits use logged citations), and nothing
is stored (``--no-store``) except where a command needs a stored run, which goes to a temporary store.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

QUERY = "best shoes for a first marathon"
LOG = "assets/logs/running-shoes.jsonl"
TRACES = "assets/logs/running-shoes.otlp.jsonl"
EXPEVAL = "tests/data/expeval"

#: name → the words after ``python -m fairrag_core`` ({tmp} is a temporary folder).
COMMANDS: dict[str, list[str]] = {
    "collections": ["collections", "--json"],
    "rank": ["rank", "--collection", "running-shoes", "--query", QUERY, "--alpha", "2", "--seed", "1"],
    "rank-json": ["rank", "--collection", "running-shoes", "--query", QUERY, "--alpha", "2", "--seed", "1", "--json"],
    "rank-K92": ["rank", "--collection", "running-shoes", "--query", QUERY, "--alpha", "2", "--seed", "1",
                 "--candidates", "92"],
    "rank-news-free": ["rank", "--collection", "news", "--query", "elections in europe", "--alpha", "0.5",
                        "--seed", "4", "-k", "3", "-N", "30"],
    "exposure-sweep": ["exposure-sweep", "--collection", "people", "--alphas", "0,2,8", "--samples", "30",
                       "--seed", "2", "--no-store"],
    "exposure-sweep-json": ["exposure-sweep", "--collection", "running-shoes", "--alphas", "0,4,inf", "--samples",
                            "20", "--seed", "2", "--json", "--no-store"],
    "exposure-sweep-K100": ["exposure-sweep", "--collection", "people", "--alphas", "0,2,8", "--samples", "30",
                            "--seed", "2", "--candidates", "100", "--no-store"],
    "audit-log": ["audit-log", LOG, "--collection", "running-shoes", "--seed", "1", "--no-store"],
    "audit-log-json": ["audit-log", LOG, "--collection", "running-shoes", "--seed", "1", "--no-store", "--json",
                       "--boot", "300"],
    "audit-log-traces-what-if": ["audit-log", TRACES, "--collection", "running-shoes", "--seed", "2", "--no-store",
                                 "--what-if-alphas", "0,2,inf", "--what-if-samples", "50"],
    "audit-log-traces-provider-from": ["audit-log", TRACES, "--provider-from", "domain:metadata.url", "--seed", "2",
                                       "--no-store"],
    "audit-log-none-rbp": ["audit-log", LOG, "--collection", "running-shoes", "--attribution", "none",
                           "--user-model", "rbp", "--seed", "5", "--no-store", "--json"],
    "evaluate-run": ["evaluate-run", f"{EXPEVAL}/qrels_graded.txt", f"{EXPEVAL}/run_a.txt", "--ci", "--seed", "3"],
    "evaluate-run-json": ["evaluate-run", f"{EXPEVAL}/qrels_graded.txt", f"{EXPEVAL}/run_a.txt", "-u", "rbp",
                          "-p", "0.8", "--ci", "--seed", "3", "--json"],
    "evaluate-run-trec": ["evaluate-run", f"{EXPEVAL}/qrels_graded.txt", f"{EXPEVAL}/run_b.txt", "--trec-eval",
                          "--awrf", "10"],
    "compare-runs-files": ["compare-runs", f"{EXPEVAL}/qrels_graded.txt", f"{EXPEVAL}/run_a.txt",
                           f"{EXPEVAL}/run_b.txt", "--seed", "8", "--n-permutations", "500"],
    "compare-runs-logs": ["compare-runs", LOG, TRACES, "--collection", "running-shoes", "--seed", "2", "--no-store",
                          "--n-boot", "300", "--n-permutations", "500"],
    "compare-runs-logs-json": ["compare-runs", LOG, TRACES, "--collection", "running-shoes", "--seed", "2",
                               "--no-store", "--n-boot", "300", "--n-permutations", "500", "--json"],
    "compare-runs-report": ["compare-runs", LOG, TRACES, "--collection", "running-shoes", "--seed", "2", "--no-store",
                            "--n-boot", "300", "--n-permutations", "500", "--report", "{tmp}/comparison.html"],
    "fair-qr": ["fair-qr", "--collection", "people", "--query", "award-winning film directors", "--category",
                "gender", "--refiner", "keywords", "--json"],
    "runs-empty": ["runs", "--store", "{tmp}/empty.duckdb"],
    "audit-log-stored": ["audit-log", LOG, "--collection", "running-shoes", "--seed", "1", "--store",
                         "{tmp}/runs.duckdb", "--boot", "100"],
    "runs-list": ["runs", "list", "--store", "{tmp}/runs.duckdb"],
}

_MASKS = [
    (re.compile(r"\b[0-9a-f]{40}(-dirty)?\b"), "COMMIT"),  # the git commit every run's header names
    (re.compile(r"\b[0-9a-f]{12}\b"), "RUNID"),
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?"), "TIME"),
    (re.compile(r"\b\d+(\.\d+)? ?(s|ms|seconds)\b"), "DURATION"),
    (re.compile(r'"(wall_seconds|seconds|elapsed)": [0-9.e-]+'), r'"\1": DURATION'),
]


def _mask(text: str, checkout: Path, tmp: str) -> str:
    text = text.replace(tmp, "TMP").replace(str(checkout), "CHECKOUT")
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--only", default="", help="comma-separated names of COMMANDS")
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    names = [n for n in args.only.split(",") if n] or list(COMMANDS)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            words = [w.replace("{tmp}", tmp) for w in COMMANDS[name]]
            done = subprocess.run([sys.executable, "-m", "fairrag_core", *words], cwd=checkout, env=env,
                                  capture_output=True, text=True, timeout=600)
            (args.out / f"{name}.out").write_text(_mask(done.stdout, checkout, tmp))
            (args.out / f"{name}.err").write_text(_mask(done.stderr, checkout, tmp))
            (args.out / f"{name}.code").write_text(f"{done.returncode}\n")
            report = Path(tmp) / "comparison.html"
            if report.exists():
                (args.out / f"{name}.html").write_text(_mask(report.read_text(), checkout, tmp))
                report.unlink()
            print(f"{name}: exit {done.returncode}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
