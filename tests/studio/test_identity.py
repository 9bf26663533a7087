"""Data keeps its identity: uploads keep their name and sha256, a browser's uploads are kept under its owner key,
every input of an audit is recorded, and the same request has the same fingerprint (pure functions, no app)."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from fairrag_core import load_collection
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_studio.services import identity, uploads
from fairrag_studio.views.served import build_log_report, read_served, save_served_upload, served_label

CORPUS = b'{"doc_id": "d1", "text": "a red shoe", "provider": "P"}\n{"doc_id": "d2", "text": "a blue shoe"}\n'
QUERIES = b'{"query_id": "q1", "text": "red shoe", "answer": "red"}\n'
QRELS = b"q1 0 d1 1\nq1 0 d2 1\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_collection_upload_keeps_its_name_and_its_sha256(tmp_path):
    folder = uploads.save_collection_upload(tmp_path, ("my-news.jsonl", CORPUS), ("queries.jsonl", QUERIES),
                                            ("labels.txt", QRELS))
    collection = load_collection(folder)
    assert collection.name == "my-news" and collection.doc_ids == ["d1", "d2"]
    expected = sha(f"corpus:{sha(CORPUS)}\nqueries:{sha(QUERIES)}\nqrels:{sha(QRELS)}\n".encode())
    found = identity.collection_identity(str(folder))
    assert (found.name, found.sha256, found.upload) == ("my-news", expected, True)
    assert found.text == f"my-news (upload, sha256 {expected[:12]}…)"
    assert identity.collection_label(str(folder)) == found.text and identity.collection_label("people") == "people"
    qrels = identity.qrels_identity(str(folder))
    assert (qrels.name, qrels.sha256) == ("labels.txt", sha(QRELS))  # the uploaded file's own name
    # the same files under another name: another folder, the same sha256; a name given in the sidebar wins
    other = uploads.save_collection_upload(tmp_path, ("corpus.jsonl", CORPUS), ("q.jsonl", QUERIES),
                                           ("qrels.txt", QRELS), name="Class 3B")
    assert other.name == "Class-3B" and identity.collection_identity(str(other)).sha256 == expected
    # a demo collection is named by its name and has a sha256 of its files too
    demo = identity.collection_identity("running-shoes")
    assert demo.name == "running-shoes" and len(demo.sha256) == 64 and not demo.upload


def test_uploads_are_kept_per_owner_and_forgotten_when_their_files_go(tmp_path):
    folder = uploads.save_collection_upload(tmp_path, ("my-news.jsonl", CORPUS), None, None)
    log = save_served_upload("week 1.jsonl", b'{"query_id": "q1", "ranking": ["d1"]}\n', tmp_path)
    item = identity.served_identity(log, "log", rankings=1, upload=True)
    uploads.remember_collection(tmp_path, "owner-a", folder, selected=True)
    uploads.remember_served(tmp_path, "owner-a", item)
    uploads.remember_served(tmp_path, "owner-a", item)  # no repeats
    kept = uploads.kept_uploads(tmp_path, "owner-a")
    assert kept.collection == str(folder) and kept.collection_selected
    assert [s.name for s in kept.served] == ["week_1.jsonl"] and kept.served[0].sha256 == item.sha256
    assert uploads.kept_uploads(tmp_path, "owner-b") == uploads.KeptUploads()  # another browser sees nothing
    uploads.select_collection(tmp_path, "owner-a", False)
    assert not uploads.kept_uploads(tmp_path, "owner-a").collection_selected
    assert "owner-a" not in uploads.owner_index(tmp_path, "owner-a").name  # the key is written nowhere
    log.unlink()
    assert uploads.kept_uploads(tmp_path, "owner-a").served == ()


def test_a_run_file_counts_its_lines_and_its_rankings(tmp_path, shoes):
    ids = shoes.doc_ids
    text = "".join(f"rs-q01 {s} {d} {r} {10 - r} sys\n" for s in (1, 2) for r, d in enumerate(ids[s:s + 3], 1))
    path = save_served_upload("system.trec", text.encode(), tmp_path)
    log, kind = read_served(path, shoes)
    item = identity.served_identity(path, kind, rankings=len(log), sha256=log.sha256, upload=True)
    assert (item.role, item.lines, item.rankings, item.sha256) == ("run", 6, 2, sha(text.encode()))
    assert item.counts == "6 lines holding 2 rankings"
    assert identity.count_lines(path) == 6
    packed = tmp_path / "run.gz"
    packed.write_bytes(gzip.compress(text.encode().rstrip(b"\n")))  # no final newline: still 6 lines
    assert identity.count_lines(packed) == 6


def test_a_log_audit_records_its_inputs_and_its_report_names_them(tmp_path, shoes):
    ids = shoes.doc_ids
    text = "".join(f"rs-q01 {s} {d} {r} {10 - r} sys\n" for s in range(1, 5) for r, d in enumerate(ids[s:s + 3], 1))
    path = save_served_upload("run.trec", text.encode(), tmp_path)
    log, kind = read_served(path, shoes)
    served = identity.served_identity(path, kind, rankings=len(log), sha256=log.sha256, upload=True)
    inputs = [served, identity.collection_identity("running-shoes"), identity.qrels_identity("running-shoes")]
    run = audit_rag_log(log, shoes, LogAuditConfig(log=str(path), seed=1), collection_source="running-shoes")
    run = identity.with_inputs(run, inputs, fingerprint_of="f" * 64)
    assert run.record.extra["inputs"][0]["sha256"] == sha(text.encode()) and run.record.extra["fingerprint"] == "f" * 64
    assert identity.record_inputs(run.record) == inputs
    assert identity.served_counts(run.record) == "12 lines holding 4 rankings"
    assert served_label(run) == f"run.trec (upload, sha256 {sha(text.encode())[:12]}…) · 12 lines holding 4 " \
                                "rankings · 1 queries"
    html = build_log_report(run, shoes, renderer=lambda figs: [b"<svg/>"] * len(figs))
    assert "<title>Fairness audit of a served run</title>" in html
    assert f"<dt>served run</dt><dd>run.trec (upload; sha256 {sha(text.encode())}" in html
    assert "<dt>run file</dt><dd>12 lines holding 4 rankings</dd>" in html
    assert f"<dt>collection</dt><dd>running-shoes (sha256 {inputs[1].sha256})</dd>" in html
    assert f"<dt>qrels</dt><dd>qrels.txt (sha256 {inputs[2].sha256})</dd>" in html
    assert "served log" not in html and "log sha256" not in html
    # the reproduce command names the upload by its name, and says where this server keeps it
    command, note = identity.reproduce_command(run.record)
    assert command.startswith("python -m fairrag_core audit-log run.trec --collection running-shoes")
    assert str(path) in note and sha(text.encode()) in note and "run.trec is your uploaded run file" in note


def test_a_log_report_counts_lines_and_keeps_older_records_readable(tmp_path, shoes):
    ids = shoes.doc_ids
    rows = [{"query_id": "rs-q01", "ranking": ids[i:i + 3]} for i in range(5)]
    path = tmp_path / "served.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run = audit_rag_log(path, shoes, LogAuditConfig(seed=1))  # as the CLI saves it: no inputs recorded
    assert identity.served_kind(run.record) == "log" and identity.served_counts(run.record) == "5 lines"
    found = identity.record_inputs(run.record)
    assert [i.role for i in found] == ["log", "collection", "qrels"] and found[0].sha256 == run.record.extra[
        "log_sha256"]
    html = build_log_report(run, shoes, renderer=lambda figs: [b"<svg/>"] * len(figs))
    assert "<title>Fairness audit of a RAG log</title>" in html and "<dt>lines</dt><dd>5 lines</dd>" in html


def test_the_fingerprint_is_the_inputs_content_and_the_settings():
    one = identity.InputIdentity("log", "a.jsonl", "1" * 64, "/x/a.jsonl")
    renamed = identity.InputIdentity("log", "b.jsonl", "1" * 64, "/y/b.jsonl", upload=True)
    changed = identity.InputIdentity("log", "a.jsonl", "2" * 64, "/x/a.jsonl")
    settings = {"k": 5, "seed": 42}
    assert identity.fingerprint("audit-log", [one], settings) == identity.fingerprint("audit-log", [renamed], settings)
    assert identity.fingerprint("audit-log", [one], settings) != identity.fingerprint("audit-log", [changed], settings)
    assert identity.fingerprint("audit-log", [one], settings) != identity.fingerprint("audit-log", [one], {"k": 6})


@pytest.mark.parametrize("name", ["../../etc/x.jsonl", "..", "ok-name.csv"])
def test_upload_names_are_safe_folder_names(name):
    made = uploads.upload_name(name)
    assert made and "/" not in made and not made.startswith(".")
