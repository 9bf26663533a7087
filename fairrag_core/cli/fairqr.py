"""FAIR-QR commands: ``fair-qr`` (one query's refinement trace) and ``fair-qr-eval`` (the paper's Table 1 over a
query set). Chen & Fang, FAIR-QR."""

from __future__ import annotations

import argparse
import json
import sys

from ..data.export import write_table
from ..models.catalog import REFINER, listed, role_models
from ..retrieval import build_retriever
from .backend_options import add_backend, on_backend
from .common import add_command, count_arg, id_list, load_inputs, positive_arg, print_json, records

__all__ = ["register"]


def register(sub) -> None:
    """Add ``fair-qr`` and ``fair-qr-eval`` to the command parser ``sub``."""
    p = add_command(sub, "fair-qr", _cmd_fair_qr, help="FAIR-QR for one query: refine toward the most "
                                                       "under-represented group, print every iteration",
                    description="Chen & Fang's FAIR-QR: retrieve the top K, compare the group distribution with the "
                                "target (Δ = KL(target ‖ top K)), let a refiner append keywords about the most "
                                "under-represented group, repeat until Δ stops decreasing, then re-rank the kept list "
                                "by BM25 with the original query.")
    _add_options(p)
    p.add_argument("--query", required=True, help="the query (one of the collection's queries gives the "
                                                  "relevant-document target and nDCG)")
    p.add_argument("--category", default="gender",
                   help="fairness category; several comma-separated give intersectional groups (default gender)")
    p.add_argument("--target", choices=["relevant", "uniform"], default="relevant",
                   help="target distribution (default: the groups of the query's relevant documents)")

    p = add_command(sub, "fair-qr-eval", _cmd_fair_qr_eval, help="FAIR-QR vs BM25, dense, MMR and FA*IR over a query "
                                                                 "set: the paper's Table 1",
                    description="nDCG@20, AWRF@20 and nDCG×AWRF per category for every system, paired t-tests of "
                                "FAIR-QR against each baseline, and the iteration-count statistics (max, mean, 75th "
                                "percentile).")
    _add_options(p)
    p.add_argument("--categories", default="gender,region", help="comma-separated categories (default gender,region)")
    p.add_argument("--queries", default=None, help="comma-separated query ids (default: all with qrels)")
    p.add_argument("--dense", action="store_true", help="add the dense baseline (offline MiniLM; loads torch)")
    p.add_argument("--output", default=None, help="write the per-query results to this .csv file")
    add_backend(p, unit="(category, query)")


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collection", default="people", help="collection with group labels (default: people)")
    parser.add_argument("--refiner", default="keywords",
                        help=f"'keywords' (corpus keywords, no model; default) or an LLM: "
                             f"{listed(role_models(REFINER))}, an HF id or a local folder (the paper's prompt)")
    parser.add_argument("--top-k", type=positive_arg, default=20, help="documents per retrieval K (default 20)")
    parser.add_argument("--max-iterations", type=count_arg, default=5,
                        help="maximum refinements (default 5, as the paper)")
    parser.add_argument("--background", action="store_true",
                        help="mix the relevant-document target 50/50 with the corpus distribution (TREC 2022)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _cmd_fair_qr(args, out) -> int:
    from ..fairqr import FairQRConfig, FairQREvalConfig, build_refiner, compare_systems, fair_qr
    from ..metrics.group_targets import TargetKind

    collection, bm25 = load_inputs(args)
    categories = id_list(args.category)
    refiner = build_refiner(args.refiner, collection, categories, bm25)
    result = fair_qr(collection, bm25, refiner, args.query,
                     FairQRConfig(categories=categories, top_k=args.top_k, max_iterations=args.max_iterations,
                                  target=TargetKind(args.target), background_weight=0.5 if args.background else 0.0))
    scores = compare_systems(collection, bm25, result, FairQREvalConfig(cutoff=min(20, args.top_k), top_k=args.top_k))
    if args.json:
        return print_json({**json.loads(result.to_json()), "systems": records(scores)}, out, ensure_ascii=False)
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
    from ..fairqr import build_refiner
    from ..fairqr.evaluate import (
        FAIRQR,
        FairQREvalConfig,
        evaluate_fair_qr,
        iteration_statistics,
        paired_tests,
        table1,
        win_tie_loss,
    )

    collection, bm25 = load_inputs(args)
    dense = build_retriever("dense", collection.texts) if args.dense and args.backend == "local" else None
    config = FairQREvalConfig(categories=id_list(args.categories),
                              top_k=args.top_k, max_iterations=args.max_iterations,
                              background_weight=0.5 if args.background else 0.0,
                              query_ids=id_list(args.queries))

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} (query, category) pairs", end="", file=sys.stderr, flush=True)

    shown = None if args.json else progress

    def remote(backend):
        from ..backends.workloads import FairQRSpec, cache_setting, fair_qr_eval_on

        spec = FairQRSpec(args.collection, args.refiner, config, dense=args.dense, cache_db=cache_setting())
        return fair_qr_eval_on(backend, spec, progress=shown)

    results, traces = on_backend(
        args, lambda: evaluate_fair_qr(collection, bm25, lambda c: build_refiner(args.refiner, collection, c, bm25),
                                       config, dense=dense, progress=shown), remote)
    if not args.json:
        print(file=sys.stderr)
    means, tests, iterations = table1(results), paired_tests(results), iteration_statistics(traces)
    if args.output:
        write_table(results, args.output)
    if args.json:
        return print_json({"config": results.attrs, "table1": json.loads(means.to_json(orient="split")),
                           "tests": records(tests), "iterations": records(iterations),
                           "versus_bm25": records(win_tie_loss(results)),
                           "traces": [json.loads(t.to_json()) for t in traces]}, out, ensure_ascii=False)
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
