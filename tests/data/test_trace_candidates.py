"""Logged candidate sets (issue 29): what a system chose its ranking from — a reranker's input, the retrieval a
reranker reordered, a retriever's deeper list, a JSONL line's "candidates" — read from traces and logs, kept by the
receiver without their texts, and never invented from the served ranking."""

import json

import pytest
from data.test_traces import T0, export, span, value, write_lines  # the OTLP builders of tests/data

from fairrag_core import DataFormatError, InvalidParameterError
from fairrag_core.data import Collection, Document, load_rag_log, load_traces
from fairrag_core.data.rag_log import LogEntry, RagLog
from fairrag_core.data.traces import ProviderSource, documents_from_log, kept_attributes, slim_export

DOCS = [f"d{i:02d}" for i in range(20)]


def flat(prefix, docs, *, content=False):
    """OpenInference's flat attributes of a document list: ``{prefix}.{i}.document.{id,score,metadata}``; the
    score is 20 − i, the metadata names a source (A for even documents, B for odd) and with ``content`` a text."""
    attrs = {}
    for i, doc in enumerate(docs):
        attrs[f"{prefix}.{i}.document.id"] = doc
        attrs[f"{prefix}.{i}.document.score"] = float(20 - DOCS.index(doc))
        attrs[f"{prefix}.{i}.document.metadata"] = json.dumps({"source": "AB"[DOCS.index(doc) % 2]})
        if content:
            attrs[f"{prefix}.{i}.document.content"] = f"The text of {doc}."
    return attrs


def reranked_trace(trace, qid, served, *, inputs=None, retrieved=None, start=T0, content=False):
    """A request as openinference-instrumentation-llama-index traces one with a reranker: CHAIN root, RETRIEVER
    (``retrieved``, when given), RERANKER (``inputs`` as its input documents when given, ``served`` as its output),
    LLM."""
    spans = [span(trace, f"{trace}-r", {"openinference.span.kind": "CHAIN", "fairrag.query_id": qid}, start=start)]
    if retrieved is not None:
        spans.append(span(trace, f"{trace}-s", {"openinference.span.kind": "RETRIEVER", "input.value": "a question",
                                                **flat("retrieval.documents", retrieved, content=content)},
                          parent=f"{trace}-r", start=start + 1, name="BM25Retriever.retrieve"))
    reranker = {"openinference.span.kind": "RERANKER", "reranker.query": "a question",
                **flat("reranker.output_documents", served, content=content)}
    if inputs is not None:
        reranker.update(flat("reranker.input_documents", inputs, content=content))
    spans.append(span(trace, f"{trace}-k", reranker, parent=f"{trace}-r", start=start + 2, name="Reranker"))
    spans.append(span(trace, f"{trace}-l", {"openinference.span.kind": "LLM", "output.value": "An answer."},
                      parent=f"{trace}-r", start=start + 3))
    return spans


SERVED = ["d07", "d02", "d11", "d00", "d15"]


def test_a_rerankers_input_documents_are_the_candidates_and_its_output_the_ranking(tmp_path):
    path = write_lines(tmp_path, [export(*reranked_trace("t1", "q1", SERVED, inputs=DOCS))])
    entry, = load_traces(path).entries
    assert entry.ranking == tuple(SERVED) and len(entry.ranking) == 5
    assert entry.candidates == tuple(DOCS) and len(entry.candidates) == 20
    assert entry.candidate_scores == tuple(float(20 - i) for i in range(20))
    assert [m["source"] for m in entry.candidate_metadata[:3]] == ["A", "B", "A"]
    assert entry.scores == (13.0, 18.0, 9.0, 20.0, 5.0)  # the reranker's output scores stay the ranking's


def test_without_input_documents_the_retrieval_a_reranker_reordered_is_the_candidate_set(tmp_path):
    retrieved = DOCS[:8] + ["d11", "d15"]
    path = write_lines(tmp_path, [export(*reranked_trace("t1", "q1", SERVED, retrieved=retrieved))])
    entry, = load_traces(path).entries
    assert entry.ranking == tuple(SERVED)
    assert entry.candidates == tuple(retrieved) and entry.candidate_scores[:2] == (20.0, 19.0)
    # the reranker's own input wins over the retrieval's list
    both = write_lines(tmp_path, [export(*reranked_trace("t1", "q1", SERVED, inputs=DOCS, retrieved=retrieved))],
                       "both.jsonl")
    assert load_traces(both).entries[0].candidates == tuple(DOCS)


def test_without_a_list_the_trace_says_was_cut_there_are_no_candidates(tmp_path):
    """The served ranking is not a candidate set: a lone retrieval, or a reranker with nothing before it."""
    retrieval = span("t1", "s", {"openinference.span.kind": "RETRIEVER", "input.value": "q",
                                 "fairrag.query_id": "q1", **flat("retrieval.documents", DOCS)})
    path = write_lines(tmp_path, [export(retrieval, *reranked_trace("t2", "q2", SERVED, start=T0 + 10))])
    log = load_traces(path)
    assert [(e.ranking[:2], e.candidates, e.candidate_scores, e.candidate_metadata) for e in log.entries] == [
        (("d00", "d01"), None, None, None), (("d07", "d02"), None, None, None)]
    assert log.notes == ()


def test_a_retrieval_span_nested_in_the_served_one_that_lists_more_is_the_deeper_list(tmp_path):
    root = span("t", "r", {"openinference.span.kind": "CHAIN", "fairrag.query_id": "q"})
    outer = span("t", "o", {"openinference.span.kind": "RETRIEVER", "input.value": "q",
                            **flat("retrieval.documents", DOCS[:5])}, parent="r", start=T0 + 1)
    inner = span("t", "i", {"openinference.span.kind": "RETRIEVER", **flat("retrieval.documents", DOCS)},
                 parent="o", start=T0 + 2)
    entry, = load_traces(write_lines(tmp_path, [export(root, outer, inner)])).entries
    assert (entry.ranking, entry.candidates) == (tuple(DOCS[:5]), tuple(DOCS))
    # an inner list that does not hold the whole ranking (a fusion's input) is no candidate set
    other = span("t", "i", {"openinference.span.kind": "RETRIEVER", **flat("retrieval.documents", DOCS[3:])},
                 parent="o", start=T0 + 2)
    assert load_traces(write_lines(tmp_path, [export(root, outer, other)], "b.jsonl")).entries[0].candidates is None


def test_a_reranker_that_adds_documents_has_no_candidates_and_the_notes_count_it(tmp_path):
    path = write_lines(tmp_path, [export(*reranked_trace("t1", "q1", SERVED, inputs=DOCS[:10]),
                                         *reranked_trace("t2", "q2", SERVED, inputs=DOCS, start=T0 + 10),
                                         *reranked_trace("t3", "q3", SERVED, inputs=[*DOCS, "d02"], start=T0 + 20))])
    log = load_traces(path)
    assert [e.candidates is None for e in log.entries] == [True, False, True]
    assert log.notes == ("2 trace(s) log candidates that are left out, so they have no candidate set: 1 with not "
                         "every served document among them (a reranker that adds documents), 1 with a document "
                         "without an id or listed twice (first: trace t1)",)


def test_the_receiver_keeps_the_candidates_ids_scores_and_metadata_but_not_their_texts(tmp_path):
    keep = kept_attributes()
    assert [keep(f"reranker.input_documents.3.document.{part}") for part in ("id", "score", "metadata", "content")
            ] == [True, True, True, False]
    request = export(*reranked_trace("t1", "q1", SERVED, inputs=DOCS, content=True))
    slim = slim_export(request)
    text = json.dumps(slim)
    assert "The text of" not in text and "document.content" not in text
    assert text.count("reranker.input_documents.") == 60  # 20 documents × id, score, metadata
    path = write_lines(tmp_path, [slim])
    assert load_traces(path).entries == load_traces(write_lines(tmp_path, [request], "full.jsonl")).entries


@pytest.mark.parametrize("form", ["array", "json"])
def test_the_structured_form_phoenix_gives_is_read_and_kept_without_texts(tmp_path, form):
    docs = [{"document.id": d, "document.score": float(20 - i), "document.content": f"The text of {d}.",
             "document.metadata": json.dumps({"source": "AB"[i % 2]})} for i, d in enumerate(DOCS)]
    spans = reranked_trace("t1", "q1", SERVED)
    spans[1]["attributes"].append({"key": "reranker.input_documents",
                                   "value": value(docs) if form == "array" else {"stringValue": json.dumps(docs)}})
    request = export(*spans)
    slim = slim_export(request)
    assert "The text of" not in json.dumps(slim)
    for name, exported in (("full.jsonl", request), ("slim.jsonl", slim)):
        entry, = load_traces(write_lines(tmp_path, [exported], name)).entries
        assert entry.candidates == tuple(DOCS) and entry.candidate_scores[19] == 1.0, name
        assert entry.candidate_metadata[1]["source"] == "B"


def test_without_a_collection_the_candidates_are_documents_with_their_providers(tmp_path):
    log = load_traces(write_lines(tmp_path, [export(*reranked_trace("t1", "q1", SERVED, inputs=DOCS))]))
    docs = documents_from_log(log, provider_from=ProviderSource.parse("metadata.source"))
    assert docs.collection.doc_ids == [*SERVED, *(d for d in DOCS if d not in SERVED)]
    assert [d.provider for d in docs.collection.documents[:6]] == ["B", "A", "B", "A", "B", "B"]
    assert docs.notes == ()


def test_a_log_entry_checks_its_candidates():
    entry = LogEntry(1, "q", ("a",), candidates=("b", "a"), candidate_scores=(1.0, None))
    assert entry.candidates == ("b", "a")
    with pytest.raises(InvalidParameterError, match="lack the ranked document 'c'"):
        LogEntry(1, "q", ("a", "c"), candidates=("b", "a"))
    with pytest.raises(InvalidParameterError, match="candidate_scores holds 1 values for 2 candidates"):
        LogEntry(1, "q", ("a",), candidates=("b", "a"), candidate_scores=(1.0,))
    with pytest.raises(InvalidParameterError, match="without candidates"):
        LogEntry(1, "q", ("a",), candidate_scores=(1.0,))


# -- JSONL logs --------------------------------------------------------------------------------------------------
def write_log(tmp_path, rows, name="log.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_jsonl_log_carries_candidates_as_ids_or_as_objects_with_scores(tmp_path):
    path = write_log(tmp_path, [
        {"query_id": "q1", "ranking": ["b", "a"], "candidates": ["a", "b", "c"]},
        {"query_id": "q1", "ranking": ["a"], "candidates": [{"id": "a", "score": 2.5, "metadata": {"source": "S"}},
                                                            {"id": "c", "score": 1}, {"id": "d"}]},
        {"query_id": "q2", "ranking": ["x"]},
    ])
    first, second, third = load_rag_log(path).entries
    assert (first.candidates, first.candidate_scores, first.candidate_metadata) == (("a", "b", "c"), None, None)
    assert (second.candidates, second.candidate_scores) == (("a", "c", "d"), (2.5, 1.0, None))
    assert [dict(m) for m in second.candidate_metadata] == [{"source": "S"}, {}, {}]
    assert (third.candidates, third.candidate_scores) == (None, None)
    collection = Collection("c", tuple(Document(d, "") for d in "abcx"))
    with pytest.raises(DataFormatError, match="first: 'd' in candidates; all: 'd'") as err:
        load_rag_log(path, collection=collection)
    assert err.value.line == 2


_FIX = 'write "candidates" as a list of doc ids, or of objects'


@pytest.mark.parametrize(("candidates", "problem"), [
    ("a b", 'field "candidates" must be a list, got str; ' + _FIX),
    ([], 'field "candidates" is empty; ' + _FIX),
    (["a", {"id": "b"}], 'field "candidates" mixes doc ids and objects; ' + _FIX),
    (["b", "c"], "field \"candidates\" lacks the ranked document 'a'; " + _FIX),
    ([{"id": "a", "score": "high"}], "field \"candidates\" has a score that is no number ('high'); " + _FIX),
    ([{"id": "a", "text": "…"}], "field \"candidates\" has an object with the field(s) ['text']; " + _FIX),
    ([{"score": 1.0}], 'field "candidates" has an object without "id"; ' + _FIX),
    ([{"id": "a", "metadata": "S"}], 'field "candidates" has metadata that is no object (str); ' + _FIX),
    (["a", "a"], "field \"candidates\" lists 'a' twice; each doc id may appear once"),
])
def test_a_bad_candidates_value_names_the_line_and_the_fix(tmp_path, candidates, problem):
    path = write_log(tmp_path, [{"query_id": "q1", "ranking": ["a"]},
                                {"query_id": "q1", "ranking": ["a"], "candidates": candidates}])
    with pytest.raises(DataFormatError) as err:
        load_rag_log(path)
    assert err.value.line == 2 and problem in str(err.value) and "\n" not in str(err.value)


def test_a_log_of_entries_with_candidates_names_them_among_its_documents():
    log = RagLog("x", (LogEntry(1, "q1", ("a",), candidates=("a", "b")),))
    docs = documents_from_log(log, provider_from=ProviderSource.parse("id"))
    assert docs.collection.doc_ids == ["a", "b"]


def test_the_real_llama_index_instrumentors_reranker_input_is_the_candidate_set(tmp_path, monkeypatch):
    """The pipeline of tests/data/test_instrumentors.py with its reranker (the retriever's 10 with their keyword
    scores in, 5 out), traced by openinference-instrumentation-llama-index into ``collect``: every request's
    candidates are the retriever's 10, with their scores, and the ranking the reranker's 5."""
    pytest.importorskip("openinference.instrumentation.llama_index")
    instrumented = pytest.importorskip("data.test_instrumentors")
    seen = {}

    def keep(tmp_path, log, record, docs):
        seen["log"], seen["docs"] = log, docs
        return audited(tmp_path, log, record, docs)

    audited = instrumented.assert_audits_as_the_record
    monkeypatch.setattr(instrumented, "assert_audits_as_the_record", keep)
    from fairrag_core.data.collector import Receiver

    receiver = Receiver(tmp_path / "store", port=0).start()
    try:
        instrumented.test_llama_index_instrumented_pipeline_audits_as_its_own_record(receiver, tmp_path, True)
    finally:
        receiver.stop()
    log, docs = seen["log"], seen["docs"]
    queries = dict(instrumented.queries())
    for entry in log.entries:
        retrieved = instrumented.keyword_ranking(docs, queries[entry.query_id], 2 * instrumented.K)
        assert entry.candidates == tuple(d for d, _ in retrieved)
        assert entry.candidate_scores == tuple(s for _, s in retrieved)
        assert entry.ranking == tuple(reversed(entry.candidates[-instrumented.K:]))
    assert len(log.entries) == 12 and log.notes == ()
