"""Data keeps its identity in the app (AppTest): an upload keeps its name and sha256 and survives a reload for its
owner (a new session with the same ``?owner=`` key), a second audit of the same input with the same settings reopens
the stored run instead of adding a copy, and changing the collection replaces a query taken from the old
collection's examples but keeps a typed one, with a note.

AppTest cannot drive a file uploader, so an upload is made the way the sidebar and the Audit page make it
(:func:`fairrag_studio.services.resources.save_upload`, :func:`fairrag_studio.views.served.save_served_upload`, kept
for the owner by :mod:`fairrag_studio.services.uploads`); the real upload and reload run in
``test_upload_reload_browser.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fairrag_core import load_collection
from fairrag_core.audit.store import RunStore
from fairrag_studio.services import identity, owners, uploads
from fairrag_studio.views.served import read_served, save_served_upload

APP = str(Path(__file__).resolve().parents[2] / "app.py")
AUDIT = "app_pages/audit.py"
CORPUS = "".join(f'{{"doc_id": "n{i}", "text": "news story {i} about the harbour", "provider": "P{i % 3}"}}\n'
                 for i in range(8)).encode()
QUERIES = b'{"query_id": "h1", "text": "harbour news", "answer": "the harbour"}\n'
QRELS = b"h1 0 n1 1\nh1 0 n2 1\n"


@pytest.fixture(autouse=True)
def _stores(tmp_path, monkeypatch):
    """A fresh run store and upload folder per test (and the owner-key secret beside that run store)."""
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_DATA_DIR", raising=False)
    monkeypatch.setenv("FAIRRAG_SHARED_STORE", "0")  # each browser its own runs, as on a served app
    monkeypatch.setattr(resources, "UPLOAD_ROOT", tmp_path / "uploads")
    resources.run_store.clear()
    yield
    resources.run_store.clear()


def session(owner: str | None = None, page: str | None = None) -> AppTest:
    """A new browser session (a reload when ``owner`` is the key of an earlier one)."""
    at = AppTest.from_file(APP, default_timeout=120)
    if owner is not None:
        at.query_params["owner"] = owner
    at.run()
    assert not at.exception, at.exception
    if page is not None:
        at.switch_page(page).run()
        assert not at.exception, at.exception
    return at


def test_an_uploaded_collection_keeps_its_name_and_comes_back_after_a_reload():
    from fairrag_studio.services import resources

    owner = owners.new_key()
    folder = resources.save_upload(("my-news.jsonl", CORPUS), ("queries.jsonl", QUERIES), ("qrels.txt", QRELS))
    uploads.remember_collection(resources.UPLOAD_ROOT, owner, folder)  # what "Load this collection" writes
    sha = identity.collection_identity(str(folder)).sha256
    at = session(owner)  # a reload: a new session, the same key in the address
    assert at.sidebar.selectbox(key="collection_choice").value == "my-news (your upload)"
    assert at.session_state["settings"].collection == str(folder)
    assert f"**my\\-news \\(upload, sha256 {sha[:12]}…\\)**" in [c.value for c in at.sidebar.caption]
    assert "my-news (your upload)" in at.sidebar.selectbox(key="collection_choice").options
    assert at.text_input(key="query").value == "harbour news"  # the upload's own first query
    # the Audit page labels its stored run with the upload's name and sha256, not its folder
    at.switch_page(AUDIT).run()
    at.text_input(key="audit_alphas").set_value("2").run()
    at.button(key="audit_run").click().run()
    assert not at.exception
    listed = RunStore().list()
    assert listed["label"].tolist() == [f"my-news (upload, sha256 {sha[:12]}…) · 1 queries · exposure only"]
    # picking a demo collection is kept too: after the next reload the upload is offered, not selected
    at.sidebar.selectbox(key="collection_choice").set_value("people").run()
    again = session(owner)
    assert again.sidebar.selectbox(key="collection_choice").value == "running-shoes"
    assert "my-news (your upload)" in again.sidebar.selectbox(key="collection_choice").options
    # another browser (another key) never sees it
    other = session()
    assert other.session_state["uploaded_collection"] is None
    assert "Upload your own…" in other.sidebar.selectbox(key="collection_choice").options


def run_file(shoes) -> bytes:
    ids = shoes.doc_ids
    return "".join(f"rs-q01 {s} {d} {r} {10 - r} sys\n" for s in range(1, 5)
                   for r, d in enumerate(ids[s:s + 3], 1)).encode()


def served_session(owner: str) -> AppTest:
    at = session(owner, AUDIT)
    at.radio(key="served_source").set_value("Upload").run()
    assert not at.exception, at.exception
    return at


def test_an_uploaded_run_survives_a_reload_and_a_second_audit_reopens_the_stored_run(shoes):
    from fairrag_studio.services import resources

    owner = owners.new_key()
    data = run_file(shoes)
    path = save_served_upload("system run.trec", data, resources.UPLOAD_ROOT)
    log, kind = read_served(path, shoes)
    uploads.remember_served(resources.UPLOAD_ROOT, owner,  # what the Audit page writes for an upload
                            identity.served_identity(path, kind, rankings=len(log), upload=True))
    at = served_session(owner)  # after a reload, the uploader is empty: the kept upload is offered
    assert at.selectbox(key="served_kept").value == str(path)
    short = identity.short_sha(identity.file_sha256(path))
    read = [i.value for i in at.info if "served rankings" in i.value]
    assert read == [f"Run read: 4 served rankings over 1 queries, from system\\_run\\.trec \\(upload, sha256 "
                    f"{short}\\) (12 lines holding 4 rankings). Press **Audit the served rankings**."]
    at.button(key="served_run").click().run()
    assert not at.exception
    first = next(re.search(r"\*\*(\w+)\*\*", c.value)[1] for c in at.caption if c.value.startswith("Saved in"))
    stored = RunStore().list()
    assert stored["run_id"].tolist() == [first]
    assert stored["label"].tolist() == [f"run · system_run.trec (upload, sha256 {short}) · 12 lines holding 4 "
                                        "rankings · 1 queries"]
    record = RunStore().load_record(first)
    assert [i["role"] for i in record.extra["inputs"]] == ["run", "collection", "qrels"]
    assert record.extra["inputs"][0]["sha256"] == identity.file_sha256(path) and record.extra["fingerprint"]
    inputs = [c.value for c in at.caption if c.value.startswith("Inputs:")]
    assert inputs[0].startswith("Inputs: run file **system\\_run\\.trec \\(upload, sha256") and \
        "(12 lines holding 4 rankings) · collection **running\\-shoes" in inputs[0]

    again = served_session(owner)  # reload, audit the same file with the same settings: no second row
    again.button(key="served_run").click().run()
    assert not again.exception
    assert any(c.value.startswith(f"Reopened stored run **{first}**") for c in again.caption)
    assert RunStore().list()["run_id"].tolist() == [first]
    again.number_input(key="served_k").set_value(2).run()  # other settings: a new run
    again.button(key="served_run").click().run()
    assert len(RunStore().list()) == 2

    other = served_session(owners.new_key())  # another browser: nothing offered
    assert not [s for s in other.selectbox if s.key == "served_kept"]
    assert any(i.value == "Pick a log or a run file." for i in other.info)


def test_changing_the_collection_replaces_an_example_query_and_keeps_a_typed_one():
    at = session()
    shoes, people, news = (load_collection(n) for n in ("running-shoes", "people", "news"))
    assert at.text_input(key="query").value == shoes.queries[0].text
    at.sidebar.selectbox(key="collection_choice").set_value("people").run()
    assert not at.exception
    assert at.text_input(key="query").value == people.queries[0].text  # an example of the old one: replaced
    assert not [c for c in at.caption if c.value.startswith("Not one of")]
    assert at.metric[1].value != "—"  # EE-R is there: the query has labels in this collection
    at.text_input(key="query").set_value("award-winning directors from my town").run()
    at.sidebar.selectbox(key="collection_choice").set_value("news").run()
    assert not at.exception
    assert at.text_input(key="query").value == "award-winning directors from my town"  # typed: kept
    assert [c.value for c in at.caption if c.value.startswith("Not one of")] == [
        "Not one of news's queries: it has no relevance labels and no gold answer here, so EE-R and EU are not "
        "available. Pick an example query to see them."]
    assert news.find_query(at.text_input(key="query").value) is None
