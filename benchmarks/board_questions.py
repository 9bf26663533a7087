"""The board's three questions, asked of the studio the way a reviewer would (issue 20): with a news collection, two
served systems and a RAG log, answer from the CLI — and, with ``--before REV``, from an earlier checkout — whether B
is fairer than A and at what cost, which providers are under-exposed in retrieval or in citations beyond noise, and
how sure we are.

Data (rebuilt here, seeded, from the bundled ``news`` collection: 132 articles from 16 providers, 28 judged queries):

* A — a deterministic BM25 system: its top 5 per query (a plain TREC run, one ranking per query);
* B — Plackett-Luce at α = 2 over BM25's top 20, 50 sampled rankings per query (an expeval run);
* a RAG log of 100 answers served by B (4 per query over the first 25 queries) whose logged citations credit each
  shown document with probability 0.3, except the documents of one provider (``--under``, default the provider
  with the most useful documents), credited with probability 0.03: an under-cited provider, by construction.

    python benchmarks/board_questions.py                 # writes benchmarks/results/board_questions/
    python benchmarks/board_questions.py --before a755230  # also the same questions on that commit's code

Prints each command and its output; writes the inputs, the outputs and the comparison's HTML report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fairrag_core import load_collection  # noqa: E402
from fairrag_core.ranking.sampling import sample_rankings  # noqa: E402
from fairrag_core.retrieval import BM25Retriever  # noqa: E402


def build(folder: Path, under: str | None, seed: int) -> str:
    news = load_collection("news")
    bm25, ids = BM25Retriever(news.texts), np.array(news.doc_ids)
    providers = dict(zip(news.doc_ids, news.providers))
    useful = Counter(providers[d] for judged in news.qrels.values() for d, g in judged.items() if g > 0)
    under = under or useful.most_common(1)[0][0]
    rng = np.random.default_rng(seed)
    queries = [q for q in news.queries if q.query_id in news.qrels]
    with (open(folder / "A.trec", "w") as a, open(folder / "B.trec", "w") as b,
          open(folder / "log.jsonl", "w") as log):
        for i, q in enumerate(queries):
            scores = bm25.score(q.text)
            top = np.argsort(-scores, kind="stable")[:20]
            a.writelines(f"{q.query_id} Q0 {d} {r} {6 - r} bm25\n" for r, d in enumerate(ids[top[:5]], 1))
            sampled = sample_rankings(scores[top], alpha=2.0, n_samples=50, k=5, seed=seed + i)
            for s, row in enumerate(sampled):
                b.writelines(f"{q.query_id} {s + 1} {d} {r} {6 - r} pl2\n" for r, d in enumerate(ids[top[row]], 1))
            if i < 25:
                for row in sampled[:4]:
                    shown = [str(d) for d in ids[top[row]]]
                    cited = [d for d in shown if rng.random() < (0.03 if providers[d] == under else 0.3)]
                    log.write(json.dumps({"query_id": q.query_id, "query": q.text, "ranking": shown,
                                          "answer": f"(answer to {q.query_id})", "citations": cited}) + "\n")
    return under


def run(command: list[str], cwd: Path, code_root: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(code_root), "FAIRRAG_RUNS": str(cwd / "runs.duckdb")}
    done = subprocess.run([sys.executable, "-m", "fairrag_core", *command], cwd=cwd, env=env, capture_output=True,
                          text=True)
    return f"$ python -m fairrag_core {' '.join(command)}\n{done.stdout}{done.stderr}".rstrip() + "\n"


AFTER = [["audit-log", "A.trec", "--collection", "news", "--seed", "1", "--no-store"],
         ["audit-log", "B.trec", "--collection", "news", "--seed", "1", "--no-store"],
         ["audit-log", "log.jsonl", "--collection", "news", "--seed", "1", "--no-store"],
         ["compare-runs", "A.trec", "B.trec", "log.jsonl", "--collection", "news", "--seed", "1", "--no-store",
          "--report", "comparison.html"]]
#: What the landed code could do with the same files: compare-runs took two runs with expeval's metrics only, and
#: audit-log took JSONL logs only.
BEFORE = [["compare-runs", "news", "A.trec", "B.trec", "--seed", "1"],
          ["audit-log", "log.jsonl", "--collection", "news", "--seed", "1", "--no-store"],
          ["audit-log", "B.trec", "--collection", "news", "--seed", "1", "--no-store"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "board_questions"))
    parser.add_argument("--under", default=None, help="the provider the log under-cites (default: the one with the "
                                                      "most useful documents)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--before", default=None, help="a commit whose code answers the same questions, for "
                                                       "comparison")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    under = build(out, args.under, args.seed)
    print(f"inputs in {out}: A.trec, B.trec, log.jsonl (the log under-cites {under})\n")
    text = [run(c, out, ROOT) for c in AFTER]
    (out / "after.txt").write_text("\n".join(text), encoding="utf-8")
    print("\n".join(text))
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            code = Path(tmp) / "code"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(code), args.before],
                           check=True)
            try:
                place = Path(tmp) / "data"
                shutil.copytree(out, place, ignore=shutil.ignore_patterns("*.txt", "*.html", "*.duckdb*"))
                before = [run(c, place, code) for c in BEFORE]
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(code)], check=True)
        (out / "before.txt").write_text(f"(code at {args.before})\n\n" + "\n".join(before), encoding="utf-8")
        print(f"--- before ({args.before}) ---\n" + "\n".join(before))


if __name__ == "__main__":
    main()
