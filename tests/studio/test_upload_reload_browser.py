"""Uploads survive a reload, in a real browser: a collection uploaded in the sidebar and a run file uploaded on the
Audit page keep their names and sha256, and after the browser reloads the page (same address, same owner key)
the sidebar still has the collection selected and the Audit page still offers the run file. A second browser
(another key) sees neither."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser as ui

pytestmark = pytest.mark.slow

CORPUS = "".join(f'{{"doc_id": "h{i}", "text": "harbour story {i}", "provider": "P{i % 3}"}}\n' for i in range(8))
RUN = "".join(f"q1 {s} h{(s + r) % 8} {r} {10 - r} sys\n" for s in (1, 2, 3) for r in (1, 2, 3))


def test_uploads_keep_their_names_and_come_back_after_a_reload(tmp_path):
    if not ui.chromium_available():
        pytest.skip("Debian chromium not installed: apt-get install chromium")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
    from playwright.sync_api import expect

    corpus, run = tmp_path / "harbour-news.jsonl", tmp_path / "week 1.trec"
    corpus.write_text(CORPUS)
    run.write_text(RUN)
    corpus_sha = hashlib.sha256(f"corpus:{hashlib.sha256(CORPUS.encode()).hexdigest()}\n".encode()).hexdigest()
    run_sha = hashlib.sha256(RUN.encode()).hexdigest()
    server = ui.start_app(timeout=120)
    try:
        with ui.launch_chromium() as page:
            page.set_default_timeout(60_000)
            runs = ui.RunWatcher(page)
            page.goto(server.url)
            runs.wait(0, timeout=120)
            ui.choose(page, runs, "collection_choice", "Upload your own…")
            runs.act(lambda: page.locator(".st-key-upload_corpus input[type='file']").set_input_files(str(corpus)))
            runs.act(lambda: page.get_by_role("button", name="Load this collection").click())
            expect(page.get_by_text(f"harbour-news (upload, sha256 {corpus_sha[:12]}…)").first).to_be_visible()
            runs.act(lambda: page.get_by_role("link", name="Audit").click())
            page.get_by_role("tab", name="Served log or run").click()
            runs.act(lambda: page.locator(".st-key-served_source").get_by_text("Upload", exact=True).click())
            runs.act(lambda: page.locator(".st-key-served_upload input[type='file']").set_input_files(str(run)))
            expect(page.get_by_text(re.compile(rf"Run read: 3 served rankings over 1 queries, from week_1\.trec "
                                               rf"\(upload, sha256 {run_sha[:12]}…\) \(9 lines holding 3 "
                                               r"rankings\)"))).to_be_visible()
            ui.assert_no_exception(page, "after the uploads")
            address = page.url
            assert "owner=" in address

            runs.act(lambda: page.reload(), timeout=120)  # the same address: a new session, the same owner key
            expect(page.get_by_role("combobox", name="Collection")).to_have_value("harbour-news (your upload)")
            expect(page.get_by_text(f"harbour-news (upload, sha256 {corpus_sha[:12]}…)").first).to_be_visible()
            page.get_by_role("tab", name="Served log or run").click()
            runs.act(lambda: page.locator(".st-key-served_source").get_by_text("Upload", exact=True).click())
            expect(page.locator(".st-key-served_kept").get_by_role("combobox")).to_have_value(
                re.compile(r"^week_1\.trec \(upload, sha256 \w{12}…\) · 9 lines holding 3 rankings$"))
            expect(page.get_by_text(re.compile(r"Run read: 3 served rankings over 1 queries"))).to_be_visible()
            ui.assert_no_exception(page, "after the reload")

            runs.act(lambda: page.goto(server.url), timeout=120)  # no key in the address: a new browser's view
            expect(page.get_by_role("combobox", name="Collection")).to_have_value("running-shoes")
            assert page.url != address
    finally:
        server.stop()
