"""``warm``: precompute a collection's answers and NLI judgements into the disk cache (prepare a class overnight).

The Playground answers a query in minutes on a CPU; from the cache, in a second. ``warm`` runs the RAG pipeline
for every example query at the chosen α values with exactly the Playground's settings (by default: k = 5, N = 20,
K = 20, seed 42, the offline generator and judge, α = 2 and the Deterministic toggle), so that every answer and
judgement the class will ask for is already in the cache (:mod:`fairrag_core.data.disk_cache`) that the app, the
CLI and other processes read. It reports per (query, α) what it computed and what it skipped because it was
cached; a second ``warm`` with the same settings computes nothing.

Before it starts, it counts the answers the class needs and those already cached ("21 answers already prepared; 0 to
do"); then one line per answer and per judgement on stderr with its time and an estimate of the time left (from the
mean time of the units computed so far); Ctrl-C says how far it got (each answer and judgement is saved as it is
made, so a rerun resumes there). ``--quiet`` keeps only the line per (query, α).

With ``--mark-class`` it also runs the tour's FAIR-QR step once (the FAIR-QR page's first run on *people*,
:func:`~fairrag_core.rag.prepared.fairqr_showcase`, whatever ``--collection``), one line per refinement, so that the
LLM refiner's replies are cached and the record lists them (the page then says "FAIR-QR ✓").
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace
from pathlib import Path

from ..checks import parse_alphas
from ..data.disk_cache import CACHE_ENV, DiskCache, default_disk_cache
from ..errors import FairRAGError, InvalidParameterError
from ..fairqr.refiners import LLMRefiner, Refiner
from ..rag.pipeline import AnswerStream, RagConfig
from ..rag.prepared import FAIRQR_SHOWCASE, PreparedClass, fairqr_showcase, mark_prepared_class, plan_answers
from ..rag.presets import PRESETS
from ..ranking.sweep import SweepConfig
from ..settings import PLAYGROUND_SAMPLING
from ..text import human_bytes
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
    p.add_argument("--quiet", action="store_true",
                   help="one progress line per query and α only (default: one per answer and judgement, with an "
                        "estimate of the time left)")


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


def _seconds(seconds: float) -> str:
    """A duration as a progress line says it: "48 s", "3 min 5 s"."""
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"


def _home(path) -> str:
    """A path with the home folder as ``~`` (what a teacher recognises)."""
    text, home = str(path), str(Path.home())
    return "~" + text[len(home):] if home != "/" and text.startswith(home + "/") else text


class _Progress:
    """One stderr line per answer and per judgement, with its time and an estimate of the time left.

    Hooked into :class:`~fairrag_core.rag.pipeline.AnswerStream`: ``tick`` before every model call, ``progress``
    after it. The estimate is (mean time of the answers generated so far, the first left out once there are two)
    × (answers still to generate) + (mean time of the judgements computed so far) × (judgements still to do: those
    left in this (query, α), and for the later ones the judgements per generated answer so far); cached units take
    no time and are not in the means.
    """

    def __init__(self, generator, attributor, answers: int, todo: int, err) -> None:
        self.generator, self.attributor, self.err = generator, attributor, err
        self.answers, self.todo = answers, todo  # answers in the plan; of them still to generate
        self.answered = 0  # answers seen (cached or generated)
        self.answer_seconds: list[float] = []  # per generated answer
        self.judge_seconds: list[float] = []  # per computed judgement
        self.judged = self.computed = 0  # judgements seen; of them computed
        self.task_done = self.task_total = 0  # judgements of the current (query, α)
        self.label = ""
        self._began = time.perf_counter()
        self._marks = (0, 0)

    def task(self, label: str) -> None:
        self.label, self.task_done, self.task_total = label, 0, 0

    def tick(self) -> None:
        self._began = time.perf_counter()
        self._marks = (self.generator.cache.misses, self.attributor.model_pairs)

    def _left(self) -> str:
        # A model that decodes answers together reads several prompts before the first answer is out, then answers
        # come close together: past the first, the time between answers is the pace (the first would say 17 min
        # where 2 were left)
        paced = self.answer_seconds[1:] or self.answer_seconds
        answer = sum(paced) / len(paced) if paced else None
        judge = sum(self.judge_seconds) / len(self.judge_seconds) if self.judge_seconds else None
        if answer is None and self.todo:
            return ""
        per_answer = self.computed / max(1, len(self.answer_seconds))  # judgements per generated answer
        judgements = (self.task_total - self.task_done) + per_answer * self.todo
        left = (answer or 0.0) * self.todo + (judge if judge is not None else 0.0) * judgements
        return f" · ~{_seconds(left)} left"

    def progress(self, stage: str, done: int, total: int) -> None:
        took = time.perf_counter() - self._began
        if stage == "generate":
            self.answered += 1
            generated = self.generator.cache.misses > self._marks[0]
            if generated:
                self.answer_seconds.append(took)
                self.todo = max(0, self.todo - 1)
            line = (f"answer {self.answered}/{self.answers} ({self.label}, list {done} of {total}) "
                    + (f"{took:.1f} s" if generated else "cached"))
        elif stage == "judge":
            if done == 0:  # the (query, α)'s judgements are counted before the first
                self.task_total, self.task_done = total, 0
                loading = _loading_line(getattr(self.attributor, "model", None)) if total else None
                if loading:  # a judge of its own (not the generator's weights) loads on its first judgement
                    print(loading.replace("loading ", "loading the judge ", 1), file=self.err, flush=True)
                return
            step, self.task_done = done - self.task_done, done
            computed = self.attributor.model_pairs - self._marks[1]
            self.judged, self.computed = self.judged + step, self.computed + computed
            if computed:
                self.judge_seconds.extend([took / computed] * computed)
            what = f"judgement {done}/{total}" if step == 1 else f"judgements {done - step + 1}–{done}/{total}"
            line = f"{what} ({self.label}) " + (f"{took:.1f} s" if computed else "cached")
        else:
            return
        print(line + self._left(), file=self.err, flush=True)


def _loading_line(model) -> str | None:
    """ "loading qwen2.5-1.5b (1.1 GB) on 1 thread …" when the model's weights are not in memory yet (they load on
    first use)."""
    if getattr(model, "loaded", True):
        return None
    path = getattr(model, "path", None)
    size = Path(path).stat().st_size if path is not None and Path(path).is_file() else None
    threads = getattr(model, "n_threads", None)  # models.threads: one per free core
    return (f"loading {model.name}" + (f" ({human_bytes(size)})" if size else "")
            + (f" on {threads} thread{'s' * (threads != 1)}" if threads else "") + " …")


def _bm25(collection):
    """BM25 over ``collection``: the FAIR-QR page's retriever."""
    from ..retrieval import build_retriever

    return build_retriever("bm25", collection.texts, collection=collection.name)


class _ShownRefiner(Refiner):
    """``refiner`` with one stderr line per refinement: its number, the group, and its time or "cached"."""

    def __init__(self, refiner: LLMRefiner, label: str, err) -> None:
        self.refiner, self.label, self.err = refiner, label, err
        self.name = refiner.name
        self.count = 0

    def refine(self, request):
        began, calls = time.perf_counter(), self.refiner.model_calls
        found = self.refiner.refine(request)
        self.count += 1
        took = time.perf_counter() - began
        print(f"refinement {self.count} ({self.label}, toward {request.group}) "
              + (f"{took:.1f} s" if self.refiner.model_calls > calls else "cached"), file=self.err, flush=True)
        return found


def _prepare_fairqr(collection, refiner: LLMRefiner, showcase, err, *, quiet: bool = False) -> tuple[str, ...]:
    """Run the FAIR-QR showcase ``(query, config, _)`` once with ``refiner`` (its replies go to its disk cache);
    the cache keys of its replies."""
    from ..fairqr import fair_qr

    query, config, _ = showcase
    refiner.keys.clear()
    shown = refiner if quiet else _ShownRefiner(refiner, f"FAIR-QR {query!r}", err)
    calls = refiner.model_calls
    result = fair_qr(collection, _bm25(collection), shown, query, config)
    made = refiner.model_calls - calls
    print(f"FAIR-QR {query!r}: {len(result.iterations) - 1} refinements, {len(refiner.keys) - made} of "
          f"{len(refiner.keys)} replies cached", file=err, flush=True)
    return tuple(refiner.keys)


def _warm_fairqr(args, cache: DiskCache, generator) -> tuple[str, ...]:
    """The tour's FAIR-QR step (README step 5: *people* → FAIR-QR, the page's first run on each collection of
    :data:`~fairrag_core.rag.prepared.FAIRQR_SHOWCASE`) prepared (see :func:`_prepare_fairqr`); () with a note on
    stderr when it cannot be. When the refiner is the generator (same --generator name), its weights are reused."""
    from ..data import load_collection
    from ..fairqr import CorpusKeywordRefiner, build_refiner

    device = getattr(args, "device", None)
    keys: list[str] = []
    try:
        for name in FAIRQR_SHOWCASE:
            collection = load_collection(name)
            showcase = fairqr_showcase(collection)
            if showcase is None:
                continue
            bm25 = _bm25(collection)
            if showcase[2] == args.generator:
                refiner = LLMRefiner(generator.model, disk=cache,
                                     fallback=CorpusKeywordRefiner(collection, showcase[1].categories, bm25))
            else:
                refiner = build_refiner(showcase[2], collection, showcase[1].categories, bm25,
                                        device=None if device == "auto" else device)
            if not isinstance(refiner, LLMRefiner):
                continue
            refiner.disk = cache
            if refiner.identity is None:
                print(f"note: {refiner.model.name} has no identity for the disk cache; FAIR-QR will run live",
                      file=sys.stderr)
                return ()
            keys += _prepare_fairqr(collection, refiner, showcase, sys.stderr, quiet=args.quiet)
    except FairRAGError as err:
        print(f"note: the FAIR-QR step was not prepared ({err}); it will run live", file=sys.stderr)
        return ()
    return tuple(keys)


def _cmd_warm(args, out) -> int:
    from ..rag import run_rag

    cache = _cache(args.cache)
    if not args.quiet:
        print(f"reading {args.collection or 'the collection'}, its retriever and the models' files …",
              file=sys.stderr, flush=True)
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
    plan = plan_answers(collection, retriever, generator, queries, args.alphas, shared)
    planned, todo = sum(t.answers for t in plan), sum(t.todo for t in plan)
    print(f"{planned - todo} answers already prepared; {todo} to do" if planned - todo else
          f"{planned} answers to prepare, none in the cache yet", file=sys.stderr, flush=True)
    progress = _Progress(generator, attributor, planned, todo, sys.stderr)
    stream = AnswerStream(progress=progress.progress, tick=progress.tick) if not args.quiet else None
    rows = []
    start = time.perf_counter()
    try:
        for i, ((query, alpha), task) in enumerate(zip([(q, a) for q in queries for a in args.alphas], plan), 1):
            if task.todo and stream is not None:
                loading = _loading_line(generator.model)
                if loading:
                    print(loading, file=sys.stderr, flush=True)
            made, served = generator.cache.misses, generator.cache.hits
            asked, judged = attributor.pairs, attributor.model_pairs
            began = time.perf_counter()
            progress.task(f"{query.query_id} α = {_alpha_text(alpha)}")
            run_rag(collection, retriever, generator, attributor, query.text, replace(shared, alpha=alpha),
                    n_boot=10, stream=stream)
            generated, cached = generator.cache.misses - made, generator.cache.hits - served  # lists (+ oracle)
            pairs = attributor.pairs - asked  # (document, answer or claim) pairs, control documents included
            row = {"query_id": query.query_id, "alpha": alpha, "answers": generated + cached,
                   "answers_cached": cached, "judgements": pairs,
                   "judgements_cached": pairs - (attributor.model_pairs - judged),
                   "seconds": round(time.perf_counter() - began, 2)}
            rows.append(row)
            print(f"[{i}/{len(plan)}] {query.query_id} α={_alpha_text(alpha)}: {row['answers']} answers "
                  f"({row['answers_cached']} cached), {row['judgements']} judgements ({row['judgements_cached']} "
                  f"cached), {row['seconds']:.1f} s", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print(f"\nStopped after {progress.answered if stream is not None else sum(r['answers'] for r in rows)} of "
              f"{planned} answers ({len(rows)} of {len(plan)} queries × α done) in "
              f"{_seconds(time.perf_counter() - start)}. What was made is saved in {_home(cache.path)}: run the "
              "same command again to resume where it stopped.", file=sys.stderr, flush=True)
        return 130
    totals = {k: sum(r[k] for r in rows) for k in ("answers", "answers_cached", "judgements", "judgements_cached")}
    stats = cache.stats()
    marked = None
    if args.mark_class:
        refinement_keys = _warm_fairqr(args, cache, generator)
        marked = mark_prepared_class(PreparedClass(
            preset=args.preset or "custom", generator=generator.name, attributor=attributor.name,
            collection=collection.name, query_ids=tuple(q.query_id for q in queries), alphas=tuple(args.alphas),
            k=args.k, n_samples=args.n_samples, candidates=args.candidates, seed=args.seed, made_at=time.time(),
            seconds=round(time.perf_counter() - start, 1), answer_keys=tuple(k for t in plan for k in t.keys),
            refinement_keys=refinement_keys),
            stats.path)
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
    print(f"Prepared {totals['answers']} answers and {totals['judgements']} judgements ({human_bytes(stats.bytes)} "
          f"on disk, in {_home(stats.path)})", file=out)
    if marked:
        print(f"Prepared class recorded in {marked}: the app now defaults to the {args.preset or 'custom'} preset",
              file=out)
    return 0
