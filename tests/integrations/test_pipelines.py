"""Each framework's component in a real pipeline of that framework, with a mock LLM, traced by the real OpenTelemetry
SDK exporter into ``collect``: LlamaIndex (a query engine with the node postprocessor; also with the stock
openinference instrumentor on), LangChain (an LCEL chain with the retriever wrapper around the document compressor)
and Haystack (a pipeline with the in-memory BM25 retriever, the component and a prompt builder), over the
running-shoes collection's 18 queries, each asked twice, K = 20 candidates, k = 5 passed on at α = 2.

What was collected, read with no options, must serve exactly what the pipeline passed to its generator, with the
retriever's candidates and scores as the candidates; every served ranking must replay from the logged seed with the
core's sampler; and ``audit-log`` over the store (the collection for its labels, nothing about the traces) audits it
and replays the what-if on the logged candidates, its recommendation naming the components. Nothing is downloaded.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from otel_helpers import finish, stored_spans, traced

from fairrag_core.cli import main
from fairrag_core.data import load_served
from fairrag_core.integrations import configuration_line, replay

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")

K, k, ALPHA, SEED = 20, 5, 2.0, 7


def retrieved(shoes, bm25, text):
    """The retriever's own top K ``(doc_id, score)`` by BM25 (ties by collection order)."""
    scores = bm25.score(text)
    return [(shoes.doc_ids[i], float(scores[i])) for i in np.argsort(-scores, kind="stable")[:K]]


def asked(shoes):
    """Each query twice, in order."""
    return [(q.query_id, q.text) for q in shoes.queries for _ in range(2)]


def request(tracer, query_id, run):
    """One request under the application's root span, carrying the citations (the first two documents shown) and,
    unless the component logs it, the query id; ``run()`` returns ``(ranking, candidates)``."""
    with tracer.start_as_current_span("request") as root:
        if query_id is not None:
            root.set_attribute("fairrag.query_id", query_id)
        ranking, candidates = run()
        root.set_attribute("fairrag.citations", json.dumps(ranking[:2]))
    return tuple(ranking), tuple(candidates)


def logged_seeds(store):
    """Each trace's ``fairrag.seed`` (and α, k) as the receiver stored them (OTLP JSON: 64-bit integers as text)."""
    out = {}
    for span in stored_spans(store):
        attrs = {a["key"]: a["value"] for a in span.get("attributes", ())}
        if "fairrag.seed" in attrs:
            out[span["traceId"]] = (int(attrs["fairrag.seed"]["intValue"]), attrs["fairrag.alpha"]["doubleValue"],
                                    int(attrs["fairrag.k"]["intValue"]))
    return out


def assert_collected_as_served(store, shoes, record):
    """What was collected serves the pipeline's ``record`` with the retriever's candidates, replays from the logged
    seeds, and audits with the what-if on the logged candidates."""
    log = load_served(store)
    assert log.notes == ()
    queries = asked(shoes)
    assert [(e.query_id, e.ranking, e.citations) for e in log.entries] == [
        (qid, ranking, ranking[:2]) for (qid, _), (ranking, _) in zip(queries, record)]
    assert [tuple(zip(e.candidates, e.candidate_scores)) for e in log.entries] == [c for _, c in record]
    seeds = logged_seeds(store)
    assert len(seeds) == len(record) and len({s for s, _, _ in seeds.values()}) == len(record)
    for e in log.entries:
        seed, alpha, depth = seeds[e.metadata["trace_id"]]
        assert (alpha, depth) == (ALPHA, k)
        assert tuple(e.candidates[p] for p in replay(e.candidate_scores, alpha=alpha, k=depth, seed=seed)) == e.ranking
    out = io.StringIO()
    assert main(["audit-log", str(store), "--collection", "running-shoes", "--what-if-alphas", "0,2,8,inf",
                 "--what-if-samples", "30", "--boot", "100", "--seed", "3", "--json", "--no-store"], out=out) == 0
    payload = json.loads(out.getvalue())
    what_if = payload["what_if"]
    assert any("logged candidate sets" in note and f"for {len(shoes.queries)} of {len(shoes.queries)} replayed"
               in note for note in what_if["notes"])
    curve = {row["label"]: row for row in what_if["curve"]}
    # replayed at the deployment's own α on its own candidates, the exposure is the one it served (within noise);
    # the deterministic ranking of the same candidates is far less fair
    at_alpha = curve[f"α = {ALPHA:g}"]
    assert at_alpha["ee_d_change_low"] <= 0 <= at_alpha["ee_d_change_high"]
    assert at_alpha["ee_r_change_low"] <= 0 <= at_alpha["ee_r_change_high"]
    assert curve["as served"]["ee_d"] < 0.6 < curve["α = ∞ (deterministic)"]["ee_d"] == 1.0
    if what_if["recommended_alpha"] is not None:
        assert what_if["recommendation"].endswith(configuration_line(what_if["recommended_alpha"]))
    return payload


@pytest.mark.parametrize("instrumented", [False, True], ids=["plain", "openinference"])
def test_llama_index_query_engine_with_the_fair_postprocessor(receiver, tmp_path, shoes, shoes_bm25, instrumented):
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    from fairrag_core.integrations import FairNodePostprocessor

    nodes = {d.doc_id: TextNode(id_=d.doc_id, text=d.text, metadata={"provider": d.provider})
             for d in shoes.documents}
    seen = []

    class BM25Nodes(BaseRetriever):
        def _retrieve(self, query_bundle):
            found = retrieved(shoes, shoes_bm25, query_bundle.query_str)
            seen.append(tuple(found))
            return [NodeWithScore(node=nodes[d], score=s) for d, s in found]

    class Recording(BaseNodePostprocessor):
        """The last step before the generator: records what it is given."""

        def _postprocess_nodes(self, nodes, query_bundle=None):
            seen.append([n.node.node_id for n in nodes])
            return nodes

    provider = traced(receiver, "llama-app")
    fair = FairNodePostprocessor(alpha=ALPHA, k=k, seed=SEED, metadata_keys=("provider",), tracer_provider=provider)
    engine = RetrieverQueryEngine.from_args(BM25Nodes(), llm=MockLLM(max_tokens=4),
                                            node_postprocessors=[fair, Recording()])
    instrumentor = None
    if instrumented:
        instrumentation = pytest.importorskip("openinference.instrumentation.llama_index")
        instrumentor = instrumentation.LlamaIndexInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
    try:
        tracer = provider.get_tracer("shoe-shop")

        def ask(text):
            def run():
                engine.query(text)
                return seen[-1], seen[-2]
            return run

        record = [request(tracer, qid, ask(text)) for qid, text in asked(shoes)]
    finally:
        if instrumentor is not None:
            instrumentor.uninstrument()
    finish(provider, receiver)
    assert all(len(ranking) == k for ranking, _ in record)
    assert_collected_as_served(tmp_path / "store", shoes, record)


def test_langchain_chain_with_the_fair_compressor(receiver, tmp_path, shoes, shoes_bm25):
    pytest.importorskip("langchain_core")
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.prompts import PromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    from fairrag_core.integrations import FairDocumentCompressor, FairRetriever

    by_id = {d.doc_id: d for d in shoes.documents}
    seen = []

    class BM25Documents(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
            found = retrieved(shoes, shoes_bm25, query)
            seen.append(tuple(found))
            return [Document(id=d, page_content=by_id[d].text, metadata={"score": s, "provider": by_id[d].provider})
                    for d, s in found]

    def shown(docs):
        seen.append([d.id for d in docs])
        return "\n".join(d.page_content for d in docs)

    provider = traced(receiver, "langchain-app")
    retriever = FairRetriever(base_retriever=BM25Documents(), compressor=FairDocumentCompressor(
        alpha=ALPHA, k=k, seed=SEED, metadata_keys=("provider",), tracer_provider=provider))
    prompt = PromptTemplate.from_template("Answer from:\n{context}\nQuestion: {question}")
    chain = {"context": retriever | RunnableLambda(shown), "question": RunnablePassthrough()} | prompt | FakeListLLM(
        responses=["The Brace 4."])
    tracer = provider.get_tracer("shoe-shop")

    def ask(text):
        def run():
            assert chain.invoke(text) == "The Brace 4."
            return seen[-1], seen[-2]
        return run

    record = [request(tracer, qid, ask(text)) for qid, text in asked(shoes)]
    finish(provider, receiver)
    assert all(len(ranking) == k for ranking, _ in record)
    assert_collected_as_served(tmp_path / "store", shoes, record)


def test_haystack_pipeline_with_the_fair_sampler(receiver, tmp_path, shoes):
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline, component
    from haystack.components.builders import PromptBuilder
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from fairrag_core.integrations import FairSampler

    @component
    class MockGenerator:
        @component.output_types(replies=list[str])
        def run(self, prompt: str):
            return {"replies": [f"An answer from {prompt.count('Document:')} documents."]}

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=d.doc_id, content=d.text, meta={"provider": d.provider})
                           for d in shoes.documents])
    provider = traced(receiver, "haystack-app")
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=K))
    pipe.add_component("fair", FairSampler(alpha=ALPHA, k=k, seed=SEED, metadata_keys=("provider",),
                                           tracer_provider=provider))
    pipe.add_component("prompt", PromptBuilder(template="{% for d in documents %}Document: {{ d.content }}\n"
                                                        "{% endfor %}Question: {{ query }}",
                                               required_variables=["documents", "query"]))
    pipe.add_component("llm", MockGenerator())
    pipe.connect("retriever.documents", "fair.documents")
    pipe.connect("fair.documents", "prompt.documents")
    pipe.connect("prompt.prompt", "llm.prompt")
    tracer = provider.get_tracer("shoe-shop")

    def ask(qid, text):
        def run():
            out = pipe.run({"retriever": {"query": text}, "fair": {"query": text, "query_id": qid},
                            "prompt": {"query": text}}, include_outputs_from={"retriever", "fair"})
            assert out["llm"]["replies"] == [f"An answer from {k} documents."]
            return ([d.id for d in out["fair"]["documents"]],
                    tuple((d.id, d.score) for d in out["retriever"]["documents"]))
        return run

    # the query id reaches the trace through the component this time, not the application's span
    record = [request(tracer, None, ask(qid, text)) for qid, text in asked(shoes)]
    finish(provider, receiver)
    assert all(len(ranking) == k and len(candidates) == K for ranking, candidates in record)
    assert_collected_as_served(tmp_path / "store", shoes, record)
