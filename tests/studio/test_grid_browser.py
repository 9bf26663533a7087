"""The Playground's rankings grid at k = 20 in a real browser 1400 px wide (issue 30: it cut columns off behind a
horizontal scroll): past GRID_BESIDE_MAX_K columns the grid goes full width and its k columns share it, so every
rank is in view and its ids readable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser as ui

pytestmark = [pytest.mark.slow]

#: The grid's width, its table's, and how many of its rank columns end inside it.
COLUMNS_JS = """() => {
  const box = document.querySelector('.st-key-grid');
  const wrap = box.querySelector('div[style*="overflow"]') || box;
  const table = box.querySelector('table');
  const right = wrap.getBoundingClientRect().right;
  const ranks = [...table.querySelectorAll('thead th')].slice(1);
  const cells = [...table.querySelectorAll('tbody tr:first-child td')].slice(1);
  return {container: wrap.clientWidth, table: table.scrollWidth, columns: ranks.length,
          visible: ranks.filter(th => th.getBoundingClientRect().right <= right + 1).length,
          cut: cells.filter(td => td.scrollWidth > td.clientWidth).length};
}"""


def test_k_twenty_shows_every_column_at_1400_px():
    if not ui.chromium_available():
        pytest.skip("Debian chromium not installed: apt-get install chromium")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
    server = ui.start_app(timeout=120)
    try:
        with ui.launch_chromium(width=1400, height=900) as page:
            page.set_default_timeout(120_000)
            runs = ui.RunWatcher(page)
            page.goto(server.url)
            runs.wait(0, timeout=120)
            page.wait_for_selector(".st-key-grid table")
            before = page.evaluate(COLUMNS_JS)
            assert before["visible"] == before["columns"] == 5  # the default k, beside the exposure chart
            slider = page.locator(".st-key-k input[type='range']")
            runs.act(lambda: (slider.focus(), page.keyboard.press("End")), timeout=120)
            page.wait_for_timeout(500)
            grid = page.evaluate(COLUMNS_JS)
            assert grid["columns"] == 20 and grid["visible"] == 20, grid  # 9 of 20 before the fix
            assert grid["table"] <= grid["container"] and grid["cut"] == 0, grid  # running-shoes ids fit whole
            ui.assert_no_exception(page, "k = 20")
    finally:
        server.stop()
