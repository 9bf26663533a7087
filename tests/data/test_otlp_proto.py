"""OTLP protobuf trace exports read through the one OTLP JSON reader: a file of length-delimited (or one bare)
``ExportTraceServiceRequest`` reads as the same served lines, audit and notes as the JSON export of the same spans;
base64 ids in JSON read as hex; every attribute value type survives the conversion; bad files name the request."""

import base64
import gzip
import json

import pytest

from fairrag_core import DataFormatError
from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.data import assets_dir, load_served
from fairrag_core.data.formats import format_of, kind_of, upload_types
from fairrag_core.data.otlp_proto import hex_id, json_to_request, read_delimited, request_to_json, write_delimited
from fairrag_core.data.traces import TraceMap, kept_attributes
from tests.data.test_traces import _same_audit, served

DEMO_TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"


def demo_exports():
    return [json.loads(line) for line in DEMO_TRACES.read_text(encoding="utf-8").splitlines() if line.strip()]


def details(log):
    return [(e.scores, e.doc_metadata, dict(e.metadata)) for e in log.entries]


@pytest.fixture(scope="module")
def demo_pb(tmp_path_factory):
    path = tmp_path_factory.mktemp("pb") / "running-shoes.otlp.pb"
    write_delimited(path, [json_to_request(e) for e in demo_exports()])
    return path


def test_a_protobuf_export_reads_as_the_json_export_of_the_same_spans(demo_pb):
    pb, js = load_served(demo_pb), load_served(DEMO_TRACES)
    assert (pb.kind, pb.format, pb.what, pb.file_lines, len(pb)) == ("log", "otlp", "trace export", 33, 200)
    assert served(pb) == served(js)
    assert details(pb) == details(js)
    assert pb.notes == js.notes == ("2 of 202 traces left out: 2 with no retrieval span (first: trace "
                                    "e53ded41f967cf5c)",)


def test_auditing_the_protobuf_export_equals_auditing_the_json_export(demo_pb, shoes):
    run = _same_audit(load_served(demo_pb), load_served(DEMO_TRACES), shoes, shoes, LogAuditConfig(seed=3, n_boot=200))
    assert len(run.table) == 20


def test_gzipped_and_one_bare_request_read_too(demo_pb, tmp_path):
    gz = tmp_path / "t.otlp.pb.gz"
    gz.write_bytes(gzip.compress(demo_pb.read_bytes()))
    assert served(load_served(gz)) == served(load_served(demo_pb))
    exports = demo_exports()
    merged = {"resourceSpans": [rs for e in exports for rs in e["resourceSpans"]]}
    bare = tmp_path / "one.pb"
    bare.write_bytes(json_to_request(merged).SerializeToString())
    assert bare.read_bytes()[0] == 0x0A
    log = load_served(bare)
    assert served(log) == served(load_served(DEMO_TRACES)) and log.file_lines == 1


def test_the_formats_table_names_the_protobuf_suffix():
    assert format_of("week.otlp.pb").name == "otlp" and kind_of("A.PB.GZ") == "log"
    assert upload_types() == ["jsonl", "ndjson", "json", "gz", "pb", "txt", "run", "tsv", "trec"]


def to_base64(export):
    out = json.loads(json.dumps(export))
    for rs in out["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if s.get(key):
                        s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    return out


def test_json_ids_in_base64_read_as_their_hex(tmp_path):
    exports = demo_exports()
    path = tmp_path / "b64.jsonl"
    path.write_text("".join(json.dumps(to_base64(e)) + "\n" for e in exports), encoding="utf-8")
    assert to_base64(exports[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"].endswith("==")
    b64, hexed = load_served(path), load_served(DEMO_TRACES)
    assert served(b64) == served(hexed) and details(b64) == details(hexed) and b64.notes == hexed.notes
    assert hex_id("AAECAwQFBgcICQoLDA0ODw==", 16) == "000102030405060708090a0b0c0d0e0f"
    assert hex_id("0001020304050607", 16) == "0001020304050607"  # not a trace id's length: unchanged


def test_every_attribute_value_type_survives_the_conversion():
    values = [{"stringValue": "x"}, {"intValue": "-9007199254740993"}, {"doubleValue": 0.25},
              {"doubleValue": "NaN"}, {"doubleValue": "-Infinity"}, {"boolValue": False},
              {"bytesValue": base64.b64encode(b"\x00\xff").decode()},
              {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "b"}]}},
              {"kvlistValue": {"values": [{"key": "k", "value": {"arrayValue": {"values": [{"boolValue": True}]}}}]}},
              {}]
    span = {"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "2", "parentSpanId": "0" * 15 + "3", "name": "n",
            "kind": 3, "startTimeUnixNano": "5", "endTimeUnixNano": "9",
            "attributes": [{"key": f"a{i}", "value": v} for i, v in enumerate(values)],
            "events": [{"name": "e", "timeUnixNano": "7", "attributes": [{"key": "a0", "value": values[0]}]}]}
    export = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                              "value": {"stringValue": "svc"}}]},
                                 "scopeSpans": [{"scope": {"name": "s", "version": "1"}, "spans": [span]}]}]}
    back = request_to_json(json_to_request(export).SerializeToString())
    got = back["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    nan = got["attributes"][3]["value"]["doubleValue"]
    assert nan == "NaN" and got["attributes"][4]["value"] == {"doubleValue": "-Infinity"}
    assert [a for i, a in enumerate(got["attributes"]) if i not in (3,)] == [a for i, a in enumerate(span["attributes"])
                                                                              if i not in (3,)]
    assert {k: got[k] for k in ("traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano",
                                "endTimeUnixNano", "events")} == {k: span[k] for k in got if k != "attributes"}
    assert back["resourceSpans"][0]["resource"] == export["resourceSpans"][0]["resource"]


def test_only_the_attributes_the_reader_keeps_are_converted_when_asked():
    keep = kept_attributes(TraceMap.parse(["query_id=app.intent"]))
    attrs = {"retrieval.documents.0.document.id": "d1", "retrieval.documents.0.document.content": "long text",
             "llm.input_messages.0.message.content": "the prompt", "app.intent": "q1", "http.url": "/x"}
    export = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "ab" * 16, "spanId": "cd" * 8,
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}]}]}]}
    got = request_to_json(json_to_request(export).SerializeToString(), keep=keep)
    kept = [a["key"] for a in got["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]]
    assert kept == ["retrieval.documents.0.document.id", "app.intent"]


def test_a_truncated_or_foreign_protobuf_file_names_the_request_and_the_fix(demo_pb, tmp_path):
    cut = tmp_path / "cut.pb"
    cut.write_bytes(demo_pb.read_bytes()[:-10])
    with pytest.raises(DataFormatError, match=r"ends inside a request \(after request 32: \d+ bytes left\)"):
        load_served(cut)
    foreign = tmp_path / "foreign.pb"
    foreign.write_bytes(b"\x05\xff\xff\xff\xff\xff")
    with pytest.raises(DataFormatError, match="request 1: not an OTLP protobuf ExportTraceServiceRequest .*"
                                              "as the OTLP exporters do"):
        list(read_delimited(foreign))
    empty = tmp_path / "empty.pb"
    empty.write_bytes(b"")
    with pytest.raises(DataFormatError, match="no spans found"):
        load_served(empty)
