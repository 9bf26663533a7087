"""The Playground names a typed query that no document matches, or one in another language, above the grid (issue
31, Must have 6); the tour's own query says nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fairrag_studio.panels.widgets import markdown_text

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(autouse=True)
def _run_store(fresh_run_store):
    """A fresh run store (tests/studio/conftest.py)."""


def test_the_query_box_says_when_nothing_matches_or_the_language_differs():
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception and at.text_input(key="query").value == "best shoes for a first marathon"
    assert [w.value for w in at.warning if "matches" in w.value or "looks" in w.value] == []
    at.text_input(key="query").set_value("how do I bake bread").run()
    assert not at.exception
    warned = [w.value for w in at.warning]
    assert markdown_text("No document matches 'how do I bake bread' in running-shoes: the grid shows the least bad "
                         "matches.") in warned
    assert at.get("html")  # the grid is still drawn, under the message
    at.text_input(key="query").set_value("Welche Laufschuhe für Anfänger?").run()
    assert markdown_text("This collection is English; your query looks German.") in [w.value for w in at.warning]
