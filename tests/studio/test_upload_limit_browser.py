"""A 1.1 GB upload in a real browser, with the checkout's .streamlit/config.toml (streamlit reads it from the
project folder): Streamlit's uploader refuses it before sending it, nothing reaches the app (no upload folder, no
exception box), and the app goes on working. The file is sparse, so making it costs no disk and no time."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser as ui

pytestmark = pytest.mark.slow


def test_an_upload_over_the_servers_cap_is_refused_in_the_browser(tmp_path):
    if not ui.chromium_available():
        pytest.skip("Debian chromium not installed: apt-get install chromium")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
    from playwright.sync_api import expect

    big = tmp_path / "corpus.jsonl"
    with open(big, "wb") as handle:  # 1.1 GB of holes: the browser sees the size without anything being read
        handle.truncate(1_100_000_000)
    uploads = tmp_path / "uploads"
    server = ui.start_app(timeout=120, env={"FAIRRAG_UPLOADS": str(uploads)})
    try:
        with ui.launch_chromium() as page:
            page.set_default_timeout(60_000)
            runs = ui.RunWatcher(page)
            page.goto(server.url)
            runs.wait(0, timeout=120)
            ui.choose(page, runs, "collection_choice", "Upload your own…")
            page.locator(".st-key-upload_corpus input[type='file']").set_input_files(str(big))
            refusal = page.locator(".st-key-upload_corpus").get_by_text(re.compile(r"must be .*or smaller"))
            expect(refusal).to_be_visible()
            assert "1.0GB" in refusal.inner_text()  # the 1024 MiB cap of .streamlit/config.toml, in Streamlit's words
            expect(page.get_by_role("button", name="Load this collection")).to_be_disabled()
            ui.assert_no_exception(page, "after the refused upload")
            box = page.get_by_role("textbox", name="Query")
            runs.act(lambda: (box.fill("trail shoes"), box.press("Enter")))  # the app still answers
            expect(box).to_have_value("trail shoes")
            ui.assert_no_exception(page, "after a query")
    finally:
        server.stop()
    assert not uploads.exists() or not any(uploads.iterdir())  # nothing of it was written
