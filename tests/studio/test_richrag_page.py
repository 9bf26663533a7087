"""AppTest of the Multi-faceted (RichRAG) page with stand-in models: aspects, pool, lists with NCOM, rich answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fakes import SubstringAttributor
from streamlit.testing.v1 import AppTest

from fairrag_core.models.llm import Completion, LanguageModel
from fairrag_core.rag.generation import Generator
from fairrag_core.richrag.ranker import WEIGHTS_FILE, shipped_ranker_dir

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "app_pages/multi_faceted.py"
COMPOST = "How do I start composting at home?"


class ScriptedModel(LanguageModel):
    """Lists aspects when asked for them, else writes two paragraphs copied from the first document."""

    backend, name = "fake", "fake-writer"

    @property
    def device(self):
        return "cpu"

    def complete(self, prompts, decoding=None):
        out = []
        for p in prompts:
            if "Aspects:" in p.user:
                out.append(Completion("<b>[bins and scraps]</b> [greens and browns] [greens and browns]", "stop"))
            else:
                first = p.user.splitlines()[1].split(": ", 1)[-1]
                out.append(Completion(f"{first}\n\nCompost is magic.", "stop"))
        return out

    def option_probabilities(self, prompt, options, *, keep_prefix=""):
        return np.full(len(options), 1 / len(options))


@pytest.fixture()
def fake_models(monkeypatch):
    from fairrag_studio.services import resources

    model, attributor = ScriptedModel(), SubstringAttributor()
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": Generator(model))
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)
    monkeypatch.setattr("fairrag_core.models.catalog.load_language_model", lambda name, **kw: model)
    return model, attributor


def open_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.sidebar.selectbox(key="collection_choice").set_value("multi-faceted").run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_page_shows_aspects_pool_lists_with_ncom_and_the_coverage_heatmap():
    at = open_page()
    assert at.title[0].value == "Multi-faceted (RichRAG)"
    # the catalogue's aspect explorers, the largest first
    assert at.selectbox(key="rr_explorer").options == ["qwen2.5-1.5b", "smollm2-135m"]
    box = at.text_area(key=f"rr_aspects_text:multi-faceted:{COMPOST}")
    assert box.value.splitlines()[0] == "what can go in the bin"
    ncom = {m.label: m.value for m in at.metric if m.label.startswith("NCOM")}
    assert ncom and all(0 < float(v) <= 1.2 for v in ncom.values())
    tables = [d.value for d in at.dataframe]
    pool = next(t for t in tables if "retrieved by" in t.columns)
    assert pool["doc_id"].is_unique and 1 <= len(pool) <= 40
    lists = [t for t in tables if list(t.columns) == ["doc_id", "title"]]
    assert len(lists) >= 4 and all(len(t) == 5 for t in lists)  # relevance, mmr, round-robin, oracle (+ ranker)
    if (shipped_ranker_dir() / WEIGHTS_FILE).is_file():  # the trained ranker (SFT + DPO, the default) is a list
        assert len(lists) == 5 and "**ranker-dpo**" in [m.value for m in at.markdown]
    assert len(at.get("plotly_chart")) >= 2 + len(lists)  # pool heatmap, one small heatmap per list, NCOM bars
    at.slider(key="rr_k").set_value(3).run()
    assert not at.exception and all(len(d.value) == 3 for d in at.dataframe if list(d.value.columns) == ["doc_id",
                                                                                                           "title"])


def test_explore_button_fills_the_aspects_and_the_answer_is_cited(fake_models):
    _, attributor = fake_models
    at = open_page()
    at.button(key="rr_explore").click().run()
    assert not at.exception, at.exception
    box = at.text_area(key=f"rr_aspects_text:multi-faceted:{COMPOST}")
    assert box.value.splitlines() == ["bins and scraps", "greens and browns"]
    assert any("source **llm**" in c.value and "repeated" in c.value for c in at.caption)
    at.button(key="rr_write").click().run()
    assert not at.exception, at.exception
    html_blocks = [h.proto.body for h in at.get("html")]
    assert any("✓ [1]" in b for b in html_blocks) and any("Compost is magic." in b for b in html_blocks)
    assert attributor.scored > 0 and any(m.label == "Com-ROUGE-L" for m in at.metric)


def test_edited_aspects_drive_retrieval_while_coverage_keeps_the_collections_sub_answers():
    at = open_page()
    at.text_area(key=f"rr_aspects_text:multi-faceted:{COMPOST}").input("kitchen scraps\n\nsmelly bins").run()
    assert not at.exception, at.exception
    tabs = [t.label for t in at.tabs]
    assert tabs == ["s1: kitchen scraps", "s2: smelly bins"]
    assert [m for m in at.metric if m.label.startswith("NCOM")]  # still measured against the gold sub-answers
    heat = at.get("plotly_chart")[0].proto.spec
    assert "what can go in the bin" in heat
