"""``warm``: precompute a collection's answers and NLI judgements into the disk cache (prepare a class overnight).

The Playground answers a query in minutes on a CPU; from the cache, in a second. ``warm`` runs the RAG pipeline
for every example query at the chosen α values with exactly the Playground's settings (by default: k = 5, N = 20,
K = 20, seed 42, the offline generator and judge, α = 2 and the Deterministic toggle), so that every answer and
judgement the class will ask for is already in the cache (:mod:`fairrag_core.data.disk_cache`) that the app, the
CLI and other processes read. It reports per (query, α) what it computed and what it skipped because it was
cached; a second ``warm`` with the same settings computes nothing.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace

from ..checks import parse_alphas
from ..data.disk_cache import CACHE_ENV, DiskCache, default_disk_cache
from ..errors import InvalidParameterError
from ..rag.pipeline import RagConfig
from ..rag.prepared import PreparedClass, mark_prepared_class
from ..rag.presets import PRESETS
from ..ranking.sweep import SweepConfig
from ..settings import PLAYGROUND_SAMPLING
from .common import add_command, add_common, add_settings, load_inputs, load_models, print_json, settings

__all__ = ["register"]

#: The Playground's defaults (fairrag_studio/services/state.py): α = 2 and the Deterministic toggle, k, N, K and seed.
PLAYGROUND_ALPHAS = parse_alphas("2,inf")
PLAYGROUND = {name: getattr(PLAYGROUND_SAMPLING, name) for name in ("n_samples", "k", "candidates", "seed")}


def register(sub) -> None:
    """Add ``warm`` to the command parser ``sub``."""
    p = add_command(
        sub, "warm", _cmd_warm,
        help="precompute a collection's answers and NLI judgements into the disk cache (prepare a class)",
        description="Answer every example query (or --queries) at each α with the Playground's settings and judge "
                    "every citation, storing answers and judgements in the disk cache that the app and the CLI "
                    "read (" + CACHE_ENV + " or ~/.cache/fairrag/cache.sqlite). Defaults are the Playground's: "
                    "k=5, N=20, K=20, seed 42, α=2 and deterministic. Cached work is skipped and reported.")
    # RagConfig's options but α (a grid here) and the oracle (off unless asked: the Playground shows no oracle)
    add_common(p, RagConfig, models=True, skip=("alpha", "oracle"), defaults=PLAYGROUND)
    add_settings(p, SweepConfig, only=("alphas", "query_ids"), defaults={"alphas": PLAYGROUND_ALPHAS})
    p.add_argument("--oracle", action="store_true",
                   help="also answer the stochastic oracle's lists (what sweeps and the Disparity page need)")
    p.add_argument("--cache", default=None, help=f"cache file (default ${CACHE_ENV} or ~/.cache/fairrag/cache.sqlite)")
    p.add_argument("--preset", choices=list(PRESETS), default=None,
                   help="an answer preset (fast, quality): its generator, prompt style, judge and citation rule "
                        "replace --generator, --prompt-style and --nli")
    p.add_argument("--mark-class", action="store_true",
                   help="record this as the prepared class beside the cache file: the app then defaults to this "
                        "preset and says its answers came from the cache (what `make class` does)")


def _cache(path: str | None) -> DiskCache:
    if path:
        return DiskCache(path)
    cache = default_disk_cache()
    if cache is None:
        raise InvalidParameterError(f"the disk cache is off ({CACHE_ENV}=off), so there is nothing to warm; unset "
                                    f"{CACHE_ENV} or pass --cache PATH")
    return cache


def _alpha_text(alpha: float) -> str:
    return "det" if math.isinf(alpha) else f"{alpha:g}"


def _cmd_warm(args, out) -> int:
    from ..rag import run_rag

    cache = _cache(args.cache)
    collection, retriever = load_inputs(args)
    ids = args.query_ids
    queries = [collection.query(q) for q in ids] if ids else list(collection.queries)
    if not queries:
        raise InvalidParameterError(f"{collection.name} has no example queries; pass a collection with "
                                    "queries.jsonl")
    preset = PRESETS[args.preset] if args.preset else None
    if preset is not None:
        args.generator, args.prompt_style, args.nli = preset.generator, preset.style, preset.attributor
    shared = settings(RagConfig, args, alpha=args.alphas[0], oracle=args.oracle,  # checked once, before the loop
                      **(preset.citation.citation_fields() if preset is not None else {}))
    generator, attributor = load_models(args)
    generator.cache.disk = attributor.disk = cache
    if generator.identity is None:
        print(f"note: {generator.name} has no identity for the disk cache; its answers are not kept",
              file=sys.stderr)
    tasks = [(q, a) for q in queries for a in args.alphas]
    rows = []
    start = time.perf_counter()
    for i, (query, alpha) in enumerate(tasks, 1):
        made, served = generator.cache.misses, generator.cache.hits
        asked, judged = attributor.pairs, attributor.model_pairs
        began = time.perf_counter()
        run_rag(collection, retriever, generator, attributor, query.text, replace(shared, alpha=alpha), n_boot=10)
        generated, cached = generator.cache.misses - made, generator.cache.hits - served  # distinct lists (+ oracle)
        pairs = attributor.pairs - asked  # (document, answer or claim) pairs, control documents included
        row = {"query_id": query.query_id, "alpha": alpha, "answers": generated + cached, "answers_cached": cached,
               "judgements": pairs, "judgements_cached": pairs - (attributor.model_pairs - judged),
               "seconds": round(time.perf_counter() - began, 2)}
        rows.append(row)
        print(f"[{i}/{len(tasks)}] {query.query_id} α={_alpha_text(alpha)}: {row['answers']} answers "
              f"({row['answers_cached']} cached), {row['judgements']} judgements ({row['judgements_cached']} cached), "
              f"{row['seconds']:.1f} s", file=sys.stderr, flush=True)
    totals = {k: sum(r[k] for r in rows) for k in ("answers", "answers_cached", "judgements", "judgements_cached")}
    stats = cache.stats()
    marked = None
    if args.mark_class:
        marked = mark_prepared_class(PreparedClass(
            preset=args.preset or "custom", generator=generator.name, attributor=attributor.name,
            collection=collection.name, query_ids=tuple(q.query_id for q in queries), alphas=tuple(args.alphas),
            k=args.k, n_samples=args.n_samples, candidates=args.candidates, seed=args.seed, made_at=time.time(),
            seconds=round(time.perf_counter() - start, 1)), stats.path)
    payload = {"collection": collection.name, "generator": generator.name, "generator_identity": generator.identity,
               "attributor": attributor.name, "attributor_identity": attributor.cache_identity(),
               "alphas": ["inf" if math.isinf(a) else a for a in args.alphas], "k": args.k, "n_samples": args.n_samples,
               "candidates": args.candidates, "seed": args.seed, "oracle": args.oracle, "tasks": rows, **totals,
               "seconds": round(time.perf_counter() - start, 1), "cache": str(stats.path),
               "cache_entries": stats.entries, "cache_bytes": stats.bytes, "preset": args.preset,
               "prepared_class": str(marked) if marked else None}
    if args.json:
        return print_json(payload, out, indent=2)
    print(f"Warmed {collection.name} for {len(queries)} queries × α {', '.join(map(_alpha_text, args.alphas))} "
          f"(k={args.k}, N={args.n_samples}, K={args.candidates}, seed {args.seed}) with {generator.name} + "
          f"{attributor.name} in {payload['seconds']:.0f} s", file=out)
    print(f"  answers:    {totals['answers'] - totals['answers_cached']} generated, {totals['answers_cached']} "
          "already cached", file=out)
    print(f"  judgements: {totals['judgements'] - totals['judgements_cached']} computed, "
          f"{totals['judgements_cached']} already cached", file=out)
    print(f"Cache {stats.describe()}", file=out)
    if marked:
        print(f"Prepared class recorded in {marked}: the app now defaults to the {args.preset or 'custom'} preset",
              file=out)
    return 0
