"""Which tour steps a prepared class replays from the cache (the note the Playground and FAIR-QR pages show)."""

import io

import pytest
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core import load_collection
from fairrag_core.cli import main
from fairrag_core.data.disk_cache import DiskCache
from fairrag_core.models import catalog
from fairrag_core.rag import attribution
from fairrag_core.rag.generation import AnswerCache, Generator
from fairrag_core.rag.pipeline import RagConfig
from fairrag_core.rag.prepared import CLASS_STEPS, is_prepared, plan_answers, prepared_class, prepared_note
from fairrag_core.retrieval import BM25Retriever


@pytest.fixture()
def cache(monkeypatch, tmp_path):
    monkeypatch.setattr(catalog, "load_language_model", lambda name, device=None: FirstDocumentModel("fake-gen"))
    monkeypatch.setattr(attribution, "load_attributor", lambda name=None, device=None: SubstringAttributor())
    path = tmp_path / "cache.sqlite"
    monkeypatch.setenv("FAIRRAG_CACHE_DB", str(path))
    return path


def warm(*extra):
    return main(["warm", "--queries", "rs-q01", "--alphas", "2,inf", "--quiet", *extra], out=io.StringIO())


def test_nothing_is_prepared_before_make_class(cache):
    assert not is_prepared("answers", cache) and prepared_note(cache) is None
    assert warm() == 0  # warmed, but not recorded as the class
    assert not is_prepared("answers", cache) and prepared_note(cache) is None


def test_step_3_is_prepared_while_the_cache_holds_every_answer(cache):
    assert warm("--mark-class", "--preset", "fast") == 0
    assert is_prepared("answers", cache) and is_prepared("fair-qr", cache)
    assert prepared_note(cache) == "Prepared for the class: step 3 answers ✓, FAIR-QR ✓"
    DiskCache(cache).clear("answer")  # the cache was emptied since: the steps run live again
    assert not is_prepared("answers", cache) and is_prepared("fair-qr", cache)
    assert prepared_note(cache) == "Prepared for the class: step 3 answers ✗ (runs live), FAIR-QR ✓"
    DiskCache(cache).clear("refinement")
    assert prepared_note(cache) == "Prepared for the class: step 3 answers ✗ (runs live), FAIR-QR ✗ (runs live)"
    with pytest.raises(KeyError, match="unknown tour step 'step 9'; use one of answers, fair-qr"):
        is_prepared("step 9", cache)
    assert list(CLASS_STEPS) == ["answers", "fair-qr"]


def test_make_class_runs_the_fair_qr_showcase_once_and_a_second_run_needs_no_model(cache, capsys):
    assert warm("--mark-class", "--preset", "fast") == 0
    first = capsys.readouterr().err
    assert "FAIR-QR 'award-winning film directors': 1 refinements, 0 of 1 replies cached" in first
    keys = prepared_class(cache).refinement_keys
    assert len(keys) == 1 and DiskCache(cache).stats().entries["refinement"] == 1
    assert main(["warm", "--queries", "rs-q01", "--alphas", "2,inf", "--mark-class", "--preset", "fast"],
                out=io.StringIO()) == 0
    again = capsys.readouterr().err
    assert "refinement 1 (FAIR-QR 'award-winning film directors', toward " in again
    assert again.count(") cached\n") >= 1 and "1 refinements, 1 of 1 replies cached" in again
    assert prepared_class(cache).refinement_keys == keys and is_prepared("fair-qr", cache)


def test_the_plan_counts_the_pipelines_distinct_lists_and_what_is_cached(cache):
    shoes = load_collection("running-shoes")
    disk = DiskCache(cache)
    generator = Generator(FirstDocumentModel("fake-gen"), cache=AnswerCache(disk=disk))
    config = RagConfig(alpha=2.0, n_samples=20, k=5, seed=42, candidates=20)
    plan = plan_answers(shoes, BM25Retriever(shoes.texts), generator, [shoes.query("rs-q01")], [2.0, float("inf")],
                        config)
    assert [(t.query_id, t.alpha, t.answers, t.cached, t.todo) for t in plan] == \
        [("rs-q01", 2.0, 20, 0, 20), ("rs-q01", float("inf"), 1, 0, 1)]
    assert len({k for t in plan for k in t.keys}) == 21
    assert warm() == 0
    generator = Generator(FirstDocumentModel("fake-gen"), cache=AnswerCache(disk=disk))
    again = plan_answers(shoes, BM25Retriever(shoes.texts), generator, [shoes.query("rs-q01")], [2.0], config)
    assert (again[0].cached, again[0].todo, again[0].keys) == (20, 0, plan[0].keys)


def test_the_fair_qr_page_says_which_steps_are_prepared(cache, monkeypatch, tmp_path):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    resources.run_store.clear()
    assert warm("--mark-class", "--preset", "fast") == 0
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120).run()
    at.sidebar.selectbox(key="collection_choice").set_value("people").run()
    at.switch_page("app_pages/fair_qr.py").run()
    assert not at.exception
    assert "Prepared for the class: step 3 answers ✓, FAIR-QR ✓" in [c.value for c in at.caption]
    resources.run_store.clear()
