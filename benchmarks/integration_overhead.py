"""What does the fair component add to a request? (issue 32, Must have 1: ≤ 1 ms per request at K = 100)

    PYTHONPATH=. .venv/bin/python benchmarks/integration_overhead.py [--candidates 100] [--k 10] [--repeat 2000]

Times one request's postprocessing alone, in this process, for each framework whose package is installed: the
component (:mod:`fairrag_core.integrations`: the per-request seed, one Plackett-Luce draw of k of the K candidates
by :func:`~fairrag_core.ranking.sampling.sample_rankings`, and its span with K + k documents, their scores and one
metadata key each, recorded by the OpenTelemetry SDK into a processor that drops it) against a pass-through
component of the same framework's extension point (the first k, as they came). The median and the 95th
percentile of ``--repeat`` requests are printed for both, and the difference of the medians: the overhead. The first
50 requests warm up and are not counted. Also printed: the LlamaIndex component with no tracer provider (the
OpenTelemetry API's no-op tracer: nothing recorded).
Results: docs/integrations.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time

from fairrag_core.integrations import INTEGRATIONS

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # before Haystack is imported: no usage telemetry


def _provider():
    """An SDK tracer provider whose spans are recorded and then dropped (the cost of recording, not of export)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Dropped(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Dropped()))
    return provider


def _cases(candidates: int, k: int, provider):
    """Per framework: (name, component call, pass-through call), each one request over the same K documents."""
    scores = [1.0 / (1 + i) for i in range(candidates)]
    if importlib.util.find_spec("llama_index.core"):
        from llama_index.core.postprocessor.types import BaseNodePostprocessor
        from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

        from fairrag_core.integrations import FairNodePostprocessor

        nodes = [NodeWithScore(node=TextNode(id_=f"d{i}", text="t", metadata={"source": f"p{i % 7}"}), score=s)
                 for i, s in enumerate(scores)]
        bundle = QueryBundle("a query")

        class FirstNodes(BaseNodePostprocessor):
            def _postprocess_nodes(self, nodes, query_bundle=None):
                return nodes[:k]

        first = FirstNodes()
        for label, tracing in (("", provider), (" (no tracer)", None)):
            fair = FairNodePostprocessor(alpha=2.0, k=k, seed=1, metadata_keys=("source",), tracer_provider=tracing)
            yield (f"LlamaIndex{label}", lambda fair=fair: fair.postprocess_nodes(nodes, bundle),
                   lambda: first.postprocess_nodes(nodes, bundle))
    if importlib.util.find_spec("langchain_core"):
        from langchain_core.documents import BaseDocumentCompressor, Document

        from fairrag_core.integrations import FairDocumentCompressor

        docs = [Document(page_content="t", id=f"d{i}", metadata={"score": s, "source": f"p{i % 7}"})
                for i, s in enumerate(scores)]

        class FirstDocuments(BaseDocumentCompressor):
            def compress_documents(self, documents, query, callbacks=None):
                return list(documents)[:k]

        fair = FairDocumentCompressor(alpha=2.0, k=k, seed=1, metadata_keys=("source",), tracer_provider=provider)
        first_docs = FirstDocuments()
        yield ("LangChain", lambda: fair.compress_documents(docs, "a query"),
               lambda: first_docs.compress_documents(docs, "a query"))
    if importlib.util.find_spec("haystack"):
        from haystack import Document as HaystackDocument
        from haystack import component

        from fairrag_core.integrations import FairSampler

        hdocs = [HaystackDocument(id=f"d{i}", content="t", score=s, meta={"source": f"p{i % 7}"})
                 for i, s in enumerate(scores)]

        @component
        class First:
            @component.output_types(documents=list[HaystackDocument])
            def run(self, documents: list[HaystackDocument], query: str | None = None):
                return {"documents": documents[:k]}

        fair = FairSampler(alpha=2.0, k=k, seed=1, metadata_keys=("source",), tracer_provider=provider)
        first_h = First()
        yield "Haystack", lambda: fair.run(hdocs, query="a query"), lambda: first_h.run(hdocs, query="a query")


def _times(call, repeat: int) -> list[float]:
    for _ in range(50):
        call()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=100, help="K, the retriever's top K")
    parser.add_argument("--k", type=int, default=10, help="k, the documents passed on")
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    print(f"One request, K = {args.candidates}, k = {args.k}, {args.repeat} requests each (ms; median, p95); "
          f"frameworks: {', '.join(i.framework for i in INTEGRATIONS)}")
    print(f"  {'framework':<26} {'component':>18} {'pass-through':>18} {'overhead (median)':>18}")
    for name, component, passthrough in _cases(args.candidates, args.k, _provider()):
        fair, plain = _times(component, args.repeat), _times(passthrough, args.repeat)

        def ms(values):
            return f"{statistics.median(values) * 1e3:.3f}, {statistics.quantiles(values, n=20)[-1] * 1e3:.3f}"

        overhead = (statistics.median(fair) - statistics.median(plain)) * 1e3
        print(f"  {name:<26} {ms(fair):>18} {ms(plain):>18} {overhead:>15.3f} ms")


if __name__ == "__main__":
    main()
