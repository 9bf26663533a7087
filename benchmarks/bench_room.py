"""A room on one server without browsers: sessions of the app in threads of one process, moving α; some generating.

    PYTHONPATH=. HF_HUB_OFFLINE=1 nice -n 15 .venv/bin/python benchmarks/bench_room.py \
        [--sessions 30] [--moves 6] [--generating 5] [--same-query] [--alone] [--stub SECONDS] [--stub-judge] \
        [--out benchmarks/results/bench_room.txt]

``benchmarks/bench_sessions.py`` drives Chromium pages, and 20 of them filled a 2-core machine while the server used
11 s of CPU (issue 31). This harness speaks to the app below the browser: each session is a Streamlit ``AppTest``
of ``app.py`` (its own session state and owner key) driven from its own thread, in this process, so the sessions share
the server side exactly as a served app does: the ``st.cache_resource`` / ``st.cache_data`` caches, the loaded
models and their queues (:mod:`fairrag_core.models.queue`), the batching engine that decodes every session's answers
together (:mod:`fairrag_core.models.batching`) and the job runner (:mod:`fairrag_studio.services.jobs`).
The cost of drawing the page in a browser is not counted; the websocket's is not either.

Each session opens the Playground (running-shoes, its first example query), then makes ``--moves`` α moves to the
query's last stop and its first in turn, each timed as one script run. The first ``--generating`` sessions press
*Generate answers* first, each on its own prompts: generating session i takes the collection's i-th example query
(at the α the page starts at), or with ``--same-query`` the tour's query (the first example, rs-q01) at the i-th stop
from the top of its slider (a class walking the tour, each student at their own α); so their jobs run while every
session moves α. ``--alone`` is the same run with one generating session and no α movers: its answers-per-minute
line is the one to compare the room's with (issue 31's target: the room's ≥ 2× one session's).

Models: ``--stub S`` replaces the generator by a stand-in behind one model lock taking ``S`` seconds per answer (and
the judge by a substring test), so the run needs no model files. Without it the sidebar's Fast preset generates with
its offline GGUF model (qwen2.5-0.5b through the batching engine) and its judge checks the citations;
``--stub-judge`` keeps the real generator and replaces only the judge by the substring test, so the answers per
minute measure generation alone. Every run starts on an EMPTY answer cache and job table: ``$FAIRRAG_CACHE_DB`` and
``$FAIRRAG_JOBS`` point to fresh files in a temporary folder, so the user's ``~/.cache/fairrag/cache.sqlite`` is
neither read nor written and every answer is made by the model.

Printed: α move latency (median, p90, max), this process's CPU seconds per α move (``time.process_time``: all
threads, so with generation running it includes the models' work); the generating sessions' answers: how many the
model generated (the generators' cache misses: repeats of a list within a job, or across sessions, are served from
the memory cache and not counted) per minute of wall time from the first *Generate* press to the last job's end
(loading the models' weights included, in both ``--alone`` and the room), and the process's CPU seconds over that
window; the generator model's tokens (prompt tokens evaluated and reused from a cached prefix, tokens generated) and
its batching engine's counters (``prompt_tokens`` evaluated, ``reused_tokens`` copied from a slot's cache,
``batched_tokens``: generated tokens that shared their decoding step with another answer's); errors (exceptions in
a script run, failed jobs) and leaks (a session whose α is not the one it set, or whose job list holds another
session's job). Not measured: the judge's own tokens, the answers' quality, the time a real server spends queueing
script runs (see ``_RUNS``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
APP = str(ROOT / "app.py")
#: One script run at a time: ``AppTest`` creates and tears down a process-wide Streamlit runtime for each run, so
#: two runs at once break each other ("Runtime hasn't been created!"). The sessions' background jobs (Generate)
#: still run all the while, in their own threads; a move's latency is one run under that load, without the queue
#: of other sessions' runs a real server would add (a lower bound for p90).
_RUNS = threading.Lock()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low, high = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def isolate_caches() -> Path:
    """Point the answer cache and the job table to fresh files in a temporary folder (returned), for this process:
    the run starts on an empty cache and leaves the user's files alone."""
    from fairrag_core.audit.jobs import JOBS_ENV
    from fairrag_core.data.disk_cache import CACHE_ENV

    folder = Path(tempfile.mkdtemp(prefix="bench_room_"))
    os.environ[CACHE_ENV] = str(folder / "cache.sqlite")
    os.environ[JOBS_ENV] = str(folder / "jobs.sqlite")
    return folder


def stub_judge() -> None:
    """Replace the sidebar's judge by the substring test (``--stub-judge``, and ``--stub``)."""
    from fakes import SubstringAttributor

    from fairrag_studio.services import resources

    judge = SubstringAttributor()
    resources.attributor = lambda name, device: judge


def stub_models(seconds: float) -> None:
    """Replace the sidebar's generator and judge by stand-ins (``--stub``): one model lock, ``seconds`` per answer."""
    from fakes import FirstDocumentModel

    from fairrag_core.models.queue import ModelLock
    from fairrag_core.rag.generation import AnswerCache, Generator
    from fairrag_studio.services import resources

    class Stub(FirstDocumentModel):
        def __init__(self) -> None:
            super().__init__("stub-llm")
            self._lock = ModelLock(self.name)

        def complete(self, prompts, decoding=None):
            with self._lock:
                time.sleep(seconds * len(prompts))
                return super().complete(prompts, decoding)

    model = Stub()
    resources.generator = lambda name, device, style="short": Generator(model, cache=AnswerCache(disk=None))
    stub_judge()


def record_generators() -> list:
    """Keep every generator the pages get from ``resources.generator`` (the list returned, filled as they come), so
    the run can count what their models generated."""
    from fairrag_studio.services import resources

    made, get = [], resources.generator

    def recorded(*args, **kwargs):
        generator = get(*args, **kwargs)
        if all(generator is not g for g in made):
            made.append(generator)
        return generator

    resources.generator = recorded
    return made


@dataclass(frozen=True)
class Plan:
    """What a generating session generates on: ``query`` (None: the page's first example) at the slider's stop
    ``stop`` from the top (None: the α the page starts at)."""

    query: str | None = None
    stop: int | None = None


def generation_plans(n: int, *, same_query: bool) -> list[Plan]:
    """The prompts of ``n`` generating sessions, distinct where the collection allows: its i-th example query each,
    or (``same_query``) the tour's query, its first example, at the i-th stop from the top."""
    from fairrag_core import load_collection
    from fairrag_studio.services.state import DEFAULT_COLLECTION

    queries = [q.text for q in load_collection(DEFAULT_COLLECTION).queries]
    if same_query:
        return [Plan(queries[0], i) for i in range(n)]
    return [Plan(queries[i % len(queries)]) for i in range(n)]


class Room:
    def __init__(self, moves: int) -> None:
        self.moves = moves
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.leaks: list[str] = []
        self.jobs: list[tuple[str, str]] = []  # (owner, job id) of the generating sessions
        self.first_generate: tuple[float, float] | None = None  # perf_counter, process_time at the first Generate
        self.lock = threading.Lock()

    def session(self, index: int, plan: Plan | None, opened: threading.Barrier, moving: threading.Event) -> None:
        from streamlit.testing.v1 import AppTest

        from fairrag_studio.services import jobs
        try:
            with _RUNS:
                at = AppTest.from_file(APP, default_timeout=600).run()
                at.switch_page("app_pages/playground.py").run()
            if at.exception:
                raise RuntimeError(at.exception[0].message)
            owner = at.session_state["jobs_owner"]
        except Exception as err:
            with self.lock:
                self.errors.append(f"session {index:02d} open: {type(err).__name__}: {err}")
            opened.abort()
            return
        opened.wait()
        if plan is not None:
            with _RUNS:
                if plan.query is not None and at.text_input(key="query").value != plan.query:
                    at.text_input(key="query").set_value(plan.query).run()
                if plan.stop is not None:
                    stops = at.select_slider(key="alpha").options
                    at.select_slider(key="alpha").set_value(float(stops[-1 - plan.stop % len(stops)])).run()
                with self.lock:
                    if self.first_generate is None:
                        self.first_generate = (time.perf_counter(), time.process_time())
                at.button(key="generate").click().run()
            if at.exception:
                with self.lock:
                    self.errors.append(f"session {index:02d} generate: {at.exception[0].message[:200]}")
            mine = jobs.runner().jobs(owner, limit=5)
            with self.lock:
                self.jobs += [(owner, job.job_id) for job in mine]
        moving.wait()
        stops = at.select_slider(key="alpha").options
        for move in range(self.moves):
            target = stops[-1] if move % 2 == 0 else stops[0]
            with _RUNS:
                started = time.perf_counter()
                at.select_slider(key="alpha").set_value(float(target)).run()
                took = time.perf_counter() - started
            with self.lock:
                self.latencies.append(took * 1000)
                if at.exception:
                    self.errors.append(f"session {index:02d} move {move}: {at.exception[0].message[:200]}")
                if float(at.select_slider(key="alpha").value) != float(target):
                    self.leaks.append(f"session {index:02d}: α shows {at.select_slider(key='alpha').value}, "
                                      f"set {target}")
        others = [job.job_id for job in jobs.runner().jobs(owner, limit=50)
                  if job.owner != owner or plan is None]
        if others:
            with self.lock:
                self.leaks.append(f"session {index:02d}: lists jobs {others} it did not start")


def model_lines(generators: list) -> list[str]:
    """The generator models' token counts and their batching engines' counters (module docstring)."""
    lines, seen = [], []
    for generator in generators:
        model = generator.model
        if any(model is m for m in seen):
            continue
        seen.append(model)
        usage = getattr(model, "usage", None)
        if usage is not None:
            lines.append(f"{model.name}: {usage.calls} calls, prompt tokens {usage.prompt_tokens:,} evaluated and "
                         f"{usage.reused_tokens:,} reused, {usage.generated_tokens:,} generated")
        engine = getattr(model, "_engine", None)
        if engine is not None:
            total = engine.prompt_tokens + engine.reused_tokens
            lines.append(f"{model.name} batching engine ({engine.slots_n} slots): reused_tokens/prompt_tokens "
                         f"{engine.reused_tokens:,}/{engine.prompt_tokens:,} "
                         f"({engine.reused_tokens / max(total, 1):.0%} of prompt tokens reused), batched_tokens "
                         f"{engine.batched_tokens:,}, {engine.steps:,} decoding steps")
        elif usage is not None:
            lines.append(f"{model.name}: no batching engine (one answer at a time behind the model's lock)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--moves", type=int, default=6, help="α moves per session (last stop, first stop, …)")
    parser.add_argument("--generating", type=int, default=5, help="sessions that press Generate first")
    parser.add_argument("--same-query", action="store_true",
                        help="every generating session on the tour's query (rs-q01), each at its own α stop")
    parser.add_argument("--alone", action="store_true",
                        help="one generating session and no α movers (the line to compare the room's with)")
    parser.add_argument("--stub", type=float, default=None, metavar="SECONDS",
                        help="stand-in models taking SECONDS per answer (no model files needed)")
    parser.add_argument("--stub-judge", action="store_true",
                        help="the real generator, the judge replaced by a substring test (generation alone)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.alone:
        args.sessions, args.generating, args.moves = 1, 1, 0
    args.generating = min(args.generating, args.sessions)
    caches = isolate_caches()
    if args.stub is not None:
        stub_models(args.stub)
    elif args.stub_judge:
        stub_judge()
    generators = record_generators()
    from fairrag_studio.services import jobs

    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    room = Room(args.moves)
    plans = generation_plans(args.generating, same_query=args.same_query)
    opened, moving = threading.Barrier(args.sessions + 1), threading.Event()
    threads = [threading.Thread(target=room.session, args=(i, plans[i] if i < args.generating else None, opened,
                                                           moving), daemon=True)
               for i in range(args.sessions)]
    models = (f"stand-in models, {args.stub:g} s per answer" if args.stub is not None else
              "the preset's generator, a substring judge" if args.stub_judge else "the preset models")
    prompts = "the tour's query, each at its own α" if args.same_query else "each on its own query"
    say(f"bench_room{' --alone' if args.alone else ''}: {args.sessions} sessions ({args.generating} generating, "
        f"{prompts}; {models}), {args.moves} α moves each; empty answer cache in {caches}")
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    try:
        opened.wait()
    except threading.BrokenBarrierError:
        say("a session could not open the app: " + "; ".join(room.errors))
        return 1
    say(f"{args.sessions} sessions open after {time.perf_counter() - started:.1f} s")
    time.sleep(1.0)  # the generating sessions have pressed Generate
    cpu0, wall0 = time.process_time(), time.perf_counter()
    moving.set()
    for thread in threads:
        thread.join()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    runner = jobs.runner()
    answered = 0
    for owner, job_id in room.jobs:
        runner.wait(job_id, 3600)
        job = runner.get(owner, job_id)
        live = runner.live(owner, job_id)
        answered += len((live.partial if live else {}).get("answers", []))
        if job is not None and job.error:
            room.errors.append(f"job {job_id}: {job.error}")
    ended, ended_cpu = time.perf_counter(), time.process_time()
    moves = room.latencies
    if moves:
        say(f"α moves: {len(moves)}; median {statistics.median(moves):.0f} ms, p90 {percentile(moves, 0.9):.0f} ms, "
            f"max {max(moves):.0f} ms; {wall:.1f} s for all")
        say(f"CPU of this process per α move: {cpu / len(moves) * 1000:.0f} ms (all threads, the generation's "
            "included while it ran)")
    if room.jobs and room.first_generate is not None:
        generated = sum(g.cache.misses for g in generators)
        gen_wall, gen_cpu = ended - room.first_generate[0], ended_cpu - room.first_generate[1]
        say(f"{'one session alone' if args.alone else 'the room'}: {generated} answers generated by the model for "
            f"{len(room.jobs)} generating session{'s' if len(room.jobs) != 1 else ''} in {gen_wall:.1f} s "
            f"({generated / gen_wall * 60:.1f} per minute); {answered} answers on their pages")
        say(f"CPU of this process from the first Generate to the last job's end: {gen_cpu:.1f} s "
            f"({gen_cpu / gen_wall:.2f} cores; {ended_cpu:.1f} s in all, opening the sessions included)")
        for line in model_lines(generators):
            say(line)
    say(f"errors: {len(room.errors)}; cross-session leaks: {len(room.leaks)}")
    for problem in room.errors + room.leaks:
        say(f"  {problem}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 1 if room.errors or room.leaks else 0


if __name__ == "__main__":
    sys.exit(main())
