"""Command line: ``python -m fairrag_core <command>``. Readable tables by default, ``--json`` for machines."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .corpus import DEMO_COLLECTIONS, Collection, load_collection
from .errors import FairRAGError
from .ranking import RankingConfig, RankingRun, run_ranking
from .retrieval import RetrieverKind, build_retriever
from .sweep import DEFAULT_ALPHAS, SweepConfig, exposure_sweep, summarise_sweep

__all__ = ["main", "build_parser"]

_DESCRIPTION = """\
FairRAG Studio core: fair stochastic retrieval for RAG (Kim & Diaz, ICTIR 2025).

A deterministic retriever feeds the same top-k documents to the generator every time, so equally
useful sources never get exposure. The stochastic retriever samples rankings from a Plackett-Luce
policy whose sharpness is set by α: α = 0 is uniform (fairest), large α approaches the deterministic
ranking. Exposure is measured with EE-D (disparity: 1 = deterministic, lower = fairer) and EE-R
(relevance: 1 = exposure exactly where an oracle would put it).

Examples:
  python -m fairrag_core collections
  python -m fairrag_core rank --collection running-shoes \\
      --query "best shoes for a first marathon" --alpha 2 --samples 100 -k 5
  python -m fairrag_core rank --collection running-shoes --query "best shoes for a first marathon" \\
      --alpha 0.5 --retriever dense --json
  python -m fairrag_core exposure-sweep --collection running-shoes --alphas 0,1,2,4,8 --samples 100 -k 5
"""


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"α must be a number ≥ 0 (or 'inf'), got {text!r}") from None
    if math.isnan(value) or value < 0:
        raise argparse.ArgumentTypeError(f"α must be a number ≥ 0 (or 'inf'), got {text!r}")
    return value


def _alphas(text: str) -> tuple[float, ...]:
    parts = [p for p in text.replace(" ", "").split(",") if p]
    if not parts:
        raise argparse.ArgumentTypeError("give α values separated by commas, e.g. 0,1,2,4,8")
    return tuple(_alpha(p) for p in parts)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collection", default="running-shoes",
                        help=f"demo collection ({', '.join(DEMO_COLLECTIONS)}) or a folder with corpus.jsonl|csv, "
                             "queries.jsonl, qrels.txt (default: running-shoes)")
    parser.add_argument("--retriever", default="bm25", choices=[k.value for k in RetrieverKind],
                        help="first-stage scorer (default: bm25); dense uses the offline MiniLM unless --model")
    parser.add_argument("--model", default=None, help="dense model: short name (minilm), HF id or local folder")
    parser.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps (dense retriever only)")
    parser.add_argument("-k", type=_positive, default=5, help="documents per ranking passed to the generator (default 5)")
    parser.add_argument("--samples", "-N", type=_positive, default=100, help="sampled rankings N (default 100)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: fresh, printed so you can rerun)")
    parser.add_argument("--candidates", type=_positive, default=None,
                        help="first-stage cut-off K: sample among the top K only (default: every document)")
    parser.add_argument("--min-rel", type=int, default=1,
                        help="qrels grade from which a document counts as useful for EE-R (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def _add_fair_qr(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collection", default="people", help="collection with group labels (default: people)")
    parser.add_argument("--refiner", default="keywords",
                        help="'keywords' (corpus keywords, no model; default) or an LLM: qwen2.5-1.5b, smollm2-135m, "
                             "an HF id or a local folder (the paper's prompt)")
    parser.add_argument("--top-k", type=_positive, default=20, help="documents per retrieval K (default 20)")
    parser.add_argument("--max-iterations", type=int, default=5, help="maximum refinements (default 5, as the paper)")
    parser.add_argument("--background", action="store_true",
                        help="mix the relevant-document target 50/50 with the corpus distribution (TREC 2022)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _refiner_factory(args, collection, bm25):
    from .fairqr import build_refiner

    return lambda categories: build_refiner(args.refiner, collection, categories, bm25)


def _cmd_fair_qr(args, out) -> int:
    from .fairqr import FairQRConfig, fair_qr
    from .fairqr_eval import FairQREvalConfig, compare_systems
    from .metrics.group_fairness import TargetKind
    from .retrieval import BM25Retriever

    collection = load_collection(args.collection)
    bm25 = BM25Retriever(collection.texts)
    categories = tuple(c.strip() for c in args.category.split(",") if c.strip())
    refiner = _refiner_factory(args, collection, bm25)(categories)
    result = fair_qr(collection, bm25, refiner, args.query,
                     FairQRConfig(categories=categories, top_k=args.top_k, max_iterations=args.max_iterations,
                                  target=TargetKind(args.target), background_weight=0.5 if args.background else 0.0))
    scores = compare_systems(collection, bm25, result, FairQREvalConfig(cutoff=min(20, args.top_k), top_k=args.top_k))
    if args.json:
        payload = json.loads(result.to_json())
        payload["systems"] = json.loads(scores.to_json(orient="records"))
        print(json.dumps(payload, ensure_ascii=False), file=out)
        return 0
    print(f"FAIR-QR on {collection.name!r}, category {' × '.join(categories)}, refiner {result.refiner}", file=out)
    print("target: " + ", ".join(f"{g} {v:.0%}" for g, v in result.target.items()), file=out)
    for it in result.iterations:
        mark = "  ← kept" if it.index == result.chosen else ""
        added = f"  [+ {it.added_keywords}]" if it.added_keywords else ""
        print(f"{it.index}. {it.query}{added}\n   Δ = {it.delta:.4f}; most under-represented: {it.under_represented}; "
              + ", ".join(f"{g} {v:.0%}" for g, v in it.distribution.items()) + mark, file=out)
        if it.note:
            print(f"   note: {it.note}", file=out)
    print(f"stopped: {result.stop_reason}", file=out)
    print("\nFinal ranking (BM25 on the original query): " + " ".join(result.reranked[:10])
          + (" …" if len(result.reranked) > 10 else ""), file=out)
    print("\n" + scores.drop(columns=["refinements"]).round(4).to_string(index=False), file=out)
    return 0


def _cmd_fair_qr_eval(args, out) -> int:
    from .fairqr_eval import (
        FAIRQR,
        FairQREvalConfig,
        evaluate_fair_qr,
        iteration_statistics,
        paired_tests,
        table1,
        win_tie_loss,
    )
    from .retrieval import BM25Retriever

    collection = load_collection(args.collection)
    bm25 = BM25Retriever(collection.texts)
    dense = build_retriever("dense", collection.texts) if args.dense else None
    config = FairQREvalConfig(categories=tuple(c.strip() for c in args.categories.split(",") if c.strip()),
                              top_k=args.top_k, max_iterations=args.max_iterations,
                              background_weight=0.5 if args.background else 0.0,
                              query_ids=tuple(q.strip() for q in args.queries.split(",")) if args.queries else ())

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} (query, category) pairs", end="", file=sys.stderr, flush=True)

    results, traces = evaluate_fair_qr(collection, bm25, _refiner_factory(args, collection, bm25), config,
                                       dense=dense, progress=None if args.json else progress)
    if not args.json:
        print(file=sys.stderr)
    means, tests, iterations = table1(results), paired_tests(results), iteration_statistics(traces)
    if args.output:
        results.to_csv(args.output, index=False)
    if args.json:
        print(json.dumps({"config": results.attrs, "table1": json.loads(means.to_json(orient="split")),
                          "tests": json.loads(tests.to_json(orient="records")),
                          "iterations": json.loads(iterations.to_json(orient="records")),
                          "versus_bm25": json.loads(win_tie_loss(results).to_json(orient="records")),
                          "traces": [json.loads(t.to_json()) for t in traces]}, ensure_ascii=False), file=out)
        return 0
    print(f"Table 1 layout — {collection.name}, {results['query_id'].nunique()} queries, refiner "
          f"{results.attrs['refiner']}, K = {config.top_k}, @{config.cutoff}", file=out)
    symbols = {"BM25": "*", "Dense": "◇", "MMR": "‡", "FA*IR": "†", "FAIR-QR [no re-rank]": "§"}  # as in the paper
    shown = means.round(4).astype(str)
    for (category, metric), part in tests.groupby(["category", "metric"]):
        beaten = "".join(symbols.get(b, "?") for b, better in zip(part["baseline"], part["better"]) if better)
        shown.loc[FAIRQR, (category, metric)] += f" {beaten}" if beaten else ""
    print(shown.to_string(), file=out)
    legend = ", ".join(f"{mark} {name}" for name, mark in symbols.items() if name in set(tests["baseline"]))
    print(f"\nMarks on {FAIRQR}: significantly better than {legend} (paired t-test over queries, p < 0.05). "
          "p-values:", file=out)
    print(tests.pivot_table(index=["category", "baseline"], columns="metric", values="p_value").round(4).to_string(),
          file=out)
    print(f"\nQueries where {FAIRQR} is better / the same / worse than BM25:", file=out)
    print(win_tie_loss(results).to_string(index=False), file=out)
    print("\nRefinements kept per query (the paper: max 11, mean 2, 75th percentile 4 with GPT-4o on TREC 2022):",
          file=out)
    print(iterations.round(2).to_string(index=False), file=out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fairrag_core", description=_DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")

    p = sub.add_parser("collections", help="list the demo collections and their sizes")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser(
        "rank", help="one query: deterministic vs sampled rankings, exposure per document and provider, EE-D/EE-R",
        description="Rank one query with the deterministic retriever and with the stochastic retriever at α, "
                    "and show who gets exposure. Lower α spreads exposure across more providers.",
    )
    _add_common(p)
    p.add_argument("--query", required=True, help="the question; if it is one of the collection's queries, "
                                                  "its relevance labels give EE-R")
    p.add_argument("--alpha", type=_alpha, default=2.0, help="fairness knob α ≥ 0 (0 = uniform; default 2)")
    p.add_argument("--show", type=int, default=5, help="sampled rankings to print (default 5)")

    p = sub.add_parser(
        "exposure-sweep", help="collection × α grid → EE-D/EE-R per query and α",
        description="Sample rankings at each α for every query with relevance labels and report EE-D and EE-R "
                    "(the retrieval half of the paper's Figures 3 and 4).",
    )
    _add_common(p)
    p.add_argument("--alphas", type=_alphas, default=DEFAULT_ALPHAS, help="comma-separated α grid (default 0,1,2,4,8)")
    p.add_argument("--queries", default=None, help="comma-separated query ids (default: all with qrels)")
    p.add_argument("--output", default=None, help="also write the per-query table to this .csv file")

    p = sub.add_parser(
        "rag", help="one query end to end: sampled rankings → answers → NLI citations → EE-D, EE-R, EU, EAR, EAE-D",
        description="Retrieve, sample N rankings at α, generate one answer per distinct top-k list, attribute it "
                    "with the NLI model, and report all six metrics of the Fair RAG paper. Offline by default: "
                    "SmolLM2-135M generates, Qwen2.5-1.5B judges entailment.",
    )
    _add_common(p)
    _add_models(p)
    p.add_argument("--query", required=True, help="the question (one of the collection's queries gives EU and EE-R)")
    p.add_argument("--alpha", type=_alpha, default=2.0, help="fairness knob α ≥ 0 (default 2)")
    p.set_defaults(samples=20)

    p = sub.add_parser(
        "label-utility", help="Algorithm 1: label each candidate useful when it improves the generator's answer",
        description="For every query: the closed-book answer gives u0; each candidate alone gives u; δ = u − u0 > 0 "
                    "means useful. Writes utility.<generator>.qrels (+ .tsv with u0, u, δ, answers).",
    )
    _add_common(p)
    _add_models(p, attributor=False)
    p.add_argument("--depth", type=_positive, default=20, help="first-stage candidates labelled per query (default 20)")
    p.add_argument("--queries", default=None, help="comma-separated query ids (default: all)")
    p.add_argument("--out-dir", default=None, help="folder for the qrels (default: the collection's folder)")

    p = sub.add_parser(
        "sweep", help="collection × α grid × N × k through the whole RAG pipeline → Tables 1–2, figure data, run store",
        description="Run the RAG pipeline for every query and α (plus the deterministic baseline), then print the "
                    "paper's Table 1 (slope and AUC of EE-R vs EE-D) and Table 2 (EU difference from the "
                    "deterministic baseline per EE-D interval, Welch t-test). Saves CSV/Parquet and the run store.",
    )
    _add_common(p)
    _add_models(p)
    p.add_argument("--alphas", type=_alphas, default=DEFAULT_ALPHAS, help="comma-separated α grid (default 0,1,2,4,8)")
    p.add_argument("--queries", default=None, help="comma-separated query ids (default: all)")
    p.add_argument("--labels", choices=["utility", "relevance"], default="utility",
                   help="usefulness labels for EE-R and the oracle (default: utility labels of the generator)")
    p.add_argument("--no-oracle", action="store_true",
                   help="skip the stochastic oracle's answers (fewer generations; normalised EU then divides by the "
                        "best answer of each run itself)")
    p.add_argument("--output", default=None, help="write the per-query table to this path (.csv and .parquet)")
    p.add_argument("--store", default=None, help="DuckDB run store (default ~/.cache/fairrag/runs.duckdb)")
    p.add_argument("--no-store", action="store_true", help="do not save the run in the run store")
    p.set_defaults(samples=20)

    p = sub.add_parser(
        "fair-qr", help="FAIR-QR for one query: refine toward the most under-represented group, print every iteration",
        description="Chen & Fang's FAIR-QR: retrieve the top K, compare the group distribution with the target "
                    "(Δ = KL(target ‖ top K)), let a refiner append keywords about the most under-represented group, "
                    "repeat until Δ stops decreasing, then re-rank the kept list by BM25 with the original query.",
    )
    _add_fair_qr(p)
    p.add_argument("--query", required=True, help="the query (one of the collection's queries gives the "
                                                  "relevant-document target and nDCG)")
    p.add_argument("--category", default="gender",
                   help="fairness category; several comma-separated give intersectional groups (default gender)")
    p.add_argument("--target", choices=["relevant", "uniform"], default="relevant",
                   help="target distribution (default: the groups of the query's relevant documents)")

    p = sub.add_parser(
        "fair-qr-eval", help="FAIR-QR vs BM25, dense, MMR and FA*IR over a query set: the paper's Table 1",
        description="nDCG@20, AWRF@20 and nDCG×AWRF per category for every system, paired t-tests of FAIR-QR "
                    "against each baseline, and the iteration-count statistics (max, mean, 75th percentile).",
    )
    _add_fair_qr(p)
    p.add_argument("--categories", default="gender,region", help="comma-separated categories (default gender,region)")
    p.add_argument("--queries", default=None, help="comma-separated query ids (default: all with qrels)")
    p.add_argument("--dense", action="store_true", help="add the dense baseline (offline MiniLM; loads torch)")
    p.add_argument("--output", default=None, help="write the per-query results to this .csv file")

    p = sub.add_parser("runs", help="list, show, compare or delete saved runs in the DuckDB run store",
                       description="`runs` lists saved runs; `runs show ID` prints one with the command that "
                                   "reproduces it; `runs compare ID ID…` puts mean metrics per α side by side.")
    p.add_argument("action", nargs="?", default="list", choices=["list", "show", "compare", "delete"])
    p.add_argument("run_ids", nargs="*", default=[])
    p.add_argument("--store", default=None, help="DuckDB run store (default ~/.cache/fairrag/runs.duckdb)")
    p.add_argument("--json", action="store_true")
    return parser


def _add_models(parser: argparse.ArgumentParser, *, attributor: bool = True) -> None:
    from .models.catalog import DEFAULTS, GENERATORS

    parser.add_argument("--generator", default=DEFAULTS["generator"],
                        help=f"generator: {', '.join(GENERATORS)}, any HF id or folder (default {DEFAULTS['generator']})")
    if attributor:
        parser.add_argument("--nli", default=DEFAULTS["attributor"],
                            help="NLI attributor: qwen-judge (offline default), roberta-large-mnli, an HF id or folder")
    parser.add_argument("--prompt-order", default="sampled", choices=["sampled", "retrieval"],
                        help="order of the k documents in the prompt: as sampled (paper, default) or by retrieval "
                             "score (identical sets then share one generation)")
    parser.add_argument("--metric", default="rougeL", choices=["rouge1", "rouge2", "rougeL", "f1", "exact_match",
                                                               "accuracy", "mae"],
                        help="utility metric against the gold answer (default rougeL)")


# -- rendering --------------------------------------------------------------------------------------
def _bar(value: float, scale: float, width: int = 24) -> str:
    filled = 0 if scale <= 0 else int(round(width * min(value / scale, 1.0)))
    return "█" * filled + "·" * (width - filled)


def _fmt_ci(ci) -> str:
    return f"{ci.estimate:.3f}  (95% CI of the exact value {ci.low:.3f}–{ci.high:.3f})"


def _rank_payload(run: RankingRun) -> dict:
    docs = run.documents_table()
    providers = run.providers_table()
    ids = run.doc_ids
    payload = {
        "collection": run.collection.name,
        "query": run.query_text,
        "query_id": run.query.query_id if run.query else None,
        "retriever": run.retriever,
        "alpha": run.config.alpha,
        "k": run.config.k,
        "n_samples": run.config.n_samples,
        "seed": run.seed,
        "n_candidates": int(run.candidate_indices.size),
        "n_useful": None if run.labels is None else int(run.labels.sum()),
        "deterministic_ranking": [ids[i] for i in run.deterministic],
        "rankings": [[ids[i] for i in row] for row in run.rankings],
        "ee_d": vars(run.summary.ee_d),
        "ee_d_unbiased": run.summary.ee_d_unbiased,
        "ee_r": None if run.summary.ee_r is None else vars(run.summary.ee_r),
        "deterministic_ee_d": run.deterministic_summary.ee_d.estimate,
        "deterministic_ee_r": None if run.deterministic_summary.ee_r is None else run.deterministic_summary.ee_r.estimate,
        "providers_reached": int((providers["exposure"] > 0).sum()),
        "providers_total": int(providers.shape[0]),
        "documents": json.loads(docs.to_json(orient="records")),
        "providers": json.loads(providers.to_json(orient="records")),
    }
    return payload


def _print_rank(run: RankingRun, show: int, out) -> None:
    docs = run.documents_table()
    providers = run.providers_table()
    k, n = run.config.k, run.candidate_indices.size
    qid = f" [{run.query.query_id}]" if run.query else " (not in the query set: no relevance labels, EE-R n/a)"
    print(f"Query: {run.query_text}{qid}", file=out)
    print(f"Collection {run.collection.name}: {n} candidates, retriever {run.retriever}, k={k}, "
          f"N={run.config.n_samples}, α={run.config.alpha:g}, seed={run.seed}", file=out)
    if run.labels is not None:
        print(f"Useful candidates (qrels rel ≥ {run.config.min_rel}): {int(run.labels.sum())}", file=out)

    def label(i: int) -> str:
        d = docs.iloc[i]
        mark = "" if run.labels is None else (" ✓" if run.labels[i] else "  ")
        return f"{d.doc_id:<10} {d.provider:<24.24} {d.score:8.3f}{mark}"

    print(f"\nDeterministic top-{k} (the same every time):", file=out)
    for r, i in enumerate(run.deterministic, 1):
        print(f"  {r}. {label(i)}", file=out)
    shown = min(show, run.rankings.shape[0])
    print(f"\nSampled rankings at α={run.config.alpha:g} ({shown} of {run.rankings.shape[0]}):", file=out)
    for s, row in enumerate(run.rankings[:shown], 1):
        print(f"  #{s:<3} " + " | ".join(f"{docs.iloc[i].provider}" for i in row), file=out)

    has_target = run.labels is not None
    print("\nExposure by provider (expected number of its documents in the top k):", file=out)
    head = f"  {'provider':<24} {'docs':>4} {'sampled':>8} {'determ.':>8}"
    print(head + (f" {'target':>7}" if has_target else ""), file=out)
    for row in providers.itertuples():
        line = f"  {row.provider:<24.24} {row.documents:>4} {row.exposure:8.2f} {row.deterministic_exposure:8.2f}"
        if has_target:
            line += f" {row.target_exposure:7.2f}"
        print(line + "  " + _bar(row.exposure, max(1.0, providers["exposure"].max())), file=out)
    reached = int((providers["exposure"] > 0).sum())
    det_reached = int((providers["deterministic_exposure"] > 0).sum())
    print(f"\nProviders with exposure: {reached} of {providers.shape[0]} (deterministic: {det_reached})", file=out)
    uniform = k / n
    print(f"EE-D (disparity, lower is fairer): {_fmt_ci(run.summary.ee_d)}   "
          f"[deterministic 1.000, uniform {uniform:.3f}]", file=out)
    if run.summary.ee_d_unbiased is not None:
        print(f"     unbiased EE-D estimate (plug-in minus finite-N bias): {run.summary.ee_d_unbiased:.3f}", file=out)
    if run.summary.ee_r is not None:
        print(f"EE-R (exposure on useful docs):    {_fmt_ci(run.summary.ee_r)}   "
              f"[deterministic {run.deterministic_summary.ee_r.estimate:.3f}]", file=out)
    print(f"Reproduce: --seed {run.seed}", file=out)


def _load(args) -> tuple[Collection, object]:
    collection = load_collection(args.collection)
    retriever = build_retriever(args.retriever, collection.texts, model=args.model, device=args.device)
    return collection, retriever


def _cmd_collections(args, out) -> int:
    rows = []
    for name in DEMO_COLLECTIONS:
        c = load_collection(name)
        rows.append({"collection": name, "documents": len(c), "providers": int(np.unique(c.providers).size),
                     "queries": len(c.queries), "judged_queries": len(c.qrels),
                     "categories": ",".join(c.categories())})
    if args.json:
        print(json.dumps(rows, indent=2), file=out)
    else:
        print(pd.DataFrame(rows).to_string(index=False), file=out)
    return 0


def _cmd_rank(args, out) -> int:
    collection, retriever = _load(args)
    config = RankingConfig(alpha=args.alpha, n_samples=args.samples, k=args.k, seed=args.seed,
                           candidates=args.candidates, min_rel=args.min_rel)
    run = run_ranking(collection, retriever, args.query, config)
    if args.json:
        print(json.dumps(_rank_payload(run), indent=2, ensure_ascii=False), file=out)
    else:
        _print_rank(run, args.show, out)
    return 0


def _cmd_sweep(args, out) -> int:
    collection, retriever = _load(args)
    ids = tuple(q.strip() for q in args.queries.split(",") if q.strip()) if args.queries else ()
    config = SweepConfig(alphas=args.alphas, n_samples=args.samples, k=args.k, seed=args.seed,
                         candidates=args.candidates, min_rel=args.min_rel, query_ids=ids)
    table = exposure_sweep(collection, retriever, config)
    summary = summarise_sweep(table)
    if args.output:
        table.to_csv(args.output, index=False)
    if args.json:
        payload = {"config": table.attrs, "rows": json.loads(table.to_json(orient="records")),
                   "summary": json.loads(summary.to_json(orient="records"))}
        print(json.dumps(payload, indent=2), file=out)
        return 0
    attrs = table.attrs
    print(f"Exposure sweep on {attrs['collection']} ({attrs['retriever']}, {attrs['candidates']} candidates, "
          f"k={attrs['k']}, N={attrs['n_samples']}, seed={attrs['seed']})\n", file=out)
    wide = table.pivot(index="query_id", columns="alpha", values=["ee_d", "ee_r"])
    wide.columns = [f"{metric.upper().replace('_', '-')} α={alpha:g}" for metric, alpha in wide.columns]
    print(wide.round(3).to_string(), file=out)
    dropped = int((~table.drop_duplicates("query_id")["fairness_question"]).sum())
    print(f"\nMean over queries with ≥ 2 useful documents ({dropped} left out):", file=out)
    print(summary.round(3).to_string(index=False), file=out)
    if args.output:
        print(f"\nPer-query table written to {args.output}", file=out)
    return 0


def _generator(args):
    from .generation import Generator
    from .models.catalog import load_language_model

    return Generator(load_language_model(args.generator, device=args.device))


def _rag_payload(run) -> dict:
    ids = run.ranking.doc_ids
    docs = run.ranking.collection.documents
    cand = run.ranking.candidate_indices
    payload = _rank_payload(run.ranking)
    payload.pop("documents")
    payload.update(
        generator=run.generator, attributor=run.attributor, metric=run.metric.value,
        gold_answer=run.ranking.query.answer if run.ranking.query else None,
        metrics=run.metrics(), u_max=run.u_max, oracle_eu=run.oracle_eu, timings=run.timings,
        answers=[
            {"samples": g.count, "ranking": [ids[p] for p in g.positions], "answer": g.answer, "utility": g.utility,
             "attribution_rate": g.attribution_rate,
             "citations": [{"doc_id": ids[p], "provider": docs[cand[p]].provider, "p_entail": round(pr, 4)}
                           for p, e, pr in zip(g.positions, g.entails, g.entail_probability) if e],
             "not_entailing": [ids[p] for p, e in zip(g.positions, g.entails) if not e]}
            for g in sorted(run.groups, key=lambda g: -g.count)
        ],
        attributed_exposure={ids[i]: float(v) for i, v in enumerate(run.attributed_exposure) if v > 0},
    )
    return payload


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _cmd_rag(args, out) -> int:
    from .models.catalog import load_attributor
    from .pipeline import RagConfig, run_rag

    collection, retriever = _load(args)
    generator = _generator(args)
    attributor = load_attributor(args.nli, device=args.device)
    config = RagConfig(alpha=args.alpha, n_samples=args.samples, k=args.k, seed=args.seed,
                       candidates=args.candidates, min_rel=args.min_rel, metric=args.metric,
                       prompt_order=args.prompt_order)
    run = run_rag(collection, retriever, generator, attributor, args.query, config)
    if args.json:
        print(json.dumps(_rag_payload(run), indent=2, ensure_ascii=False), file=out)
        return 0
    payload = _rag_payload(run)
    print(f"Query: {run.ranking.query_text}   gold answer: {payload['gold_answer'] or 'n/a'}", file=out)
    print(f"{collection.name}, {run.ranking.retriever}, k={args.k}, N={args.samples}, α={args.alpha:g}, "
          f"seed={run.ranking.seed}; generator {run.generator}, NLI {run.attributor}", file=out)
    print(f"\n{len(run.groups)} distinct top-{args.k} lists → {len(run.groups)} generations "
          f"(instead of {args.samples})\n", file=out)
    for a in payload["answers"][:8]:
        cites = ", ".join(f"{c['doc_id']} ({c['provider']})" for c in a["citations"]) or "none"
        print(f"  ×{a['samples']:<3} {a['answer']!r}", file=out)
        print(f"        utility {_fmt(a['utility'])}  cited: {cites}  not entailing: "
              f"{', '.join(a['not_entailing']) or 'none'}", file=out)
    m = run.metrics()
    print(f"\nEE-D {_fmt(m['ee_d'])}  EE-R {_fmt(m['ee_r'])}  EU {_fmt(m['eu'])}  normalised EU "
          f"{_fmt(m['eu_normalised'])}  EAR {_fmt(m['ear'])}  EAE-D {_fmt(m['eae_d'])}", file=out)
    print("Timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in run.timings.items()), file=out)
    return 0


def _cmd_label_utility(args, out) -> int:
    from .labels import UtilityLabelConfig, label_utility, summarise_labels, utility_qrels_path, write_utility_labels

    collection, retriever = _load(args)
    generator = _generator(args)
    ids = tuple(q.strip() for q in args.queries.split(",") if q.strip()) if args.queries else ()
    config = UtilityLabelConfig(metric=args.metric, depth=args.depth, query_ids=ids)

    def progress(done, total):
        print(f"  labelled {done}/{total} queries", file=sys.stderr, flush=True)

    table = label_utility(collection, generator, retriever, config, progress=progress)
    path = utility_qrels_path(args.collection, generator.name)
    if args.out_dir:
        path = Path(args.out_dir) / path.name
    command = (f"python -m fairrag_core label-utility --collection {collection.name} --generator {generator.name} "
               f"--retriever {args.retriever} --depth {args.depth} --metric {args.metric}")
    write_utility_labels(table, path, header=[
        f"Utility labels (Kim & Diaz 2025, Algorithm 1) for {collection.name}, generator {generator.name}, "
        f"metric {args.metric}", f"Candidates: top {args.depth} by {retriever.name} plus judged documents; "
        "unlisted documents count as not useful", f"Regenerate with: {command}"])
    summary = summarise_labels(table)
    if args.json:
        print(json.dumps({"path": str(path), "queries": json.loads(summary.to_json(orient="records"))}, indent=2),
              file=out)
    else:
        print(summary.to_string(index=False), file=out)
        flagged = summary.loc[~summary["fairness_question"], "query_id"].tolist()
        print(f"\nWrote {path} ({len(table)} labels). Queries with ≤ 1 useful item (left out of fairness "
              f"analyses): {', '.join(flagged) or 'none'}", file=out)
    return 0


def _cmd_rag_sweep(args, out) -> int:
    from .models.catalog import load_attributor
    from .store import RunStore
    from .sweep import RagSweepConfig, disparity_quality_table, rag_sweep, utility_by_disparity_table

    collection, retriever = _load(args)
    generator = _generator(args)
    attributor = load_attributor(args.nli, device=args.device)
    ids = tuple(q.strip() for q in args.queries.split(",") if q.strip()) if args.queries else ()
    config = RagSweepConfig(alphas=args.alphas, n_samples=args.samples, k=args.k, seed=args.seed,
                            candidates=args.candidates, min_rel=args.min_rel, metric=args.metric,
                            labels=args.labels, query_ids=ids, prompt_order=args.prompt_order,
                            oracle=not args.no_oracle)

    def progress(done, total):
        print(f"  {done}/{total} (query, α) runs", file=sys.stderr, flush=True)

    table = rag_sweep(collection, retriever, generator, attributor, config, progress=progress)
    table.attrs["command"] = (
        f"python -m fairrag_core sweep --collection {args.collection} --retriever {args.retriever} "
        f"--generator {args.generator} --nli {args.nli} --alphas {','.join(f'{a:g}' for a in args.alphas)} "
        f"--samples {args.samples} -k {args.k} --seed {table.attrs['seed']} --labels {args.labels} "
        f"--metric {args.metric} --prompt-order {args.prompt_order}"
        + (f" --candidates {args.candidates}" if args.candidates else "")
        + (f" --queries {args.queries}" if args.queries else "")
        + (" --no-oracle" if args.no_oracle else "")
    )
    table1 = disparity_quality_table(table)
    table2 = utility_by_disparity_table(table)
    run_id = None
    if not args.no_store:
        with RunStore(args.store) as store:
            run_id = store.save(table, kind="rag-sweep")
    if args.output:
        base = Path(args.output).with_suffix("")
        table.to_csv(base.with_suffix(".csv"), index=False)
        table.to_parquet(base.with_suffix(".parquet"), index=False)
    if args.json:
        print(json.dumps({"run_id": run_id, "config": {k: str(v) if isinstance(v, float) and math.isinf(v) else v
                                                        for k, v in table.attrs.items()},
                          "rows": json.loads(table.to_json(orient="records")),
                          "table1": json.loads(table1.to_json(orient="records")),
                          "table2": json.loads(table2.to_json(orient="records"))}, indent=2), file=out)
        return 0
    attrs = table.attrs
    print(f"RAG sweep on {attrs['collection']}: {attrs['generator']} + {attrs['attributor']}, k={attrs['k']}, "
          f"N={attrs['n_samples']}, labels={attrs['labels']}, seed={attrs['seed']}", file=out)
    print(f"{attrs['sampled_rankings']} sampled rankings → {attrs['generator_calls']} generator calls, "
          f"{attrs['wall_seconds']:.0f} s", file=out)
    means = table.groupby(["system", "alpha"])[["ee_d", "ee_r", "eu", "eu_normalised", "ear", "eae_d"]].mean()
    print("\nMean per α (all queries):", file=out)
    print(means.round(3).to_string(), file=out)
    print("\nTable 1 — disparity vs quality (queries with ≥ 2 useful items):", file=out)
    print(table1.round(3).to_string(index=False), file=out)
    print(f"\nTable 2 — EU minus deterministic EU ({table2.attrs['baseline_mean']:.3f}) per EE-D interval:", file=out)
    print(table2.round(3).to_string(index=False), file=out)
    if run_id:
        print(f"\nSaved as run {run_id} (python -m fairrag_core runs show {run_id})", file=out)
    return 0


_METRICS = ["ee_d", "ee_r", "eu", "eu_normalised", "ear", "eae_d"]


def _cmd_runs(args, out) -> int:
    from .store import RunStore

    with RunStore(args.store) as store:
        if args.action == "list":
            runs = store.list()
            print(runs.to_json(orient="records", date_format="iso") if args.json
                  else (runs.to_string(index=False) if not runs.empty else "no runs saved yet"), file=out)
            return 0
        if not args.run_ids:
            print("error: give a run id (see `python -m fairrag_core runs`)", file=sys.stderr)
            return 2
        if args.action == "delete":
            for run_id in args.run_ids:
                store.delete(run_id)
                print(f"deleted {run_id}", file=out)
            return 0
        if args.action == "compare":
            columns = {}
            for run_id in args.run_ids:
                table = store.load(run_id)
                present = [m for m in _METRICS if m in table.columns]
                means = table.assign(alpha=table["alpha"].fillna(float("inf"))).groupby("alpha")[present].mean()
                columns[run_id] = means
            merged = pd.concat(columns, axis=1)
            if args.json:
                print(merged.to_json(orient="split"), file=out)
            else:
                print(merged.round(3).to_string(), file=out)
            return 0
        table = store.load(args.run_ids[0])
        if args.json:
            print(json.dumps({"config": table.attrs, "rows": json.loads(table.to_json(orient="records"))}), file=out)
        else:
            command = table.attrs.get("command")
            if command:
                print(f"Reproduce with: {command}\n", file=out)
            print(json.dumps(table.attrs, indent=2, default=str), file=out)
            print(table.to_string(index=False), file=out)
    return 0


def main(argv: Sequence[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {"collections": _cmd_collections, "rank": _cmd_rank, "exposure-sweep": _cmd_sweep,
                "rag": _cmd_rag, "label-utility": _cmd_label_utility, "sweep": _cmd_rag_sweep, "runs": _cmd_runs,
                "fair-qr": _cmd_fair_qr, "fair-qr-eval": _cmd_fair_qr_eval}
    try:
        return handlers[args.command](args, out)
    except FairRAGError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
