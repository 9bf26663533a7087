"""How fast a RAG log audits without the NLI judge: load, exposure + logged citations, headline, ledgers.

Builds a synthetic log of ``--lines`` served answers over the running-shoes collection (default 10,000): each
line picks one of ``--queries`` query ids (the collection's 18 labelled queries and unlabelled ones drawn from
them, so most lines have no relevance labels, as in real traffic), serves a Plackett-Luce ranking of the BM25
scores at α = 2 (k = 5), a short answer and one or two citations from the ranking. Then times, on this machine:

* ``load_rag_log`` with the doc-id check against the collection;
* ``audit_rag_log`` exposure only (``attribution=none``) and with the logged citations;
* the headline (bootstrap over queries, B = 1000) and the ledgers by provider and by segment with intervals.

Run: ``python benchmarks/bench_rag_log.py [--lines 10000] [--queries 200] [--repeat 3]``. Prints the best of
``--repeat`` runs per step. Judging answers with the NLI model is not timed here: it costs one judge call per new
(document, answer) pair (``benchmarks/bench_sweep.py`` measures the judge).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from fairrag_core import BM25Retriever, load_collection, sample_rankings
from fairrag_core.audit.log_report import log_ledger, log_summary
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.data import load_rag_log


def write_log(path: Path, lines: int, queries: int, seed: int = 0) -> None:
    shoes = load_collection("running-shoes")
    bm25 = BM25Retriever(shoes.texts)
    rng = np.random.default_rng(seed)
    base = list(shoes.queries)
    ids = [q.query_id for q in base] + [f"traffic-{i:04d}" for i in range(max(0, queries - len(base)))]
    text_of = {q.query_id: q.text for q in base}
    for i, qid in enumerate(ids):
        text_of.setdefault(qid, base[i % len(base)].text)
    pools = {qid: sample_rankings(bm25.score(text), alpha=2, n_samples=64, k=5, seed=rng)
             for qid, text in text_of.items()}
    doc_ids = np.array(shoes.doc_ids)
    with path.open("w", encoding="utf-8") as out:
        for n in range(lines):
            qid = ids[rng.integers(len(ids))]
            ranking = doc_ids[pools[qid][rng.integers(64)]].tolist()
            cited = ranking[: rng.integers(1, 3)]
            out.write(json.dumps({"query_id": qid, "query": text_of[qid], "ranking": ranking,
                                  "answer": f"answer {n % 97}", "citations": cited, "session": f"s{n // 7}",
                                  "timestamp": f"2026-03-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"})
                      + "\n")


def best(step, repeat: int):
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = step()
        times.append(time.perf_counter() - start)
    return min(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    shoes = load_collection("running-shoes")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        write_log(path, args.lines, args.queries)
        size = path.stat().st_size
        t_load, log = best(lambda: load_rag_log(path, collection=shoes), args.repeat)
        t_none, _ = best(lambda: audit_rag_log(log, shoes, LogAuditConfig(attribution="none", seed=0)), args.repeat)
        t_cited, run = best(lambda: audit_rag_log(log, shoes, LogAuditConfig(seed=0)), args.repeat)
        t_head, summary = best(lambda: log_summary(run), args.repeat)
        t_ledger, _ = best(lambda: [log_ledger(run, shoes, by=by, labelled_only=True)
                                    for by in ("provider", "segment")], args.repeat)
    ee_d = summary.set_index("metric").loc["ee_d"]
    print(f"RAG log: {args.lines:,} lines ({size / 1e6:.1f} MB), {len(run.table)} query ids "
          f"({int(run.table['labelled'].sum())} with relevance labels), k = 5; best of {args.repeat}")
    print(f"  load + doc-id check            {t_load:6.2f} s")
    print(f"  audit, exposure only           {t_none:6.2f} s")
    print(f"  audit, + logged citations      {t_cited:6.2f} s")
    print(f"  headline (6 metrics, B = 1000) {t_head:6.2f} s")
    print(f"  ledgers (provider, segment)    {t_ledger:6.2f} s")
    print(f"  total, load to ledgers         {t_load + t_cited + t_head + t_ledger:6.2f} s")
    print(f"  (EE-D {ee_d['estimate']:.3f} [{ee_d['low']:.3f}, {ee_d['high']:.3f}] over {ee_d['queries']} queries)")


if __name__ == "__main__":
    main()
