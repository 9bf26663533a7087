"""Answer quality and cost of each offline generator × prompt design on every demo query with a gold answer.

For each query: the deterministic BM25 top-k and ``--sampled`` lists drawn at α = 2 among the top 20 (seeded),
answered by each generator with each prompt style (``fairrag_core.rag.generation.PROMPT_STYLES``). Records per
answer: the text, finish reason, seconds, ROUGE-L and token F1 against the gold answer, and the degenerate-answer
flags. Answers are appended to a JSONL file as they come, so an interrupted run resumes where it stopped.

    python benchmarks/bench_answers.py --models smollm2-135m,qwen2.5-1.5b --styles short,grounded,cited
    python benchmarks/bench_answers.py --summary            # the table from the recorded answers

The hand-judged sample (correct / partly / wrong / degenerate) is ``benchmarks/results/answers_judged.jsonl``;
``--summary`` joins it in when present.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fairrag_core import load_collection  # noqa: E402
from fairrag_core.metrics.utility import rouge, token_f1  # noqa: E402
from fairrag_core.models.catalog import load_language_model  # noqa: E402
from fairrag_core.rag.degenerate import answer_flags  # noqa: E402
from fairrag_core.rag.generation import Generator, prompt_style  # noqa: E402
from fairrag_core.ranking import deterministic_ranking, sample_rankings  # noqa: E402
from fairrag_core.retrieval import BM25Retriever, top_candidates  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_OUT = RESULTS / "answers.jsonl"
JUDGED = RESULTS / "answers_judged.jsonl"
#: multi-faceted gold answers are paragraphs; its first 15 queries are answered, the rest train the RichRAG ranker
LIMITS = {"running-shoes": None, "news": None, "people": None, "multi-faceted": 15}


def lists_for(collection, retriever, query, *, k: int, sampled: int, seed: int) -> list[tuple[str, list[int]]]:
    scores = retriever.score(query.text)
    cand = top_candidates(scores, 20)
    out = [("deterministic", [int(cand.indices[i]) for i in deterministic_ranking(cand.scores, k)])]
    if sampled:
        rows = sample_rankings(cand.scores, alpha=2.0, n_samples=sampled, k=k, seed=seed)
        out += [(f"alpha2-{j}", [int(cand.indices[i]) for i in row]) for j, row in enumerate(rows)]
    return out


def run(args) -> None:
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out_path.exists():
        for line in out_path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["model"], r["style"], r["collection"], r["query_id"], r["list"]))
    collections = [c for c in args.collections.split(",") if c]
    for model_name in args.models.split(","):
        model = load_language_model(model_name)
        for style_name in args.styles.split(","):
            generator = Generator(model, style=prompt_style(style_name))
            generator.answer_prompts([])  # nothing; the model loads on the first real call
            for name in collections:
                collection = load_collection(name)
                retriever = BM25Retriever(collection.texts)
                queries = [q for q in collection.queries if q.answer][: LIMITS.get(name)]
                for qi, query in enumerate(queries):
                    sampled = args.sampled if qi < args.sampled_queries else 0
                    for list_name, indices in lists_for(collection, retriever, query, k=args.k, sampled=sampled,
                                                        seed=args.seed + qi):
                        key = (model_name, style_name, name, query.query_id, list_name)
                        if key in done:
                            continue
                        docs = [collection.documents[i] for i in indices]
                        start = time.perf_counter()
                        completion = generator.complete_rankings(query.text, [docs])[0]
                        seconds = time.perf_counter() - start
                        flags = answer_flags(completion.text, question=query.text,
                                             finish_reason=completion.finish_reason)
                        record = {"model": model_name, "style": style_name, "collection": name,
                                  "query_id": query.query_id, "list": list_name, "question": query.text,
                                  "doc_ids": [d.doc_id for d in docs], "gold": query.answer, "answer": completion.text,
                                  "finish_reason": completion.finish_reason, "tokens": completion.tokens,
                                  "seconds": round(seconds, 3), "rougeL": rouge(completion.text, query.answer),
                                  "f1": token_f1(completion.text, query.answer), "flags": [f.value for f in flags]}
                        with out_path.open("a", encoding="utf-8") as handle:
                            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                        done.add(key)
                        print(f"{model_name:>14} {style_name:>9} {name:>14} {query.query_id:>8} {list_name:>13} "
                              f"{seconds:5.1f} s  {completion.text[:70]!r}", flush=True)


def summary(path: Path) -> pd.DataFrame:
    rows = pd.read_json(path, lines=True)
    rows["degenerate"] = rows["flags"].map(bool)
    table = rows.groupby(["model", "style"]).agg(
        answers=("answer", "size"), rougeL=("rougeL", "mean"), f1=("f1", "mean"),
        seconds_per_answer=("seconds", "median"), degenerate=("degenerate", "mean"),
        cut=("flags", lambda f: float(np.mean(["cut" in x for x in f]))),
        loop=("flags", lambda f: float(np.mean(["loop" in x for x in f]))),
        echo_or_empty=("flags", lambda f: float(np.mean([("echo" in x) or ("empty" in x) for x in f]))))
    if JUDGED.exists():
        judged = pd.read_json(JUDGED, lines=True)
        counts = judged.pivot_table(index=["model", "style"], columns="verdict", values="query_id", aggfunc="count",
                                    fill_value=0)
        table = table.join(counts, how="left")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-1.5b")
    parser.add_argument("--styles", default="short,grounded,cited")
    parser.add_argument("--collections", default="running-shoes,news,people,multi-faceted")
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--sampled", type=int, default=1, help="lists sampled at α = 2 per query (default 1)")
    parser.add_argument("--sampled-queries", type=int, default=6,
                        help="sample lists for the first N queries of each collection only (default 6)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--summary", action="store_true", help="print the table from the recorded answers only")
    args = parser.parse_args()
    if not args.summary:
        run(args)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary(Path(args.out)).round(3).to_string())


if __name__ == "__main__":
    main()
