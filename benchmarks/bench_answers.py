"""Answer quality and cost of each offline generator × prompt design on every demo query with a gold answer.

For each query: the deterministic BM25 top-k and ``--sampled`` lists drawn at α = 2 among the top 20 (seeded),
answered by each generator with each prompt style (``fairrag_core.rag.generation.PROMPT_STYLES``). Records per
answer: the text, finish reason, seconds, ROUGE-L and token F1 against the gold answer, and the degenerate-answer
flags. Answers are appended to a JSONL file as they come, so an interrupted run resumes where it stopped.
The disk answer cache is not used, so seconds are generation time; a list identical to one already answered in the
run is served from memory and marked ``cached`` (left out of the seconds).

    python benchmarks/bench_answers.py --models smollm2-135m,qwen2.5-1.5b --styles short,grounded,cited
    python benchmarks/bench_answers.py --models qwen2.5-0.5b --styles grounded --pick 13   # a seeded pick
    python benchmarks/bench_answers.py --summary            # the table from the recorded answers
    python benchmarks/bench_answers.py --summary --markdown --same-lists   # docs/answers.md's form, same lists

``--summary`` recomputes the degenerate flags with the current ``fairrag_core.rag.degenerate`` and gives each mean
a 95% bootstrap interval over queries.

The hand-judged sample (correct / partly / wrong / degenerate) is ``benchmarks/results/answers_judged.jsonl``;
``--summary`` joins it in when present.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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
from fairrag_core.rag.generation import AnswerCache, Generator, prompt_style  # noqa: E402
from fairrag_core.ranking import deterministic_ranking, sample_rankings  # noqa: E402
from fairrag_core.retrieval import BM25Retriever, top_candidates  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_OUT = RESULTS / "answers.jsonl"
JUDGED = RESULTS / "answers_judged.jsonl"
VERDICTS = ("correct", "partly", "wrong", "degenerate")
#: multi-faceted gold answers are paragraphs; its first 15 queries are answered, the rest train the RichRAG ranker
LIMITS = {"running-shoes": None, "news": None, "people": None, "multi-faceted": 15}


def pick_queries(queries: list, n: int, *, seed: int, collection: str) -> list:
    """A seeded random pick of ``n`` of ``queries``, kept in their order: the first ``n`` of the positions shuffled
    by ``random.Random(f"{seed}:{collection}")``. The same pick for every model and style, so their answers can be
    compared list by list, and nested: the pick of 4 is part of the pick of 8, so a run can grow."""
    order = list(range(len(queries)))
    random.Random(f"{seed}:{collection}").shuffle(order)
    return [queries[i] for i in sorted(order[:n])]


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
            # memory cache only: every distinct prompt is generated (and timed) here, never read from the disk cache
            generator = Generator(model, style=prompt_style(style_name), cache=AnswerCache(disk=None))
            generator.answer_prompts([])  # nothing; the model loads on the first real call
            for name in collections:
                collection = load_collection(name)
                retriever = BM25Retriever(collection.texts)
                # (position in the collection's answered queries, query): the position seeds the sampled lists, so a
                # query gets the same lists whether or not the run is cut down by --max-queries or --pick
                queries = list(enumerate(q for q in collection.queries if q.answer))[: LIMITS.get(name)]
                if args.max_queries:
                    queries = queries[: args.max_queries]
                if args.pick:
                    queries = pick_queries(queries, args.pick, seed=args.seed, collection=name)
                for qi, query in queries:
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
                                  "seconds": round(seconds, 3), "cached": bool(completion.cached),
                                  "threads": os.environ.get("FAIRRAG_THREADS", ""),
                                  "rougeL": rouge(completion.text, query.answer),
                                  "f1": token_f1(completion.text, query.answer), "flags": [f.value for f in flags]}
                        with out_path.open("a", encoding="utf-8") as handle:
                            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                        done.add(key)
                        print(f"{model_name:>14} {style_name:>9} {name:>14} {query.query_id:>8} {list_name:>13} "
                              f"{seconds:5.1f} s  {completion.text[:70]!r}", flush=True)


def _query_interval(rows: pd.DataFrame, column: str, *, draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of the mean of ``column`` over queries.

    Answers to one query (its deterministic and sampled lists) are averaged first, then queries are resampled
    with replacement, so a query with more lists does not count more and the interval reflects query-to-query
    spread."""
    per_query = rows.groupby(["collection", "query_id"])[column].mean().to_numpy(dtype=float)
    if len(per_query) < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = per_query[rng.integers(0, len(per_query), size=(draws, len(per_query)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def _same_lists(rows: pd.DataFrame) -> pd.DataFrame:
    """Only the (collection, query, list) answered by every model × style in ``rows``."""
    key = ["collection", "query_id", "list"]
    combos = rows.groupby(["model", "style"]).ngroups
    counts = rows.drop_duplicates(["model", "style", *key]).groupby(key).size()
    keep = counts[counts == combos].index
    return rows.set_index(key).loc[lambda r: r.index.isin(keep)].reset_index()


def summary(path: Path, *, same_lists: bool = False, only: str = "", judged: Path = JUDGED) -> pd.DataFrame:
    """Per model × style: answers, queries, mean ROUGE-L / token F1 / degenerate share with a 95% bootstrap
    interval over queries, median seconds per freshly generated answer, the share of each degenerate flag, and
    (when ``judged`` exists) the hand-judged verdict counts. ``only``: "model/style,model/style" to keep."""
    rows = pd.read_json(path, lines=True)
    if "cached" not in rows:
        rows["cached"] = False
    rows["cached"] = rows["cached"].fillna(False).astype(bool)
    if only:
        keep = {tuple(pair.split("/", 1)) for pair in only.split(",") if pair}
        rows = rows[[(m, s) in keep for m, s in zip(rows["model"], rows["style"])]]
    if same_lists:
        rows = _same_lists(rows)
    # flags from the current detector (the stored ones are those of the run's version of degenerate.py)
    rows["flags"] = [[f.value for f in answer_flags(a, question=q, finish_reason=r)]
                     for a, q, r in zip(rows["answer"], rows["question"], rows["finish_reason"])]
    rows["degenerate"] = rows["flags"].map(bool).astype(float)
    out = []
    for (model, style), group in rows.groupby(["model", "style"]):
        record = {"model": model, "style": style, "answers": len(group),
                  "queries": group.groupby(["collection", "query_id"]).ngroups}
        for column, label in (("rougeL", "rougeL"), ("f1", "f1"), ("degenerate", "degenerate")):
            low, high = _query_interval(group, column)
            record[label] = group[column].mean()
            record[f"{label}_95"] = f"[{low:.3f}, {high:.3f}]"
        fresh = group.loc[~group["cached"], "seconds"]
        record["s_median"] = fresh.median() if len(fresh) else float("nan")
        record["s_p90"] = fresh.quantile(0.9) if len(fresh) else float("nan")
        for flag in ("empty", "echo", "loop", "cut", "defers"):
            record[flag] = float(np.mean([flag in f for f in group["flags"]]))
        out.append(record)
    table = pd.DataFrame(out).set_index(["model", "style"])
    if judged.exists():
        verdicts = pd.read_json(judged, lines=True)
        counts = verdicts.pivot_table(index=["model", "style"], columns="verdict", values="query_id",
                                      aggfunc="count", fill_value=0)
        counts = counts.reindex(columns=[v for v in VERDICTS if v in counts.columns])
        counts.columns = [f"judged_{c}" for c in counts.columns]
        table = table.join(counts, how="left")
    return table


def markdown(table: pd.DataFrame) -> str:
    """The summary as a Markdown table (docs/answers.md): means with their 95% interval over queries."""
    verdicts = [c for c in table.columns if c.startswith("judged_")]
    head = ["model", "style", "answers (queries)", "ROUGE-L", "token F1", "degenerate (flags)",
            "s/answer median (p90)"]
    if verdicts:
        head.append("hand-judged " + " / ".join(c.removeprefix("judged_") for c in verdicts))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, style), r in table.iterrows():
        cells = [model, style, f"{r.answers} ({r.queries})", f"{r.rougeL:.3f} {r.rougeL_95}", f"{r.f1:.3f} {r.f1_95}",
                 f"{r.degenerate:.2f} {r.degenerate_95}", f"{r.s_median:.1f} ({r.s_p90:.1f})"]
        if verdicts:
            cells.append("" if pd.isna(r[verdicts[0]]) else " / ".join(str(int(r[c])) for c in verdicts))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-1.5b")
    parser.add_argument("--styles", default="short,grounded,cited")
    parser.add_argument("--collections", default="running-shoes,news,people,multi-faceted")
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--sampled", type=int, default=1, help="lists sampled at α = 2 per query (default 1)")
    parser.add_argument("--sampled-queries", type=int, default=6,
                        help="sample lists for the first N queries of each collection only (default 6)")
    parser.add_argument("--max-queries", type=int, default=0,
                        help="answer only the first N queries of each collection (0: all; for the slower models)")
    parser.add_argument("--pick", type=int, default=0,
                        help="answer a seeded random pick of N queries per collection (--seed; 0: all)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--summary", action="store_true", help="print the table from the recorded answers only")
    parser.add_argument("--markdown", action="store_true", help="print the summary as a Markdown table")
    parser.add_argument("--same-lists", action="store_true",
                        help="summary over the (collection, query, list) answered by every model × style only")
    parser.add_argument("--only", default="", help="summary of these model/style pairs only, comma-separated")
    args = parser.parse_args()
    if not args.summary:
        run(args)
    table = summary(Path(args.out), same_lists=args.same_lists, only=args.only)
    if args.markdown:
        print(markdown(table))
        return
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(table.round(3).to_string())


if __name__ == "__main__":
    main()
