"""The OTLP/HTTP receiver on 127.0.0.1 (an ephemeral port, in a thread): protobuf and JSON (gzip too) stored and
read back as the same served lines and audit as the export they came from, across a restart; what is not kept is
not stored; bad payloads 400, too large 413, other types 415, a full queue 503 with Retry-After; a torn last line
is cut on reopening; the real OpenTelemetry SDK exporter, pointed at the receiver, needs no glue."""

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.data import assets_dir, collector, load_served
from fairrag_core.data.collector import Receiver, TraceStore, gzip_body
from fairrag_core.data.otlp_proto import json_to_request
from fairrag_core.data.traces import ProviderSource, documents_from_log
from tests.data.test_traces import _same_audit, served

DEMO_TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"
PROTOBUF, JSON = "application/x-protobuf", "application/json"


def demo_exports():
    return [json.loads(line) for line in DEMO_TRACES.read_text(encoding="utf-8").splitlines() if line.strip()]


def post(url, body, content_type, *, encoding=None, headers=None):
    headers = {"Content-Type": content_type, **({"Content-Encoding": encoding} if encoding else {}), **(headers or {})}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)


@pytest.fixture
def receiver(tmp_path):
    started = []

    def start(**kwargs):
        r = Receiver(tmp_path / "store", port=0, **kwargs).start()
        started.append(r)
        return r

    yield start
    for r in started:
        r.stop()


def test_protobuf_and_json_requests_across_a_restart_audit_as_the_export(receiver, tmp_path, shoes):
    exports = demo_exports()
    first = receiver()
    assert first.host == "127.0.0.1" and first.port > 0
    for i, export in enumerate(exports[:20]):
        if i % 2:
            status, body, headers = post(first.url, json_to_request(export).SerializeToString(), PROTOBUF)
            assert (status, body, headers["Content-Type"]) == (200, b"", PROTOBUF)
        else:
            status, body, _ = post(first.url, gzip_body(json.dumps(export).encode()), JSON, encoding="gzip")
            assert (status, body) == (200, b"{}")
    first.stop()
    assert first.counts == {"requests": 20, "spans": sum(len(s["spans"]) for e in exports[:20]
                                                         for rs in e["resourceSpans"] for s in rs["scopeSpans"]),
                            "rejected": 0, "busy": 0}
    second = receiver()  # the same store, a new process's receiver
    for export in exports[20:]:
        assert post(second.url, json_to_request(export).SerializeToString(), PROTOBUF)[0] == 200
    second.stop()
    store = tmp_path / "store"
    assert [p.parent.name for p in store.glob("*/*.jsonl")] == ["running-shoes-helpbot"]
    collected, export = load_served(store), load_served(DEMO_TRACES)
    assert served(collected) == served(export) and collected.notes == export.notes and collected.format == "otlp"
    assert served(load_served(store / "running-shoes-helpbot")) == served(export)  # one service
    _same_audit(collected, export, shoes, shoes, LogAuditConfig(seed=2, n_boot=200))
    source = ProviderSource.parse("metadata.source")  # no collection: providers from the logged metadata
    docs_a = documents_from_log(collected, provider_from=source).collection
    docs_b = documents_from_log(export, provider_from=source).collection
    assert docs_a.documents == docs_b.documents
    _same_audit(collected, export, docs_a, docs_b, LogAuditConfig(seed=2, n_boot=200))


def test_document_texts_and_prompts_are_not_stored(receiver, tmp_path):
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "q?", "retrieval.documents.0.document.id": "d1",
             "retrieval.documents.0.document.content": "SECRET DOCUMENT TEXT",
             "llm.input_messages.0.message.content": "SECRET PROMPT", "http.request.header.cookie": "SECRET"}
    export = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "a/b"}},
                                                             {"key": "host.name", "value": {"stringValue": "h"}}]},
                                 "scopeSpans": [{"spans": [{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "r",
                                                            "kind": 1, "startTimeUnixNano": "1",
                                                            "attributes": [{"key": k, "value": {"stringValue": v}}
                                                                           for k, v in attrs.items()]}]}]}]}
    r = receiver()
    assert post(r.url, json.dumps(export).encode(), JSON)[0] == 200
    assert post(r.url, json_to_request(export).SerializeToString(), PROTOBUF)[0] == 200
    r.stop()
    files = list((tmp_path / "store").glob("*/*.jsonl"))
    assert [f.parent.name for f in files] == ["a_b"]
    stored = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert stored[0] == stored[1]
    assert "SECRET" not in files[0].read_text() and "host.name" not in files[0].read_text()
    span = stored[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert [a["key"] for a in span["attributes"]] == ["openinference.span.kind", "input.value",
                                                      "retrieval.documents.0.document.id"]


def test_bad_payloads_are_refused_with_a_one_line_message(receiver, tmp_path):
    r = receiver(max_bytes=2000)
    big = json.dumps({"resourceSpans": [], "pad": "x" * 3000}).encode()
    cases = [
        (post(r.url, b"not json", JSON), 400, "invalid JSON"),
        (post(r.url, b'{"resourceSpans": 3}', JSON), 400, "resourceSpans: expected a JSON array, got int"),
        (post(r.url, b'{"spans": []}', JSON), 400, 'an object with "resourceSpans"'),
        (post(r.url, b"\x0a\x05garbage", PROTOBUF), 400, "not an OTLP protobuf ExportTraceServiceRequest"),
        (post(r.url, b"\x1f\x8bnot gzip", JSON, encoding="gzip"), 400, "not valid gzip"),
        (post(r.url, b"{}", JSON, encoding="br"), 400, "Content-Encoding 'br' is not read"),
        (post(r.url, big, JSON), 413, "3,0"),
        (post(r.url, gzip_body(big), JSON, encoding="gzip"), 413, "inflated body is over the receiver's limit of 2,0"),
        (post(r.url, b"{}", "text/plain"), 415, "Content-Type 'text/plain' is not OTLP/HTTP"),
        (post(r.url.replace("/v1/traces", "/v1/logs"), b"{}", JSON), 404, "post traces to /v1/traces"),
    ]
    for (status, body, _), want, text in cases:
        assert status == want and text in body.decode() and body.decode().count("\n") == 1, (status, body)
    assert r.counts["rejected"] == len(cases) and r.counts["requests"] == 0
    r.stop()
    assert not list((tmp_path / "store").glob("*/*"))


def test_a_full_queue_answers_503_with_retry_after_and_nothing_is_lost(receiver, tmp_path, monkeypatch):
    release = threading.Event()
    real_append = TraceStore.append

    def slow_append(self, exports, now=None):
        release.wait(10)
        return real_append(self, exports, now)

    monkeypatch.setattr(TraceStore, "append", slow_append)
    r = receiver(queue_size=2)
    exports = demo_exports()[:6]
    answers = [post(r.url, json_to_request(e).SerializeToString(), PROTOBUF) for e in exports]
    statuses = [a[0] for a in answers]
    # the writer holds one batch, the queue two more; the rest wait outside
    assert statuses[:2] == [200, 200] and 503 in statuses
    busy = next(a for a in answers if a[0] == 503)
    assert busy[2]["Retry-After"] == "1" and b"queue is full" in busy[1]
    release.set()
    r.stop()
    assert r.counts["busy"] == statuses.count(503) and r.counts["requests"] == statuses.count(200)
    stored = sum(1 for f in (tmp_path / "store").glob("*/*.jsonl") for _ in f.read_text().splitlines())
    assert stored == statuses.count(200)


def test_a_line_torn_by_a_crash_is_cut_when_the_store_is_opened(tmp_path):
    store = TraceStore(tmp_path / "s")
    store.append(demo_exports()[:2])
    shard = next((tmp_path / "s").glob("*/*.jsonl"))
    whole = shard.read_bytes()
    shard.write_bytes(whole + b'{"resourceSpans": [{"scopeSp')
    TraceStore(tmp_path / "s")
    assert shard.read_bytes() == whole
    shard.write_bytes(b'{"torn')
    TraceStore(tmp_path / "s")
    assert shard.read_bytes() == b""


def test_the_real_sdk_exporter_needs_no_glue(receiver, tmp_path):
    pytest.importorskip("opentelemetry.sdk")
    exporter_module = pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    r = receiver()
    provider = TracerProvider(resource=Resource.create({"service.name": "news-assistant"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter_module.OTLPSpanExporter(endpoint=r.url, timeout=5)))
    tracer = provider.get_tracer("test")
    expected = []
    for q in range(3):
        docs = [f"doc-{q}-{i}" for i in range(4)]
        with tracer.start_as_current_span("query") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("fairrag.query_id", f"q{q}")
            root.set_attribute("fairrag.citations", json.dumps(docs[:1]))
            with tracer.start_as_current_span("BM25Retriever.retrieve") as outer:
                outer.set_attribute("openinference.span.kind", "RETRIEVER")
                outer.set_attribute("input.value", f"question {q}")
                for i, d in enumerate(docs):
                    outer.set_attribute(f"retrieval.documents.{i}.document.id", d)
                    outer.set_attribute(f"retrieval.documents.{i}.document.score", 1.0 - i / 10)
                    outer.set_attribute(f"retrieval.documents.{i}.document.metadata",
                                        json.dumps({"source": f"P{i % 2}"}))
                    outer.set_attribute(f"retrieval.documents.{i}.document.content", "a long article text")
                with tracer.start_as_current_span("BM25Retriever._retrieve") as inner:
                    inner.set_attribute("openinference.span.kind", "RETRIEVER")
            with tracer.start_as_current_span("llm") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("output.value", f"answer {q}")
        expected.append((f"q{q}", tuple(docs), f"question {q}", f"answer {q}", (docs[0],)))
    assert provider.force_flush(10_000)
    provider.shutdown()
    r.stop()
    assert r.counts["rejected"] == 0 and r.counts["spans"] == 12
    store = tmp_path / "store"
    assert [p.name for p in store.iterdir() if p.is_dir()] == ["news-assistant"]
    log = load_served(store)
    assert [(e.query_id, e.ranking, e.query, e.answer, e.citations) for e in log.entries] == expected
    assert [dict(m)["source"] for m in log.entries[0].doc_metadata] == ["P0", "P1", "P0", "P1"]
    assert log.notes == () and "a long article text" not in next(store.glob("*/*.jsonl")).read_text()


def test_an_hour_past_the_shard_size_goes_on_in_parts_read_as_one(tmp_path, monkeypatch):
    monkeypatch.setattr(collector, "SHARD_BYTES", 50_000)
    store = TraceStore(tmp_path / "s")
    for export in demo_exports():
        store.append([export])
    parts = sorted(p.name for p in (tmp_path / "s" / "running-shoes-helpbot").iterdir())
    assert len(parts) > 3 and any(p.endswith(".001.jsonl") for p in parts) and any(p[13:] == ".jsonl" for p in parts)
    assert served(load_served(tmp_path / "s")) == served(load_served(DEMO_TRACES))


def test_bodies_read_at_once_are_bounded_and_a_silent_connection_is_let_go(receiver, monkeypatch):
    monkeypatch.setattr(collector, "READING_AT_ONCE", 1)
    monkeypatch.setattr(collector, "SOCKET_TIMEOUT", 1)
    r = receiver()
    body = json_to_request(demo_exports()[0]).SerializeToString()
    stalled = socket.create_connection((r.host, r.port), timeout=5)
    try:
        stalled.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:100])
        time.sleep(0.3)  # the receiver is now waiting for the rest of that body
        status, text, headers = post(r.url, body, PROTOBUF)
        assert (status, headers["Retry-After"]) == (503, "1") and b"reading as many requests" in text
        time.sleep(1.5)  # the stalled connection times out and frees its slot
        assert post(r.url, body, PROTOBUF)[0] == 200
    finally:
        stalled.close()
    assert r.counts["busy"] == 1 and r.counts["requests"] == 1
