"""Command line: ``python -m fairrag_core <command>``. Readable tables by default, ``--json`` for machines."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence

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
    return parser


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


def main(argv: Sequence[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {"collections": _cmd_collections, "rank": _cmd_rank, "exposure-sweep": _cmd_sweep}
    try:
        return handlers[args.command](args, out)
    except FairRAGError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
