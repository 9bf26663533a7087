"""What the receiver stores holds no document text and no prompt (issue 29), yet reads back as the same served lines
and audits the same: a GenAI trace (structured ``gen_ai.retrieval.documents`` with their texts, a chat span with its
prompt) posted in protobuf and JSON; a LangChain-shaped trace (openinference-instrumentation-langchain 0.1.80: each
document's content and metadata but no ``document.id``, the ids in the retriever span's ``output.value``), whose ids
the reader takes from that output, and which names the fix when no id is logged anywhere. The real LangChain
instrumentor is in test_instrumentors.py."""

import json

import pytest

from fairrag_core import DataFormatError
from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.data import load_served, load_traces
from fairrag_core.data.collector import Receiver
from fairrag_core.data.otlp_proto import json_to_request
from fairrag_core.data.traces import ProviderSource, TraceMap, documents_from_log, slim_export
from tests.data.test_collector import JSON, PROTOBUF, post
from tests.data.test_traces import T0, _same_audit, export, span, value, write_lines

DOCS = {f"d{i}": ("AB"[i % 2], f"TEXT OF d{i}: a long passage about trail running shoes, number {i}.")
        for i in range(8)}
PROMPT = "SYSTEM PROMPT: answer from the context only."


def texts_in(text):
    """The document texts and the prompt that occur in ``text``."""
    return [t for t in (*(t for _, t in DOCS.values()), PROMPT) if t in text]


def genai_trace(trace, qid, docs, *, start, structured):
    """A GenAI-conventions request: root (query id, citations), a retrieval span whose documents carry their texts
    (``content`` in a JSON string, or ``text`` in an array of kvlists), a chat span with its prompt and answer."""
    listed = [{"id": d, "score": 1.0 - i / 10, ("text" if structured else "content"): DOCS[d][1],
               "metadata": {"source": DOCS[d][0]}} for i, d in enumerate(docs)]
    prompt = json.dumps([{"role": "system", "parts": [{"type": "text", "content": PROMPT}]},
                         {"role": "user", "parts": [{"type": "text", "content": DOCS[d][1]} for d in docs]}])
    return [
        span(trace, "a1" * 8, {"fairrag.query_id": qid, "fairrag.citations": json.dumps(docs[:1])}, start=start),
        span(trace, "b2" * 8, {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": f"question {qid}",
                          "gen_ai.retrieval.documents": listed if structured else json.dumps(listed)},
             parent="a1" * 8, start=start + 1),
        span(trace, "c3" * 8, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": prompt,
                          "input.value": prompt, "gen_ai.output.messages": json.dumps(
                              [{"role": "assistant", "parts": [{"type": "text", "content": f"Answer {qid}."}]}])},
             parent="a1" * 8, start=start + 2),
    ]


def langchain_trace(trace, qid, docs, *, start=T0, output=True, no_metadata=()):
    """A request as openinference-instrumentation-langchain 0.1.80 traces a retriever | prompt | chat model chain:
    CHAIN root (the question in, the answer out), RETRIEVER (the query; each document's content and metadata as
    ``retrieval.documents.{i}``, no id; the documents with their ids in ``output.value`` unless ``output`` is false;
    a document in ``no_metadata`` has only its content, as LangChain writes a document with empty metadata), PROMPT
    (the filled prompt), LLM (the prompt in, the answer as a message and as JSON out)."""
    retriever = {"openinference.span.kind": "RETRIEVER", "input.value": f"question {qid}"}
    for i, d in enumerate(docs):
        retriever[f"retrieval.documents.{i}.document.content"] = DOCS[d][1]
        if d not in no_metadata:
            retriever[f"retrieval.documents.{i}.document.metadata"] = json.dumps({"source": DOCS[d][0], "doc_id": d})
    if output:
        retriever["output.value"] = json.dumps({"documents": [
            {"id": d, "metadata": {} if d in no_metadata else {"source": DOCS[d][0], "doc_id": d},
             "page_content": DOCS[d][1], "type": "Document"} for d in docs]})
        retriever["output.mime_type"] = "application/json"
    filled = PROMPT + "\n" + "\n".join(DOCS[d][1] for d in docs)
    answer = f"Answer {qid}."
    return [
        span(trace, "r", {"openinference.span.kind": "CHAIN", "input.value": f"question {qid}", "output.value": answer,
                          "fairrag.query_id": qid, "fairrag.citations": json.dumps(docs[:1])}, start=start),
        span(trace, "s", retriever, parent="r", start=start + 1, name="KeywordRetriever"),
        span(trace, "p", {"openinference.span.kind": "PROMPT", "input.value": json.dumps({"context": filled}),
                          "output.value": json.dumps({"text": filled})}, parent="r", start=start + 2),
        span(trace, "l", {"openinference.span.kind": "LLM", "input.value": json.dumps({"prompts": [filled]}),
                          "llm.input_messages.0.message.content": filled,
                          "llm.output_messages.0.message.role": "assistant",
                          "llm.output_messages.0.message.content": answer,
                          "output.value": json.dumps({"generations": [[{"text": answer}]]}),
                          "output.mime_type": "application/json"}, parent="r", start=start + 3),
    ]


RANKINGS = [["d0", "d1", "d2"], ["d3", "d1", "d4", "d6"], ["d7", "d5"], ["d2", "d0", "d6"]]


def same_served(a, b):
    assert [(e.query_id, e.ranking, e.query, e.answer, e.citations, e.scores, e.doc_metadata, e.timestamp)
            for e in a.entries] == [(e.query_id, e.ranking, e.query, e.answer, e.citations, e.scores, e.doc_metadata,
                                     e.timestamp) for e in b.entries]
    assert a.notes == b.notes


def audits_the_same(collected, exported):
    source = ProviderSource.parse("metadata.source")
    docs_a = documents_from_log(collected, provider_from=source).collection
    docs_b = documents_from_log(exported, provider_from=source).collection
    assert docs_a.documents == docs_b.documents and len(docs_a.documents) > 0
    _same_audit(collected, exported, docs_a, docs_b, LogAuditConfig(seed=5, n_boot=100))


@pytest.fixture
def receiver(tmp_path):
    r = Receiver(tmp_path / "store", port=0).start()
    yield r
    r.stop()


def test_a_collected_genai_trace_holds_no_document_text_or_prompt_and_audits_as_the_export(receiver, tmp_path):
    exports = [export(*genai_trace(f"{i + 1:032x}", f"q{i % 3}", ranking, start=T0 + 10 * i, structured=i % 2 == 1))
               for i, ranking in enumerate(RANKINGS)]
    path = write_lines(tmp_path, exports, "full.jsonl")
    assert len(texts_in(path.read_text())) == len(DOCS) + 1  # the export holds every text and the prompt
    for i, e in enumerate(exports):
        body, kind = (json_to_request(e).SerializeToString(), PROTOBUF) if i % 2 else (json.dumps(e).encode(), JSON)
        assert post(receiver.url, body, kind)[0] == 200
    receiver.stop()
    stored = "".join(f.read_text() for f in (tmp_path / "store").rglob("*.jsonl"))
    assert stored.count("gen_ai.retrieval.documents") == len(RANKINGS) and texts_in(stored) == []
    collected, exported = load_served(tmp_path / "store"), load_served(path)
    assert [e.ranking for e in collected.entries] == [tuple(r) for r in RANKINGS]
    assert collected.entries[1].answer == "Answer q1." and collected.entries[1].scores == (1.0, 0.9, 0.8, 0.7)
    same_served(collected, exported)
    audits_the_same(collected, exported)


def test_a_langchain_trace_reads_its_ids_from_the_retrievers_output_and_is_stored_without_texts(tmp_path):
    exports = [export(*langchain_trace(f"t{i}", f"q{i % 3}", ranking, start=T0 + 10 * i,
                                       no_metadata=("d1",) if i == 0 else ()))
               for i, ranking in enumerate(RANKINGS)]
    full = write_lines(tmp_path, exports, "full.jsonl")
    slim = [slim_export(e) for e in exports]
    text = json.dumps(slim)
    assert len(texts_in(full.read_text())) == len(DOCS) + 1 and texts_in(text) == []
    retriever = {a["key"]: a["value"]["stringValue"] for a in slim[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
                 ["attributes"]}
    assert json.loads(retriever["output.value"]) == {"documents": [{"id": "d0"}, {"id": "d1"}, {"id": "d2"}]}
    assert set(retriever) == {"openinference.span.kind", "input.value", "output.value", "output.mime_type",
                              "retrieval.documents.0.document.metadata", "retrieval.documents.2.document.metadata"}
    # the root's and the prompt's input and output, and the LLM's prompt, are not kept; its answer message is
    assert {a["key"] for s in slim[0]["resourceSpans"][0]["scopeSpans"][0]["spans"] for a in s["attributes"]
            if a["key"].startswith(("input.", "output.value", "llm."))} == {
        "input.value", "output.value", "llm.output_messages.0.message.role", "llm.output_messages.0.message.content"}
    exported, collected = load_served(full), load_served(write_lines(tmp_path, slim, "slim.jsonl"))
    first = exported.entries[0]  # d1, a document with a text but no metadata, is listed from the output alone
    assert (first.ranking, first.query, first.answer) == (("d0", "d1", "d2"), "question q0", "Answer q0.")
    assert [dict(m) for m in first.doc_metadata] == [{"source": "A", "doc_id": "d0"}, {}, {"source": "A",
                                                                                         "doc_id": "d2"}]
    assert [e.ranking for e in exported.entries] == [tuple(r) for r in RANKINGS] and exported.notes == ()
    same_served(collected, exported)


def test_without_ids_anywhere_the_refusal_names_the_metadata_key_and_the_trace_map_reads_it(tmp_path):
    exports = [export(*langchain_trace(f"t{i}", f"q{i}", ranking, start=T0 + 10 * i, output=False))
               for i, ranking in enumerate(RANKINGS)]
    path = write_lines(tmp_path, exports)
    with pytest.raises(DataFormatError) as err:
        load_traces(path)
    assert ("none of the 4 traces makes a served answer (4 with a retrieved document without an id (first: trace t0; "
            "log document.id (LangChain: Document.id) or read it from the metadata (its keys: doc_id, source): "
            "--trace-map document_id=metadata.doc_id, docs/traces.md))") in str(err.value)
    trace_map = TraceMap.parse(["document_id=metadata.doc_id"])
    log = load_traces(path, trace_map=trace_map)
    assert [e.ranking for e in log.entries] == [tuple(r) for r in RANKINGS] and log.notes == ()
    slim = write_lines(tmp_path, [slim_export(e, trace_map) for e in exports], "slim.jsonl")
    same_served(load_traces(slim, trace_map=trace_map), log)
    # one trace without ids among usable ones: counted in the notes, with the fix
    mixed = write_lines(tmp_path, [exports[0], *(export(*langchain_trace(f"u{i}", f"q{i}", r, start=T0 + 100 + i))
                                                 for i, r in enumerate(RANKINGS))], "mixed.jsonl")
    assert load_traces(mixed).notes == ("1 of 5 traces left out: 1 with a retrieved document without an id (first: "
                                        "trace t0; log document.id (LangChain: Document.id) or read it from the "
                                        "metadata (its keys: doc_id, source): --trace-map document_id=metadata.doc_id,"
                                        " docs/traces.md)",)


def test_the_ids_of_the_output_fill_only_what_the_flat_documents_lack(tmp_path):
    spans = langchain_trace("t1", "q1", ["d0", "d1", "d2"])
    spans[1]["attributes"].append({"key": "retrieval.documents.0.document.id", "value": value("logged-0")})
    entry, = load_traces(write_lines(tmp_path, [export(*spans)])).entries
    assert entry.ranking == ("logged-0", "d1", "d2")


def test_input_and_output_values_are_kept_where_the_reader_reads_them_or_the_trace_map_names_them(tmp_path):
    request = export(*langchain_trace("t1", "q1", ["d0", "d2"]),
                     span("t1", "x", {"openinference.span.kind": "LLM", "output.value": "A plain answer."},
                          parent="r", start=T0 + 9))

    def kept(trace_map=None):
        slim = slim_export(request, trace_map)
        return {(s["spanId"], a["key"]) for s in slim["resourceSpans"][0]["scopeSpans"][0]["spans"]
                for a in s["attributes"] if a["key"] in ("input.value", "output.value")}

    # the query (the retriever's input), its ids (its output), a generator's plain-text output (an answer)
    assert kept() == {("s", "input.value"), ("s", "output.value"), ("x", "output.value")}
    assert load_traces(write_lines(tmp_path, [request])).entries[0].answer == "A plain answer."
    mapped = TraceMap.parse(["answer=output.value"])  # the root's output.value, the answer the user saw
    assert kept(mapped) == {("r", "output.value"), ("s", "input.value"), ("s", "output.value"), ("p", "output.value"),
                            ("l", "output.value"), ("x", "output.value")}
    full = load_traces(write_lines(tmp_path, [request], "full.jsonl"), trace_map=mapped)
    slim = load_traces(write_lines(tmp_path, [slim_export(request, mapped)], "slim.jsonl"), trace_map=mapped)
    assert full.entries[0].answer == "Answer q1." and full.entries[0].ranking == ("d0", "d2")
    same_served(slim, full)
