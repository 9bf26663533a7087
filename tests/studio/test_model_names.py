"""One name per model everywhere (issue 31, What did not 5: the sidebar said "Qwen2.5-Coder-1.5B", the answers line
"qwen2.5-1.5b"): the sidebar, the answer presets, the answers line and the report read the catalogue's label."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FirstDocumentModel, SubstringAttributor
from streamlit.testing.v1 import AppTest

from fairrag_core.models.catalog import ATTRIBUTORS, CATALOG, DEFAULTS, GENERATORS, display_name, model_for
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.presets import PRESETS

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_every_name_of_a_model_shows_its_label():
    for model in CATALOG:
        for use in model.uses:
            shown = display_name(use.name)
            assert shown.startswith(model.label), (use.name, shown)
    assert display_name("qwen2.5-1.5b") == display_name("qwen-judge") == display_name("judge:qwen2.5-1.5b") \
        == display_name("Qwen/Qwen2.5-Coder-1.5B-Instruct") == "Qwen2.5-Coder-1.5B"
    assert display_name("smollm2-135m-hf") == "SmolLM2-135M (transformers)"
    assert display_name("/models/mine") == "/models/mine" and display_name(None) == "—"


@pytest.mark.parametrize("names", [GENERATORS, ATTRIBUTORS])
def test_a_menu_never_shows_two_choices_under_one_name(names):
    shown = [display_name(n) for n in names]
    assert len(set(shown)) == len(shown)


def test_the_presets_name_their_models_by_the_catalogue():
    assert PRESETS["fast"].summary == ("Qwen2.5-Coder-0.5B answers in a few words or one sentence; the "
                                       "Qwen2.5-Coder-1.5B judge checks citations")
    assert PRESETS["quality"].summary.startswith(model_for(DEFAULTS["judge"]).label + " answers")


def test_the_report_names_models_by_the_catalogue():
    from fairrag_studio.views.methodology import _model_row

    assert _model_row("generator", "qwen2.5-1.5b")["model"] == "Qwen2.5-Coder-1.5B"
    assert _model_row("NLI judge (attribution)", "judge:qwen2.5-1.5b")["model"] == "Qwen2.5-Coder-1.5B"
    assert _model_row("NLI judge (attribution)", "nli:FacebookAI/roberta-large-mnli")["model"] == "RoBERTa-large MNLI"
    assert _model_row("generator", "my/own-model")["model"] == "my/own-model"


def test_the_sidebar_and_the_answers_line_say_the_same_name(monkeypatch, fresh_run_store):
    from fairrag_studio.panels.widgets import markdown_text
    from fairrag_studio.services import jobs, resources

    model, attributor = FirstDocumentModel("qwen2.5-1.5b"), SubstringAttributor()
    generator = Generator(model)
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.sidebar.radio(key="answers").set_value("quality").run()
    assert not at.exception
    assert any(c.value.startswith("Qwen2.5-Coder-1.5B answers in one or two sentences") for c in at.sidebar.caption)
    panel = at.sidebar.dataframe[0].value
    assert panel.loc[panel["role"] == "generator", "model"].iloc[0].startswith("Qwen2.5-Coder-1.5B — ")
    assert panel.loc[panel["role"] == "NLI attributor", "model"].iloc[0].startswith("Qwen2.5-Coder-1.5B — ")
    at.sidebar.slider(key="k").set_value(2).run()
    at.toggle(key="deterministic").set_value(True).run()  # one ranking: one answer to generate
    at.button(key="generate").click().run()
    runner = jobs.runner()
    for job in runner.jobs(at.session_state["jobs_owner"]):
        assert runner.wait(job.job_id, 120)
    at.run()
    assert not at.exception
    line = [c.value for c in at.caption if "made by" in c.value]
    assert line and f"made by **{markdown_text('Qwen2.5-Coder-1.5B')}**" in line[0], line
    at.sidebar.radio(key="answers").set_value("custom").run()
    assert at.sidebar.selectbox(key="generator").options[:3] == ["SmolLM2-135M", "Qwen2.5-Coder-0.5B",
                                                                  "Qwen2.5-Coder-1.5B"]
