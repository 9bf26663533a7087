"""The Served tab audits a `collect` store of the data folder by service and window (the controls audit-log's
--service/--since/--until are), and two such audits compare with each system named by its run id and its file; a
trace export upload streams through the trace reader's cut, limited in requests kept, not bytes of text."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fairrag_core import DataFormatError
from fairrag_core.data import load_served
from fairrag_studio.views.served import read_served, save_served_upload
from tests.data.test_collector_window import make_store
from tests.data.test_traces import served

APP = str(Path(__file__).resolve().parents[2] / "app.py")
AUDIT = "app_pages/audit.py"


@pytest.fixture(autouse=True)
def _run_store(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    resources.run_store.clear()
    yield
    resources.run_store.clear()


@pytest.fixture
def store_page(tmp_path, monkeypatch) -> AppTest:
    """The Audit page's Served tab with the data folder's collected store ``traces/`` chosen (:func:`make_store`:
    services svc-a and svc-b, 2026-11-27T10 to 12)."""
    make_store(tmp_path / "data" / "traces")
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(AUDIT).run()
    at.radio(key="served_source").set_value("Data folder").run()
    at.selectbox(key="served_file").set_value("traces/").run()
    return at


def _audit_window(at: AppTest, service: str) -> str:
    at.selectbox(key="served_service").set_value(service).run()
    at.text_input(key="served_since").input("2026-11-27T10").run()
    at.text_input(key="served_until").input("2026-11-27T12:00Z").run()
    at.radio(key="served_providers").set_value("domain").run()
    at.button(key="served_run").click().run()
    assert not at.exception and not at.error
    return next(c.value for c in at.code if "audit-log" in c.value)


def test_a_store_in_the_data_folder_is_audited_by_service_and_window_and_compared(store_page):
    at = store_page
    assert "traces/ (collected store)" in at.selectbox(key="served_file").options
    assert not at.exception
    assert at.selectbox(key="served_service").options == ["every service", "svc-a", "svc-b"]
    assert any("the store holds services svc-a, svc-b from 2026-11-27T10 to 2026-11-27T12" in c.value
               for c in at.caption)
    command = _audit_window(at, "svc-a")
    assert command.endswith("--provider-from domain:metadata.url --service svc-a --since 2026-11-27T10:00:00Z "
                            "--until 2026-11-27T12:00:00Z")
    assert any("started outside the window" in w.value for w in at.warning)
    assert _audit_window(at, "svc-b").endswith("--service svc-b --since 2026-11-27T10:00:00Z "
                                               "--until 2026-11-27T12:00:00Z")
    stored = at.multiselect(key="stored_pick")
    stored.set_value(stored.options[:2]).run()
    assert not at.exception and not at.error
    labels = at.multiselect(key="compare_systems").options  # each system by its run id and what it audited
    assert sorted(label.split(" · ")[1] for label in labels) == ["svc-a", "svc-b"]
    assert all(label.startswith("run:") for label in labels)
    findings = [m.value for m in at.markdown if "svc-a: " in m.value or "svc-b: " in m.value]
    assert findings and "citation share" in " ".join(findings)  # each system's label-free findings, as audit-log's
    saved = [c.value for c in at.caption if c.value.startswith("Saved in the run store as **")][-1]  # the comparison
    comparison = saved.split("**")[1]
    at.multiselect(key="stored_pick").set_value([comparison]).run()  # the stored comparison, reopened alone
    assert not at.exception and not at.error
    assert [m.value for m in at.markdown if "svc-a: " in m.value or "svc-b: " in m.value] == findings


def test_a_time_the_window_cannot_read_is_a_message(store_page):
    at = store_page
    at.text_input(key="served_since").input("yesterday").run()
    assert not at.exception and any("cannot read the time 'yesterday'" in e.value for e in at.error)
    at.text_input(key="served_since").input("2026-12-01").run()
    assert not at.exception and any("no hour of the store is in the window" in e.value for e in at.error)


def _export(requests: int, text_bytes: int) -> bytes:
    """An OpenInference export, one request a line: a root span, a RETRIEVER span with five documents whose texts
    are ``text_bytes`` long, an LLM span whose input message (the prompt) holds them."""
    def kv(key, value):
        return {"key": key, "value": {"stringValue": value}}

    lines = []
    for r in range(requests):
        trace, docs = f"{r:032x}", [f"d{(r + j) % 40}" for j in range(5)]
        attributes = [kv("openinference.span.kind", "RETRIEVER"), kv("input.value", f"question {r}")]
        for j, doc in enumerate(docs):
            attributes += [kv(f"retrieval.documents.{j}.document.id", doc),
                           kv(f"retrieval.documents.{j}.document.content", f"{doc} " + "x" * text_bytes),
                           kv(f"retrieval.documents.{j}.document.metadata", json.dumps({"source": f"P{doc[-1]}"}))]
        start = str(1_795_000_000_000_000_000 + r * 10**9)
        spans = [{"traceId": trace, "spanId": "0000000000000001", "name": "query", "startTimeUnixNano": start,
                  "attributes": [kv("fairrag.query_id", f"q{r % 30}")]},
                 {"traceId": trace, "spanId": "0000000000000002", "parentSpanId": "0000000000000001",
                  "name": "retrieve", "startTimeUnixNano": start, "attributes": attributes},
                 {"traceId": trace, "spanId": "0000000000000003", "parentSpanId": "0000000000000001", "name": "llm",
                  "startTimeUnixNano": start, "attributes": [kv("openinference.span.kind", "LLM"),
                                                             kv("llm.input_messages.0.message.content",
                                                                "y" * (5 * text_bytes))]}]
        lines.append(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return ("\n".join(lines) + "\n").encode()


def test_a_60_mb_trace_export_upload_is_taken_slimmed_with_bounded_memory(tmp_path):
    data = _export(300, 20_000)
    assert len(data) > 60_000_000  # over the 50 MB byte limit other uploads meet
    original = tmp_path / "deploy.otlp.jsonl"
    original.write_bytes(data)
    upload = io.BytesIO(data)
    tracemalloc.start()
    try:
        path = save_served_upload("deploy.otlp.jsonl", upload, tmp_path / "uploads")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000  # one line (one request, 300 kB of text) at a time, not the 60 MB
    assert path.name == "deploy.otlp.jsonl" and path.stat().st_size < len(data) / 100  # no texts, no prompts
    assert b"xxxx" not in path.read_bytes() and b"yyyy" not in path.read_bytes()
    log, kind = read_served(path, None)
    assert (kind, log.format, len(log)) == ("log", "otlp", 300)
    assert [s[1:] for s in served(log)] == [s[1:] for s in served(load_served(original))]


def test_an_upload_over_the_request_limit_names_the_command_line(tmp_path, monkeypatch):
    from fairrag_studio.services import uploads

    monkeypatch.setattr(uploads, "MAX_UPLOAD_REQUESTS", 100)
    with pytest.raises(DataFormatError) as err:
        save_served_upload("big.otlp.jsonl", _export(101, 10), tmp_path / "uploads")
    assert "more than 100 requests (traces), the most the app audits from an upload; audit it with the command line " \
           "(python -m fairrag_core audit-log FILE), or point the deployment's exporter at `fairrag collect`" \
           in str(err.value) and "\n" not in str(err.value)
    assert not list((tmp_path / "uploads").glob("served-*"))  # nothing kept of it
    assert save_served_upload("ok.otlp.jsonl", _export(100, 10), tmp_path / "uploads").is_file()


def test_the_trace_map_is_a_control_and_in_the_command(store_page):
    at = store_page
    at.text_input(key="served_trace_map").input("bogus=x").run()
    assert not at.exception and any("unknown trace field(s) ['bogus']" in e.value for e in at.error)
    at.text_input(key="served_trace_map").input("session=app.session").run()
    at.radio(key="served_providers").set_value("metadata").run()
    at.button(key="served_run").click().run()
    assert not at.exception and not at.error
    command = next(c.value for c in at.code if "audit-log" in c.value)
    assert "--trace-map session=app.session" in command and "--service" not in command


def test_the_merit_rule_is_a_control_and_in_the_command(store_page):
    """'Merit tiers' and 'Merit threshold' are audit-log's --merit-grades and --merit-threshold: in the audit's
    settings and its reproduce command; a threshold that is no number is one message naming the control."""
    at = store_page
    at.radio(key="served_providers").set_value("domain").run()
    at.text_input(key="served_merit_threshold").input("high").run()
    assert not at.exception and any("'Merit threshold': expected a score (a number)" in e.value for e in at.error)
    at.text_input(key="served_merit_threshold").input("0.5").run()
    at.number_input(key="served_merit_grades").set_value(2).run()
    at.button(key="served_run").click().run()
    assert not at.exception and not at.error
    command = next(c.value for c in at.code if "audit-log" in c.value)
    assert command.endswith("--merit-grades 2 --merit-threshold 0.5")
