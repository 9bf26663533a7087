"""A room's answers per minute at the model: K callers on one llama.cpp model, one at a time vs decoded together.

    PYTHONPATH=. HF_HUB_OFFLINE=1 nice -n 15 .venv/bin/python benchmarks/bench_room_throughput.py \
        [--model qwen2.5-0.5b] [--callers 1 5] [--prompts 4] [--slots 8] [--same-query] [--seed 0] [--out FILE]

``benchmarks/bench_room.py`` measures the room through the app (sessions, jobs, the judge). This one keeps only the
model, to answer issue 31's question at its root: how many answers per minute one ``LlamaCppModel`` gives K callers
at once, the old way (``slots=1``: one answer at a time on the model's own context, behind its
:class:`~fairrag_core.models.queue.ModelLock`) against the batching engine (``slots=--slots``:
:mod:`fairrag_core.models.batching`, every caller's prompts decoded together, prompt prefixes shared between slots).

Each caller is a thread answering ``--prompts`` distinct prompts through :meth:`LlamaCppModel.complete_each` (as a
session's Generate job does through :meth:`Generator.complete_each`): caller c takes running-shoes' c-th example
query, or with ``--same-query`` every caller the tour's query (the first example, rs-q01); each prompt is
:func:`~fairrag_core.rag.generation.build_prompt` of the query with 5 documents drawn at random (``--seed``) from the
query's top 15 BM25 candidates, in the Fast preset's prompt style and decoding (greedy). No two prompts of a run are
alike, and caller c has the same prompts for every K and every ``slots``, so K=1 is one session alone and the answers
of the two ways can be compared prompt by prompt. Every (K, slots) run gets a freshly loaded model (nothing in its
KV cache), loaded before its clock starts; no answer cache is involved.

Printed per run: answers, wall seconds and answers per minute; the model's prompt tokens evaluated and reused (a
prefix already in the KV cache: the previous prompt's for ``slots=1``, any slot's for the engine) and tokens
generated; the engine's ``batched_tokens`` (generated tokens that shared their decoding step with another answer's)
and steps; this process's CPU seconds (``time.process_time``, all threads). Then per K the engine's speed-up over
one-at-a-time and how many answers are identical (the engine's batch sums in another order, so a greedy answer can
change in a late token), and per way the throughput at each K against K=1 (issue 31's target for a room:
≥ 2×). Not measured: the app (pages, jobs, judging), the answers' quality.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fairrag_core import load_collection  # noqa: E402
from fairrag_core.models.catalog import model_for  # noqa: E402
from fairrag_core.models.gguf import resolve_gguf  # noqa: E402
from fairrag_core.models.llama_cpp import DEFAULT_SLOTS, LlamaCppModel  # noqa: E402
from fairrag_core.models.llm import ChatPrompt, Decoding, TokenUsage  # noqa: E402
from fairrag_core.rag.generation import build_prompt, prompt_style  # noqa: E402
from fairrag_core.rag.presets import PRESETS  # noqa: E402
from fairrag_core.retrieval import build_retriever  # noqa: E402

COLLECTION = "running-shoes"
CANDIDATES = 15  # BM25 candidates a list is drawn from
LIST_SIZE = 5  # documents per prompt


def caller_prompts(callers: int, prompts: int, *, same_query: bool, seed: int) -> list[list[ChatPrompt]]:
    """``prompts`` distinct prompts for each of ``callers`` (module docstring); no prompt repeats across callers."""
    collection = load_collection(COLLECTION)
    retriever = build_retriever("bm25", collection.texts, collection=collection.name)
    style = prompt_style(PRESETS["fast"].style)
    rng = np.random.default_rng(seed)
    seen: set[tuple[str, tuple[int, ...]]] = set()
    out = []
    for c in range(callers):
        query = collection.queries[0 if same_query else c % len(collection.queries)].text
        top = np.argsort(-retriever.score(query), kind="stable")[:CANDIDATES]
        mine = []
        while len(mine) < prompts:
            picked = tuple(int(i) for i in rng.choice(top, size=LIST_SIZE, replace=False))
            if (query, picked) not in seen:
                seen.add((query, picked))
                mine.append(build_prompt(query, [collection.documents[i] for i in picked], style))
        out.append(mine)
    return out


@dataclass
class RunResult:
    callers: int
    slots: int
    texts: dict[tuple[int, int], str]  # (caller, prompt) → answer
    wall: float
    cpu: float
    usage: TokenUsage
    engine: tuple[int, int, int, int] | None  # prompt_tokens, reused_tokens, batched_tokens, steps

    @property
    def per_minute(self) -> float:
        return len(self.texts) / self.wall * 60

    def line(self) -> str:
        u = self.usage
        text = (f"K={self.callers} slots={self.slots}: {len(self.texts)} answers in {self.wall:.1f} s, "
                f"{self.per_minute:.1f} per minute; prompt tokens {u.prompt_tokens:,} evaluated, "
                f"{u.reused_tokens:,} reused; {u.generated_tokens:,} generated; CPU {self.cpu:.1f} s")
        if self.engine is not None:
            prompt, reused, batched, steps = self.engine
            text += (f"; engine reused_tokens/prompt_tokens {reused:,}/{prompt:,}, batched_tokens {batched:,}, "
                     f"{steps:,} steps")
        return text


def run(path: Path, name: str, prompts: list[list[ChatPrompt]], decoding: Decoding, *, slots: int) -> RunResult:
    """The callers' prompts answered by a fresh model with ``slots`` (each caller a thread), timed from the first
    submission to the last answer."""
    model = LlamaCppModel(path, name=name, slots=slots)
    try:
        model._load()  # weights in memory before the clock starts
        if slots > 1:
            model._engine_for()
        texts: dict[tuple[int, int], str] = {}
        errors: list[BaseException] = []
        lock = threading.Lock()
        go = threading.Barrier(len(prompts) + 1)

        def caller(c: int) -> None:
            go.wait()
            try:
                for j, completion in model.complete_each(prompts[c], decoding):
                    with lock:
                        texts[(c, j)] = completion.text
            except BaseException as err:  # reported after the run
                errors.append(err)

        threads = [threading.Thread(target=caller, args=(c,), daemon=True) for c in range(len(prompts))]
        for thread in threads:
            thread.start()
        usage0, cpu0 = model.usage.snapshot(), time.process_time()
        go.wait()
        started = time.perf_counter()
        for thread in threads:
            thread.join()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
        if errors:
            raise errors[0]
        engine = model._engine
        counters = None if engine is None else (engine.prompt_tokens, engine.reused_tokens, engine.batched_tokens,
                                                engine.steps)
        return RunResult(len(prompts), slots, texts, wall, cpu, model.usage.snapshot() - usage0, counters)
    finally:
        model.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=PRESETS["fast"].generator, help="a GGUF model of the catalogue")
    parser.add_argument("--callers", type=int, nargs="+", default=[1, 5], help="K values: callers (threads) at once")
    parser.add_argument("--prompts", type=int, default=4, help="distinct prompts per caller (M)")
    parser.add_argument("--slots", type=int, default=DEFAULT_SLOTS, help="the engine's slots (compared with 1)")
    parser.add_argument("--same-query", action="store_true", help="every caller on the tour's query (rs-q01)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the documents drawn for each prompt")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    entry = model_for(args.model)
    weights = getattr(entry, "weights", None)
    if weights is None:
        parser.error(f"{args.model} is not a GGUF model of the catalogue; pass one such as {PRESETS['fast'].generator}")
    path = resolve_gguf(weights)
    decoding = prompt_style(PRESETS["fast"].style).decoding
    everyone = caller_prompts(max(args.callers), args.prompts, same_query=args.same_query, seed=args.seed)

    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    queries = "the tour's query" if args.same_query else "a query each"
    say(f"bench_room_throughput: {args.model} ({path.name}), K = {', '.join(map(str, args.callers))} callers × "
        f"{args.prompts} prompts ({queries}, {LIST_SIZE} of the top {CANDIDATES} BM25 documents each), "
        f"slots 1 vs {args.slots}")
    results: dict[tuple[int, int], RunResult] = {}
    for k in args.callers:
        for slots in (1, args.slots):
            results[(k, slots)] = found = run(path, args.model, everyone[:k], decoding, slots=slots)
            say(found.line())
        alone, together = results[(k, 1)], results[(k, args.slots)]
        same = sum(alone.texts[key] == together.texts.get(key) for key in alone.texts)
        say(f"K={k}: slots={args.slots} gives {together.per_minute / alone.per_minute:.2f}× the answers per minute "
            f"of slots=1; identical answers {same} of {len(alone.texts)}")
        differing = [key for key in sorted(alone.texts) if alone.texts[key] != together.texts.get(key)]
        if differing:  # one example, to see where they part
            c, j = differing[0]
            say(f"  caller {c} prompt {j}: slots=1 {alone.texts[(c, j)][:100]!r}")
            say(f"  {' ' * len(f'caller {c} prompt {j}: ')}slots={args.slots} {together.texts.get((c, j), '')[:100]!r}")
    if 1 in args.callers:
        for slots in (1, args.slots):
            ratios = ", ".join(f"K={k} {results[(k, slots)].per_minute / results[(1, slots)].per_minute:.2f}×"
                               for k in args.callers if k != 1)
            if ratios:
                say(f"slots={slots}: answers per minute against K=1 (one caller alone): {ratios}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
