"""The real instrumentors, through the real OpenTelemetry SDK exporter, into ``collect``: a small LlamaIndex pipeline
(a keyword retriever whose ``retrieve`` and ``_retrieve`` are both instrumented, the stock nesting of
llama-index-retrievers-bm25's ``BM25Retriever``; with and without a reranking node postprocessor) and a small
LangChain chain, each with a mock LLM, over 30 documents from 3 providers and 12 queries. What the receiver
collected, read with the default options (no ``--multi-retrieval``) and audited with the providers from the documents'
logged metadata (``--provider-from metadata.source``), must give every request's ranking and citations, and every
provider's retrieval and citation shares, exactly as the pipeline's own record of what it retrieved and cited does;
and the store must hold no document text (not as content, nor inside a prompt or an output). LangChain's trace has no
``document.id``: the ids are read from its retriever span's ``output.value``, which the receiver keeps as ids only.

The instrumentors and the SDK are dev requirements (requirements-dev.txt); nothing is downloaded, no model, no
network beyond the loopback receiver.
"""

import json
import random

import pandas as pd
import pytest
from otel_helpers import finish, stored_spans, traced

from fairrag_core.audit.log_report import log_ledger
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.data import load_served
from fairrag_core.data.traces import ProviderSource, documents_from_log

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")

PROVIDERS = ("Northwind Gazette",) * 15 + ("Capital Courier",) * 10 + ("Harbour Post",) * 5
UNDER_CITED = "Harbour Post"  # the mock answer never cites it
WORDS = ("harbour budget rail election school hospital river festival tariff storm court museum wage bridge "
         "drought vaccine stadium airport housing library").split()
K = 5


def corpus():
    """30 documents ``(doc_id, provider, text)``, each about 6 of 20 topics (seeded)."""
    rng = random.Random(29)
    return [(f"news-{i:02d}", provider, " ".join(rng.sample(WORDS, 6))) for i, provider in enumerate(PROVIDERS)]


def queries():
    rng = random.Random(7)
    return [(f"q{j:02d}", " ".join(rng.sample(WORDS, 2))) for j in range(12)]


def keyword_ranking(docs, query, k):
    """The ids of the ``k`` documents sharing most words with the query (ties by id): the retriever's own record."""
    words = set(query.split())
    scored = sorted(((-len(words.intersection(text.split())), doc_id) for doc_id, _, text in docs))
    return [(doc_id, float(-negative)) for negative, doc_id in scored[:k]]


def cited(ranking, providers):
    """What the mock answer cites: the first two shown documents not of :data:`UNDER_CITED` (its built-in bias)."""
    return [d for d in ranking if providers[d] != UNDER_CITED][:2]


def request(tracer, query_id, run):
    """One request under the application's own root span, carrying the query id and (after the answer) the ids
    the answer cites, as docs/traces.md says; ``run()`` returns ``(ranking, citations)``."""
    with tracer.start_as_current_span("request") as root:
        root.set_attribute("fairrag.query_id", query_id)
        ranking, citations = run()
        root.set_attribute("fairrag.citations", json.dumps(citations))
    return query_id, tuple(ranking), tuple(citations)


def record_requests(receiver, service, instrumentor, answer, retrieved, providers):
    """Each query asked through ``answer(text)`` under ``instrumentor`` with a root span per request, exported into
    ``receiver`` as ``service``; the pipeline's own record (ranking, citations) per request. Stops the receiver."""
    provider = traced(receiver, service)
    instrumentor.instrument(tracer_provider=provider)
    try:
        tracer = provider.get_tracer("news-assistant")

        def ask(text):
            def run():
                answer(text)
                return retrieved[-1], cited(retrieved[-1], providers)
            return run

        record = [request(tracer, query_id, ask(text)) for query_id, text in queries()]
    finally:
        instrumentor.uninstrument()
    finish(provider, receiver)
    return record


def assert_no_document_text(store, docs):
    """The receiver stored no document text: not as a document's content, nor inside a prompt, a retriever's output
    or a chain's output (issue 29: a collected store keeps what the audit reads)."""
    stored = "".join(f.read_text() for f in sorted(store.rglob("*.jsonl")))
    assert stored and [text for _, _, text in docs if text in stored] == []


def kind_counts(spans, kind):
    """How many spans of the OpenInference kind each trace holds."""
    counts = {}
    for span in spans:
        kinds = [a["value"].get("stringValue") for a in span.get("attributes", ())
                 if a["key"] == "openinference.span.kind"]
        counts[span["traceId"]] = counts.get(span["traceId"], 0) + (kinds == [kind])
    return counts


def assert_audits_as_the_record(tmp_path, log, record, docs):
    """``log`` (what was collected) serves exactly ``record``, and audits, with providers from the logged metadata,
    as the record written as a RAG log with a provider map audits: the same per-query table and the same ledger."""
    assert log.notes == ()
    assert [(e.query_id, e.ranking, e.citations) for e in log.entries] == record
    twin = tmp_path / "record.jsonl"
    twin.write_text("".join(json.dumps({"query_id": q, "ranking": list(r), "citations": list(c)}) + "\n"
                            for q, r, c in record), encoding="utf-8")
    providers = {doc_id: (provider, {}) for doc_id, provider, _ in docs}
    from_trace = documents_from_log(log, provider_from=ProviderSource.parse("metadata.source"))
    from_record = documents_from_log(load_served(twin), provider_map=providers)
    assert from_trace.notes == ()
    found = {d.doc_id: d.provider for d in from_trace.collection.documents}  # with a reranker's candidates too
    assert {d.doc_id: found.get(d.doc_id) for d in from_record.collection.documents} == {
        d: p for d, (p, _) in providers.items() if d in {d.doc_id for d in from_record.collection.documents}}
    config = LogAuditConfig(seed=3, n_boot=100)
    run_trace = audit_rag_log(log, from_trace.collection, config)
    run_record = audit_rag_log(load_served(twin), from_record.collection, config)
    columns = ["query_id", "k", "ee_d", "ee_d_plug_in", "providers_reached", "ear_cited", "eae_d_cited"]
    pd.testing.assert_frame_equal(run_trace.table[columns], run_record.table[columns], check_exact=True)
    ledger = log_ledger(run_trace, from_trace.collection)
    shares = ["group", *(c for c in ledger.columns if c.startswith(("retrieval_", "attributed_")))]

    def shown(frame):  # the providers shown (a reranker's candidates may add providers never shown)
        return frame.loc[frame["retrieval_exposure"] > 0, shares].reset_index(drop=True)

    pd.testing.assert_frame_equal(shown(ledger), shown(log_ledger(run_record, from_record.collection)),
                                  check_exact=True)
    ledger = shown(ledger)
    shares = dict(zip(ledger["group"], ledger["attributed_share"]))
    assert shares.get(UNDER_CITED, 0.0) == 0.0 and ledger["retrieval_share"].sum() == pytest.approx(1.0)
    # and the shares computed straight from the record: per query, each document's share of the query's requests
    # that showed it (and showed and cited it), summed over queries, normalised (Kim & Diaz 2025, Eq. 4 and 10)
    lines = {}
    for query_id, ranking, citations in record:
        lines.setdefault(query_id, []).append((ranking, citations))
    shown, credited = {}, {}
    for served in lines.values():
        for ranking, citations in served:
            for d in ranking:
                provider = providers[d][0]
                shown[provider] = shown.get(provider, 0.0) + 1 / len(served)
                credited[provider] = credited.get(provider, 0.0) + (d in citations) / len(served)
    by_group = ledger.set_index("group")
    assert sorted(by_group.index) == sorted(shown)  # every provider the pipeline showed, and only those
    for provider in shown:
        assert by_group.loc[provider, "retrieval_share"] == pytest.approx(shown[provider] / sum(shown.values()))
        assert by_group.loc[provider, "attributed_share"] == pytest.approx(credited[provider]
                                                                           / sum(credited.values()))
    return ledger


@pytest.mark.parametrize("rerank", [False, True], ids=["retriever", "reranker"])
def test_llama_index_instrumented_pipeline_audits_as_its_own_record(receiver, tmp_path, rerank):
    pytest.importorskip("llama_index.core")
    instrumentation = pytest.importorskip("openinference.instrumentation.llama_index")
    import llama_index.core.instrumentation as instrument
    from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    dispatcher = instrument.get_dispatcher(__name__)
    docs = corpus()
    providers = {doc_id: provider for doc_id, provider, _ in docs}
    nodes = {doc_id: TextNode(id_=doc_id, text=text, metadata={"source": provider}) for doc_id, provider, text in docs}
    retrieved = []  # the pipeline's own record: what the generator was given, per request

    class KeywordRetriever(BaseRetriever):
        """Keyword overlap over an in-memory list; ``_retrieve`` is its own span, as in BM25Retriever."""

        def __init__(self, k):
            self.k = k
            super().__init__()

        @dispatcher.span
        def _retrieve(self, query_bundle):
            return [NodeWithScore(node=nodes[d], score=s) for d, s in keyword_ranking(docs, query_bundle.query_str,
                                                                                     self.k)]

    class ReverseReranker(BaseNodePostprocessor):
        """A stand-in reranker: the last ``K`` of the retrieved 10, scored anew; it reports its input and output
        with LlamaIndex's rerank events, as its own rerankers do."""

        @classmethod
        def class_name(cls):
            return "ReverseReranker"

        def _postprocess_nodes(self, nodes, query_bundle=None):
            dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=K, model_name="reverse"))
            out = [NodeWithScore(node=n.node, score=float(i)) for i, n in enumerate(reversed(nodes[-K:]))]
            dispatcher.event(ReRankEndEvent(nodes=out))
            return out

    class Recording(BaseNodePostprocessor):
        """The last step before the generator: records what it is given."""

        @classmethod
        def class_name(cls):
            return "Recording"

        def _postprocess_nodes(self, nodes, query_bundle=None):
            retrieved.append([n.node.node_id for n in nodes])
            return nodes

    steps = [ReverseReranker(), Recording()] if rerank else [Recording()]
    engine = RetrieverQueryEngine.from_args(KeywordRetriever(2 * K if rerank else K), llm=MockLLM(max_tokens=4),
                                            node_postprocessors=steps)
    record = record_requests(receiver, "llama-app", instrumentation.LlamaIndexInstrumentor(), engine.query,
                             retrieved, providers)
    assert receiver.counts["rejected"] == 0 and len(record) == 12
    spans = stored_spans(tmp_path / "store")
    # the stock nesting: two RETRIEVER spans per request (retrieve with the documents, _retrieve inside it)
    assert set(kind_counts(spans, "RETRIEVER").values()) == {2}
    assert set(kind_counts(spans, "RERANKER").values()) == ({1} if rerank else {0})
    assert_no_document_text(tmp_path / "store", docs)
    log = load_served(tmp_path / "store")  # the default options: no --multi-retrieval
    ledger = assert_audits_as_the_record(tmp_path, log, record, docs)
    if rerank:  # the reranker's output is what the generator saw, not the retriever's 10
        assert all(len(e.ranking) == K for e in log.entries)
        assert log.entries[0].scores == tuple(float(i) for i in range(K))
    else:  # every provider shown, the under-cited one never cited
        assert len(ledger) == 3 and ledger.set_index("group").loc[UNDER_CITED, "retrieval_share"] > 0


def test_langchain_instrumented_chain_audits_as_its_own_record(receiver, tmp_path):
    pytest.importorskip("langchain_core")
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    from langchain_core.documents import Document
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.prompts import PromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough

    docs = corpus()
    providers = {doc_id: provider for doc_id, provider, _ in docs}
    documents = {doc_id: Document(id=doc_id, page_content=text, metadata={"source": provider, "doc_id": doc_id})
                 for doc_id, provider, text in docs}
    retrieved = []

    class KeywordRetriever(BaseRetriever):
        k: int = K

        def _get_relevant_documents(self, query, *, run_manager=None):
            ranking = [documents[d] for d, _ in keyword_ranking(docs, query, self.k)]
            retrieved.append([d.id for d in ranking])
            return ranking

    chain = ({"context": KeywordRetriever(), "question": RunnablePassthrough()}
             | PromptTemplate.from_template("{context}\n{question}") | FakeListLLM(responses=["an answer"] * 12))
    record = record_requests(receiver, "langchain-app", instrumentation.LangChainInstrumentor(), chain.invoke,
                             retrieved, providers)
    assert receiver.counts["rejected"] == 0
    spans = stored_spans(tmp_path / "store")
    assert set(kind_counts(spans, "RETRIEVER").values()) == {1}
    # openinference-instrumentation-langchain 0.1.80 writes each document's content and metadata but no document.id:
    # the ids are read from the retriever span's output.value, which the receiver keeps as those ids only
    retrievers = [s for s in spans if kind_counts([s], "RETRIEVER")[s["traceId"]]]
    assert not any(a["key"].endswith("document.id") for s in retrievers for a in s["attributes"])
    outputs = [json.loads(a["value"]["stringValue"]) for s in retrievers for a in s["attributes"]
               if a["key"] == "output.value"]
    assert sorted([d["id"] for d in out["documents"]] for out in outputs) == sorted(list(r) for _, r, _ in record)
    assert_no_document_text(tmp_path / "store", docs)
    assert_audits_as_the_record(tmp_path, load_served(tmp_path / "store"), record, docs)
