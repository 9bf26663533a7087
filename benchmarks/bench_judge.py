"""How well the NLI judge cites on real generated answers, and which citation rule to use.

Reads the labelled (document, generated answer) pairs of ``tests/data/nli_generated.jsonl`` (labelled by
reading: entails / not), asks the judge for P(entailment) of the whole answer and of each claim (sentence), for
the pair's document and for a control document (the 20th BM25 candidate of the query, on topic but not shown),
and caches the probabilities in ``benchmarks/results/judge_probs.<judge>.jsonl``. Then it picks the citation rule
(per-claim or not, threshold τ, control margin δ) on a training split of the queries and reports precision and
recall for "entails" on the held-out queries, next to the paper's rule (the whole answer, argmax).

    python benchmarks/bench_judge.py                  # judge what is not cached yet, then fit and report
    python benchmarks/bench_judge.py --report-only    # fit and report from the cache
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fairrag_core import load_collection  # noqa: E402
from fairrag_core.rag.attribution import load_attributor  # noqa: E402
from fairrag_core.rag.citations import CitationPolicy, cited, split_claims  # noqa: E402
from fairrag_core.rag.degenerate import answer_flags  # noqa: E402
from fairrag_core.retrieval import BM25Retriever, top_candidates  # noqa: E402

LABELLED = ROOT / "tests" / "data" / "nli_generated.jsonl"
RESULTS = ROOT / "benchmarks" / "results"


def cache_path(judge: str) -> Path:
    """Where one judge's probabilities are cached: ``benchmarks/results/judge_probs.<judge>.jsonl``."""
    return RESULTS / f"judge_probs.{judge}.jsonl"
THRESHOLDS = (None, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
MARGINS = (None, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def in_train(query_key: str) -> bool:
    """A fixed split by query (60 % train): pairs of one query never straddle the split."""
    return int(hashlib.sha256(query_key.encode()).hexdigest(), 16) % 10 < 6


def judge_all(pairs: list[dict], judge_name: str) -> None:
    cache = cache_path(judge_name)
    cache.parent.mkdir(parents=True, exist_ok=True)
    done = {json.loads(line)["pair_id"] for line in cache.read_text().splitlines()} if cache.exists() else set()
    todo = [p for p in pairs if p["pair_id"] not in done]
    if not todo:
        return
    judge = load_attributor(judge_name)
    collections, retrievers = {}, {}
    start = time.perf_counter()
    for n, pair in enumerate(todo, 1):
        name = pair["collection"]
        if name not in collections:
            collections[name] = load_collection(name)
            retrievers[name] = BM25Retriever(collections[name].texts)
        coll = collections[name]
        document = coll.documents[coll.index_of(pair["doc_id"])].full_text
        pool = top_candidates(retrievers[name].score(pair["question"]), 20).indices
        control_index = next(int(i) for i in pool[::-1] if coll.documents[int(i)].doc_id != pair["doc_id"])
        control = coll.documents[control_index].full_text
        claims = split_claims(pair["answer"])
        context = [pair["question"]]
        record = {"pair_id": pair["pair_id"], "judge": judge.name, "claims": claims,
                  "whole": judge.class_probabilities([document], [pair["answer"]], contexts=context)[0].tolist(),
                  "whole_control": float(judge.probabilities([control], [pair["answer"]], contexts=context)[0]),
                  "per_claim": judge.class_probabilities([document] * len(claims), claims,
                                                         contexts=context * len(claims)).tolist(),
                  "per_claim_control": judge.probabilities([control] * len(claims), claims,
                                                           contexts=context * len(claims)).tolist(),
                  "control_doc": coll.documents[control_index].doc_id}
        with cache.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        print(f"{n}/{len(todo)} {pair['pair_id']} P(whole)={record['whole'][0]:.2f} "
              f"control={record['whole_control']:.2f} ({time.perf_counter() - start:.0f} s)", flush=True)


def predict(row: dict, policy: CitationPolicy) -> bool:
    if policy.skip_degenerate and answer_flags(row["answer"], question=row["question"]):
        return False
    if policy.per_claim:
        return cited(np.array(row["per_claim"]), policy, np.array(row["per_claim_control"]))
    return cited(np.array([row["whole"]]), policy, np.array([row["whole_control"]]))


def scores(rows: list[dict], policy: CitationPolicy) -> dict:
    truth = np.array([r["label"] == "entails" for r in rows])
    guess = np.array([predict(r, policy) for r in rows])
    tp, fp, fn = int((truth & guess).sum()), int((~truth & guess).sum()), int((truth & ~guess).sum())
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
    return {"n": len(rows), "positives": int(truth.sum()), "precision": precision, "recall": recall, "f1": f1,
            "cited_share": float(guess.mean())}


def policies():
    for per_claim, threshold, margin, skip in itertools.product((False, True), THRESHOLDS, MARGINS, (False, True)):
        yield CitationPolicy(per_claim=per_claim, threshold=threshold, control_margin=margin, skip_degenerate=skip)


def report(pairs: list[dict], judge_name: str) -> dict:
    lines = cache_path(judge_name).read_text().splitlines()
    cache = {json.loads(line)["pair_id"]: json.loads(line) for line in lines}
    rows = [{**p, **cache[p["pair_id"]]} for p in pairs if p["pair_id"] in cache]
    train = [r for r in rows if in_train(f"{r['collection']}:{r['query_id']}")]
    test = [r for r in rows if not in_train(f"{r['collection']}:{r['query_id']}")]
    fitted = [(policy, scores(train, policy)) for policy in policies()]
    # the rule: the highest recall among those with precision ≥ 0.85 on the training split (then F1)
    good = [(p, s) for p, s in fitted if s["precision"] >= 0.85]
    chosen, chosen_train = max(good or fitted, key=lambda ps: (ps[1]["recall"], ps[1]["f1"]) if good
                               else (ps[1]["f1"], ps[1]["precision"]))
    paper = CitationPolicy()
    result = {"pairs": len(rows), "train_pairs": len(train), "test_pairs": len(test),
              "paper_rule": {"train": scores(train, paper), "test": scores(test, paper)},
              "chosen_rule": {"policy": chosen.to_dict(), "train": chosen_train, "test": scores(test, chosen)},
              "by_generator": {}}
    for generator in sorted({r["generator"] for r in test}):
        part = [r for r in test if r["generator"] == generator]
        result["by_generator"][generator] = {"paper": scores(part, paper), "chosen": scores(part, chosen)}
    generic = [r for r in rows if r.get("answer_kind") == "generic"]
    result["generic_answers_cited"] = {"paper": scores(generic, paper)["cited_share"] if generic else None,
                                       "chosen": scores(generic, chosen)["cited_share"] if generic else None}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", default="qwen-judge")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--pairs", default=str(LABELLED), help="pairs to judge (default: the labelled set)")
    parser.add_argument("--judge-only", action="store_true", help="fill the cache, do not fit (unlabelled pairs)")
    args = parser.parse_args()
    pairs = [json.loads(line) for line in Path(args.pairs).read_text().splitlines() if line.strip()]
    if not args.report_only:
        judge_all(pairs, args.judge)
    if not args.judge_only:
        print(json.dumps(report(pairs, args.judge), indent=2))


if __name__ == "__main__":
    main()
