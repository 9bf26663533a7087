"""Twenty browser sessions at once against one app server: errors, cross-session leaks and latency.

    PYTHONPATH=. HF_HUB_OFFLINE=1 nice -n 15 .venv/bin/python benchmarks/bench_sessions.py \
        [--sessions 20] [--concurrency 20] [--moves 4] [--out benchmarks/results/bench_sessions.txt]

Starts one ``streamlit run app.py`` on loopback (``tests/studio/browser.py``: a free port on 127.0.0.1, a temporary
run store) and one headless Debian Chromium (``/usr/bin/chromium`` through Playwright's async API) with one browser
context per session, so every session has its own cookies and its own Streamlit session. All sessions stay open
until the end; at most ``--concurrency`` actions are in flight at once (an asyncio semaphore).

Each session, on the Playground with the default collection (running-shoes) and sidebar:

1. **load**: opens the app; timed until the first script run has finished (``script_finished`` on the app's
   websocket), nothing is stale, and the Query box shows the first example query;
2. **query**: types its own query (one of the collection's example queries plus a tag naming the session, e.g.
   ``best shoes for a first marathon s07tag``) and presses Enter; timed until the Query box holds it, the rankings
   grid's deterministic row is the one this query gives (computed here with the core, BM25, the sidebar's
   defaults) and the page is idle;
3. **α moves**: ``--moves`` key presses on the α slider, End (its top stop) and Home (its first) in turn; each timed
   until the slider shows another value than before the press, the run it caused has finished and the page is idle.
   Each query has its own stops (:mod:`fairrag_core.ranking.stops`: End reaches 5.5 on one query, 32 on another),
   so the value reached is read from the slider and listed, not expected.

After every step and once more at the end, with every session open, each page is checked:

* **error**: a Streamlit exception box, a step that timed out, or an error line in the server's log;
* **leak**: the page shows another session's tag (in its text or any input's value), its Query box holds another
  query than its own, or its grid's deterministic row is not its own query's.

Printed: median, p90 and max of each step's latency (ms, wall time seen by this process), the error and leak
counts, the server's CPU seconds (its process tree) and peak memory, the browsers' own CPU seconds (this harness's
child processes: Playwright's driver and Chromium, counted apart with psutil), and the machine's load (``uptime``)
before and after. The browsers share the machine with the server, so on a small CPU the latencies include their
cost; they are an upper bound for one user's view under this load, not the server's own time (issue 31: 20
Chromium pages took the cores while the server used 11 s of CPU).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "studio"))
sys.path.insert(0, str(ROOT))
import browser as ui  # noqa: E402  (the app-starting helpers live with the browser tests)

ALPHA = "α — fairness knob (0 = uniform over candidates, large = deterministic)"
TAG = re.compile(r"s(\d{2})tag")
ERROR_LINE = re.compile(r"Traceback|Uncaught app exception|\bERROR\b|Exception in")

# Everything a check needs from one page in one round trip.
_PAGE_JS = """(alphaName) => {
    const box = document.querySelector('input[aria-label="Query"]');
    const rows = [...document.querySelectorAll('.st-key-grid tr')];
    const det = rows.find(r => /deterministic/.test(r.innerText || ''));
    const slider = [...document.querySelectorAll('input[type="range"], [role="slider"]')]
        .find(s => (s.getAttribute('aria-label') || '') === alphaName);
    const status = document.querySelector('[data-testid="stStatusWidget"]');
    const running = status !== null && /running|stop/i.test(status.innerText || '');
    const connecting = document.querySelector('[data-testid="stConnectionStatus"]') !== null;
    const main = document.querySelector('[data-testid="stMain"]');
    const stale = document.querySelector('[data-stale="true"]') !== null;
    return {
        query: box ? box.value : null,
        inputs: [...document.querySelectorAll('input, textarea')].map(e => e.value || '').join('\\n'),
        text: document.body ? document.body.innerText : '',
        deterministic: det ? [...det.querySelectorAll('td[title]')].map(td => td.innerText.trim()) : null,
        alpha: slider ? slider.getAttribute('aria-valuetext') : null,
        exceptions: document.querySelectorAll('[data-testid="stException"]').length,
        idle: main !== null && !running && !connecting && !stale,
    };
}"""


class AsyncRunWatcher:
    """Count the app's finished script runs by decoding its websocket frames (``browser.RunWatcher``, async)."""

    def __init__(self, page) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._forward_msg = ForwardMsg
        self.finished = 0
        self.running = False
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws) -> None:
        if "/_stcore/stream" in ws.url:
            ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload) -> None:
        if isinstance(payload, str):
            return
        try:
            msg = self._forward_msg.FromString(payload)
        except Exception:  # a frame this Streamlit version cannot parse: not ours to judge
            return
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.running = True
        elif kind == "script_finished":
            self.finished += 1
            if msg.script_finished != 2:  # FINISHED_EARLY_FOR_RERUN: another run follows at once
                self.running = False
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running


@dataclass
class Session:
    index: int
    query: str
    expected: list[str]
    page: object = None
    watcher: AsyncRunWatcher | None = None
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    #: the α values the slider showed after End and after Home (each query has its own stops)
    reached: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    last_alpha: str | None = None

    @property
    def tag(self) -> str:
        return f"s{self.index:02d}tag"


def expected_rows(queries: list[str]) -> list[list[str]]:
    """The deterministic top k of each query at the sidebar's defaults (BM25, K, k), as the grid shows it."""
    from fairrag_core import RankingConfig, load_collection, run_ranking
    from fairrag_core.retrieval import BM25Retriever
    from fairrag_studio.services.state import DEFAULT_COLLECTION, Settings

    defaults = Settings(collection=DEFAULT_COLLECTION)
    shoes = load_collection(defaults.collection)
    bm25 = BM25Retriever(shoes.texts)
    rows = []
    for query in queries:
        ranking = run_ranking(shoes, bm25, query, RankingConfig(alpha=math.inf, n_samples=1, k=defaults.k,
                                                                seed=defaults.seed, candidates=defaults.candidates))
        rows.append([shoes.documents[ranking.candidate_indices[p]].doc_id for p in ranking.deterministic])
    return rows


def check(session: Session, state: dict, where: str, own_query: str | None) -> None:
    """Record an exception box or anything of another session on this page."""
    if state["exceptions"]:
        session.errors.append(f"{where}: Streamlit exception box")
    others = {m for m in TAG.findall(state["text"] + "\n" + state["inputs"]) if int(m) != session.index}
    if others:
        session.leaks.append(f"{where}: shows the tag of session(s) {sorted(others)}")
    if own_query is not None:
        if state["query"] != own_query:
            session.leaks.append(f"{where}: Query box holds {state['query']!r}")
        if state["deterministic"] != session.expected:
            session.leaks.append(f"{where}: deterministic row {state['deterministic']} is not this query's "
                                 f"{session.expected}")


async def until(session: Session, before: int, ready, timeout: float, poll: float = 0.03) -> dict:
    """Wait until a run finished after ``before`` runs, none is running, the page is idle and ``ready(state)``."""
    deadline = time.monotonic() + timeout
    page, watcher = session.page, session.watcher
    while True:
        state = await page.evaluate(_PAGE_JS, ALPHA)
        if watcher.finished > before and not watcher.running and state["idle"] and ready(state):
            return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"not ready within {timeout:.0f} s (runs finished {watcher.finished}, state "
                               f"query={state['query']!r} alpha={state['alpha']} idle={state['idle']})")
        await asyncio.sleep(poll)


async def step(session: Session, name: str, action, ready, gate: asyncio.Semaphore, timeout: float,
               own_query: str | None) -> bool:
    """One timed action under the concurrency bound; False when it failed (recorded as an error)."""
    async with gate:
        before = session.watcher.finished
        started = time.perf_counter()
        try:
            await action()
            state = await until(session, before, ready, timeout)
        except Exception as err:  # a timeout or a Playwright error: count it, keep the other sessions going
            session.errors.append(f"{name}: {type(err).__name__}: {str(err)[:200]}")
            return False
        session.latencies[name].append((time.perf_counter() - started) * 1000)
    session.last_alpha = state["alpha"]
    check(session, state, name, own_query)
    return True


async def run_session(session: Session, browser, url: str, first_query: str, gate: asyncio.Semaphore,
                      moves: int, timeout: float, loaded: asyncio.Barrier) -> None:
    try:
        context = await browser.new_context(viewport={"width": 1280, "height": 900}, reduced_motion="reduce")
        session.page = await context.new_page()
        session.page.set_default_timeout(timeout * 1000)
        session.watcher = AsyncRunWatcher(session.page)
        ok = await step(session, "load", lambda: session.page.goto(url),
                        lambda s: s["query"] == first_query and s["deterministic"] is not None, gate, timeout, None)
    except Exception as err:  # no page at all: an error, and the others still go on
        session.errors.append(f"open: {type(err).__name__}: {str(err)[:200]}")
        ok = False
    await loaded.wait()  # every session is open before anyone acts: the server holds them all
    if not ok:
        return
    box = session.page.get_by_role("textbox", name="Query")

    async def type_query():
        await box.fill(session.query)
        await box.press("Enter")

    if not await step(session, "query", type_query,
                      lambda s: s["query"] == session.query and s["deterministic"] == session.expected,
                      gate, timeout, session.query):
        return
    slider = session.page.get_by_role("slider", name=ALPHA)
    for i in range(moves):
        key, end = ("End", "alpha end") if i % 2 == 0 else ("Home", "alpha home")
        before = session.last_alpha  # End from below the top stop (Home from above the first) always moves it
        if not await step(session, end, lambda key=key: slider.press(key),
                          lambda s, before=before: s["alpha"] not in (None, before), gate, timeout, session.query):
            return
        session.reached[end].add(session.last_alpha)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low, high = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _tree(pid: int) -> list:
    """``pid`` and its descendants (psutil processes; those gone meanwhile are skipped)."""
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _cpu_rss(processes) -> tuple[float, float]:
    import psutil

    cpu = rss = 0.0
    for proc in processes:
        try:
            times = proc.cpu_times()
            cpu += times.user + times.system
            rss += proc.memory_info().rss / 1e6
        except psutil.Error:
            continue
    return cpu, rss


def process_tree_stats(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) and resident MB of ``pid`` (the streamlit server) and its child processes."""
    return _cpu_rss(_tree(pid))


def browsers_cpu(server_pid: int) -> float:
    """CPU seconds of this harness's child processes other than the server's tree: Playwright's driver and
    Chromium with its renderers (the browsers' own cost)."""
    server = {p.pid for p in _tree(server_pid)}
    return _cpu_rss([p for p in _tree(os.getpid())[1:] if p.pid not in server])[0]


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "(uptime unavailable)"


async def bench(args) -> tuple[list[str], int]:
    from playwright.async_api import async_playwright

    from fairrag_core import load_collection

    # `timeout`, kill or Ctrl-C: cancel the run so that the finally blocks close the browser and stop the server
    # (it runs in its own process group and would otherwise outlive this process)
    loop, this = asyncio.get_running_loop(), asyncio.current_task()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, this.cancel)
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    from fairrag_studio.services.state import DEFAULT_COLLECTION

    examples = [q.text for q in load_collection(DEFAULT_COLLECTION).queries]
    queries = [f"{examples[i % len(examples)]} s{i:02d}tag" for i in range(args.sessions)]
    sessions = [Session(i, q, row) for i, (q, row) in enumerate(zip(queries, expected_rows(queries)))]
    say(f"bench_sessions: {args.sessions} sessions, at most {args.concurrency} actions at once, {args.moves} α moves "
        f"each; {os.cpu_count()} CPU cores")
    say(f"load before: {uptime()}")
    started = time.perf_counter()
    server = ui.start_app(timeout=120)
    say(f"streamlit healthy on {server.url} after {time.perf_counter() - started:.1f} s (pid {server.process.pid})")
    cpu0, _ = process_tree_stats(server.process.pid)
    browsers0 = browsers_cpu(server.process.pid)
    peak_rss = 0.0
    sampling = True

    async def sample_memory():
        nonlocal peak_rss
        while sampling:
            peak_rss = max(peak_rss, process_tree_stats(server.process.pid)[1])
            await asyncio.sleep(0.5)

    control = None
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=ui.CHROMIUM, headless=True, args=ui.CHROMIUM_ARGS)
            try:
                gate = asyncio.Semaphore(args.concurrency)
                loaded = asyncio.Barrier(len(sessions))
                memory = asyncio.create_task(sample_memory())
                t0 = time.perf_counter()
                await asyncio.gather(*(run_session(s, browser, server.url, examples[0], gate, args.moves,
                                                   args.timeout, loaded) for s in sessions))
                wall = time.perf_counter() - t0
                # every session still open: look at each page once more
                states: dict[int, dict] = {}
                for s in sessions:
                    if s.page is None:
                        continue
                    try:
                        states[s.index] = await s.page.evaluate(_PAGE_JS, ALPHA)
                    except Exception as err:
                        s.errors.append(f"final: {type(err).__name__}: {err}")
                        continue
                    check(s, states[s.index], "final", s.query if "query" in s.latencies else None)
                # the detector's own control: session 1's page judged as if it were session 0's must be caught
                control = None
                if 0 in states and 1 in states:
                    decoy = Session(0, sessions[0].query, sessions[0].expected)
                    check(decoy, states[1], "control", decoy.query)
                    control = len(decoy.leaks)
                sampling = False
                await memory
                browsers1 = browsers_cpu(server.process.pid)  # before the browser closes: its processes end
            finally:
                await browser.close()
        cpu1, _ = process_tree_stats(server.process.pid)
    finally:
        server.stop()  # keeps the log text
    log = server.log_text()
    final_errors = [line for line in log.splitlines() if ERROR_LINE.search(line)]

    moves_made = sum(len(v) for s in sessions for n, v in s.latencies.items() if n.startswith("alpha"))
    say(f"all sessions done in {wall:.1f} s; server CPU {cpu1 - cpu0:.1f} s, peak RSS {peak_rss:.0f} MB; "
        f"browsers' own CPU {browsers1 - browsers0:.1f} s (Playwright and Chromium, apart from the server)")
    actions = moves_made + sum(len(s.latencies.get(n, [])) for s in sessions for n in ("load", "query"))
    if actions:
        say(f"server CPU per action (loads, queries and {moves_made} α moves): {(cpu1 - cpu0) / actions * 1000:.0f} ms")
    say(f"load after:  {uptime()}")
    say("")
    say(f"{'step':<10} {'n':>4} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}")
    names = ["load", "query"] + sorted({n for s in sessions for n in s.latencies if n.startswith("alpha")})
    for name in names:
        values = [v for s in sessions for v in s.latencies.get(name, [])]
        if values:
            say(f"{name:<10} {len(values):>4} {statistics.median(values):>10.0f} {percentile(values, 0.9):>8.0f} "
                f"{max(values):>8.0f}")
    errors = sum(len(s.errors) for s in sessions) + len(final_errors)
    leaks = sum(len(s.leaks) for s in sessions)
    done = sum(len(s.latencies.get("alpha end", [])) + len(s.latencies.get("alpha home", [])) == args.moves
               for s in sessions)
    for end in ("alpha end", "alpha home"):
        reached = sorted({value for s in sessions for value in s.reached[end] if value is not None}, key=str)
        if reached:
            say(f"α reached by {'End' if end == 'alpha end' else 'Home'}: {', '.join(reached)} "
                "(each query's own stops)")
    say("")
    say(f"sessions that finished every step: {done}/{len(sessions)}")
    say(f"errors: {errors} (exception boxes, timeouts, server log error lines: {len(final_errors)})")
    say(f"cross-session leaks: {leaks}")
    if control is not None:
        say(f"leak detector control (session 01's page checked as session 00's): {control} of 3 checks fire "
            "(tag, Query box, deterministic row; the row only when the two queries rank differently)")
    for s in sessions:
        for problem in s.errors + s.leaks:
            say(f"  session {s.index:02d}: {problem}")
    for line in final_errors[:10]:
        say(f"  server log: {line[:200]}")
    return lines, 1 if errors or leaks or done < len(sessions) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20, help="browser sessions (default 20)")
    parser.add_argument("--concurrency", type=int, default=20,
                        help="most actions in flight at once, over all sessions (default 20: everyone at once)")
    parser.add_argument("--moves", type=int, default=4, help="α moves per session (End/Home in turn; default 4)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one step may take (default 300)")
    parser.add_argument("--out", default=None, help="also write the printed figures to this file")
    args = parser.parse_args(argv)
    if not ui.chromium_available():
        print("Debian chromium not installed: apt-get install chromium", file=sys.stderr)
        return 2
    try:
        lines, code = asyncio.run(bench(args))
    except asyncio.CancelledError:
        print("stopped by a signal; the server and the browser were closed", file=sys.stderr)
        return 130
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
