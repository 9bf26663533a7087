"""Two tabs, one shared LLM: does the second tab say that it is queued, and does the first tab's progress move?

The lecturer's case (issue 21): *Generate answers* runs in one tab (Fast preset: Qwen2.5-0.5B answers, the
Qwen2.5-1.5B judge checks citations) and a FAIR-QR run starts in a second tab, whose LLM refiner is the same
Qwen2.5-1.5B. Both wait for one model (first come, first served: ``fairrag_core/models/queue.py``). This script
starts ``make app`` with an empty answer cache (so everything is computed), opens two Chromium tabs (two Streamlit
sessions), presses Generate answers on the Playground in tab A, and once A's first answer is shown, runs FAIR-QR on
*people* in tab B. Every ``--poll`` seconds it reads

* tab A's sidebar job line and its progress note ("8 of 20 answers ready …"),
* tab B's visible queue text ("… is busy with …", "waiting for …: … ahead of it (place 1 in the queue …)"),

and prints when each changed, then how long FAIR-QR took from its click and how long it showed that it was queued.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/two_tabs_queue.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "studio"))
import browser as ui  # noqa: E402  (the browser helpers live with the tests)

QUEUE = re.compile(r"[^\n]*(waiting for|is busy with|in the queue)[^\n]*", re.IGNORECASE)
LIMIT = 1800.0  # seconds: both runs on a 2-core CPU


def sidebar_text(page) -> str:
    try:
        return page.locator("[data-testid='stSidebar']").inner_text(timeout=2_000)
    except Exception:  # a rerun replaced the sidebar while it was read: try again next poll
        return ""


def main_text(page) -> str:
    try:
        return page.locator("[data-testid='stMain']").inner_text(timeout=2_000)
    except Exception:
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between reads of the two tabs")
    parser.add_argument("--out", type=Path, default=None, help="folder for the two tabs' screenshots")
    parser.add_argument("--trace", type=Path, default=None, help="write every poll's texts of both tabs (JSONL)")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="two-tabs-"))
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(tempfile.mkdtemp(prefix="two-tabs-cache-")) / "cache.sqlite"
    server = ui.start_app(via_make=True, timeout=600, env={"FAIRRAG_PRELOAD": "1", "FAIRRAG_CACHE_DB": str(cache)})
    events: list[tuple[float, str, str]] = []
    try:
        with ui.launch_chromium(width=1440, height=1000) as a:
            b = a.context.new_page()
            runs_a, runs_b = ui.RunWatcher(a), ui.RunWatcher(b)
            a.goto(server.url)
            runs_a.wait(0, timeout=300)
            start = time.perf_counter()
            a.get_by_role("button", name="Generate answers").click()
            a.get_by_text(re.compile(r"^Answer:")).first.wait_for(state="visible", timeout=LIMIT * 1000)
            events.append((time.perf_counter() - start, "A", "first answer shown"))
            b.goto(server.url)
            runs_b.wait(0, timeout=300)
            ui.choose(b, runs_b, "collection_choice", "people")
            runs_b.act(lambda: b.get_by_role("link", name="FAIR-QR", exact=True).click())
            b.get_by_role("button", name="Run FAIR-QR").click()
            clicked = time.perf_counter()
            events.append((clicked - start, "B", "Run FAIR-QR pressed"))
            last = {"A": "", "B": "", "A queue": "", "B queue": ""}
            queued: dict[str, list[float]] = {"A": [], "B": []}
            fairqr_done = answers_done = None
            shots = set()
            while time.perf_counter() - start < LIMIT and (fairqr_done is None or answers_done is None):
                now = time.perf_counter() - start
                texts = {"A": (main_text(a), sidebar_text(a)), "B": (main_text(b), sidebar_text(b))}
                if args.trace is not None:
                    with args.trace.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps({"t": round(now, 2), **{f"{tab} {part}": text[-2000:]
                                                 for tab, pair in texts.items()
                                                 for part, text in zip(("main", "sidebar"), pair)}}) + "\n")
                side = texts["A"][1]
                jobs_part = side.split("Jobs", 1)[1].split("Collection", 1)[0] if "Jobs" in side else ""
                text_a = " · ".join(line.strip() for line in jobs_part.splitlines() if line.strip())
                if text_a != last["A"]:
                    events.append((now, "A", "sidebar Jobs: " + (text_a or "(no Jobs panel)")))
                    last["A"] = text_a
                if answers_done is None and "EU (utility)" in texts["A"][0]:
                    answers_done = now
                    events.append((now, "A", "all answers shown (EU tile)"))
                for tab, page in (("A", a), ("B", b)):
                    queue = QUEUE.search("\n".join(texts[tab]))
                    text = " ".join(queue.group(0).split()) if queue else ""
                    if text:
                        queued[tab].append(now)
                        if tab not in shots:
                            ui.full_page_screenshot(page, out / f"tab_{tab.lower()}_queue.png")
                            shots.add(tab)
                    if text != last[f"{tab} queue"]:
                        events.append((now, tab, "queue: " + (text or "(none)")))
                        last[f"{tab} queue"] = text
                if fairqr_done is None and "Stopped because" in texts["B"][0]:
                    fairqr_done = now
                    events.append((now, "B", "FAIR-QR finished"))
                time.sleep(args.poll)
    finally:
        server.stop()
    for seconds, tab, text in events:
        print(f"{seconds:8.1f} s  tab {tab}: {text}")
    print()
    a_moves = sum(1 for _, tab, text in events if tab == "A" and "answers ready" in text)
    print(f"tab A: its sidebar job line changed {a_moves} times while the answers were made")
    if fairqr_done is not None:
        print(f"tab B: FAIR-QR finished {fairqr_done - (clicked - start):.1f} s after its click")
    for tab, seen in queued.items():
        print(f"tab {tab}: showed a queue text in {len(seen)} of its polls"
              + (f", from {seen[0]:.1f} s to {seen[-1]:.1f} s" if seen else ""))
    print(f"screenshots in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
