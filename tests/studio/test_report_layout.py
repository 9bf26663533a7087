"""The reports a board reads at 1400 px: every column of every table visible, nothing cut off or scrolled sideways.

Real Chromium (Debian's, driven by Playwright) opens the HTML reports of a simulated audit and of a served log
audited with both attribution sources and a second user model (its per-query table is the widest the product
writes: 16 columns), every drill-down opened, in a 1400 × 900 window. For each table the test measures that its
right edge stays inside its section, that it has nothing to scroll, that no cell's text spills out of it, and that
no number is broken over two lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fakes import SubstringAttributor

from fairrag_core import SweepConfig, exposure_sweep
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.retrieval import BM25Retriever
from fairrag_studio.views.audit import build_report
from fairrag_studio.views.served import DEMO_LOG, build_log_report

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser as ui

WIDTH = 1400

_MEASURE = """() => {
  const out = {page: document.documentElement.scrollWidth, tables: [], images: [], code: []};
  for (const t of document.querySelectorAll('table')) {
    const box = t.getBoundingClientRect(), room = t.parentElement.getBoundingClientRect();
    const spilled = [...t.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1)
      .map(c => c.innerText.slice(0, 40));
    const broken = [...t.querySelectorAll('td')].filter(c => /^-?[0-9][0-9.,]*$/.test(c.innerText.trim()))
      .filter(c => { const r = document.createRange(); r.selectNodeContents(c); return r.getClientRects().length > 1; })
      .map(c => c.innerText);
    out.tables.push({section: t.closest('section').querySelector('h2').innerText,
                     columns: t.rows[0].cells.length, right: box.right, room: room.right,
                     scroll: t.scrollWidth - t.clientWidth, spilled, broken});
  }
  for (const i of document.querySelectorAll('img')) out.images.push(i.getBoundingClientRect().right);
  for (const p of document.querySelectorAll('pre')) out.code.push(p.scrollWidth - p.clientWidth);
  return out;
}"""


def _svgs(figures):
    return [b'<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="480"></svg>' for _ in figures]


@pytest.fixture(scope="module")
def reports(shoes, tmp_path_factory):
    folder = tmp_path_factory.mktemp("reports")
    sweep = exposure_sweep(shoes, BM25Retriever(shoes.texts),
                           SweepConfig(alphas=(0.0, 2.0, 8.0), n_samples=20, k=5, seed=0,
                                       query_ids=tuple(q for q in shoes.qrels)[:6]))
    audit = folder / "audit.html"
    audit.write_text(build_report(sweep, shoes, renderer=_svgs), encoding="utf-8")
    log = audit_rag_log(DEMO_LOG, shoes, LogAuditConfig(seed=3, attribution="both", user_model="gerr"),
                        attributor=SubstringAttributor())
    served = folder / "served.html"
    served.write_text(build_log_report(log, shoes, renderer=_svgs), encoding="utf-8")
    return {"audit": audit, "served": served}


@pytest.mark.skipif(not DEMO_LOG.exists(), reason="the demo log is not generated yet")
def test_every_column_of_every_report_table_is_visible_at_1400_px(reports):
    if not ui.chromium_available():
        pytest.skip("Debian chromium not installed: apt-get install chromium")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
    with ui.launch_chromium(width=WIDTH, height=900) as page:
        for name, path in reports.items():
            page.goto(path.as_uri())
            page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            found = page.evaluate(_MEASURE)
            assert found["page"] <= WIDTH, f"{name}: the page scrolls sideways ({found['page']} px wide)"
            assert len(found["tables"]) > 10
            widest = max(t["columns"] for t in found["tables"])
            assert widest >= (16 if name == "served" else 9)  # the widest tables are there, and measured
            for table in found["tables"]:
                where = f"{name}: table of {table['section']!r} ({table['columns']} columns)"
                assert table["right"] <= table["room"] + 0.5, f"{where} ends {table['right'] - table['room']:.0f} px " \
                                                              "beyond its section"
                assert table["scroll"] <= 0, f"{where} hides {table['scroll']} px behind a scroll bar"
                assert not table["spilled"], f"{where}: cells spill out: {table['spilled'][:3]}"
                assert not table["broken"], f"{where}: numbers broken over lines: {table['broken'][:3]}"
            assert all(right <= WIDTH for right in found["images"]), f"{name}: a figure is wider than the window"
            assert all(extra <= 0 for extra in found["code"]), f"{name}: a command scrolls sideways"
