"""One glossary, every page: each metric tile's help, each explainer and each table's note use the words of
fairrag_core.glossary, and so does the report (AppTest of every page, stand-in models for the answers)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from fakes import FirstDocumentModel, SubstringAttributor
from streamlit.testing.v1 import AppTest

from fairrag_core import SweepConfig, exposure_sweep
from fairrag_core.glossary import GLOSSARY, term, terms_in
from fairrag_core.rag.generation import Generator
from fairrag_core.retrieval import BM25Retriever
from fairrag_studio.panels.widgets import markdown_text
from fairrag_studio.views import explain
from fairrag_studio.views.audit import build_report
from fairrag_studio.views.explain import markdown_gloss

APP = str(Path(__file__).resolve().parents[2] / "app.py")
EXPLAINER = "What am I looking at?"


@pytest.fixture(autouse=True)
def _run_store(fresh_run_store):
    """A fresh run store for every test of this module (tests/studio/conftest.py)."""


@pytest.fixture()
def fake_models(monkeypatch):
    from fairrag_studio.services import resources

    generator, attributor = Generator(FirstDocumentModel()), SubstringAttributor()
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)


def _mentions(text: str) -> list[str]:
    """The glossary's metrics named in an explainer's own words (before its glossary list)."""
    own = text.split("\n\n- **", 1)[0]
    return [key for key in GLOSSARY if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", own)]


def check_page(at: AppTest, seen: dict[str, set[str]]) -> None:
    """Every metric tile's help holds its glossary sentence; every explainer that names a metric carries its line."""
    assert not at.exception, at.exception
    for tile in at.metric:
        found = term(tile.label)
        if found is None:
            continue
        assert found.help in tile.proto.help, f"tile {tile.label!r}: help {tile.proto.help!r}"
        seen["tiles"].add(found.key)
    for box in at.expander:
        if box.label != EXPLAINER:
            continue
        text = "\n".join(m.value for m in box.markdown)
        for key in _mentions(text):  # a metric it names has its line
            assert f"- **{key}** — {markdown_gloss(GLOSSARY[key].gloss)}" in text, f"explainer names {key}: {text}"
        for key, gloss in re.findall(r"^- \*\*(.+?)\*\* — (.*)$", text, flags=re.MULTILINE):  # lines word for word
            assert gloss == markdown_gloss(GLOSSARY[key].gloss), key
            seen["explainers"].add(key)


def notes(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_every_tile_explainer_and_table_note_uses_the_glossary(fake_models):
    from fairrag_studio.services import jobs

    seen: dict[str, set[str]] = {"tiles": set(), "explainers": set()}
    at = AppTest.from_file(APP, default_timeout=180).run()
    check_page(at, seen)  # Playground: EE-D, EE-R, providers reached
    at.sidebar.slider(key="k").set_value(3).run()
    at.button(key="generate").click().run()
    runner = jobs.runner()
    for job in runner.jobs(at.session_state["jobs_owner"]):
        assert runner.wait(job.job_id, 180)
    at.run()
    check_page(at, seen)  # answers: EU, EU normalised, EAR, EAE-D, EE-D (plug-in)
    assert {"EE-D", "EE-R", "providers reached", "EU", "EU (normalised)", "EAR", "EAE-D"} <= seen["tiles"]

    at.switch_page("app_pages/disparity_curves.py").run()
    at.button(key="curves_run").click().run()
    check_page(at, seen)
    ee_r_chart = [c for c in at.get("plotly_chart") if GLOSSARY["EE-R"].axis_title in c.proto.spec]
    assert ee_r_chart, "the EE-R chart's axis is titled from the glossary"

    at.switch_page("app_pages/audit.py").run()
    at.text_input(key="audit_alphas").set_value("0, 4").run()
    at.button(key="audit_run").click().run()
    check_page(at, seen)
    text = notes(at)
    for key in ("EE-D", "EE-R", "retrieval share", "target share", "gap (retrieval − target)"):
        assert f"**{markdown_text(key)}** — {markdown_text(GLOSSARY[key].gloss)}" in text, key

    at.sidebar.selectbox(key="collection_choice").set_value("people").run()
    at.switch_page("app_pages/fair_qr.py").run()
    at.selectbox(key="fqr_refiner").set_value("corpus keywords").run()
    at.button(key="fqr_run").click().run()
    check_page(at, seen)
    for key in ("AWRF", "nDCG"):
        assert f"**{key}** — {markdown_text(GLOSSARY[key].gloss)}" in notes(at)

    at.sidebar.selectbox(key="collection_choice").set_value("multi-faceted").run()
    at.switch_page("app_pages/multi_faceted.py").run()
    check_page(at, seen)
    assert "NCOM" in seen["tiles"]
    assert {"EE-D", "EE-R", "EU", "EAR", "EAE-D", "Δ", "NCOM"} <= seen["explainers"]


def test_the_report_explains_each_metric_with_the_glossary_where_it_first_appears(shoes):
    run = exposure_sweep(shoes, BM25Retriever(shoes.texts),
                         SweepConfig(alphas=(0.0, 2.0), n_samples=10, k=5, seed=0, query_ids=("rs-q01", "rs-q02")))
    page = build_report(run, shoes, renderer=lambda figs: [b"<svg/>"] * len(figs))
    intro = page.index("<h2>How to read this report</h2>")
    for key in ("EE-D", "EE-R"):  # the headline metrics: explained in "How to read this report", once
        line = f"<li><b>{html.escape(key)}</b> — {html.escape(GLOSSARY[key].gloss)}</li>"
        assert page.count(line) == 1 and page.index(line) > intro
    ledger = page.index("<h2>Exposure ledger by provider")
    for key in ("retrieval share", "target share", "gap (retrieval − target)"):  # first seen in the ledger
        line = f"<li><b>{html.escape(key)}</b> — {html.escape(GLOSSARY[key].gloss)}</li>"
        assert page.count(line) == 1 and ledger < page.index(line) < page.index("<table", ledger)
    assert html.escape(explain.REPORT_INTRO) in page
    # every metric the report's tables show has its glossary line somewhere in it
    headers = re.findall(r"<th>(.*?)</th>", page)
    for found in terms_in(html.unescape(h) for h in headers):
        assert html.escape(found.gloss) in page, found.key
