"""Aspect recall of the sub-aspect explorer on the multi-faceted collection (RichRAG §3.2; issue 13, item 1).

For each of the 60 queries the explorer's LLM lists aspects (``[s1] … [sn]``, parsed by
``fairrag_core.richrag.aspects.parse_aspects``). A shipped aspect counts as recalled when a predicted aspect's
MiniLM cosine similarity reaches the threshold, each prediction matching one shipped aspect at most (maximum
matching). Fallbacks are *not* used here (a reply without usable aspects scores 0), so the figure is the LLM's.

Threshold: 0.5. Two *different* shipped aspects of the same query reach cosine ≥ 0.5 in about 10% of pairs
(median 0.20, 95th percentile 0.59; printed below as the false-match rate), while paraphrases of one aspect
("avoiding injury" / "injury prevention" 0.83, "what can go in the bin" / "what to put in the compost bin" 0.61)
mostly pass. The sweep over thresholds is printed too.

Replies are cached in a JSONL file (one line per query, with the seconds the call took), so an interrupted run
resumes and re-scoring costs no model call. Run (about 5–10 s per query on an idle 2-core CPU; n_threads=1 is
faster when other processes share the cores):

    python benchmarks/bench_aspect_recall.py [--model qwen2.5-1.5b] [--threads 1] [--limit 60]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from fairrag_core import load_collection
from fairrag_core.models.embedder import Embedder
from fairrag_core.richrag.aspects import AspectExplorer, AspectSource, aspect_recall

RESULTS = Path(__file__).parent / "results"
THRESHOLD = 0.5


def load_model(name: str, threads: int | None):
    from fairrag_core.models.catalog import load_language_model

    if name == "qwen2.5-1.5b" and threads:
        from fairrag_core.models.catalog import QWEN_1_5B
        from fairrag_core.models.gguf import resolve_gguf
        from fairrag_core.models.llama_cpp import LlamaCppModel

        return LlamaCppModel(resolve_gguf(QWEN_1_5B.weights), name=name, n_threads=threads)
    return load_language_model(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--replies", type=Path, default=None, help="JSONL cache of the model's replies")
    parser.add_argument("--score-only", action="store_true", help="score the cached replies; call no model")
    args = parser.parse_args()
    collection = load_collection("multi-faceted")
    queries = list(collection.queries)[: args.limit]
    cache = args.replies or RESULTS / f"aspect_replies.{args.model}.jsonl"
    done = {}
    if cache.exists():
        done = {r["query_id"]: r for r in map(json.loads, cache.read_text().splitlines()) if r}
    explorer = AspectExplorer(None)
    if not args.score_only:
        model = None
        with cache.open("a", encoding="utf-8") as out:
            for q in queries:
                if q.query_id in done:
                    continue
                model = model or load_model(args.model, args.threads)
                explorer.model = model
                start = time.perf_counter()
                reply = explorer.ask(q.text)
                row = {"query_id": q.query_id, "reply": reply, "seconds": round(time.perf_counter() - start, 2)}
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                out.flush()
                done[q.query_id] = row
                print(f"{q.query_id} {row['seconds']:6.1f} s  {reply[:100]!r}", flush=True)

    embedder = Embedder("minilm")
    scored, negatives = [], []
    for q in queries:
        shipped = [a.aspect for a in q.aspects]
        ref = embedder.encode(shipped)
        within = ref @ ref.T
        negatives += [within[i, j] for i in range(len(shipped)) for j in range(i + 1, len(shipped))]
        if q.query_id not in done:
            continue
        found = explorer.explore(q.text, raw=done[q.query_id]["reply"])
        predicted = list(found.aspects) if found.source is AspectSource.LLM else []
        sim = ref @ embedder.encode(predicted).T if predicted else np.zeros((len(shipped), 0))
        scored.append((q, predicted, sim, done[q.query_id]["seconds"]))
    negatives = np.array(negatives)
    print(f"\nqueries scored: {len(scored)} of {len(queries)}; model {args.model}")
    print(f"replies without usable aspects (fallback needed): {sum(not p for _, p, _, _ in scored)}")
    print(f"aspects per reply: mean {np.mean([len(p) for _, p, _, _ in scored]):.2f}; "
          f"shipped per query: mean {np.mean([len(q.aspects) for q, _, _, _ in scored]):.2f}")
    secs = np.array([s for *_, s in scored])
    print(f"seconds per call: median {np.median(secs):.1f}, mean {secs.mean():.1f}, max {secs.max():.1f}")
    print(f"false-match rate (two different shipped aspects of a query, cosine ≥ {THRESHOLD}): "
          f"{(negatives >= THRESHOLD).mean():.1%} of {negatives.size} pairs")
    summary = {}
    for threshold in (0.4, 0.5, 0.6, 0.7):
        one = np.array([aspect_recall(sim, threshold) for _, _, sim, _ in scored])
        anym = np.array([aspect_recall(sim, threshold, one_to_one=False) for _, _, sim, _ in scored])
        half = 1.96 * one.std(ddof=1) / np.sqrt(one.size) if one.size > 1 else float("nan")
        mark = "  ← headline" if threshold == THRESHOLD else ""
        print(f"threshold {threshold:.1f}: aspect recall {one.mean():.3f} ± {half:.3f} (one-to-one, 95% CI over "
              f"queries); any-match {anym.mean():.3f}{mark}")
        summary[str(threshold)] = {"one_to_one": float(one.mean()), "ci95": float(half), "any": float(anym.mean())}
    out = RESULTS / f"aspect_recall.{args.model}.json"
    out.write_text(json.dumps({"model": args.model, "queries": len(scored), "threshold": THRESHOLD,
                               "recall": summary, "seconds_median": float(np.median(secs))}, indent=1) + "\n")


if __name__ == "__main__":
    main()
