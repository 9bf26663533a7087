"""RichRAG commands (Wang et al.): ``aspects`` (explore one query's sub-aspects) and ``rich-rank`` (the pool and its
ranked lists with NCOM), registered with ``train-ranker`` and ``rich-eval`` (:mod:`.richrag_ranker`)."""

from __future__ import annotations

import argparse

from ..models.catalog import DEFAULTS, EXPLORER, listed, role_models
from ..options import MODEL
from ..retrieval import RetrieverKind
from . import richrag_ranker
from .common import add_command, load_inputs, positive_arg, print_json

__all__ = ["register"]


def _add_source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--collection", default="multi-faceted",
                   help="collection (default multi-faceted: queries with aspects and sub-answers)")
    p.add_argument("--query", required=True, help="the question (a collection query gives its own aspects as the "
                                                  "fallback and its sub-answers for coverage)")
    p.add_argument("--aspects", default=None,
                   help="your own aspects, ';'-separated (used as given; no model is asked)")
    p.add_argument("--max-aspects", type=positive_arg, default=6, help="aspects kept at most (default 6)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def register(sub) -> None:
    """Add the RichRAG commands to the command parser ``sub``."""
    p = add_command(sub, "aspects", _cmd_aspects, help="RichRAG sub-aspect explorer: an LLM lists the query's aspects "
                                                       "as [s1] … [sn]",
                    description="Ask a language model for the query's sub-aspects in the paper's format ([s1] … "
                                "[sn]), parse the reply robustly, and fall back (with a note) to the collection's own "
                                "aspects or to keyword aspects of the top documents when the reply is unusable.")
    _add_source_options(p)
    explorer = DEFAULTS["explorer"]
    p.add_argument("--explorer", default=explorer,
                   help=f"explorer LLM: {listed(role_models(EXPLORER), explorer)}, an HF id or folder; 'none' skips "
                        "the model (collection aspects, else keywords)")

    p = add_command(
        sub, "rich-rank", _cmd_rich_rank, help="RichRAG pool for one query and its ranked lists (relevance, MMR, "
                                               "round robin, trained ranker, greedy oracle) with NCOM@k",
        description="Retrieve the top N for every 'query + aspect', merge them into a pool of at most M documents, "
                    "rank the pool with every list and score each with NCOM@k against the collection's sub-answers. "
                    "Aspects: --aspects, else the collection's own, else the --explorer LLM.")
    _add_source_options(p)
    p.add_argument("--explorer", default="none",
                   help="LLM for queries the collection does not hold (default none: keyword aspects)")
    p.add_argument("--retriever", default="bm25", choices=[k.value for k in RetrieverKind],
                   help="first-stage scorer per aspect (default bm25)")
    p.add_argument("--model", default=None, help=MODEL.help)
    p.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps")
    p.add_argument("--per-aspect", "-N", type=positive_arg, default=10, help="documents per aspect N (default 10)")
    p.add_argument("--capacity", "-M", type=positive_arg, default=40, help="pool capacity M (default 40)")
    p.add_argument("-k", type=positive_arg, default=5, help="length of every ranked list (default 5)")
    p.add_argument("--ranker", default="dpo", choices=["dpo", "sft", "both", "none"],
                   help="trained ranker stage(s) to add when installed (default dpo)")
    richrag_ranker.register(sub)


def _find_aspects(args, collection, retriever, *, prefer_collection: bool):
    from ..richrag.aspects import AspectExplorer, AspectSet, AspectSource

    if args.aspects is None and prefer_collection:
        known = collection.find_query(args.query)
        if known is not None and known.aspects:
            return AspectSet(args.query.strip(), tuple(a.aspect for a in known.aspects), AspectSource.COLLECTION,
                             note=f"the collection's aspects of {known.query_id}")
    model = None
    if args.aspects is None and args.explorer != "none":  # aspects given are used as they are: no model is asked
        from ..models.catalog import load_language_model

        model = load_language_model(args.explorer)
    explorer = AspectExplorer(model, collection=collection, retriever=retriever, max_aspects=args.max_aspects)
    return explorer.explore(args.query, given=args.aspects)


def _cmd_aspects(args, out) -> int:
    collection, bm25 = load_inputs(args)
    found = _find_aspects(args, collection, bm25, prefer_collection=False)
    if args.json:
        return print_json({"query": found.query, "aspects": list(found.aspects), "source": found.source.value,
                           "note": found.note, "model": found.model, "raw": found.raw}, out, indent=1)
    print(f"query: {found.query}", file=out)
    print(f"aspects ({found.source.value}{', ' + found.model if found.model else ''}):", file=out)
    for i, aspect in enumerate(found.aspects, 1):
        print(f"  [s{i}] {aspect}", file=out)
    if found.note:
        print(f"note: {found.note}", file=out)
    if found.raw:
        print(f"model reply: {found.raw[:300]!r}", file=out)
    return 0


def _cmd_rich_rank(args, out) -> int:
    from ..richrag.flow import rich_rank
    from ..richrag.pool import PoolSettings

    collection, retriever = load_inputs(args)
    found = _find_aspects(args, collection, retriever, prefer_collection=True)
    stages = {"dpo": ("dpo",), "sft": ("sft",), "both": ("sft", "dpo"), "none": ()}[args.ranker]
    result = rich_rank(collection, retriever, found, k=args.k, ranker_stages=stages,
                       settings=PoolSettings(per_aspect=args.per_aspect, capacity=args.capacity))
    if args.json:
        return print_json(result.to_dict(), out, indent=1)
    print(f"query: {result.query}" + (f"  ({result.query_id})" if result.query_id else ""), file=out)
    print(f"aspects ({found.source.value}): " + "; ".join(f"[s{i}] {a}" for i, a in enumerate(found.aspects, 1)),
          file=out)
    counts = result.pool.membership.sum(axis=0).tolist() if found.aspects else []
    print(f"pool: {len(result.pool)} documents (N = {args.per_aspect} per aspect, M = {args.capacity}); "
          f"per aspect: {counts}", file=out)
    print(f"\nranked lists, k = {result.k}" + (" (NCOM@k against the collection's sub-answers)" if result.ncom else ""),
          file=out)
    for name, ranking in result.lists.items():
        score = f"NCOM {result.ncom[name]:.3f}  " if name in result.ncom else ""
        ids = " ".join(f"{result.documents[j].doc_id}{list(result.pool.aspects_of(j))}" for j in ranking)
        print(f"  {name:<12} {score}{ids}", file=out)
    for note in result.notes:
        print(f"note: {note}", file=out)
    return 0
