"""Shared helpers for the real-browser checks: run the Streamlit app on a free port and drive it with Chromium.

Used by ``tests/studio/test_browser.py`` and ``benchmarks/bench_app_latency.py``. Nothing here is a test.

The app runs as ``streamlit run app.py`` in a subprocess (its own process group, so stopping it also stops
anything it spawned); the browser is the Debian ``/usr/bin/chromium`` driven by Playwright (``playwright install``
is not needed and may not be possible offline).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "ROOT",
    "AppServer",
    "RunRecord",
    "RunWatcher",
    "StreamlitFailure",
    "assert_no_exception",
    "chromium_available",
    "free_port",
    "full_page_screenshot",
    "choose",
    "launch_chromium",
    "metric_value",
    "metric_number",
    "start_app",
]

ROOT = Path(__file__).resolve().parents[2]  # the checkout: app.py lives here
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class StreamlitFailure(RuntimeError):
    """The app did not start, or showed an exception box."""


def chromium_available() -> bool:
    return os.path.exists(CHROMIUM) and os.access(CHROMIUM, os.X_OK)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class AppServer:
    """A running ``streamlit run app.py``: its URL, process and log file."""

    url: str
    port: int
    process: subprocess.Popen
    log_path: Path
    runs_path: Path
    _tmp: tempfile.TemporaryDirectory | None = field(default=None, repr=False)
    _log: str | None = field(default=None, repr=False)  # the log, kept when stop() removes the temp folder

    def log_text(self) -> str:
        if self._log is not None:
            return self._log
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of the Streamlit log, without the HTTP access lines (GET /static/…)."""
        kept = [line for line in self.log_text().splitlines() if '"GET /' not in line and '"HEAD /' not in line]
        return "\n".join(kept[-lines:])

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as response:
                return response.status == 200 and response.read().strip() == b"ok"
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def stop(self) -> None:
        """Terminate the app and everything in its process group (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self._tmp is not None:
            self._log = self.log_text()
            self._tmp.cleanup()
            self._tmp = None


def start_app(port: int | None = None, *, timeout: float = 60.0, env: dict[str, str] | None = None,
              via_make: bool = False, launcher: str | Path | None = None) -> AppServer:
    """Start the app on ``port`` (a free one by default) and wait for ``/_stcore/health``.

    ``via_make`` starts it the way a user does, ``make app`` (the checkout's .streamlit/config.toml, no flags of
    ours), which also checks the installation first. ``launcher``: a Python file run instead of ``-m streamlit``
    with the same arguments (a test's stand-in models installed before Streamlit's CLI starts, e.g. slow_app.py).

    The run store goes to a temporary ``FAIRRAG_RUNS`` file; the Streamlit log goes to a temporary file whose
    tail is part of the error when the app does not come up within ``timeout`` seconds.
    """
    port = port or free_port()
    tmp = tempfile.TemporaryDirectory(prefix="fairrag-browser-")
    log_path = Path(tmp.name) / "streamlit.log"
    runs_path = Path(tmp.name) / "runs.duckdb"
    child_env = dict(os.environ)
    child_env.update({
        "PYTHONPATH": str(ROOT) + (os.pathsep + child_env["PYTHONPATH"] if child_env.get("PYTHONPATH") else ""),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "FAIRRAG_RUNS": str(runs_path),
        "FAIRRAG_UPLOADS": str(Path(tmp.name) / "uploads"),
        "PYTHONUNBUFFERED": "1",
    })
    child_env.update(env or {})
    command = [sys.executable, *([str(launcher)] if launcher else ["-m", "streamlit"]), "run", "app.py",
               "--server.headless", "true",
               "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]
    if via_make:
        command = ["make", "--no-print-directory", "app", f"PORT={port}", "ADDRESS=127.0.0.1"]
    log = open(log_path, "w")  # noqa: SIM115 (the server writes to it for its lifetime; closed in stop())
    try:
        process = subprocess.Popen(command, cwd=ROOT, env=child_env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    finally:
        log.close()
    server = AppServer(url=f"http://127.0.0.1:{port}", port=port, process=process, log_path=log_path,
                       runs_path=runs_path, _tmp=tmp)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = server.log_tail()
            server.stop()
            raise StreamlitFailure(f"streamlit exited with code {process.returncode}:\n{tail}")
        if server.healthy():
            return server
        time.sleep(0.25)
    tail = server.log_tail()
    server.stop()
    raise StreamlitFailure(f"streamlit was not healthy after {timeout:.0f} s on port {port}:\n{tail}")


@contextmanager
def launch_chromium(*, width: int = 1440, height: int = 1000):
    """Yield a Playwright ``Page`` in headless Debian Chromium (closing the browser afterwards)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": width, "height": height}, reduced_motion="reduce")
            yield context.new_page()
        finally:
            browser.close()


# -- waiting for Streamlit --------------------------------------------------------------------------------------------
# Two signals tell when Streamlit has finished reacting to an action:
#  * the protocol: every script run starts with a ``new_session`` ForwardMsg and ends with ``script_finished``;
#    ``session_status_changed.script_is_running`` says whether a run is in progress. RunWatcher decodes the frames
#    of the app's websocket (/_stcore/stream) with Streamlit's own protobuf classes.
#  * the DOM: while a run is in progress, elements of the previous run carry data-stale="true" until they are
#    redrawn or removed, and the toolbar shows the status widget ("Running…" / "Stop") for longer runs.
_DOM_IDLE_JS = """() => {
    const status = document.querySelector('[data-testid="stStatusWidget"]');
    const running = status !== null && /running|stop/i.test(status.innerText || '');
    const connecting = document.querySelector('[data-testid="stConnectionStatus"]') !== null;
    const main = document.querySelector('[data-testid="stMain"]');
    const stale = document.querySelector('[data-stale="true"]') !== null;
    return main !== null && !running && !connecting && !stale;
}"""


@dataclass
class RunRecord:
    """One script run seen on the websocket (perf_counter seconds, as received by this process)."""

    started: float
    finished: float | None = None
    status: int | None = None  # ForwardMsg.ScriptFinishedStatus (0: finished successfully, 2: early for rerun)

    @property
    def seconds(self) -> float | None:
        return None if self.finished is None else self.finished - self.started


class RunWatcher:
    """Follow the script runs of the app open in ``page`` by decoding its websocket frames.

    Attach it before ``page.goto``. Playwright delivers the frames while the test is inside a Playwright call, so
    the waits below poll with ``page.wait_for_timeout``.
    """

    def __init__(self, page) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._forward_msg = ForwardMsg
        self.page = page
        self.runs: list[RunRecord] = []
        self.running = False
        self.errors: list[str] = []
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws) -> None:
        if "/_stcore/stream" in ws.url:
            ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload) -> None:
        now = time.perf_counter()
        if isinstance(payload, str):
            return
        try:
            msg = self._forward_msg.FromString(payload)
        except Exception as err:
            self.errors.append(repr(err))
            return
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.runs.append(RunRecord(started=now))
            self.running = True
        elif kind == "script_finished":
            if self.runs and self.runs[-1].finished is None:
                self.runs[-1].finished, self.runs[-1].status = now, msg.script_finished
            if msg.script_finished != 2:  # FINISHED_EARLY_FOR_RERUN: another run follows at once
                self.running = False
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running

    @property
    def finished(self) -> int:
        """How many script runs have finished (for any reason)."""
        return sum(run.finished is not None for run in self.runs)

    def wait(self, after: int, *, timeout: float = 60.0, settle: float = 0.25, poll: float = 0.02) -> RunRecord:
        """Wait until a run that finished after ``after`` runs is done, nothing runs, and the DOM is idle.

        ``after`` is :attr:`finished` read before the action. Idle must hold for ``settle`` seconds (a click can
        cause a second rerun, e.g. ``st.rerun()`` or a widget callback), then the last run is returned.
        """
        deadline = time.monotonic() + timeout
        while True:
            while not (self.finished > after and not self.running and self.page.evaluate(_DOM_IDLE_JS)):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no finished Streamlit run within {timeout:.0f} s "
                                       f"(finished {self.finished}, after {after}, running {self.running})")
                self.page.wait_for_timeout(poll * 1000)
            count = self.finished
            self.page.wait_for_timeout(settle * 1000)
            if self.finished == count and not self.running and self.page.evaluate(_DOM_IDLE_JS):
                return self.runs[-1]

    def act(self, action, *, timeout: float = 60.0) -> RunRecord:
        """Do ``action()`` (a key press, a click…) and wait for the rerun it causes to finish."""
        before = self.finished
        action()
        return self.wait(before, timeout=timeout)


def choose(page, runs: RunWatcher, select_key: str, option: str, *, attempts: int = 5) -> None:
    """Pick ``option`` in the selectbox whose widget key is ``select_key``. A click that lands while the page reruns
    does not open the list: open it again (up to ``attempts`` times) before picking."""
    wanted = page.get_by_role("option", name=option, exact=True)
    for _ in range(attempts):
        page.locator(f".st-key-{select_key}").click()
        try:
            wanted.wait_for(state="visible", timeout=5_000)
            break
        except Exception:  # playwright's TimeoutError: the list did not open
            continue
    runs.act(lambda: wanted.click(), timeout=120)


def assert_no_exception(page, where: str = "") -> None:
    """Fail if Streamlit shows an exception box (an uncaught error in a page script)."""
    boxes = page.locator('[data-testid="stException"]')
    if boxes.count():
        text = boxes.first.inner_text()
        raise StreamlitFailure(f"Streamlit exception {('at ' + where) if where else ''}:\n{text[:3000]}")


def metric_value(page, label: str) -> str:
    """The displayed value of the metric tile whose label is exactly ``label``."""
    tile = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]').get_by_text(label, exact=True))
    return tile.first.locator('[data-testid="stMetricValue"]').inner_text().strip()


def metric_number(page, label: str) -> float | None:
    """The metric tile's value as a number (None for "—")."""
    match = NUMBER.search(metric_value(page, label))
    return float(match.group()) if match else None


def full_page_screenshot(page, path: str | Path, *, width: int = 1440, height: int = 1000) -> Path:
    """Screenshot the whole app, not only the viewport.

    Streamlit scrolls inside its main container, so Playwright's ``full_page`` alone sees one viewport: the
    viewport is stretched to the content's height for the shot, then set back to ``width`` × ``height``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tall = page.evaluate("""() => {
        const main = document.querySelector('[data-testid="stMain"]');
        const side = document.querySelector('[data-testid="stSidebarContent"]');
        return Math.max(main ? main.scrollHeight : 0, side ? side.scrollHeight : 0);
    }""")
    page.set_viewport_size({"width": width, "height": max(height, int(tall))})
    try:
        page.wait_for_timeout(600)  # Plotly and the data grids re-layout on resize
        page.screenshot(path=str(path), full_page=True, animations="disabled")
    finally:
        page.set_viewport_size({"width": width, "height": height})
    return path
