"""AppTest for every page, from the entrypoint (Streamlit's headless test runner; no browser)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fakes import FirstDocumentModel, SubstringAttributor
from streamlit.testing.v1 import AppTest

from fairrag_core import load_collection
from fairrag_core.rag.generation import Generator

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PLAYGROUND, CURVES, AUDIT = "app_pages/playground.py", "app_pages/disparity_curves.py", "app_pages/audit.py"


@pytest.fixture(autouse=True)
def _run_store(fresh_run_store):
    """A fresh run store for every test of this module (tests/studio/conftest.py)."""


@pytest.fixture()
def fake_models(monkeypatch):
    """Deterministic stand-ins for the generator and the NLI model (plumbing tests; real models are tested below)."""
    from fairrag_studio.services import resources

    model, attributor = FirstDocumentModel(), SubstringAttributor()
    generator = Generator(model)
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)
    return model, attributor


def start(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    if page is not None:
        at.switch_page(page).run()
        assert not at.exception
    return at


def finish_jobs(at: AppTest, timeout: float = 120) -> None:
    """Wait for this session's background jobs (fairrag_studio.services.jobs), then redraw the page."""
    from fairrag_studio.services import jobs

    runner = jobs.runner()
    for job in runner.jobs(at.session_state["jobs_owner"]):
        assert runner.wait(job.job_id, timeout), f"job {job.title} did not finish in {timeout:g} s"
    at.run()
    assert not at.exception


def metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert found, f"no metric {label!r}; have {[m.label for m in at.metric]}"
    return found[0]


# -- Playground ----------------------------------------------------------------------------------------------------
def test_playground_opens_on_the_first_example_query():
    at = start()
    assert at.title[0].value == "Playground"
    assert at.text_input(key="query").value == "best shoes for a first marathon"
    ee_d = float(metric(at, "EE-D (lower = fairer)"))
    assert 0 < ee_d < 1 and 0 < float(metric(at, "EE-R (higher = better)")) <= 1
    assert metric(at, "Distinct rankings").endswith("of 20")
    assert len(at.get("plotly_chart")) == 1  # the exposure bars (the rankings grid is HTML)
    grid = at.get("html")[0].proto.body
    assert grid.count("<tr>") == 3 + 20 and "deterministic" in grid  # header, deterministic, rule, 20 samples
    assert any(b.label == "Generate answers" for b in at.button)


def test_alpha_and_deterministic_toggle_drive_the_metrics():
    from fairrag_core import load_collection
    from fairrag_core.ranking.stops import alpha_stops
    from fairrag_core.retrieval import BM25Retriever, top_candidates

    at = start()
    collection = load_collection("running-shoes")  # the page's first example query, 20 candidates, k = 5
    scores = top_candidates(BM25Retriever(collection.texts).score(collection.queries[0].text), 20).scores
    stops = alpha_stops(scores, 5)
    assert at.select_slider(key="alpha").options == [f"{a:g}" for a in stops]  # this query's own stops
    levels = []
    for alpha in stops:
        at.select_slider(key="alpha").set_value(alpha).run()
        levels.append(float(metric(at, "EE-D (lower = fairer)")))
    assert len(set(levels)) == len(stops)  # every stop shows another EE-D
    uniform, peaked = levels[0], levels[-1]
    at.toggle(key="deterministic").set_value(True).run()
    assert not at.exception
    assert uniform < peaked <= 1.0
    assert float(metric(at, "EE-D (lower = fairer)")) == 1.0
    assert metric(at, "Distinct rankings") == "1 of 20"


def test_animate_alpha_plays_the_stops_down_to_uniform():
    at = start()
    stops = [float(o) for o in at.select_slider(key="alpha").options]
    at.select_slider(key="alpha").set_value(stops[-1]).run()
    at.button(key="animate_alpha").click().run(timeout=120)  # each stop is drawn, then the next, down to 0
    assert not at.exception
    assert float(at.select_slider(key="alpha").value) == 0.0 and at.session_state["alpha_animation"] == []
    assert at.button(key="animate_alpha").label == "Animate α"


def test_presenter_mode_shows_titles_in_large_type():
    at = start()
    grid = lambda: " ".join(h.proto.body for h in at.get("html") if "deterministic" in h.proto.body)  # noqa: E731
    assert "rs-0" in grid() and "font:18px" not in grid()
    at.sidebar.toggle(key="presenter").set_value(True).run()
    at.segmented_control(key="presenter_step").set_value("Whole page").run()  # the tour steps: test_presenter.py
    assert not at.exception
    shown = grid()
    assert "font:18px" in shown or "font-size:18px" in shown
    assert "Stability Trainer" in shown or "Marathon" in shown  # titles, not ids, in the cells
    assert any("<style>" in h.proto.body and "stMetricValue" in h.proto.body for h in at.get("html"))  # large type
    at.sidebar.toggle(key="presenter").set_value(False).run()
    assert "font:18px" not in grid()


def test_sidebar_settings_reach_the_page():
    at = start()
    at.sidebar.slider(key="n_samples").set_value(50).run()
    at.sidebar.slider(key="k").set_value(3).run()
    assert metric(at, "Distinct rankings").endswith("of 50")
    at.sidebar.selectbox(key="collection_choice").set_value("people").run()
    assert not at.exception
    assert at.text_input(key="query").value  # still a query; the page did not crash on a new collection
    assert any("124 documents" in c.value for c in at.sidebar.caption)


def test_bad_queries_get_messages_that_name_the_fix():
    at = start()
    at.text_input(key="query").set_value("   ").run()
    assert not at.exception and "query is empty" in at.error[0].value
    at.text_input(key="query").set_value("completely unrelated words qwertyuiop").run()
    assert not at.exception
    assert metric(at, "EE-R (higher = better)") == "—"  # a free query has no relevance labels


def test_models_panel_names_each_role_and_the_offline_defaults():
    at = start()
    panel = at.sidebar.dataframe[0].value
    roles = dict(zip(panel["role"], panel["offline"]))
    assert roles == {"retriever": "yes", "generator": "yes", "NLI attributor": "yes"}
    assert panel.loc[panel["role"] == "generator", "model"].iloc[0].startswith("Qwen2.5-Coder-0.5B — ")  # fast preset
    at.sidebar.radio(key="answers").set_value("custom").run()
    at.sidebar.selectbox(key="generator").set_value("flan-t5-base").run()
    panel = at.sidebar.dataframe[0].value
    assert panel.loc[panel["role"] == "generator", "offline"].iloc[0].startswith("no")


def test_generate_shows_answers_with_citations(fake_models):
    model, _ = fake_models
    at = start()
    at.sidebar.slider(key="k").set_value(3).run()
    at.select_slider(key="alpha").set_value(0.0).run()
    distinct = int(metric(at, "Distinct rankings").split()[0])
    at.button(key="generate").click().run()  # a background job: its answers show when it ends
    assert not at.exception
    finish_jobs(at)
    assert model.prompts_seen >= distinct  # one generation per distinct ranking (plus the oracle's lists)
    assert 0 < float(metric(at, "EAR")) <= 1 and float(metric(at, "EU (utility)")) >= 0
    # EAE-D/cited sits on EE-D's scale, and a sentence says how to read the pair
    assert 0 < float(metric(at, "EAE-D/cited")) <= 1
    assert any(c.value.startswith("Citations are ") and "EAE-D scales with how much is cited" in c.value
               for c in at.caption)
    # the fake answer is document [1]'s title, which only document [1] contains: it is the one citation — unless
    # the title is a question ("Can You Run a Marathon Barefoot?"), which is flagged degenerate and cites nothing
    chips = [m.value for m in at.markdown if m.value.startswith("**") and "samples**" in m.value]
    assert len(chips) == min(distinct, 20)
    # a flagged answer shows "flagged" where the utility goes (0 by definition), never a number
    assert all("uses 1 of 3 documents" in c or ("uses 0 of 3" in c and "utility :orange-background[flagged: repeats "
                                                 "the prompt]" in c) for c in chips)
    assert sum("uses 1 of 3 documents" in c for c in chips) > len(chips) / 2
    again = model.prompts_seen
    at.select_slider(key="alpha").set_value(0.0).run()  # a rerun with nothing changed generates nothing
    assert model.prompts_seen == again



def test_nothing_cited_shows_eae_d_as_undefined_with_the_reason(monkeypatch):
    """EAE-D of no attributed exposure is not 0 ("fair"): the tile says "—" and the page says why."""
    from fairrag_core.models.llm import Completion
    from fairrag_studio.services import resources

    class Unsupported(FirstDocumentModel):
        def complete(self, prompts, decoding=None):
            return [Completion("zebra crossing", "stop") for _ in super().complete(prompts, decoding)]

    generator = Generator(Unsupported("fake-unsupported"))
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: SubstringAttributor())
    at = start()
    at.sidebar.slider(key="k").set_value(3).run()
    at.button(key="generate").click().run()
    finish_jobs(at)
    assert metric(at, "EAR") == "0.000" and metric(at, "EAE-D") == "—"
    assert any("EAE-D and EAE-D/cited have no value: no answer cites any" in c.value for c in at.caption)

@pytest.mark.model
def test_generate_with_the_real_offline_models():
    at = start()
    at.sidebar.slider(key="k").set_value(3).run()
    at.toggle(key="deterministic").set_value(True).run()
    at.button(key="generate").click().run(timeout=600)
    assert not at.exception
    finish_jobs(at, timeout=600)
    assert math.isfinite(float(metric(at, "EAR")))
    quotes = [m.value for m in at.markdown if m.value.startswith("**Answer:** ")]
    assert len(quotes) == 1 and len(quotes[0]) > 15  # one ranking, one real answer


# -- Disparity curves ------------------------------------------------------------------------------------------------
def test_curves_exposure_sweep_draws_figures_tables_and_a_recommendation():
    at = start(CURVES)
    assert at.title[0].value == "Disparity curves"
    at.button(key="curves_run").click().run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 2  # EE-D by α and EE-R vs EE-D
    assert "Recommended **α =" in at.success[0].value
    table1 = at.dataframe[0].value
    assert list(table1.columns) == ["stochastic runs fitted", "slope", "auc"]
    assert any("gain EE-R at the lowest α" in c.value for c in at.caption)  # why the recommender says what it says
    at.text_input(key="curves_alphas").set_value("0, x").run()
    assert "α must be a number ≥ 0" in at.error[0].value and "got 'x'" in at.error[0].value


def test_curves_with_answers_resume_and_fill_table_2(fake_models):
    model, _ = fake_models
    at = start(CURVES)
    at.radio(key="curves_mode").set_value("Exposure + answers").run()
    at.radio(key="curves_labels").set_value("relevance").run()
    at.text_input(key="curves_alphas").set_value("0, 4").run()
    assert "3 runs to do" in at.info[0].value
    at.button(key="curves_run").click().run()  # a background job (tests/studio/test_jobs.py)
    assert not at.exception
    finish_jobs(at)
    assert len(at.get("plotly_chart")) == 5  # Fig. 3, EE-R, EU, EAR and EAE-D against EE-D
    names = [d.value.columns.tolist() for d in at.dataframe]
    assert ["ee_d_interval", "runs", "mean", "difference", "p_value", "significant"] in names
    assert "Saved as run" in at.success[-1].value  # a finished sweep with answers saves itself
    calls = model.prompts_seen
    at.button(key="curves_run").click().run()  # everything is finished: nothing is generated again
    finish_jobs(at)
    assert model.prompts_seen == calls


# -- Audit ----------------------------------------------------------------------------------------------------------
def test_audit_runs_saves_reopens_and_compares():
    at = start(AUDIT)
    at.text_input(key="audit_alphas").set_value("0, 4").run()
    at.button(key="audit_run").click().run()
    assert not at.exception
    saved = [c.value for c in at.caption if c.value.startswith("Saved in the run store")]
    assert saved
    summary = at.dataframe[0].value
    assert summary["system"].tolist() == ["α = 0", "α = 4", "deterministic"]
    assert summary["EE-D"].is_monotonic_increasing
    ledger = at.dataframe[1].value
    assert ledger["retrieval share"].sum() == pytest.approx(1.0)
    assert "attributed share" not in ledger.columns  # exposure only: no citations to show
    at.radio(key="ledger_by").set_value("provider").run()
    at.text_input(key="audit_alphas").set_value("1").run()
    at.button(key="audit_run").click().run()
    run_ids = at.multiselect(key="stored_pick").options
    assert len(run_ids) == 2
    at.multiselect(key="stored_pick").set_value([run_ids[0]]).run()
    assert not at.exception
    at.multiselect(key="stored_pick").set_value(run_ids).run()
    assert not at.exception
    # two batch audits hold five systems (one per α); compare the deterministic ones with α = 0 and α = 1
    labels = at.multiselect(key="compare_systems").options
    assert len(labels) == 5 and sum(label.endswith("deterministic") for label in labels) == 2
    det = next(label for label in labels if label.endswith("deterministic"))
    chosen = [det, *(label for label in labels if label.endswith(("α = 0", "α = 1")))]
    at.multiselect(key="compare_systems").set_value(chosen).run()
    at.selectbox(key="compare_baseline").set_value(det).run()
    assert not at.exception
    metrics = next(d.value for d in at.dataframe if "difference" in d.value.columns and "metric" in d.value.columns)
    ee_d = metrics[metrics["metric"] == "EE-D"]
    assert len(ee_d) == 2 and (ee_d["difference"] < -0.3).all()  # both stochastic systems are fairer
    assert any("is fairer than" in m.value for m in at.markdown)  # the findings lead
    assert any(c.value.startswith("Saved in the run store as") for c in at.caption)


def test_audit_with_answers_fills_the_attributed_column(fake_models):
    at = start(AUDIT)
    at.multiselect(key="audit_queries").set_value(["rs-q01"]).run()
    at.text_input(key="audit_alphas").set_value("2").run()
    at.radio(key="audit_mode").set_value("Exposure + answers").run()
    at.button(key="audit_run").click().run()
    assert not at.exception
    finish_jobs(at)
    ledger = at.dataframe[1].value
    assert ledger["attributed share"].sum() == pytest.approx(1.0)


# -- FAIR-QR ----------------------------------------------------------------------------------------------------------
FAIR_QR = "app_pages/fair_qr.py"


def test_fair_qr_page_shows_iterations_final_ranking_and_baselines():
    at = start()
    at.sidebar.selectbox(key="collection_choice").set_value("people").run()
    at.switch_page(FAIR_QR).run()
    assert not at.exception and at.title[0].value == "FAIR-QR"
    # the page opens on a query and category where the refinements show
    assert at.text_input(key="fqr_query:people").value == "award-winning film directors"
    assert at.multiselect(key="fqr_categories:people").value == ["region"]
    # the catalogue's refiners, the largest first, then the model-free one
    assert at.selectbox(key="fqr_refiner").options == ["qwen2.5-1.5b", "smollm2-135m", "corpus keywords"]
    at.selectbox(key="fqr_refiner").set_value("corpus keywords").run()
    at.button(key="fqr_run").click().run()
    assert not at.exception
    steps = [m.value for m in at.markdown if m.value.startswith("**0.**") or m.value.startswith("**1.**")]
    assert steps and steps[0].startswith("**0.** award-winning film directors") and "Δ =" in steps[0]
    assert len(steps) == 2 and "<mark" in steps[1]  # a refinement happened: its keywords are highlighted
    tables = [d.value for d in at.dataframe]
    final = next(t for t in tables if "relevance" in t.columns)
    assert final["rank"].tolist() == list(range(1, 21)) and final["doc_id"].is_unique
    people = load_collection("people")
    regions = dict(zip(people.doc_ids, people.group_of("region", fill="Unknown")))
    assert final["group"].tolist() == [regions[d] for d in final["doc_id"]]
    systems = next(t for t in tables if "system" in t.columns)
    assert systems["system"].tolist()[-2:] == ["FAIR-QR [no re-rank]", "FAIR-QR"]
    assert systems["awrf"].between(0, 1).all()
    assert len(at.get("plotly_chart")) == 2  # group shares per iteration, Δ per iteration


def test_fair_qr_page_explains_collections_without_groups_and_bad_targets():
    at = start(FAIR_QR)  # running-shoes documents carry a segment label only
    assert not at.exception
    at.sidebar.selectbox(key="collection_choice").set_value("people").run()
    at.switch_page(FAIR_QR).run()
    at.selectbox(key="fqr_refiner").set_value("corpus keywords").run()
    at.selectbox(key="fqr_target").set_value("custom").run()
    assert not at.exception
    at.text_input(key="fqr_query:people").set_value("qwertyuiop").run()
    at.selectbox(key="fqr_target").set_value("relevant").run()
    at.button(key="fqr_run").click().run()
    assert not at.exception and at.error, "a free query has no relevant documents: the page must say so"


def test_a_busy_run_store_is_a_message_not_an_exception_box(monkeypatch):
    from fairrag_core.audit.store import RunStore
    from fairrag_core.errors import StoreBusyError

    def busy(self, **scope):
        raise StoreBusyError("the run store is busy: process 4242 has held it for 120 s; try again when it finishes")

    monkeypatch.setattr(RunStore, "list", busy)
    at = start("app_pages/audit.py")
    assert not at.exception
    assert any("process 4242" in e.value for e in at.error)
