"""The server stops when asked (issue 19, item 9): SIGTERM while a Generate job is inside a long model call ends
``streamlit run app.py`` within 5 s, and the job's row says it failed because the app stopped.

A real server (slow_app.py: the app with a stand-in generator whose call blocks for a minute and whose exit
handler waits for that call, as llama.cpp's did) and a real click in Chromium start the job. Before the fix, the
process waited for the model call (a minute here; 20 to 32 s with the Fast preset's real models) and left the row
"running".
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser as ui

from fairrag_core.audit.jobs import INTERRUPTED

pytestmark = pytest.mark.slow
SLOW_APP = Path(__file__).resolve().parent / "slow_app.py"


def job_rows(path: Path) -> list[tuple]:
    if not path.exists():
        return []
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT status, error FROM jobs").fetchall()
    finally:
        con.close()


def test_sigterm_during_a_generate_job_stops_the_server_within_5_seconds(tmp_path):
    if not ui.chromium_available():
        pytest.skip("Debian chromium not installed: apt-get install chromium")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
    marker = tmp_path / "model-called"
    server = ui.start_app(timeout=120, launcher=SLOW_APP,
                          env={"FAIRRAG_PRELOAD": "0", "FAIRRAG_CACHE_DB": "off", "SLOW_APP_MARKER": str(marker)})
    jobs = server.runs_path.with_name("jobs.sqlite")
    try:
        with ui.launch_chromium() as page:
            page.set_default_timeout(60_000)
            runs = ui.RunWatcher(page)
            page.goto(server.url)
            runs.wait(0, timeout=120)
            ui.assert_no_exception(page, "on opening")
            page.get_by_role("button", name="Generate answers").click()
            deadline = time.monotonic() + 60
            while not marker.exists():  # the job is inside its first model call
                assert time.monotonic() < deadline, f"no model call within 60 s:\n{server.log_tail()}"
                page.wait_for_timeout(100)
            assert job_rows(jobs) == [("running", None)]
            asked = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the server was still running 20 s after SIGTERM:\n{server.log_tail()}")
            took = time.monotonic() - asked
            rows = job_rows(jobs)
    finally:
        server.stop()
    assert took <= 5.0, f"{took:.1f} s from SIGTERM to exit"
    assert server.process.returncode == 0
    assert rows == [("failed", INTERRUPTED)]
    log = server.log_text()
    assert "Traceback" not in log and "inside a model call; jobs are marked failed" in log
