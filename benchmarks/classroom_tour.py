"""The README's "A 15-minute classroom tour", walked in a real browser the way a teacher would, and measured.

Starts ``make app`` (real offline models, ``FAIRRAG_PRELOAD=1``, a fresh ``FAIRRAG_CACHE_DB`` in a temporary
folder so that every answer is computed), opens it in Debian's Chromium and does the tour's five steps:

1. Playground, running-shoes, the first example query, *Deterministic* on: EE-D, providers reached, the grid.
2. *Deterministic* off, α from the query's top stop down to 0 one stop at a time (EE-D, EE-R, providers and distinct
   rankings per stop), then **Animate α** plays the stops by itself.
3. **Generate answers** at α = 2 (default *Fast* preset): time to the first answer with citation chips and to the
   end (EU shown); every answer card (header, answer, chips), EU / EAR / EAE-D, the captions of a ✓ and a ✗ chip.
4. Disparity curves → Query set → Run the sweep (exposure only): the recommender at 5 % tolerance, then at 0 %.
5. Audit → Run the audit: the ledger by provider (deterministic and α = 2, from its CSV), the HTML report's size;
   then the *people* collection, FAIR-QR with its defaults (refiner included): iterations, Δ, stop reason.
6. Presenter mode on the Playground (a screenshot).

``--prepared`` uses the user's disk cache (after ``make class``) instead of a fresh one.

Each step's seconds run from its first action to its last visible result (screenshots not included). A failing
step is reported and the tour goes on. Takes about 10 minutes on a 2-core CPU.

    python benchmarks/classroom_tour.py [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "studio"))
import browser as ui  # noqa: E402  (the browser helpers live with the tests)

ALPHA = "α — fairness knob (0 = uniform over candidates, large = deterministic)"
CHIP = re.compile(r"^[✓✗] \[\d+\] ")
LONG = 1800  # seconds: generation and the LLM refiner on a busy 2-core CPU
ANSWERS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"]')]
    .filter(m => m.innerText.trim().startsWith('Answer:'))"""
CARDS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"]')]
  .filter(m => m.innerText.trim().startsWith('Answer:')).map(q => {
    let card = q.parentElement;
    while (card && !card.querySelector('[data-testid="stPopoverButton"]')) card = card.parentElement;
    const texts = card ? [...card.querySelectorAll('[data-testid="stMarkdownContainer"]')].map(m => m.innerText) : [];
    const chips = card ? [...card.querySelectorAll('[data-testid="stPopoverButton"]')] : [];
    return {head: (texts.find(t => / samples/.test(t)) || '').trim(), answer: q.innerText.trim().slice(7).trim(),
            chips: chips.map(c => c.innerText.replace('expand_more', '').trim().replace(/\\s+/g, ' '))};
})"""


class Tour:
    def __init__(self, page, server, out: Path) -> None:
        self.page, self.server, self.out = page, server, out
        self.runs = ui.RunWatcher(page)
        self.shots: list[Path] = []

    def act(self, action, timeout: float = 120) -> None:
        self.runs.act(action, timeout=timeout)

    def tile(self, prefix: str) -> str:
        """The value of the metric tile whose label starts with ``prefix``."""
        label = self.page.locator('[data-testid="stMetricLabel"]').get_by_text(re.compile("^" + re.escape(prefix)))
        tile = self.page.locator('[data-testid="stMetric"]').filter(has=label)
        try:
            return tile.first.locator('[data-testid="stMetricValue"]').inner_text(timeout=15_000).strip()
        except Exception:
            return "(none)"

    def exposure(self) -> str:
        return (f"EE-D {self.tile('EE-D (lower')} · EE-R {self.tile('EE-R (higher')} · providers reached "
                f"{self.tile('Providers reached')} · distinct rankings {self.tile('Distinct rankings')}")

    def section(self, start: str, end: str, limit: int = 900) -> str:
        """The main area's visible text after ``start`` up to ``end`` (expander labels dropped), on one line."""
        text = re.sub(r"keyboard_arrow_right\s*What am I looking at\?", "",
                      self.page.locator("[data-testid='stMain']").inner_text())
        i, j = text.find(start), text.find(end, text.find(start) + len(start))
        return " ".join(text[i + len(start): j if j > i else i + limit].split())[:limit] if i >= 0 else "(not shown)"

    def download(self, button, timeout: float = 300) -> Path:
        with self.page.expect_download(timeout=timeout * 1000) as info:
            button.click()
        return Path(info.value.path())

    def shot(self, name: str) -> None:
        self.page.evaluate("() => document.activeElement && document.activeElement.blur()")
        self.shots.append(ui.full_page_screenshot(self.page, self.out / f"{name}.png"))

    def nav(self, page_name: str) -> None:
        self.act(lambda: self.page.get_by_role("link", name=page_name, exact=True).click())


def step1(t: Tour, say) -> float:
    start = time.perf_counter()
    t.page.goto(t.server.url)
    t.runs.wait(0, timeout=300)
    say(f"query {t.page.get_by_role('textbox', name='Query').input_value()!r}; on opening (α = 2): {t.exposure()}")
    t.act(lambda: t.page.get_by_role("switch", name="Deterministic").press("Space"))
    seconds = time.perf_counter() - start
    grid = t.page.locator(".st-key-grid").text_content() or ""
    ids = list(dict.fromkeys(re.findall(r"rs-\d{3}", grid)))
    say(f"deterministic: {t.exposure()}; grid shows {ids}")
    t.shot("1_deterministic")
    return seconds


def step2(t: Tour, say) -> float:
    start = time.perf_counter()
    t.act(lambda: t.page.get_by_role("switch", name="Deterministic").press("Space"))
    alpha = t.page.get_by_role("slider", name=ALPHA)
    t.act(lambda: alpha.press("End"))
    while True:
        value = alpha.get_attribute("aria-valuetext")
        say(f"α = {value:>4}: {t.exposure()}")
        if value == "0":
            break
        t.act(lambda: alpha.press("ArrowLeft"))
    seconds = time.perf_counter() - start
    t.act(lambda: alpha.press("End"))
    began = time.perf_counter()
    t.page.get_by_role("button", name="Animate α").click()
    seen = []
    while time.perf_counter() - began < 120:  # the page plays every stop down to 0 by itself
        value = alpha.get_attribute("aria-valuetext")
        if not seen or seen[-1] != value:
            seen.append(value)
        if value == "0" and len(seen) > 1:
            break
        t.page.wait_for_timeout(100)
    t.runs.wait(0, timeout=60)
    say(f"Animate α played {' → '.join(seen)} in {time.perf_counter() - began:.1f} s")
    for _ in range(40):  # back to α = 2 for the screenshot and step 3 (2 is a stop of this query)
        value = float(alpha.get_attribute("aria-valuetext"))
        if value >= 2:
            break
        t.act(lambda: alpha.press("ArrowRight"))
    say(f"back at α = {alpha.get_attribute('aria-valuetext')}: {t.exposure()}")
    t.shot("2_alpha2")
    return seconds


def step3(t: Tour, say) -> float:
    page = t.page
    say(f"α = {page.get_by_role('slider', name=ALPHA).get_attribute('aria-valuetext')}: {t.exposure()}")
    estimate = page.locator("[data-testid='stAlert']").filter(has_text="Expect")
    say("app says: " + (estimate.first.inner_text() if estimate.count() else "(no estimate shown)"))
    chips = page.locator("[data-testid='stPopoverButton']").filter(has_text=CHIP)
    start = time.perf_counter()
    page.get_by_role("button", name="Generate answers").click()
    page.get_by_text(re.compile(r"^Answer:")).first.wait_for(state="visible", timeout=LONG * 1000)
    say(f"first answer with its citation marks after {time.perf_counter() - start:.1f} s")
    page.get_by_text("EU (utility)").first.wait_for(state="visible", timeout=LONG * 1000)
    seconds = time.perf_counter() - start
    t.runs.wait(0, timeout=120)
    seen, count = -1, len(page.evaluate(CARDS_JS))
    while count != seen:  # the final rendering replaces the live one: wait until it settles
        seen = count
        page.wait_for_timeout(2_000)
        count = len(page.evaluate(CARDS_JS))
    source = page.get_by_text(re.compile(r"(came from the disk cache|were generated now)")).first
    say("page says: " + (source.inner_text().strip() if source.count() else "(no source line)"))
    say(f"all answers after {seconds:.1f} s; " + " · ".join(
        f"{name} {t.tile(name)}" for name in ("EU (utility)", "EU normalised", "EAR", "EAE-D", "EAE-D/cited")))
    cards = page.evaluate(CARDS_JS)
    for n, card in enumerate(cards, start=1):
        say(f"[{n}] {card['head']}")
        say(f"    answer: {' '.join(card['answer'].split())}")
        say(f"    chips: {' | '.join(card['chips'])}")
    for mark in ("✓", "✗"):
        chip = chips.filter(has_text=re.compile("^" + mark))
        if not chip.count():
            say(f"no {mark} chip on the page")
            continue
        label = " ".join(chip.first.inner_text().replace("expand_more", "").split())
        chip.first.click()
        body = page.locator("[data-testid='stPopoverBody']")
        body.first.wait_for(state="visible")
        title = body.first.locator("[data-testid='stMarkdownContainer']").first.inner_text().strip()
        caption = body.first.locator("[data-testid='stCaptionContainer']").first.inner_text().strip()
        say(f"popover of {label!r}: {title} — {caption}")
        page.keyboard.press("Escape")
        body.first.wait_for(state="hidden")
    t.shot("3_answers")
    return seconds


def step4(t: Tour, say) -> float:
    start = time.perf_counter()
    t.nav("Disparity curves")
    t.act(lambda: t.page.locator(".st-key-curves_scope").get_by_text("Query set", exact=True).click())
    t.act(lambda: t.page.get_by_role("button", name="Run the sweep").click(), timeout=600)
    t.page.get_by_text(re.compile(r"Recommended α|no α|No α")).first.wait_for(state="visible")
    seconds = time.perf_counter() - start
    say(f"recommender at 5 % tolerance: {t.section('50.00', 'Keep this sweep')}")
    t.act(lambda: t.page.get_by_role("slider", name=re.compile("^Tolerance")).press("Home"))
    tolerance = t.page.get_by_role("slider", name=re.compile("^Tolerance")).get_attribute("aria-valuetext")
    say(f"recommender at {tolerance} % tolerance: {t.section('50.00', 'Keep this sweep')}")
    t.shot("4_disparity_curves")
    return seconds


def ledger_rows(path: Path, rows: int = 5) -> list[str]:
    table = list(csv.DictReader(path.open(newline="", encoding="utf-8")))
    num = lambda row, key: f"{float(row[key]):.3f}" if row.get(key) else "—"  # noqa: E731
    return [f"{row['group']:<24} docs {row.get('documents', '?'):>3} · retrieval share {num(row, 'retrieval_share')} "
            f"· target share {num(row, 'target_share')} · gap {num(row, 'share_gap')}" for row in table[:rows]]


def step5(t: Tour, say) -> float:
    page = t.page
    start = time.perf_counter()
    t.nav("Audit")
    t.act(lambda: page.get_by_role("button", name="Run the audit").click(), timeout=600)
    page.get_by_role("heading", name="Exposure ledger").wait_for(state="visible")
    seconds = time.perf_counter() - start
    for system in ("deterministic", "α = 2"):
        if system != "deterministic":
            ui.choose(page, t.runs, "ledger_alpha", system)
        say(f"ledger by provider, {system} (first rows, from its CSV):")
        for line in ledger_rows(t.download(page.locator(".st-key-ledger_csv button:visible").first)):
            say("    " + line)
    report = t.download(page.locator(".st-key-report_html button:visible").first)
    say(f"Report (HTML): {report.stat().st_size / 1024:.0f} KiB")
    t.shot("5_audit")
    return seconds


def step5b(t: Tour, say) -> float:
    page = t.page
    start = time.perf_counter()
    ui.choose(page, t.runs, "collection_choice", "people")
    t.nav("FAIR-QR")
    query = page.get_by_role("textbox", name="Query").input_value()
    clicked = time.perf_counter()
    t.act(lambda: page.get_by_role("button", name="Run FAIR-QR").click(), timeout=LONG)
    page.get_by_text(re.compile("Stopped because")).first.wait_for(state="visible")
    seconds = time.perf_counter() - start
    say(f"query {query!r}; Run FAIR-QR took {time.perf_counter() - clicked:.1f} s")
    say(page.get_by_text(re.compile("Stopped because")).first.inner_text().strip())
    for line in page.get_by_text(re.compile(r"^(\d+\. .*Δ = |Note: )")).all_inner_texts():
        say("    " + " ".join(line.split()))
    t.shot("5_fair_qr")
    return seconds


def step6(t: Tour, say) -> float:
    """Presenter mode on the Playground: large type, titles in the grid and chips (a screenshot to look at)."""
    page = t.page
    start = time.perf_counter()
    ui.choose(page, t.runs, "collection_choice", "running-shoes")
    t.nav("Playground")
    t.act(lambda: page.get_by_role("switch", name="Presenter mode").press("Space"))
    seconds = time.perf_counter() - start
    grid = page.locator(".st-key-grid").inner_text()
    say(f"presenter grid starts: {' '.join(grid.split())[:200]}")
    t.shot("6_presenter")
    return seconds


STEPS = [("1. The problem (deterministic)", step1), ("2. The knob (α from its top stop to 0)", step2),
         ("3. Generate answers at α = 2", step3), ("4. Disparity curves", step4), ("5. Audit", step5),
         ("5b. FAIR-QR on people", step5b), ("6. Presenter mode", step6)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="folder for the screenshots (default: a temp dir)")
    parser.add_argument("--steps", default="1,2,3,4,5,5b,6", help="which steps to run (comma-separated)")
    parser.add_argument("--prepared", action="store_true",
                        help="use the user's disk cache (after `make class`) instead of a fresh, empty one")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="classroom_tour_"))
    wanted = args.steps.split(",")
    started = time.perf_counter()
    env = {"FAIRRAG_PRELOAD": "1"}
    if not args.prepared:
        cache = Path(tempfile.mkdtemp(prefix="classroom_tour_cache_")) / "cache.sqlite"
        env["FAIRRAG_CACHE_DB"] = str(cache)
    server = ui.start_app(via_make=True, timeout=600, env=env)
    print(f"make app up after {time.perf_counter() - started:.1f} s at {server.url} "
          f"({'the prepared cache' if args.prepared else f'fresh cache {cache}'})", flush=True)
    try:
        with ui.launch_chromium() as page:
            page.set_default_timeout(60_000)
            tour = Tour(page, server, out)
            for name, step in STEPS:
                if name.split(".")[0] not in {"1", *wanted}:  # step 1 opens the app
                    continue
                lines: list[str] = []
                begun = time.perf_counter()
                try:
                    seconds, status = step(tour, lines.append), "ok"
                    ui.assert_no_exception(page, name)
                except Exception as err:  # report and go on with the next step
                    seconds, status = time.perf_counter() - begun, f"FAILED: {type(err).__name__}: {err}"[:1500]
                    lines.append("server log tail:\n" + server.log_tail(15))
                print(f"\n== {name}: {seconds:.1f} s · {status}", flush=True)
                for line in lines:
                    print("  " + line, flush=True)
            print("\nscreenshots:\n" + "\n".join(f"  {path}" for path in tour.shots))
            print(f"websocket decode errors: {len(tour.runs.errors)}; tour total {time.perf_counter() - started:.0f} s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
