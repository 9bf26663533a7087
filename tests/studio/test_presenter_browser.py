"""Presenter mode's tour at 1280×720 in a real browser (issue 31, Must have 4): each step on one screen.

Walks the README tour's five steps with Presenter mode's step selector in headless Debian Chromium, 1280×720, and
asserts for each: no horizontal overflow, no vertical scroll on steps 1–4, the step's key elements inside the
viewport (their bounding boxes within 1280×720), and citation chips whose labels are not cut. It saves one screenshot
per step as docs/screenshots/presenter_step<N>.png. Step 3's answers come from the stand-in models of
``slow_app.py`` (no wait, answers are document [1]'s name part), so the test needs no model files; run
``python tests/studio/test_presenter_browser.py --real`` for the screenshots with the configured models.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser as ui

pytestmark = [pytest.mark.slow]

WIDTH, HEIGHT = 1280, 720
SCREENSHOTS = ui.ROOT / "docs" / "screenshots"
STEP_BUTTONS = ("1 · The problem", "2 · The knob", "3 · Answers", "4 · The curves", "5 · Accountability")

#: What a 1280×720 screen shows: the page's overflow both ways, and the bounding box of each selector's elements.
LAYOUT_JS = """(selectors) => {
  const main = document.querySelector('[data-testid="stMain"]');
  const out = {docWidth: document.documentElement.scrollWidth, scrollWidth: main.scrollWidth,
               clientWidth: main.clientWidth, scrollHeight: main.scrollHeight, clientHeight: main.clientHeight,
               boxes: {}, cutChips: []};
  for (const s of selectors) {
    out.boxes[s] = [...document.querySelectorAll(s)].filter(e => e.offsetParent !== null).map(e => {
      const r = e.getBoundingClientRect();
      return [Math.round(r.left), Math.round(r.top), Math.round(r.right), Math.round(r.bottom)];
    });
  }
  for (const b of document.querySelectorAll('[data-testid="stMain"] [data-testid="stPopover"] button')) {
    const text = b.querySelector('p') || b;
    if (text.scrollWidth > text.clientWidth + 1 || b.scrollWidth > b.clientWidth + 1) out.cutChips.push(b.innerText);
  }
  return out;
}"""

#: Each step's key elements (CSS selectors; every match must be in view).
SLIDER = '[data-testid="stMain"] [data-testid="stSlider"]'
KEY_ELEMENTS = {
    1: ['[data-testid="stMetric"]', ".st-key-grid", ".st-key-exposure", SLIDER],
    2: ['[data-testid="stMetric"]', ".st-key-grid", ".st-key-exposure", SLIDER],
    3: ['[data-testid="stMetric"]', '[data-testid="stMain"] [data-testid="stPopover"]'],
    4: ['[data-testid="stMetric"]', ".st-key-grid", ".st-key-exposure", ".st-key-apply_recommended"],
    5: ['[data-testid="stPageLink"]'],
}


def layout(page, step: int) -> dict:
    return page.evaluate(LAYOUT_JS, KEY_ELEMENTS[step])


def check_layout(shown: dict, step: int) -> None:
    """One screen: nothing wider than the viewport, steps 1–4 not taller, every key element inside it, no chip cut."""
    assert shown["docWidth"] <= WIDTH and shown["scrollWidth"] <= shown["clientWidth"] + 1, (step, shown)
    if step <= 4:
        assert shown["scrollHeight"] <= shown["clientHeight"] + 1, (step, shown)
    for selector, boxes in shown["boxes"].items():
        assert boxes, (step, selector, "not on the page")
        for left, top, right, bottom in boxes:
            assert left >= 0 and top >= 0 and right <= WIDTH and bottom <= HEIGHT, (step, selector, boxes)
    assert not shown["cutChips"], (step, shown["cutChips"])


def pick_step(page, runs: ui.RunWatcher, n: int) -> None:
    button = page.locator('[data-testid="stButtonGroup"] button').filter(has_text=STEP_BUTTONS[n - 1])
    runs.act(lambda: button.click(), timeout=180)


def walk(server: ui.AppServer, shots: Path) -> dict[int, dict]:
    """The tour in Presenter mode, one screenshot per step under ``shots``; each step's layout."""
    found: dict[int, dict] = {}
    with ui.launch_chromium(width=WIDTH, height=HEIGHT) as page:
        page.set_default_timeout(180_000)
        runs = ui.RunWatcher(page)
        page.goto(server.url)
        runs.wait(0, timeout=180)
        runs.act(lambda: page.get_by_role("switch", name="Presenter mode").press("Space"), timeout=180)
        ui.assert_no_exception(page, "presenter mode")

        def shot(n: int) -> None:
            page.mouse.move(WIDTH - 5, HEIGHT - 5)  # no tooltip over the screenshot
            page.wait_for_timeout(800)  # Plotly lays out after the run
            ui.assert_no_exception(page, f"step {n}")
            found[n] = layout(page, n)
            page.screenshot(path=str(shots / f"presenter_step{n}.png"), animations="disabled")

        # 1. The problem: Deterministic on
        runs.act(lambda: page.get_by_role("switch", name="Deterministic").press("Space"), timeout=180)
        shot(1)
        # 2. The knob: Deterministic off, α = 2 (the tour's stop)
        pick_step(page, runs, 2)
        runs.act(lambda: page.get_by_role("switch", name="Deterministic").press("Space"), timeout=180)
        slider = page.locator(".st-key-alpha input[type='range']")
        for _ in range(12):
            if slider.get_attribute("aria-valuetext") == "2":
                break
            runs.act(lambda: (slider.focus(), page.keyboard.press("ArrowLeft")), timeout=180)
        assert slider.get_attribute("aria-valuetext") == "2"
        shot(2)
        # 3. Answers at α = 2
        pick_step(page, runs, 3)
        runs.act(lambda: page.get_by_role("button", name="Generate answers").click(), timeout=180)
        page.locator('[data-testid="stMain"] [data-testid="stPopover"]').first.wait_for(timeout=900_000)
        runs.wait(runs.finished - 1, timeout=180)
        shot(3)
        # 4. The curves: the recommender's sweep on Disparity curves, then its α applied on the Playground
        runs.act(lambda: page.get_by_role("link", name="Disparity curves").first.click(), timeout=180)
        runs.act(lambda: page.get_by_text("Query set", exact=True).click(), timeout=180)
        runs.act(lambda: page.locator(".st-key-curves_run button").click(), timeout=300)
        runs.act(lambda: page.get_by_role("link", name="Playground").first.click(), timeout=180)
        pick_step(page, runs, 4)
        assert page.locator('[data-testid="stMain"] [data-testid="stPageLink"]').inner_text().strip().endswith(
            "Disparity curves")  # step 4: the way to the recommender, and its Apply button
        apply = page.locator(".st-key-apply_recommended button").first
        label = apply.inner_text()
        runs.act(lambda: apply.click(), timeout=180)
        assert slider.get_attribute("aria-valuetext") == label.rsplit("= ", 1)[1].strip()
        shot(4)
        # 5. Accountability: where the audit and FAIR-QR are
        pick_step(page, runs, 5)
        shot(5)
    return found


@pytest.fixture(scope="module")
def tour():
    if not ui.chromium_available():
        pytest.skip("Debian chromium not installed: apt-get install chromium")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
    with tempfile.TemporaryDirectory() as tmp:
        server = ui.start_app(timeout=180, launcher=Path(__file__).parent / "slow_app.py",
                              env={"SLOW_APP_SECONDS": "0", "SLOW_APP_MARKER": str(Path(tmp) / "called")})
        try:
            yield walk(server, Path(tmp))
        finally:
            server.stop()


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5])
def test_each_tour_step_fits_one_1280_by_720_screen(tour, step):
    check_layout(tour[step], step)


if __name__ == "__main__":  # the docs' screenshots: python tests/studio/test_presenter_browser.py [--real]
    real = "--real" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        app = ui.start_app(timeout=180, **({} if real else {
            "launcher": Path(__file__).parent / "slow_app.py",
            "env": {"SLOW_APP_SECONDS": "0", "SLOW_APP_MARKER": str(Path(tmp) / "called")}}))
        try:
            shown = walk(app, SCREENSHOTS)
        finally:
            app.stop()
    for n, seen in shown.items():
        print(n, {k: v for k, v in seen.items() if k != "boxes"}, seen["boxes"])
    failed = 0
    for n in shown:
        try:
            check_layout(shown[n], n)
        except AssertionError as err:
            failed += 1
            print(f"step {n}: {err}")
    sys.exit(1 if failed else 0)
