"""A room on one server without browsers: sessions of the app in threads of one process, moving α; some generating.

    PYTHONPATH=. HF_HUB_OFFLINE=1 nice -n 15 .venv/bin/python benchmarks/bench_room.py \
        [--sessions 30] [--moves 6] [--generating 5] [--stub SECONDS] [--out benchmarks/results/bench_room.txt]

``benchmarks/bench_sessions.py`` drives Chromium pages, and 20 of them filled a 2-core machine while the server used
11 s of CPU (issue 31). This harness speaks to the app below the browser: each session is a Streamlit ``AppTest``
of ``app.py`` (its own session state and owner key) driven from its own thread, in this process, so the sessions share
the server side exactly as a served app does: the ``st.cache_resource`` / ``st.cache_data`` caches, the loaded
models and their queues (:mod:`fairrag_core.models.queue`) and the job runner (:mod:`fairrag_studio.services.jobs`).
The cost of drawing the page in a browser is not counted; the websocket's is not either.

Each session opens the Playground (running-shoes, its first example query), then makes ``--moves`` α moves to the
query's last stop and its first in turn, each timed as one script run. The first ``--generating`` sessions press
*Generate answers* first, so their jobs run while every session moves α. ``--stub S`` replaces the generator by a
stand-in behind one model lock taking ``S`` seconds per answer (and the judge by a substring test), so the run needs
no model files; without it the sidebar's preset models are used (the disk caches serve what was made before).

Printed: α move latency (median, p90, max), this process's CPU seconds per α move (``time.process_time``: all
threads, so with generation running it includes the models' work), the generating sessions' answers per minute,
errors (exceptions in a script run, failed jobs) and leaks (a session whose α is not the one it set, or whose job
list holds another session's job).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
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


def stub_models(seconds: float) -> None:
    """Replace the sidebar's generator and judge by stand-ins (``--stub``): one model lock, ``seconds`` per answer."""
    from fakes import FirstDocumentModel, SubstringAttributor

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

    model, judge = Stub(), SubstringAttributor()
    resources.generator = lambda name, device, style="short": Generator(model, cache=AnswerCache(disk=None))
    resources.attributor = lambda name, device: judge


class Room:
    def __init__(self, moves: int) -> None:
        self.moves = moves
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.leaks: list[str] = []
        self.jobs: list[tuple[str, str]] = []  # (owner, job id) of the generating sessions
        self.lock = threading.Lock()

    def session(self, index: int, generate: bool, opened: threading.Barrier, moving: threading.Event) -> None:
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
        if generate:
            with _RUNS:
                at.button(key="generate").click().run()
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
                  if job.owner != owner or (not generate)]
        if others:
            with self.lock:
                self.leaks.append(f"session {index:02d}: lists jobs {others} it did not start")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--moves", type=int, default=6, help="α moves per session (last stop, first stop, …)")
    parser.add_argument("--generating", type=int, default=5, help="sessions that press Generate first")
    parser.add_argument("--stub", type=float, default=None, metavar="SECONDS",
                        help="stand-in models taking SECONDS per answer (no model files needed)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.stub is not None:
        stub_models(args.stub)
    from fairrag_studio.services import jobs

    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    room = Room(args.moves)
    opened, moving = threading.Barrier(args.sessions + 1), threading.Event()
    threads = [threading.Thread(target=room.session, args=(i, i < args.generating, opened, moving), daemon=True)
               for i in range(args.sessions)]
    models = f"stand-in models, {args.stub:g} s per answer" if args.stub is not None else "the preset models"
    say(f"bench_room: {args.sessions} sessions ({args.generating} generating, {models}), {args.moves} α moves each")
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
    gen_wall = time.perf_counter() - wall0
    moves = room.latencies
    if moves:
        say(f"α moves: {len(moves)}; median {statistics.median(moves):.0f} ms, p90 {percentile(moves, 0.9):.0f} ms, "
            f"max {max(moves):.0f} ms; {wall:.1f} s for all")
        say(f"CPU of this process per α move: {cpu / len(moves) * 1000:.0f} ms (all threads, the generation's "
            "included while it ran)")
    if room.jobs:
        say(f"answers made by {len(room.jobs)} generating sessions: {answered} in {gen_wall:.1f} s "
            f"({answered / gen_wall * 60:.1f} per minute)")
    say(f"errors: {len(room.errors)}; cross-session leaks: {len(room.leaks)}")
    for problem in room.errors + room.leaks:
        say(f"  {problem}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 1 if room.errors or room.leaks else 0


if __name__ == "__main__":
    sys.exit(main())
