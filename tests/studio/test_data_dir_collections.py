"""Collections on the server (issue 30, Must have 4): a folder of ``$FAIRRAG_DATA_DIR`` holding a collection (the
folder format the loaders read) is offered in the sidebar's collection box under its folder name and opens there; a
collection whose files lead out of the data folder is not offered, and one too large for the memory budget says so
when picked."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fairrag_core import load_collection
from fairrag_studio.services.data_dir import (
    COLLECTION_MEMORY_FACTOR,
    DATA_DIR_ENV,
    DataDirError,
    checked_data_collection,
    data_collections,
    data_files,
)

APP = str(Path(__file__).resolve().parents[2] / "app.py")
CORPUS = "".join(f'{{"doc_id": "pkg{i}", "text": "package {i} a python web framework", "provider": "team{i % 4}"}}\n'
                 for i in range(12))
QUERIES = '{"query_id": "d00", "text": "python web framework"}\n'
QRELS = "d00 0 pkg1 1\nd00 0 pkg2 1\n"


@pytest.fixture(autouse=True)
def _stores(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.setenv("FAIRRAG_INDEX", "off")
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(resources, "UPLOAD_ROOT", tmp_path / "uploads")
    resources.run_store.clear()
    yield
    resources.run_store.clear()


def write_collection(folder: Path, corpus: str = CORPUS) -> Path:
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(corpus)
    (folder / "queries.jsonl").write_text(QUERIES)
    (folder / "qrels.txt").write_text(QRELS)
    return folder


@pytest.fixture()
def data(tmp_path):
    """A data folder with a collection at the top, one two levels down, a log, a folder without a corpus and a
    collection whose corpus is a symlink to a file outside."""
    root = tmp_path / "data"
    write_collection(root / "debian")
    write_collection(root / "ir" / "trec-fair")
    (root / "logs").mkdir()
    (root / "logs" / "log.jsonl").write_text('{"query_id": "d00", "ranking": ["pkg1"]}\n')
    secret = write_collection(tmp_path / "secret")
    (root / "leak").mkdir()
    (root / "leak" / "corpus.jsonl").symlink_to(secret / "corpus.jsonl")
    return root


def test_collection_folders_are_listed_and_a_corpus_from_outside_is_not(data):
    assert data_collections(data) == ["debian", "ir/trec-fair"]
    assert data_files(data) == ["logs/log.jsonl"]  # a collection's own files are not offered as logs
    assert checked_data_collection("debian", data) == data / "debian"
    with pytest.raises(DataDirError, match=r"'leak/corpus.jsonl' leads outside the data folder"):
        checked_data_collection("leak", data)
    with pytest.raises(DataDirError, match=r"is outside the data folder"):
        checked_data_collection("../secret", data)
    with pytest.raises(DataDirError, match=r"'logs' holds no corpus.jsonl or corpus.csv"):
        checked_data_collection("logs", data)


def test_a_collection_too_large_for_the_memory_budget_is_refused_with_the_fix(tmp_path, monkeypatch):
    big = write_collection(tmp_path / "data" / "big", CORPUS * 2000)  # about 1.3 MB of files
    size = sum(p.stat().st_size for p in big.iterdir())
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "1")
    assert data_collections(tmp_path / "data") == ["big"]  # listed: picking it says why it does not open
    with pytest.raises(DataDirError, match=rf"the collection 'big' \({size / 1e6:.1f} MB of files\) needs "
                                           rf"{size * COLLECTION_MEMORY_FACTOR / 1e6:,.0f} MB, more than the 1 MB"):
        checked_data_collection("big", tmp_path / "data")


def test_the_sidebar_offers_the_data_folders_collections_and_opens_one(data, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(data))
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception, at.exception
    box = at.sidebar.selectbox(key="collection_choice")
    assert [o for o in box.options if o.endswith("(data folder)")] == ["debian (data folder)",
                                                                       "ir/trec-fair (data folder)"]
    box.set_value("debian (data folder)").run()
    assert not at.exception, at.exception
    assert at.session_state["settings"].collection == str(data / "debian")
    sha = load_collection(data / "debian").sha256
    captions = [c.value for c in at.sidebar.caption]
    assert f"**debian \\(sha256 {sha[:12]}…\\)**" in captions
    assert "12 documents · 1 queries · 4 providers · categories: none" in captions
    assert at.text_input(key="query").value == "python web framework"  # the collection's own first query
    assert not at.error


def test_without_the_variable_no_server_collection_is_offered():
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not [o for o in at.sidebar.selectbox(key="collection_choice").options if o.endswith("(data folder)")]
