"""The Playground's *Generate answers* timed the way a teacher meets it: ``make app`` and a real browser.

Starts ``make app`` (the checkout's Streamlit settings: no file watcher), opens the Playground in Debian's
Chromium, and at the defaults (first example query, α = 2, N = 20, k = 5, K = 20, the answer preset chosen in
the sidebar, default *Fast*) measures:

* the time from the click to the first answer with its citation chips, and to all answers;
* how long *Stop* takes to end a run that is generating (a second query);
* the server's CPU time while the page sits idle for 30 s (a file watcher scanning .venv burnt minutes of CPU).

``make app`` preloads the Fast preset's models when the page is first opened (``FAIRRAG_PRELOAD``); the click
comes as soon as the page has rendered, so the timed run may wait for the end of that preload. ``--no-preload``
turns it off (the click loads the models); ``--warm`` clicks Generate once on another query first so that the
timed run finds them in memory. Prints figures only.

    python benchmarks/bench_generate_app.py [--preset fast|quality] [--warm] [--no-preload]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "studio"))
import browser as ui  # noqa: E402  (the browser helpers live with the tests)

CHIP = re.compile(r"^[✓✗] \[\d+\] ")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its children that have exited (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(v) for v in fields[11:15])
    import os

    return ticks / os.sysconf("SC_CLK_TCK")


def streamlit_pid(server) -> int:
    """The Streamlit process under ``make app`` (make's child)."""
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()
    return int(children[0]) if children else server.process.pid


def generate(page, runs, *, timeout: float) -> tuple[float, float, int]:
    chips = page.locator("[data-testid='stPopoverButton']").filter(has_text=CHIP)
    before = chips.count()
    start = time.perf_counter()
    page.get_by_role("button", name="Generate answers").click()
    chips.nth(before).wait_for(state="visible", timeout=timeout * 1000)
    first = time.perf_counter() - start
    page.get_by_text("EU (utility)").first.wait_for(state="visible", timeout=timeout * 1000)
    total = time.perf_counter() - start
    # the answers shown while the job ran give way to the final rendering: count once the page has settled
    quotes = page.locator("[data-testid='stMain'] blockquote")
    seen = -1
    while quotes.count() != seen:
        seen = quotes.count()
        page.wait_for_timeout(2_000)
    return first, total, seen


def pick_query(page, runs, index: int) -> str:
    box = page.get_by_label("Example queries")
    box.click()
    option = page.get_by_role("option").nth(index)
    text = option.inner_text()
    runs.act(lambda: option.click(), timeout=120)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="fast", choices=["fast", "quality"])
    parser.add_argument("--warm", action="store_true", help="load the models with a first Generate before timing")
    parser.add_argument("--no-preload", action="store_true", help="FAIRRAG_PRELOAD=0: the click loads the models")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    # a fresh disk cache: every answer and judgement of the timed run is computed
    cache = Path(tempfile.mkdtemp(prefix="bench_generate_app_")) / "cache.sqlite"
    server = ui.start_app(via_make=True, timeout=600, env={"FAIRRAG_CACHE_DB": str(cache),
                                                           "FAIRRAG_PRELOAD": "0" if args.no_preload else "1"})
    try:
        with ui.launch_chromium() as page:
            runs = ui.RunWatcher(page)
            opened = time.perf_counter()
            page.goto(server.url)
            runs.wait(0, timeout=180)
            if args.preset != "fast":
                runs.act(lambda: page.get_by_text("Quality", exact=True).click(), timeout=120)
            if args.warm:
                pick_query(page, runs, 2)
                page.get_by_role("switch", name="Deterministic").press("Space")
                generate(page, runs, timeout=args.timeout)
                page.get_by_role("switch", name="Deterministic").press("Space")
                pick_query(page, runs, 0)
            clicked = time.perf_counter() - opened
            first, total, answers = generate(page, runs, timeout=args.timeout)
            how = ("models warm" if args.warm else "models loaded by this click" if args.no_preload else
                   f"models preloading since the page opened {clicked:.1f} s before the click")
            print(f"make app, {args.preset} preset, first example query, α = 2, N = 20, k = 5, K = 20: "
                  f"{answers} answers; first with citations after {first:.1f} s, all after {total:.1f} s ({how})")
            query = "best shoes for plantar fasciitis"  # a typed query: every list is new, nothing cached
            box = page.get_by_role("textbox", name="Query")
            runs.act(lambda: (box.fill(query), box.press("Enter")), timeout=120)
            page.get_by_role("button", name="Generate answers").click()
            page.wait_for_timeout(15_000)
            stop = page.get_by_role("button", name="Stop")
            started = time.perf_counter()
            stop.click()
            page.get_by_role("button", name="Stop").wait_for(state="detached", timeout=600_000)
            print(f"Stop on {query!r} after 15 s of generating: the run ended {time.perf_counter() - started:.1f} s "
                  "after the click")
            pid = streamlit_pid(server)
            idle_start = cpu_seconds(pid)
            page.wait_for_timeout(30_000)
            print(f"server CPU while the page sat idle for 30 s: {cpu_seconds(pid) - idle_start:.2f} s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
