"""OTLP JSON trace exports read as RAG logs: assembly in any order, the OpenInference and GenAI conventions, the
trace map, nested retrieval spans as one retrieval (the stock LlamaIndex trace), skipped traces, errors with file,
line, JSON path and fix; documents and providers without a collection;
and the audit of a trace export equal to the audit of the same lines written as JSONL."""

import gzip
import io
import json
import random
import re

import pandas as pd
import pytest

from fairrag_core import DataFormatError, InvalidParameterError
from fairrag_core.audit.log_report import log_findings, log_ledger, log_summary
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.data import assets_dir, load_rag_log, load_served, load_traces
from fairrag_core.data.rag_log import LogEntry, RagLog
from fairrag_core.data.traces import (
    MultipleRetrievals,
    ProviderSource,
    TraceMap,
    documents_from_log,
    load_provider_map,
)

DEMO_LOG = assets_dir() / "logs" / "running-shoes.jsonl"
DEMO_TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"
T0 = 1_772_442_960_000_000_000  # 2026-03-02T09:16:00Z in nanoseconds


# -- building exports --------------------------------------------------------------------------------------------
def value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def span(trace, span_id, attrs, *, parent=None, start=T0, events=None, name=None):
    out = {"traceId": trace, "spanId": span_id, "startTimeUnixNano": str(start),
           "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()]}
    if name:
        out["name"] = name
    if parent:
        out["parentSpanId"] = parent
    if events:
        out["events"] = events
    return out


def export(*spans):
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


def rag_trace(trace, qid, docs, *, answer="An answer.", query="a question", start=T0, citations=None, session="s1"):
    """An OpenInference trace: CHAIN root, RETRIEVER (docs: ids, or (id, score, metadata)), LLM."""
    retrieved = {"openinference.span.kind": "RETRIEVER", "input.value": query}
    for i, doc in enumerate(docs):
        doc_id, score, meta = doc if isinstance(doc, tuple) else (doc, None, None)
        retrieved[f"retrieval.documents.{i}.document.id"] = doc_id
        if score is not None:
            retrieved[f"retrieval.documents.{i}.document.score"] = score
        if meta is not None:
            retrieved[f"retrieval.documents.{i}.document.metadata"] = meta
    root = {"openinference.span.kind": "CHAIN", "fairrag.query_id": qid, "session.id": session}
    if citations is not None:
        root["fairrag.citations"] = json.dumps(citations)
    return [span(trace, f"{trace}-r", root, start=start),
            span(trace, f"{trace}-s", retrieved, parent=f"{trace}-r", start=start + 1000),
            span(trace, f"{trace}-l", {"openinference.span.kind": "LLM", "output.value": answer},
                 parent=f"{trace}-r", start=start + 2000)]


def write_lines(tmp_path, exports, name="traces.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(e) + "\n" for e in exports), encoding="utf-8")
    return path


def write_twin(tmp_path, log, name="twin.jsonl"):
    """The lines of ``log`` written as a JSONL RAG log."""
    rows = []
    for e in log.entries:
        row = {"query_id": e.query_id, "ranking": list(e.ranking), "query": e.query, "answer": e.answer,
               "session": e.session, "timestamp": e.timestamp, "metadata": dict(e.metadata)}
        if e.citations is not None:
            row["citations"] = list(e.citations)
        rows.append(row)
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def served(log):
    return [(e.line, e.query_id, e.ranking, e.query, e.answer, e.citations, e.session, e.timestamp)
            for e in log.entries]


# -- the demo, and the equality guarantee ------------------------------------------------------------------------
def test_the_demo_trace_export_holds_the_demo_log_with_its_scores_and_metadata():
    traces, log = load_served(DEMO_TRACES), load_served(DEMO_LOG)
    assert (traces.kind, traces.format, traces.what, traces.file_lines, len(traces)) == ("log", "otlp",
                                                                                          "trace export", 33, 200)
    assert served(traces) == served(log)
    assert traces.notes == ("2 of 202 traces left out: 2 with no retrieval span (first: trace e53ded41f967cf5c)",)
    first = traces.entries[0]
    assert len(first.scores) == len(first.ranking) and list(first.scores) == sorted(first.scores, reverse=True)
    assert dict(first.doc_metadata[0]) == {"source": "Velocore", "url": "https://velocore.example/products/rs-089",
                                           "segment": "major"}
    assert log.entries[0].scores is None and log.entries[0].doc_metadata is None  # a JSONL log logs neither


def _worded_as_lines(findings):
    """The findings as dicts, a trace export's "(…, 200 requests)" written as its JSONL twin's "(…, 200 lines)"."""
    return [{**f.to_dict(), "text": re.sub(r" (\d+) request(s?)\)", r" \1 line\2)", f.text)} for f in findings]


def _same_audit(a, b, collection_a, collection_b, config):
    run_a, run_b = audit_rag_log(a, collection_a, config), audit_rag_log(b, collection_b, config)
    pd.testing.assert_frame_equal(run_a.table, run_b.table, check_exact=True)
    pd.testing.assert_frame_equal(run_a.documents, run_b.documents, check_exact=True)
    pd.testing.assert_frame_equal(run_a.lines, run_b.lines, check_exact=True)
    summaries = [log_summary(run) for run in (run_a, run_b)]
    for summary in summaries:  # a trace export's word for its JSONL twin's
        summary["over"] = summary["over"].str.replace("cited requests", "cited lines")
    pd.testing.assert_frame_equal(*summaries, check_exact=True)
    for by in ["provider", *collection_a.categories()]:
        pd.testing.assert_frame_equal(log_ledger(run_a, collection_a, by=by), log_ledger(run_b, collection_b, by=by),
                                      check_exact=True)
    assert _worded_as_lines(log_findings(run_a, collection_a)) == _worded_as_lines(log_findings(run_b, collection_b))
    assert run_a.record.extra["notes"] == run_b.record.extra["notes"]
    return run_a


def test_auditing_the_demo_trace_export_equals_auditing_the_demo_log(shoes):
    run = _same_audit(load_served(DEMO_TRACES), load_served(DEMO_LOG), shoes, shoes, LogAuditConfig(seed=11))
    assert len(run.table) == 20 and run.table["ee_r"].notna().sum() == 18


def test_a_trace_export_audits_as_its_lines_written_as_jsonl_without_a_collection_too(tmp_path):
    traces = load_served(DEMO_TRACES)
    twin = load_served(write_twin(tmp_path, traces))
    rows = ["doc_id,provider,segment"] + [f"rs-{i:03d},{'Big' if i % 3 else 'Small'} Co,{'a' if i % 2 else 'b'}"
                                          for i in range(1, 93)]
    (tmp_path / "providers.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    mapping = load_provider_map(tmp_path / "providers.csv")
    docs_a = documents_from_log(traces, provider_map=mapping).collection
    docs_b = documents_from_log(twin, provider_map=mapping).collection
    assert docs_a.documents == docs_b.documents and docs_a.sha256 == docs_b.sha256
    run = _same_audit(traces, twin, docs_a, docs_b, LogAuditConfig(seed=5, n_boot=300))
    assert run.table["ee_r"].isna().all()  # no relevance labels


# -- assembly ----------------------------------------------------------------------------------------------------
def test_spans_assemble_whatever_their_order_and_line(tmp_path):
    spans = (rag_trace("aa", "q1", ["d1", "d2"], start=T0 + 5, citations=["d2"])
             + rag_trace("bb", "q1", ["d2", "d3"], start=T0, answer="Another.")
             + rag_trace("cc", "q2", ["d3"], start=T0 + 9, citations=[]))
    want = served(load_traces(write_lines(tmp_path, [export(*spans)], "one.jsonl")))
    assert [(e[1], e[2], e[4], e[5]) for e in want] == [("q1", ("d2", "d3"), "Another.", None),
                                                        ("q1", ("d1", "d2"), "An answer.", ("d2",)),
                                                        ("q2", ("d3",), "An answer.", ())]
    rng = random.Random(3)
    for attempt in range(6):
        order = spans[:]
        rng.shuffle(order)
        cut = rng.randrange(1, len(order))
        path = write_lines(tmp_path, [export(*order[:cut]), export(*order[cut:])], f"split{attempt}.jsonl")
        assert served(load_traces(path)) == want


def test_documents_come_in_numeric_index_order_with_scores_and_metadata(tmp_path):
    docs = [(f"d{i}", float(20 - i), json.dumps({"source": f"S{i % 3}"})) for i in range(12)]
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "q?"}
    for i, (doc_id, score, meta) in sorted(enumerate(docs), key=lambda x: str(x[0])):  # lexical: 0, 1, 10, 11, 2, …
        attrs[f"retrieval.documents.{i}.document.id"] = doc_id
        attrs[f"retrieval.documents.{i}.document.score"] = score
        attrs[f"retrieval.documents.{i}.document.metadata"] = meta
    attrs["retrieval.documents.3.document.metadata"] = {"source": "kv", "n": 3}  # a kvlist
    attrs["retrieval.documents.4.document.metadata"] = "{'source': 'repr'}"  # Python's repr of a dict
    attrs["retrieval.documents.5.document.metadata"] = "not json"
    attrs["retrieval.documents.6.document.content"] = "long text that is not kept"
    entry, = (log := load_traces(write_lines(tmp_path, [export(span("t1", "s", attrs))]))).entries
    assert entry.ranking == tuple(f"d{i}" for i in range(12)) and entry.scores == tuple(float(20 - i)
                                                                                       for i in range(12))
    assert entry.query_id == "q?" == entry.query  # no fairrag.query_id: the query text
    assert dict(entry.doc_metadata[3]) == {"source": "kv", "n": 3} and entry.doc_metadata[4]["source"] == "repr"
    assert dict(entry.doc_metadata[5]) == {} and entry.doc_metadata[11]["source"] == "S2"
    assert log.notes == ("1 retrieved document(s) have metadata that is not a JSON object; it is left out",)


def test_the_genai_conventions(tmp_path):
    docs = json.dumps([{"id": "d2", "score": 0.9, "title": "Two", "metadata": {"source": "A"}}, {"id": "d1"}])
    structured = [{"id": "d1", "score": 0.5}, {"id": "d3", "score": 0.4}]
    spans = [
        span("g1", "r", {"gen_ai.conversation.id": "conv-7", "fairrag.query_id": "q1"}),
        span("g1", "s", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": " shoes? ",
                         "gen_ai.retrieval.documents": docs}, parent="r", start=T0 + 1),
        span("g1", "c", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Buy D2."}], "finish_reason": "stop"}])},
             parent="r", start=T0 + 2),
        span("g2", "s", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": structured,
                         "gen_ai.retrieval.query.text": "q two"}, start=T0 + 10),
        span("g2", "c", {"gen_ai.operation.name": "text_completion", "gen_ai.completion.0.role": "assistant",
                         "gen_ai.completion.0.content": "OpenLLMetry style."}, parent="s", start=T0 + 11),
        span("g3", "s", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": '[{"id": "d4"}]',
                         "gen_ai.retrieval.query.text": "q three"}, start=T0 + 20),
        span("g3", "c", {"gen_ai.operation.name": "chat"}, parent="s", start=T0 + 21, events=[
            {"name": "gen_ai.content.completion", "attributes": [
                {"key": "gen_ai.completion", "value": {"stringValue": '[{"role": "assistant", "content": "Event."}]'}}
            ]}]),
    ]
    one, two, three = load_traces(write_lines(tmp_path, [export(*spans)])).entries
    assert (one.query_id, one.query, one.ranking, one.scores, one.answer, one.session) == (
        "q1", "shoes?", ("d2", "d1"), (0.9, None), "Buy D2.", "conv-7")
    assert dict(one.doc_metadata[0]) == {"title": "Two", "source": "A"} and one.timestamp == "2026-03-02T09:16:00Z"
    assert (two.query_id, two.ranking, two.answer) == ("q two", ("d1", "d3"), "OpenLLMetry style.")
    assert (three.ranking, three.answer) == (("d4",), "Event.")


def test_a_reranker_gives_the_ranking_the_generator_saw_and_llm_messages_the_answer(tmp_path):
    spans = [
        span("t", "s", {"openinference.span.kind": "RETRIEVER", "input.value": "shoes",
                        "retrieval.documents.0.document.id": "d1", "retrieval.documents.1.document.id": "d2"}),
        span("t", "k", {"openinference.span.kind": "RERANKER", "reranker.output_documents.0.document.id": "d2",
                        "reranker.output_documents.0.document.score": 3.5,
                        "reranker.output_documents.1.document.id": "d1"}, start=T0 + 1),
        span("t", "l1", {"openinference.span.kind": "LLM", "output.value": '{"choices": []}',
                         "output.mime_type": "application/json",
                         "llm.output_messages.0.message.role": "assistant",
                         "llm.output_messages.0.message.content": " The final answer. "}, start=T0 + 3),
        span("t", "l0", {"openinference.span.kind": "LLM", "output.value": "A planning step."}, start=T0 + 2),
    ]
    entry, = load_traces(write_lines(tmp_path, [export(*spans)])).entries
    assert (entry.ranking, entry.scores, entry.query, entry.answer) == (("d2", "d1"), (3.5, None), "shoes",
                                                                       "The final answer.")


def test_several_retrieval_spans_are_skipped_by_default_or_one_is_kept(tmp_path):
    agent = [span("a", "r", {"fairrag.query_id": "q"}),
             span("a", "s2", {"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.id": "late"},
                  parent="r", start=T0 + 9),
             span("a", "s1", {"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.id": "early"},
                  parent="r", start=T0 + 1)]
    path = write_lines(tmp_path, [export(*agent, *rag_trace("b", "q", ["d1"]))])
    log = load_traces(path)
    assert [e.ranking for e in log.entries] == [("d1",)]
    assert log.notes == ("1 of 2 traces left out: 1 with several independent retrieval spans (keep the first or the "
                         "last with --multi-retrieval) (first: trace a; its retrievals: span s1 with 1 document, span "
                         "s2 with 1 document)",)
    assert load_traces(path, trace_map=TraceMap(multiple="first")).entries[0].ranking == ("early",)
    assert load_traces(path, trace_map=TraceMap(multiple=MultipleRetrievals.LAST)).entries[0].ranking == ("late",)


# -- nested retrieval spans: one retrieval ------------------------------------------------------------------------
def llama_trace(trace, qid, docs, *, shape="outer", start=T0, **more):
    """The trace openinference-instrumentation-llama-index writes for one request (:func:`rag_trace`'s spans, the
    RETRIEVER span named ``BM25Retriever.retrieve`` with a child RETRIEVER ``BM25Retriever._retrieve``): the
    documents on the outer span (``shape="outer"``, as the instrumentor writes them), on the inner one
    (``"inner"``, the reverse) or on both (``"both"``)."""
    root, outer, llm = rag_trace(trace, qid, docs, start=start, **more)
    listed = [a for a in outer["attributes"] if a["key"].startswith("retrieval.documents.")]
    bare = [a for a in outer["attributes"] if a not in listed]
    outer = {**outer, "name": "BM25Retriever.retrieve", "attributes": bare + (listed if shape != "inner" else [])}
    inner = span(trace, f"{trace}-i", {}, parent=f"{trace}-s", start=start + 1500, name="BM25Retriever._retrieve")
    inner["attributes"] = bare + (listed if shape != "outer" else [])
    return [root, outer, inner, llm]


def retriever(trace, span_id, docs, *, parent, start, name):
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "a question"}
    attrs.update({f"retrieval.documents.{i}.document.id": d for i, d in enumerate(docs)})
    return span(trace, span_id, attrs, parent=parent, start=start, name=name)


def rankings(path, multiple=MultipleRetrievals.SKIP):
    log = load_traces(path, trace_map=TraceMap(multiple=multiple))
    return [(e.query_id, e.ranking, e.query) for e in log.entries], log.notes


@pytest.mark.parametrize("shape", ["outer", "inner", "both"])
def test_a_retrieval_span_nested_in_another_is_one_retrieval_whichever_holds_the_documents(tmp_path, shape):
    """Issue 29: the stock LlamaIndex trace (documents on BM25Retriever.retrieve, none on its child _retrieve) was
    refused as several retrievals, and --multi-retrieval last failed on it."""
    path = write_lines(tmp_path, [export(*llama_trace("t1", "q1", ["d1", "d2"], shape=shape, citations=["d2"]),
                                         *llama_trace("t2", "q2", ["d3"], shape=shape, start=T0 + 10))])
    want = ([("q1", ("d1", "d2"), "a question"), ("q2", ("d3",), "a question")], ())
    for multiple in MultipleRetrievals:
        assert rankings(path, multiple) == want, multiple
    single = write_lines(tmp_path, [export(*rag_trace("t1", "q1", ["d1", "d2"], citations=["d2"]),
                                           *rag_trace("t2", "q2", ["d3"], start=T0 + 10))], "single.jsonl")
    assert served(load_traces(path)) == served(load_traces(single))


def test_nesting_three_levels_deep_through_a_span_that_is_not_kept(tmp_path):
    """Router → BM25 → an HTTP call (no attribute the reader keeps, so only its parent link is held) → the search
    client's span with the documents: one retrieval."""
    spans = [span("t", "r", {"openinference.span.kind": "CHAIN", "fairrag.query_id": "q"}),
             retriever("t", "a", [], parent="r", start=T0 + 1, name="RouterRetriever.retrieve"),
             retriever("t", "b", [], parent="a", start=T0 + 2, name="BM25Retriever.retrieve"),
             span("t", "h", {}, parent="b", start=T0 + 3, name="POST /search"),
             retriever("t", "c", ["d1", "d2", "d3"], parent="h", start=T0 + 4, name="SearchClient.retrieve")]
    path = write_lines(tmp_path, [export(*spans)])
    for multiple in MultipleRetrievals:
        assert rankings(path, multiple) == ([("q", ("d1", "d2", "d3"), "a question")], ()), multiple
    spans[1] = retriever("t", "a", ["d1", "d2", "d3"], parent="r", start=T0 + 1, name="RouterRetriever.retrieve")
    assert rankings(write_lines(tmp_path, [export(*spans)], "same.jsonl")) == ([("q", ("d1", "d2", "d3"),
                                                                                 "a question")], ())


def test_nested_spans_that_list_different_documents_keep_the_outermost_list_and_say_so(tmp_path):
    """A fusion retriever: its span lists the fused ranking the caller received, the two retrievers nested in it list
    their own; the outermost list is the retrieval's result."""
    spans = [span("f", "r", {"fairrag.query_id": "q"}),
             retriever("f", "a", ["d2", "d1"], parent="r", start=T0 + 1, name="QueryFusionRetriever.retrieve"),
             retriever("f", "b", ["d1", "d3"], parent="a", start=T0 + 2, name="BM25Retriever.retrieve"),
             retriever("f", "c", ["d2"], parent="a", start=T0 + 3, name="VectorIndexRetriever.retrieve"),
             *llama_trace("g", "q2", ["d4"], start=T0 + 10)]
    path = write_lines(tmp_path, [export(*spans)])
    note = ("1 trace(s) have a retrieval span nested in another that lists other documents; each keeps the outermost "
            "span's list (first: trace f)")
    for multiple in MultipleRetrievals:
        assert rankings(path, multiple) == ([("q", ("d2", "d1"), "a question"), ("q2", ("d4",), "a question")],
                                            (note,)), multiple


@pytest.mark.parametrize("under", ["root", "chain"])
def test_independent_retrievals_are_still_refused_naming_the_spans_that_hold_documents(tmp_path, under):
    """Two LlamaIndex retrievals (each a retrieve span with its _retrieve child) side by side, under the root or
    under a sub-question step that is no retrieval: two retrievals, refused by default; first and last keep one."""
    parent = "r" if under == "root" else "c"
    spans = [span("t", "r", {"openinference.span.kind": "CHAIN", "fairrag.query_id": "q"}),
             span("t", "c", {"openinference.span.kind": "CHAIN"}, parent="r", start=T0 + 1,
                  name="SubQuestionQueryEngine.query"),
             retriever("t", "v", ["d1", "d2"], parent=parent, start=T0 + 2, name="VectorIndexRetriever.retrieve"),
             retriever("t", "vi", [], parent="v", start=T0 + 3, name="VectorIndexRetriever._retrieve"),
             retriever("t", "b", [], parent=parent, start=T0 + 4, name="BM25Retriever.retrieve"),
             retriever("t", "bi", ["d3", "d4", "d5"], parent="b", start=T0 + 5, name="BM25Retriever._retrieve"),
             retriever("t", "e", [], parent=parent, start=T0 + 6, name="EmptyRetriever.retrieve")]
    path = write_lines(tmp_path, [export(*spans, *llama_trace("k", "q2", ["d9"], start=T0 + 10))])
    assert rankings(path) == ([("q2", ("d9",), "a question")], (
        "1 of 2 traces left out: 1 with several independent retrieval spans (keep the first or the last with "
        "--multi-retrieval) (first: trace t; its retrievals: VectorIndexRetriever.retrieve with 2 documents, "
        "BM25Retriever._retrieve with 3 documents, EmptyRetriever.retrieve with no documents)",))
    assert rankings(path, MultipleRetrievals.FIRST)[0][0] == ("q", ("d1", "d2"), "a question")
    with pytest.raises(DataFormatError) as err:  # the last is the one without documents
        load_traces(write_lines(tmp_path, [export(*spans)], "alone.jsonl"))
    assert str(err.value) == (
        f"{tmp_path / 'alone.jsonl'}: none of the 1 traces makes a served answer (1 with several independent "
        "retrieval spans (keep the first or the last with --multi-retrieval) (first: trace t; its retrievals: "
        "VectorIndexRetriever.retrieve with 2 documents, BM25Retriever._retrieve with 3 documents, "
        "EmptyRetriever.retrieve with no documents)); a trace needs a retrieval span with document ids (OpenInference "
        "RETRIEVER, or GenAI gen_ai.retrieval.documents): name other attributes with --trace-map (docs/traces.md)")
    last = write_lines(tmp_path, [export(*spans[:-1])], "two.jsonl")
    assert rankings(last, MultipleRetrievals.LAST) == ([("q", ("d3", "d4", "d5"), "a question")], ())


def test_a_reranker_nested_in_a_reranker_is_one_reranking(tmp_path):
    spans = [*llama_trace("t", "q", ["d1", "d2", "d3"]),
             span("t", "k", {"openinference.span.kind": "RERANKER", "reranker.output_documents.0.document.id": "d3",
                             "reranker.output_documents.1.document.id": "d1"}, parent="t-r", start=T0 + 1800,
                  name="SentenceTransformerRerank._postprocess_nodes"),
             span("t", "k2", {"openinference.span.kind": "RERANKER", "reranker.query": "inner",
                              "reranker.output_documents.0.document.id": "d3",
                              "reranker.output_documents.1.document.id": "d1"}, parent="k", start=T0 + 1900)]
    for multiple in MultipleRetrievals:
        assert rankings(write_lines(tmp_path, [export(*spans)]), multiple) == ([("q", ("d3", "d1"), "inner")],
                                                                              ()), multiple


def test_an_export_of_nested_retrievals_audits_with_no_option_as_single_retrieval_traces(tmp_path, shoes):
    """20 requests of the demo log written as the stock LlamaIndex traces (the documents on the outer span, with
    scores) and as single-retrieval traces: the same audit, from the API and from ``audit-log`` with no option."""
    from fairrag_core.cli import main

    entries = load_served(DEMO_LOG).entries[:20]
    nested, single = [], []
    for i, e in enumerate(entries):
        docs = [(d, float(10 - r), json.dumps({"source": "x"})) for r, d in enumerate(e.ranking)]
        common = {"start": T0 + i * 1_000_000_000, "query": e.query or "a question", "answer": e.answer or "-",
                  "session": e.session or "s", "citations": None if e.citations is None else list(e.citations)}
        nested.append(export(*llama_trace(f"t{i:02d}", e.query_id, docs, **common)))
        single.append(export(*rag_trace(f"t{i:02d}", e.query_id, docs, **common)))
    nested_path, single_path = write_lines(tmp_path, nested, "nested.jsonl"), write_lines(tmp_path, single, "one.jsonl")
    log = load_served(nested_path)
    assert len(log) == 20 and log.notes == () and [e.ranking for e in log.entries] == [e.ranking for e in entries]
    run = _same_audit(log, load_served(single_path), shoes, shoes, LogAuditConfig(seed=7, n_boot=200))
    assert len(run.table) == len({e.query_id for e in entries})
    payloads = []
    for path in (nested_path, single_path):
        out = io.StringIO()
        assert main(["audit-log", str(path), "--collection", "running-shoes", "--no-store", "--seed", "7",
                     "--boot", "200", "--json"], out=out) == 0
        payload = json.loads(out.getvalue())
        config = payload.pop("config")
        del payload["command"], config["wall_seconds"], config["config"]["log"], config["extra"]["log_sha256"]
        del payload["fairrag"]  # the header names the file (its command, path and sha256), as the record does
        log_input = config["extra"]["inputs"][0]
        assert (log_input["role"], log_input.pop("name"), log_input.pop("rankings")) == ("log", path.name, 20)
        del log_input["sha256"], log_input["path"]
        payloads.append((payload, config))
    assert payloads[0] == payloads[1]
    assert payloads[0][0]["notes"] == payloads[1][0]["notes"] and len(payloads[0][0]["queries"]) == len(run.table)


def test_traces_that_make_no_served_answer_are_counted_and_none_left_is_an_error(tmp_path):
    bad = [span("n1", "r", {"http.route": "/healthz"}),  # no retrieval
           span("n2", "s", {"openinference.span.kind": "RETRIEVER"}),  # no documents
           span("n3", "s", {"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.score": 1.0}),
           span("n4", "s", {"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.id": "d",
                            "retrieval.documents.1.document.id": "d"}),
           span("n5", "s", {"retrieval.documents.0.document.id": "d"}),  # no query id, no query text
           *rag_trace("n6", "q", ["d1"], citations=["d1", "d1"])]
    with pytest.raises(DataFormatError) as err:
        load_traces(write_lines(tmp_path, [export(*bad)]))
    assert str(err.value) == (
        f"{tmp_path / 'traces.jsonl'}: none of the 6 traces makes a served answer (1 with no retrieval span; 1 with a "
        "retrieval span without document ids; 1 with a retrieved document without an id (first: trace n3; log "
        "document.id (LangChain: Document.id) or read it from the metadata: --trace-map document_id=metadata.KEY, "
        "docs/traces.md); 1 with a ranking that "
        "lists a document twice; 1 with no query id and no query text; 1 with citations that are not a list of doc "
        "ids (each once)); a trace needs a retrieval span with document ids (OpenInference RETRIEVER, or GenAI "
        "gen_ai.retrieval.documents): name other attributes with --trace-map (docs/traces.md)")


def test_the_trace_map_reads_other_attributes(tmp_path):
    spans = [span("m", "r", {"app.intent": 42, "app.session": "u9", "app.cites": ["x2"]}),
             span("m", "s", {"app.docs": json.dumps([{"key": "x1", "relevance": 0.2, "meta": {"site": "a.org"}},
                                                     {"key": "x2", "relevance": 0.1}]),
                             "app.question": "where?"}, start=T0 + 1),
             span("m", "g", {"app.reply": "there"}, start=T0 + 2),
             span("r2", "s", {"app.ids": '["y1", "y2"]', "app.intent": "q2"})]
    trace_map = TraceMap.parse(["query_id=app.intent", "query=app.question", "answer=app.reply",
                                "citations=app.cites", "session=app.session", "documents=app.docs",
                                "document_id=key", "document_score=relevance", "document_metadata=meta",
                                "ranking=app.ids"])
    first, second = load_traces(write_lines(tmp_path, [export(*spans)]), trace_map=trace_map).entries
    assert (first.query_id, first.query, first.answer, first.citations, first.session) == ("42", "where?", "there",
                                                                                          ("x2",), "u9")
    assert (first.ranking, first.scores, dict(first.doc_metadata[0])) == (("x1", "x2"), (0.2, 0.1), {"site": "a.org"})
    assert (second.query_id, second.ranking, second.scores) == ("q2", ("y1", "y2"), None)
    assert trace_map.items()[0] == "query_id=app.intent"


@pytest.mark.parametrize("items, message", [
    (["query_id"], r"--trace-map 'query_id' is not KEY=ATTRIBUTE; e.g. --trace-map query_id=app.intent_id"),
    (["ranks=a"], r"unknown trace field\(s\) \['ranks'\]; map one of: query_id, query, answer"),
    (["answer= "], r"trace field 'answer' is mapped to no attribute; write answer=ATTRIBUTE"),
    (["answer=a", "answer=b"], r"--trace-map maps 'answer' twice"),
])
def test_a_bad_trace_map_names_the_fix(items, message):
    with pytest.raises(InvalidParameterError, match=message):
        TraceMap.parse(items)


def test_timestamps_session_and_trace_id(tmp_path):
    spans = rag_trace("ABC", "q", ["d"], start=T0 + 1_500, session=7)
    entry, = load_traces(write_lines(tmp_path, [export(*spans)])).entries
    assert (entry.timestamp, entry.session, dict(entry.metadata)) == ("2026-03-02T09:16:00.0000015Z", "7",
                                                                      {"trace_id": "abc"})


# -- files: detection, JSON Lines, whole file, gzip ----------------------------------------------------------------
def test_loaders_recognise_a_trace_export_whatever_its_layout(tmp_path):
    spans = rag_trace("t1", "q1", ["d1", "d2"]) + rag_trace("t2", "q2", ["d2"], start=T0 + 50)
    want = served(load_traces(write_lines(tmp_path, [export(*spans)])))
    pretty = tmp_path / "export.json"
    pretty.write_text(json.dumps(export(*spans), indent=2), encoding="utf-8")
    zipped = tmp_path / "export.jsonl.gz"
    zipped.write_bytes(gzip.compress("".join(json.dumps(export(s)) + "\n" for s in spans).encode()))
    for path in (pretty, zipped):
        for load in (load_rag_log, load_served, load_traces):
            log = load(path)
            assert log.format == "otlp" and served(log) == want, (path, load)
    assert load_served(pretty).file_lines == len(pretty.read_text().splitlines())
    import hashlib

    assert load_rag_log(zipped).sha256 == hashlib.sha256(zipped.read_bytes()).hexdigest()


def test_a_file_that_is_neither_a_log_nor_an_export_says_what_is_accepted(tmp_path):
    path = tmp_path / "spans.jsonl"
    path.write_text('{"name": "rag", "context": {"trace_id": "0x1"}}\n', encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        load_served(path)
    assert str(err.value) == (
        f"{path}, line 1: this is neither a RAG log nor a trace export; accepted: a RAG log (JSONL, one served answer "
        'per line with "query_id" and "ranking"), an OTLP JSON trace export ({"resourceSpans": [...]}, one per line '
        "or the whole file, as the OpenTelemetry collector's file exporter writes it; docs/traces.md), either one "
        "gzipped, or a served run file (TREC, expeval, TREC Fair 2022) (its first object has the field(s) "
        "['context', 'name'])")


def test_a_malformed_export_names_the_line_and_the_json_path(tmp_path):
    good = export(*rag_trace("t1", "q1", ["d1"]))
    bad = export(*rag_trace("t2", "q1", ["d1"]))
    bad["resourceSpans"][0]["scopeSpans"].append({"spans": [span("t3", "x", {})] * 4 + [
        {"traceId": "t3", "spanId": "y", "attributes": [{"key": "input.value", "value": {"stringValue": 3}}]}]})
    path = write_lines(tmp_path, [good, bad])
    with pytest.raises(DataFormatError) as err:
        load_traces(path)
    assert str(err.value) == (f"{path}, line 2: resourceSpans[0].scopeSpans[1].spans[4].attributes[0].value"
                              ".stringValue: expected a string, got int; write OTLP JSON as the OpenTelemetry "
                              "collector's file exporter does (docs/traces.md)")
    assert err.value.line == 2


@pytest.mark.parametrize("mutate, message", [
    (lambda e: e["resourceSpans"][0].update(scopeSpans={}), r"line 1: resourceSpans\[0\]\.scopeSpans: expected a "
                                                            r"JSON array, got dict"),
    (lambda e: e["resourceSpans"][0]["scopeSpans"][0]["spans"][1].pop("traceId"),
     r"spans\[1\]\.traceId: every span needs its trace id \(hex\), got nothing"),
    (lambda e: e["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(startTimeUnixNano="soon"),
     r"spans\[0\]\.startTimeUnixNano: expected a whole number \(a 64-bit integer"),
    (lambda e: e["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0].update(value={"floatValue": 1}),
     r"attributes\[0\]\.value: unknown attribute value type 'floatValue'"),
    (lambda e: e.update(resourceSpans=[], other=1) or e.pop("resourceSpans"),
     r"line 1: the export: an OTLP trace export is an object with \"resourceSpans\"; got the field\(s\) \['other'\]"),
    (lambda e: e["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].__setitem__(0, 5),
     r"spans\[0\]\.attributes\[0\]: expected a JSON object, got int"),
    (lambda e: e["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0].update(key=3),
     r"spans\[0\]\.attributes\[0\]\.key: expected the attribute's name as a string, got int"),
    (lambda e: e["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0].update(
        value={"kvlistValue": {"values": [{"key": "a", "value": {}}, {"key": None}]}}),
     r"attributes\[0\]\.value\.kvlistValue\.values\[1\]\.key: expected the attribute's name as a string, got "
     r"NoneType"),
    (lambda e: e["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0].update(value=nested(33)),
     r"attributes\[0\]\.value(\.kvlistValue\.values\[0\]\.value){33}: attribute values nested deeper than 32 "
     r"levels"),
    (lambda e: e["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(events=[
        {"name": "gen_ai.content.completion", "attributes": [{"key": "gen_ai.completion",
                                                              "value": {"boolValue": "yes"}}]}]),
     r"spans\[0\]\.events\[0\]\.attributes\[0\]\.value\.boolValue: expected true or false, got 'yes'"),
])
def test_malformed_exports(tmp_path, mutate, message):
    obj = export(*rag_trace("t1", "q1", ["d1"]))
    mutate(obj)
    path = write_lines(tmp_path, [obj])
    with pytest.raises(DataFormatError, match=message):
        load_traces(path)


def nested(levels):
    """A string inside ``levels`` nested kvlistValues: the string is ``levels`` deep."""
    out = {"stringValue": "x"}
    for _ in range(levels):
        out = {"kvlistValue": {"values": [{"key": "k", "value": out}]}}
    return out


def test_attribute_values_may_nest_32_levels(tmp_path):
    trace = rag_trace("t1", "q1", ["d1"])
    trace[1]["attributes"].append({"key": "retrieval.documents.0.document.metadata", "value": nested(32)})
    log = load_traces(write_lines(tmp_path, [export(*trace)]))
    assert len(log.entries) == 1 and "k" in log.entries[0].doc_metadata[0]


def test_a_pretty_printed_export_with_broken_json_says_where(tmp_path):
    path = tmp_path / "export.json"
    text = json.dumps(export(*rag_trace("t1", "q1", ["d1"])), indent=2)
    path.write_text(text.replace('"spanId"', "spanId", 1), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"export.json: invalid JSON \(Expecting property name enclosed in "
                                              r"double quotes at line \d+, column \d+\); a trace export is one JSON "
                                              r"object, pretty-printed over the file or one per line"):
        load_served(path)


def test_an_export_without_spans_and_logs_or_metrics_lines(tmp_path):
    with pytest.raises(DataFormatError, match=r"no spans found \(only logs or metrics\); export traces"):
        load_traces(write_lines(tmp_path, [{"resourceLogs": []}, {"resourceSpans": []}]))
    log = load_traces(write_lines(tmp_path, [{"resourceMetrics": []}, export(*rag_trace("t", "q", ["d"]))]))
    assert log.notes == ("1 export line(s) hold logs or metrics, not spans; they are left out",)


def test_unknown_doc_ids_are_named_with_their_trace(tmp_path, shoes):
    path = write_lines(tmp_path, [export(*rag_trace("t1", "q", ["rs-001", "nope"]))])
    with pytest.raises(DataFormatError) as err:
        load_served(path, collection=shoes)
    assert str(err.value) == (f"{path}: 1 doc id(s) are not in collection 'running-shoes' (first: 'nope' in ranking "
                              "of trace t1; all: 'nope'); audit the log with the collection the system retrieved from "
                              "(--collection), or fix the ids in the log; without a collection, --provider-from or "
                              "--provider-map name the providers")


def test_a_load_holds_at_most_max_log_lines_traces(tmp_path, monkeypatch):
    spans = [s for i in range(5) for s in rag_trace(f"t{i}", "q", ["d"], start=T0 + i)]
    path = write_lines(tmp_path, [export(*spans)])
    monkeypatch.setenv("FAIRRAG_MAX_LOG_LINES", "5")
    assert len(load_traces(path)) == 5
    monkeypatch.setenv("FAIRRAG_MAX_LOG_LINES", "4")
    with pytest.raises(DataFormatError, match=r"line 1: more than 4 traces, more than one load holds in memory"):
        load_traces(path)


def test_a_log_entry_refuses_scores_that_do_not_match_its_ranking():
    with pytest.raises(InvalidParameterError, match=r"scores holds 1 values for a ranking of 2 documents"):
        LogEntry(1, "q", ("a", "b"), scores=(1.0,))


# -- documents and providers without a collection ----------------------------------------------------------------
def _log(*entries):
    return RagLog("log.jsonl", tuple(entries))


def test_providers_from_metadata_or_domain_with_notes():
    log = _log(LogEntry(1, "q", ("a", "b", "c"), citations=("z",),
                        doc_metadata=({"source": "Acme", "url": "https://www.acme.com/x"},
                                      {"origin": {"site": "b.org"}, "url": "b.org/page"}, {})),
               LogEntry(2, "q", ("a",), doc_metadata=({"source": "Other"},)))
    docs = documents_from_log(log, provider_from=ProviderSource.parse("metadata.source"))
    assert [(d.doc_id, d.provider) for d in docs.collection.documents] == [("a", "Acme"), ("b", "b"), ("c", "c"),
                                                                          ("z", "z")]
    assert docs.notes == ("3 of 4 documents have no metadata.source in the log; each is its own provider",
                          "1 document(s) have different metadata.source on different lines (first: 'a'); each keeps "
                          "the first")
    domains = documents_from_log(log, provider_from=ProviderSource.parse("domain:metadata.url")).collection
    assert list(domains.providers[:2]) == ["acme.com", "b.org"]
    nested = documents_from_log(log, provider_from=ProviderSource.parse("metadata.origin.site")).collection
    assert nested.providers[1] == "b.org" and not nested.qrels and nested.name == "documents of log.jsonl"


@pytest.mark.parametrize("text", ["source", "metadata", "id.x", "domain:", "metadata..x"])
def test_a_bad_provider_source_names_the_fix(text):
    with pytest.raises(InvalidParameterError, match=r"is not metadata.KEY or id; e.g. --provider-from"):
        ProviderSource.parse(text)


def test_a_provider_map_with_groups_wins_over_metadata(tmp_path):
    path = tmp_path / "map.csv"
    path.write_text("doc_id,provider,group:region\na,Acme Inc,EU\nb,Bolt,\n", encoding="utf-8")
    log = _log(LogEntry(1, "q", ("a", "c"), doc_metadata=({"source": "ignored"}, {"source": "Cee"})))
    docs = documents_from_log(log, provider_from=ProviderSource.parse("metadata.source"),
                              provider_map=load_provider_map(path))
    assert [(d.doc_id, d.provider, dict(d.groups)) for d in docs.collection.documents] == [
        ("a", "Acme Inc", {"region": "EU"}), ("c", "Cee", {})]
    assert docs.collection.categories() == ["region"] and docs.notes == ()


@pytest.mark.parametrize("text, message", [
    ("doc,provider\n", r"line 1: the first row must be the header doc_id,provider"),
    ("doc_id,provider\na,P,extra\n", r"line 2: 3 cell\(s\), the header has 2"),
    ("doc_id,provider\na,\n", r"line 2: provider is empty"),
    ("doc_id,provider\na,P\na,Q\n", r"line 3: doc id 'a' is mapped twice"),
    ("\n", r"the provider map is empty"),
])
def test_a_bad_provider_map_names_the_line_and_the_fix(tmp_path, text, message):
    path = tmp_path / "map.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        load_provider_map(path)


@pytest.mark.parametrize("url", ["http://[::1", "https://[fe80::1/x", "[::1"])
def test_a_logged_url_that_is_no_url_names_the_query_and_the_fix(url, tmp_path, capsys):
    """Issue 28: ``--provider-from domain:metadata.url`` with a logged ``http://[::1`` ended in a raw ValueError
    traceback from urlsplit. It is a data error: the file, the line (or the trace), the query, the value and the fix."""
    from fairrag_core.cli import main

    log = RagLog("served.jsonl", (LogEntry(1, "q1", ("a", "b"), doc_metadata=({"url": "https://a.example/1"}, {})),
                                  LogEntry(2, "q2", ("c",), doc_metadata=({"url": url},))))
    rule = ProviderSource.parse("domain:metadata.url")
    with pytest.raises(DataFormatError) as err:
        documents_from_log(log, provider_from=rule)
    assert str(err.value) == (f"served.jsonl, line 2: query 'q2': domain:metadata.url of document 'c' is not a URL "
                              f"(Invalid IPv6 URL: {url!r}); fix the logged URL, or name the providers another way "
                              "(--provider-from metadata.KEY, or --provider-map)")
    text = DEMO_TRACES.read_text(encoding="utf-8")
    assert text.count("https://velocore.example/products/rs-089") > 1
    bad = tmp_path / "bad.otlp.jsonl"
    bad.write_text(text.replace("https://velocore.example/products/rs-089", url, 1), encoding="utf-8")
    assert main(["audit-log", str(bad), "--provider-from", "domain:metadata.url", "--no-store", "--seed", "2"]) == 2
    assert capsys.readouterr().err == (
        f"error: {bad}: query 'rs-x02' (trace 562469bed3fc18293dce1098344ddc2d): domain:metadata.url of document "
        f"'rs-089' is not a URL (Invalid IPv6 URL: {url!r}); fix the logged URL, or name the providers another way "
        "(--provider-from metadata.KEY, or --provider-map)\n")
