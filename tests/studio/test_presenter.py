"""Presenter mode's tour steps on the Playground (issue 31, Must have 4): a step selector that shows only the step's
parts, citation chips named by the document's short title in full, and the recommended α on the slider (AppTest)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fakes import FirstDocumentModel, SubstringAttributor
from streamlit.testing.v1 import AppTest

from fairrag_core import load_collection
from fairrag_core.rag.generation import Generator
from fairrag_studio.panels.presenter import TOUR_STEPS, chip_title
from fairrag_studio.panels.widgets import markdown_text

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PLAYGROUND, CURVES = "app_pages/playground.py", "app_pages/disparity_curves.py"


@pytest.fixture(autouse=True)
def _run_store(fresh_run_store):
    """A fresh run store for every test of this module (tests/studio/conftest.py)."""


@pytest.fixture()
def fake_models(monkeypatch):
    from fairrag_studio.services import resources

    generator, attributor = Generator(FirstDocumentModel()), SubstringAttributor()
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)


def presenter(step: int | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.sidebar.toggle(key="presenter").set_value(True).run()
    if step is not None:
        at.segmented_control(key="presenter_step").set_value(TOUR_STEPS[step - 1][0]).run()
    assert not at.exception
    return at


def finish_jobs(at: AppTest, timeout: float = 120) -> None:
    """Wait for this session's background jobs, then redraw the page."""
    from fairrag_studio.services import jobs

    runner, owner = jobs.runner(), at.session_state["jobs_owner"]
    deadline = time.monotonic() + timeout
    while any(job.active for job in runner.jobs(owner)):
        assert time.monotonic() < deadline, f"jobs did not finish in {timeout:g} s"
        time.sleep(0.2)
    at.run()
    assert not at.exception


def grid_html(at: AppTest) -> str:
    return " ".join(h.proto.body for h in at.get("html") if "deterministic" in h.proto.body)


def test_chip_title_keeps_the_name_part_in_whole_words():
    titles = [d.title for d in load_collection("running-shoes").documents]
    for title in titles:
        short = chip_title(title)
        words = short.rstrip("…").split()
        assert words == title.split(": ", 1)[0].split()[: len(words)]  # whole words from the start, none cut
        assert 1 <= len(words) <= 4
    assert chip_title("Stridewell Brace 4: Stability Trainer") == "Stridewell Brace 4"
    assert chip_title("Velocore Vanta Carbon: Our Fastest Marathon Shoe") == "Velocore Vanta Carbon"


def test_step_one_shows_tiles_grid_and_chart_only():
    at = presenter()  # Presenter mode opens on step 1
    assert at.segmented_control(key="presenter_step").value == TOUR_STEPS[0][0]
    assert not at.title  # the step selector replaces the page title
    labels = [m.label for m in at.metric]
    assert len(labels) == 4 and "Distinct rankings" in labels
    shown = grid_html(at)
    assert ">rs-0" in shown and "font:600 15px" in shown and "table-layout:fixed" in shown  # ids, k columns fit
    titles = [d.title for d in load_collection("running-shoes").documents]
    assert sum(f": {t} — " in shown for t in titles) >= 5  # titles stay in the cells' tooltips
    assert "showing 3 of 20 samples" in shown
    assert len(at.get("plotly_chart")) == 1  # the exposure chart beside it
    assert [c.value for c in at.main.caption if c.value.startswith("95% CI")] == [c.value for c in at.main.caption]
    assert not [b for b in at.button if b.key == "generate"]  # answers are step 3
    assert not at.main.expander  # no explainers on a projector step


def test_step_three_names_each_chip_by_the_short_title(fake_models):
    at = presenter(3)
    assert not at.metric  # step 3: answers only, no ranking tiles
    at.button(key="generate").click().run()
    finish_jobs(at)
    assert len(at.metric) == 5  # the answers' tiles
    collection = load_collection("running-shoes")
    names = {chip_title(d.title) for d in collection.documents}
    labels = [p.proto.popover.label for p in at.main.get("popover")]
    assert len(labels) == 5  # one answer card (the most frequent), k = 5 chips
    shown = [next((n for n in names if f"\\] {markdown_text(n)}" in label.replace("] ~~", "] ")), None)
             for label in labels]
    assert all(shown), labels  # every chip carries a document's short title, whole
    assert any(c.value.startswith("Showing the most frequent of 20 distinct answers (whole page: all")
               for c in at.main.caption)


def test_the_delta_chart_title_fits_a_narrow_column():
    from fairrag_studio import charts

    figure = charts.fairqr_delta([0.57, 0.2, 0.02], chosen=2)
    assert figure.layout.title.text == "Δ per iteration"  # 15 characters: whole in a 2-of-5 column at 1400 px
    assert figure.layout.title.subtitle.text == "lower = closer to the target"


def test_step_five_points_to_the_audit_and_fair_qr():
    at = presenter(5)
    links = [p.proto.page for p in at.get("page_link")]
    assert any("audit" in link for link in links) and any("fair_qr" in link for link in links)
    assert not at.metric


def test_whole_page_is_the_page_as_before():
    at = presenter()
    at.segmented_control(key="presenter_step").set_value("Whole page").run()
    assert at.title[0].value == "Playground"
    shown = grid_html(at)
    assert "font:18px" in shown and ("Stability Trainer" in shown or "Marathon" in shown)


def test_the_recommended_alpha_is_a_stop_and_applies():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(CURVES).run()
    at.radio(key="curves_scope").set_value("Query set").run()
    at.button(key="curves_run").click().run()
    assert not at.exception
    recommended = at.session_state["recommended_alpha"]
    assert recommended[0] == "running-shoes" and f"α = {recommended[1]:g}" in at.success[0].value
    at.switch_page(PLAYGROUND).run()
    stops = at.select_slider(key="alpha").options
    assert f"{recommended[1]:g}" in stops
    at.toggle(key="deterministic").set_value(True).run()
    at.button(key="apply_recommended").click().run()
    assert not at.exception
    assert at.select_slider(key="alpha").value == recommended[1]
    assert at.toggle(key="deterministic").value is False


def test_no_apply_button_before_a_recommendation():
    at = presenter(4)
    assert not [b for b in at.button if b.key == "apply_recommended"]
    assert any(c.value.startswith("Run the sweep there (Query set)") for c in at.main.caption)
    assert [p.proto.page for p in at.get("page_link")][-1].endswith("disparity_curves")
