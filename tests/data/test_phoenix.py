"""Phoenix's span JSON audits as the OTLP export of the same spans, in each shape Phoenix serves it, and the recipe
in docs/traces.md reads every span of a project through Phoenix's real client.

The spans are built as Phoenix builds them from the demo OTLP export:
- ingestion (Arize-ai/phoenix ``src/phoenix/trace/attributes.py``): the JSON strings of ``document.metadata`` (and
  the other ``JSON_STRING_ATTRIBUTES``) parsed into objects, the dotted keys unflattened into nested objects, digit
  parts into lists (``unflatten``);
- the REST route ``GET /v1/projects/{project}/spans`` (``src/phoenix/server/api/routers/v1/spans.py``,
  ``span_search``): the attributes flattened again with ``flatten(..., recurse_on_sequence=True)`` (a metadata
  object flattened too) and ``openinference.span.kind`` popped into ``span_kind``; typed with the client's own
  ``phoenix.client.__generated__.v1.Span`` and read through ``Client().spans.get_spans`` (arize-phoenix-client 3.5)
  over an HTTP transport that answers as the route does (pages of at most ``limit``, ``next_cursor``);
- a spans dataframe turned back into spans by the client's own ``helpers.spans.dataframe_to_spans``
  (``attributes.retrieval.documents`` a list of ``{"document.id", ...}`` objects, ``attributes.fairrag.query_id``).
"""

import json
from datetime import UTC, datetime

import pandas as pd
import pytest

from fairrag_core import DataFormatError
from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.data import assets_dir, load_served
from fairrag_core.data.formats import format_of
from fairrag_core.data.phoenix import flat_attributes, is_phoenix_spans, phoenix_export
from fairrag_core.data.traces import ProviderSource, TraceMap, documents_from_log, read_traces
from tests.data.test_traces import _same_audit, served

v1 = pytest.importorskip("phoenix.client.__generated__.v1")

DEMO_TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"
JSON_STRING_ATTRIBUTES = ("document.metadata", "llm.prompt_template.variables", "metadata", "tool.parameters")


def _value(any_value):
    (kind, inner), = any_value.items()
    if kind == "arrayValue":
        return [_value(v) for v in inner.get("values", [])]
    return int(inner) if kind == "intValue" else inner


def otlp_spans():
    """The demo export's spans as ``(span, {key: value})``."""
    for line in DEMO_TRACES.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for scope in rs["scopeSpans"]:
                for span in scope["spans"]:
                    yield span, {kv["key"]: _value(kv["value"]) for kv in span.get("attributes", ())}


def unflatten(pairs):
    """Phoenix's ingestion: JSON-string attributes parsed, dotted keys nested, digit parts list indices."""
    root: dict = {}
    for key, value in pairs.items():
        if key.endswith(JSON_STRING_ATTRIBUTES) and isinstance(value, str):
            value = json.loads(value) or value
        node, parts = root, key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(int(part) if part.isdigit() else part, {})
        node[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value

    def lists(node):
        if not isinstance(node, dict):
            return node
        if node and all(isinstance(k, int) for k in node):
            return [lists(node[k]) for k in sorted(node)]
        return {k: lists(v) for k, v in node.items()}
    return lists(root)


def rest_flatten(obj, prefix=""):
    """Phoenix's ``flatten(obj, recurse_on_sequence=True)``: objects and lists of objects to dotted keys."""
    for key, value in obj.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from rest_flatten(value, name)
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                yield from rest_flatten(item, f"{name}.{i}")
        elif value is not None:
            yield name, value


def iso(nanos):
    return datetime.fromtimestamp(int(nanos) / 1e9, UTC).isoformat()


def rest_spans():
    """The demo's spans as the REST route serves them, typed with the client's own ``v1.Span``."""
    out = []
    for span, attrs in otlp_spans():
        flat = dict(rest_flatten(unflatten(attrs)))
        kind = flat.pop("openinference.span.kind", "UNKNOWN")
        out.append(v1.Span(id=f"Span:{len(out)}", name=span["name"],
                           context=v1.SpanContext(trace_id=span["traceId"], span_id=span["spanId"]),
                           span_kind=kind, parent_id=span.get("parentSpanId") or None,
                           start_time=iso(span["startTimeUnixNano"]), end_time=iso(span["endTimeUnixNano"]),
                           status_code="UNSET", status_message="", attributes=flat, events=[]))
    return out


def write_lines(path, objects):
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def demo():
    return load_served(DEMO_TRACES)


def test_the_rest_shape_read_through_the_real_client_audits_as_the_otlp_export(tmp_path, demo):
    httpx = pytest.importorskip("httpx")
    from phoenix.client import Client

    spans = rest_spans()
    assert "retrieval.documents.0.document.metadata.source" in spans[-1]["attributes"] or any(
        "retrieval.documents.0.document.metadata.source" in s["attributes"] for s in spans)
    asked = []

    def route(request):  # GET /v1/projects/{project}/spans as the server answers it
        assert request.url.path == "/v1/projects/shoes/spans"
        limit, start = int(request.url.params["limit"]), int(request.url.params.get("cursor", 0))
        asked.append(limit)
        page = spans[start:start + limit]
        more = start + limit < len(spans)
        return httpx.Response(200, json={"data": page, "next_cursor": str(start + limit) if more else None})

    client = Client(http_client=httpx.Client(transport=httpx.MockTransport(route), base_url="http://phoenix"))
    assert len(client.spans.get_spans(project_identifier="shoes")) == 100 < len(spans)  # the silent cut
    # the recipe (docs/traces.md, From Phoenix): an explicit limit above the project's span count, then check it
    limit = 1_000_000
    read = client.spans.get_spans(project_identifier="shoes", limit=limit)
    assert len(read) == len(spans) < limit and set(asked) == {100}
    path = write_lines(tmp_path / "phoenix-spans.jsonl", read)
    assert format_of(path).name == "otlp"
    log = load_served(path)
    assert (log.format, served(log), log.notes) == ("otlp", served(demo), demo.notes)
    source = ProviderSource.parse("metadata.source")
    docs = documents_from_log(log, provider_from=source).collection
    assert docs.documents == documents_from_log(demo, provider_from=source).collection.documents
    _same_audit(log, demo, docs, docs, LogAuditConfig(seed=4, n_boot=100))
    # a page of the REST answer per line reads the same
    pages = tmp_path / "pages.json"
    write_lines(pages, [{"data": read[i:i + 70], "next_cursor": None} for i in range(0, len(read), 70)])
    assert served(load_served(pages)) == served(demo)


def test_nested_attributes_and_the_clients_dataframe_spans_read_the_same(tmp_path, demo):
    from phoenix.client.helpers.spans import dataframe_to_spans

    nested = []
    for span in rest_spans():
        attributes = unflatten(span["attributes"])
        assert "fairrag" not in attributes or isinstance(attributes["fairrag"], dict)
        nested.append({**span, "attributes": attributes})
    assert served(load_served(write_lines(tmp_path / "nested.jsonl", nested))) == served(demo)
    rows = []  # a spans dataframe: attributes one column per key, documents a list of {"document.id", ...}
    for span, attrs in otlp_spans():
        row = {"context.span_id": span["spanId"], "context.trace_id": span["traceId"], "name": span["name"],
               "span_kind": attrs.get("openinference.span.kind"), "parent_id": span.get("parentSpanId"),
               "start_time": pd.Timestamp(int(span["startTimeUnixNano"]), tz="UTC"),
               "end_time": pd.Timestamp(int(span["endTimeUnixNano"]), tz="UTC"), "status_code": "UNSET"}
        documents = unflatten(attrs).get("retrieval", {}).get("documents")
        if documents:
            row["attributes.retrieval.documents"] = [{f"document.{k}": v for k, v in d["document"].items()}
                                                     for d in documents]
        for key, value in attrs.items():
            if not key.startswith(("retrieval.documents.", "openinference.span.kind")):
                row[f"attributes.{key}"] = value
        rows.append(row)
    spans = dataframe_to_spans(pd.DataFrame(rows))
    assert isinstance(spans[0]["attributes"]["fairrag.query_id"], str)
    frame = load_served(write_lines(tmp_path / "frame.jsonl", spans))
    assert served(frame) == served(demo) and frame.notes == demo.notes


def test_flattening_keeps_fairrag_and_documents_however_nested():
    attributes = {"fairrag": {"query_id": "q1", "citations": ["d2"]}, "input": {"value": "shoes?"},
                  "retrieval": {"documents": [{"document": {"id": "d1", "score": 2.5,
                                                            "metadata": {"source": "Acme", "file.name": "a.txt"}}},
                                              {"document.id": "d2", "document.metadata": {"source": "Bolt"}}]},
                  "tag": {"tags": ["x", "y"]}, "empty": None}
    assert dict(flat_attributes(attributes)) == {
        "fairrag.query_id": "q1", "fairrag.citations": ["d2"], "input.value": "shoes?",
        "retrieval.documents.0.document.id": "d1", "retrieval.documents.0.document.score": 2.5,
        "retrieval.documents.0.document.metadata": {"source": "Acme", "file.name": "a.txt"},
        "retrieval.documents.1.document.id": "d2", "retrieval.documents.1.document.metadata": {"source": "Bolt"},
        "tag.tags": ["x", "y"]}
    span = {"name": "r", "context": {"trace_id": "ab" * 16, "span_id": "cd" * 8}, "span_kind": "RETRIEVER",
            "start_time": "2026-03-02T09:16:00.000001+00:00", "attributes": {
                "retrieval.documents.0.document.id": "d1", "retrieval.documents.0.document.metadata.source": "Acme",
                "retrieval.documents.0.document.metadata.file.name": "a.txt"}}
    out = phoenix_export(span)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert out["startTimeUnixNano"] == "1772442960000001000" and out["parentSpanId"] == ""
    assert out["attributes"][1] == {"key": "retrieval.documents.0.document.metadata", "value": {"kvlistValue": {
        "values": [{"key": "source", "value": {"stringValue": "Acme"}},
                   {"key": "file.name", "value": {"stringValue": "a.txt"}}]}}}
    assert is_phoenix_spans({"data": [span], "next_cursor": None}) and not is_phoenix_spans({"data": []})


def test_a_span_phoenix_did_not_write_is_refused_naming_the_line_and_field(tmp_path):
    good = rest_spans()[0]
    path = write_lines(tmp_path / "bad.jsonl", [good, {**good, "start_time": "yesterday"}])
    with pytest.raises(DataFormatError, match=r"bad\.jsonl, line 2: the span\.start_time: 'yesterday' is not an "
                                              r"ISO 8601 time; write each span as phoenix\.client's"):
        load_served(path)
    path = write_lines(tmp_path / "bad2.jsonl", [good, {"data": [good, {"name": "x"}]}])
    with pytest.raises(DataFormatError, match=r"line 2: data\[1\]: not a Phoenix span \(no context\.trace_id"):
        load_served(path)


def _export(attributes):
    spans = [{"name": "request", "context": {"trace_id": f"{t:032x}", "span_id": f"{t:016x}"}, "span_kind": "CHAIN",
              "start_time": f"2026-03-02T09:{t:02d}:00+00:00", "attributes": attributes(t)} for t in range(1, 4)]
    retrievers = [{"name": "retrieve", "context": {"trace_id": f"{t:032x}", "span_id": f"{t + 100:016x}"},
                   "parent_id": f"{t:016x}", "span_kind": "RETRIEVER", "start_time": f"2026-03-02T09:{t:02d}:01Z",
                   "attributes": {"input": {"value": f"question {t}"}, "retrieval": {
                       "documents": [{"document": {"id": f"d{t}"}}, {"document": {"id": "x"}}]}}}
                  for t in range(1, 4)]
    return spans + retrievers


def test_a_note_names_the_look_alike_of_an_absent_citations_or_query_id_attribute(tmp_path):
    path = write_lines(tmp_path / "app.jsonl", _export(lambda t: {"app": {"citations": [f"d{t}"],
                                                                          "query_id": f"q{t}"}}))
    export = read_traces(path)
    assert [(e.query_id, e.citations) for e in export.traces] == [(f"question {t}", None) for t in range(1, 4)]
    assert export.notes == (
        "no trace has fairrag.citations (attribution: none), but spans carry the attribute 'app.citations'; read it "
        "with --trace-map citations=app.citations",
        "no trace has fairrag.query_id (each query is known by its text), but spans carry the attribute "
        "'app.query_id'; read it with --trace-map query_id=app.query_id")
    fixed = read_traces(path, trace_map=TraceMap.parse(["citations=app.citations", "query_id=app.query_id"]))
    assert [(e.query_id, e.citations) for e in fixed.traces] == [(f"q{t}", (f"d{t}",)) for t in range(1, 4)]
    assert fixed.notes == ()
    # Phoenix's own nesting of fairrag.* is read, so there is nothing to note
    nested = read_traces(write_lines(tmp_path / "nested.jsonl", _export(lambda t: {"fairrag": {"query_id": f"q{t}"}})))
    assert [e.query_id for e in nested.traces] == ["q1", "q2", "q3"] and nested.notes == ()


def test_a_note_names_a_nested_fairrag_object_in_an_otlp_export(tmp_path):
    request = phoenix_export({"data": _export(lambda t: {})})
    for span in request["resourceSpans"][0]["scopeSpans"][0]["spans"][:3]:  # an object value, as OTLP allows
        span["attributes"].append({"key": "fairrag", "value": {"kvlistValue": {"values": [
            {"key": "citations", "value": {"stringValue": '["d1"]'}}]}}})
    export = read_traces(write_lines(tmp_path / "otlp.jsonl", [request]))
    assert export.notes[0] == ("no trace has fairrag.citations (attribution: none), but spans carry a nested "
                               "'fairrag' object; set fairrag.citations as an attribute of its own, not inside an "
                               "object (docs/traces.md)")
