"""A built deployment to audit (issue 29, "Done means"): a LlamaIndex app over public text, traced by the stock
openinference-instrumentation-llama-index through the OpenTelemetry SDK's OTLP/HTTP protobuf exporter into
``fairrag collect``, with nothing in between.

The corpus is Debian's package descriptions (``apt-cache dumpavail``: each package's name, short description and
debtags; read from apt-cache unless ``--corpus`` names a JSONL file with ``doc_id``, ``text`` and ``provider``, such
as /tmp/debian/corpus.jsonl). Six maintainer teams are the providers, 300 packages in shares of 34 %, 24 %, 15 %,
11 %, 10 % and 6 % (:data:`PROVIDERS`). Two deployments answer the same 200 requests (queries drawn, seeded, from
:data:`QUERIES`):

- **A**: a BM25 retriever (rank-bm25's BM25Okapi over the in-memory documents, a LlamaIndex ``BaseRetriever``
  whose ``_retrieve`` is its own span inside ``retrieve``: the stock nesting of BM25Retriever), top 5;
- **B**: the same retriever's top 20, then a reranker node postprocessor that samples 5 of them without
  replacement with probability ∝ exp(score) (Plackett-Luce, seeded per request) and reports its input (20, with
  scores) and output with LlamaIndex's rerank events, so its RERANKER span carries both.

The generator is a mock LLM (:class:`CitingMockLLM`) that reads the ``[doc id]`` of each context passage in its
prompt and cites one or two of them, ∝ 0.5^rank, with a built-in bias: passages of :data:`UNDER_CITED` weigh
1/7 as much. The app writes the cited ids in ``fairrag.citations`` and the request's query id in
``fairrag.query_id`` on its root span (docs/traces.md); nothing else is added to what the instrumentor writes.

Each deployment runs in its own process (as two deployments would), exporting to the ``collect`` receiver this
script starts on loopback (services ``deployment-a`` and ``deployment-b`` in ``OUT/store``) and, through a second
span processor using the SDK's own OTLP protobuf encoder, to ``OUT/exports/deployment-{a,b}.pb`` (length-delimited
ExportTraceServiceRequests). The pipeline's own record of what it served and cited is ``OUT/record-{a,b}.json``.
The script checks that what was collected serves exactly the record, then prints the commands that audit both and
the per-provider shares computed from the record the way ``audit-log`` computes them (per query, each document's
share of the query's requests that showed it — and that cited it —, summed over queries and normalised).

Usage::

    .venv/bin/python benchmarks/instrumented_deployment.py --out runs/deployment [--corpus /tmp/debian/corpus.jsonl]

Needs the dev requirements (llama-index-core, openinference-instrumentation-llama-index, the OTel SDK and its
OTLP/HTTP exporter, rank-bm25); no network beyond loopback, no model download.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The providers (Debian maintainer teams) and how many of the 300 documents each holds: 34 % down to 6 %.
PROVIDERS = {"Debian Perl Group": 102, "Debian Python Team": 72, "Debian Go Packaging Team": 45,
             "Debian Rust Maintainers": 33, "Debian Javascript Maintainers": 30, "Debian Java Maintainers": 18}
#: The provider the mock LLM cites less than it is shown: the 15 % one, shown in 13 % of A's slots (the 11 % one is
#: shown in few enough queries that its under-citation, 7 % shown against 2 % cited, is within noise at 40 queries).
UNDER_CITED = "Debian Go Packaging Team"
BIAS = 1 / 7
QUERIES = ("json parser", "http client library", "xml parsing", "unit testing framework",
           "command line argument parsing", "date and time handling", "logging library", "cryptography library",
           "regular expressions", "unicode text processing", "yaml configuration", "database driver", "web framework",
           "template engine", "image processing", "compression library", "asynchronous io", "serialization",
           "documentation", "development files", "command line tool", "bindings", "markdown", "network protocol",
           "email", "csv files", "terminal colors", "uuid generation", "websocket", "ssh", "git", "html parser",
           "random numbers", "string formatting", "file system paths", "math library", "test mocking", "url handling",
           "checksum hashing", "progress bar")
K, DEPTH = 5, 20
_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# -- the corpus ------------------------------------------------------------------------------------------------------
def apt_packages() -> list[dict]:
    """Every package of ``apt-cache dumpavail`` as ``{doc_id, text, provider}`` (name, short description, debtags;
    the maintainer's name without the address)."""
    out = subprocess.run(["apt-cache", "dumpavail"], check=True, capture_output=True, text=True).stdout
    docs, seen = [], set()
    for stanza in out.split("\n\n"):
        fields, last = {}, None
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and last:
                fields[last] += " " + line.strip()
            elif ":" in line:
                last, _, value = line.partition(":")
                fields[last] = value.strip()
        name = fields.get("Package")
        if not name or name in seen or "Maintainer" not in fields:
            continue
        seen.add(name)
        tags = " ".join(t.replace("::", " ").replace("-", " ") for t in fields.get("Tag", "").split(","))
        docs.append({"doc_id": name, "text": f"{name}: {fields.get('Description', '')} {tags}".strip(),
                     "provider": fields["Maintainer"].split("<")[0].strip().strip('"')})
    return docs


def build_corpus(source: Path | None, seed: int) -> list[dict]:
    """300 documents, :data:`PROVIDERS`' quotas, each team's packages drawn (seeded) among those whose text shares a
    word with the queries (then any), in doc id order."""
    docs = ([json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
            if source else apt_packages())
    vocabulary = {w for q in QUERIES for w in tokens(q)}
    rng = random.Random(seed)
    chosen = []
    for provider, quota in PROVIDERS.items():
        mine = sorted((d for d in docs if d.get("provider") == provider), key=lambda d: d["doc_id"])
        topical = [d for d in mine if vocabulary.intersection(tokens(d["text"]))]
        rest = [d for d in mine if d not in topical]
        if len(mine) < quota:
            raise SystemExit(f"{provider} has {len(mine)} packages here, {quota} are needed; pass another --corpus")
        picked = rng.sample(topical, min(quota, len(topical)))
        picked += rng.sample(rest, quota - len(picked))
        chosen += [{"doc_id": d["doc_id"], "text": d["text"], "provider": provider} for d in picked]
    return sorted(chosen, key=lambda d: d["doc_id"])


# -- one deployment (a child process) --------------------------------------------------------------------------------
def serve(deployment: str, corpus: list[dict], endpoint: str, out: Path, requests: int, seed: int) -> None:
    """Run one deployment's requests, traced into ``endpoint`` and ``out/exports``; write its record."""
    import llama_index.core.instrumentation as instrument
    from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from pydantic import PrivateAttr
    from rank_bm25 import BM25Okapi

    from fairrag_core.data.otlp_proto import delimited

    dispatcher = instrument.get_dispatcher(__name__)
    provider_of = {d["doc_id"]: d["provider"] for d in corpus}
    nodes = [TextNode(id_=d["doc_id"], text=f"[{d['doc_id']}] {d['text']}", metadata={"maintainer": d["provider"]},
                      excluded_llm_metadata_keys=["maintainer"]) for d in corpus]
    bm25 = BM25Okapi([tokens(d["text"]) for d in corpus])
    served: list[list[str]] = []

    class BM25Keyword(BaseRetriever):
        """BM25 over the in-memory documents; ``_retrieve`` is its own span, as in llama-index's BM25Retriever."""

        def __init__(self, k: int) -> None:
            self.k = k
            super().__init__()

        @dispatcher.span
        def _retrieve(self, query_bundle):
            scores = bm25.get_scores(tokens(query_bundle.query_str))
            order = sorted(range(len(nodes)), key=lambda i: (-scores[i], nodes[i].node_id))[:self.k]
            return [NodeWithScore(node=nodes[i], score=float(scores[i])) for i in order]

    class SamplingReranker(BaseNodePostprocessor):
        """Five of the retrieved twenty, sampled without replacement ∝ exp(score) (Plackett-Luce)."""

        seed: int = 0
        _calls: int = PrivateAttr(default=0)

        @classmethod
        def class_name(cls) -> str:
            return "SamplingReranker"

        def _postprocess_nodes(self, nodes, query_bundle=None):
            dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=K, model_name="plackett-luce"))
            self._calls += 1
            rng = random.Random(self.seed * 1_000_003 + self._calls)
            pool, out = list(nodes), []
            while pool and len(out) < K:
                top = max(n.score or 0.0 for n in pool)
                weights = [math.exp((n.score or 0.0) - top) for n in pool]
                out.append(pool.pop(rng.choices(range(len(pool)), weights)[0]))
            out = [NodeWithScore(node=n.node, score=n.score) for n in out]
            dispatcher.event(ReRankEndEvent(nodes=out))
            return out

    class Served(BaseNodePostprocessor):
        """The last step before the generator: the pipeline's own record of what it was given."""

        @classmethod
        def class_name(cls) -> str:
            return "Served"

        def _postprocess_nodes(self, nodes, query_bundle=None):
            served.append([n.node.node_id for n in nodes])
            return nodes

    class CitingMockLLM(CustomLLM):
        """Cites one or two of the ``[doc id]`` passages in its prompt, ∝ 0.5^rank, :data:`UNDER_CITED`'s at 1/7."""

        seed: int = 0
        _calls: int = PrivateAttr(default=0)

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="citing-mock")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
            self._calls += 1
            rng = random.Random(self.seed * 1_000_033 + self._calls)
            shown = list(dict.fromkeys(re.findall(r"^\[([^\]\s]+)\]", prompt, re.M)))
            weights = [0.5 ** r * (BIAS if provider_of.get(d) == UNDER_CITED else 1.0) for r, d in enumerate(shown)]
            cited: list[str] = []
            for _ in range(min(len(shown), rng.choice((1, 2)))):
                i = rng.choices(range(len(shown)), weights)[0]
                cited.append(shown.pop(i))
                weights.pop(i)
            return CompletionResponse(text="See " + " and ".join(f"[{d}]" for d in cited) + ".")

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
            yield self.complete(prompt, formatted, **kwargs)

    class ProtobufFile(SpanExporter):
        """The SDK's own OTLP protobuf encoding of each batch, appended length-delimited to a file."""

        def __init__(self, path: Path) -> None:
            self.file = path.open("wb")

        def export(self, spans) -> SpanExportResult:
            self.file.write(delimited([encode_spans(spans)]))
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            self.file.close()

    service = f"deployment-{deployment.lower()}"
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": service}))
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=30)))
    tracer_provider.add_span_processor(BatchSpanProcessor(ProtobufFile(out / "exports" / f"{service}.pb")))
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)
    steps = [SamplingReranker(seed=seed), Served()] if deployment == "B" else [Served()]
    engine = RetrieverQueryEngine.from_args(BM25Keyword(DEPTH if deployment == "B" else K),
                                            llm=CitingMockLLM(seed=seed), node_postprocessors=steps)
    tracer = tracer_provider.get_tracer("debian-assistant")
    rng = random.Random(seed)
    record = []
    for _ in range(requests):
        q = rng.randrange(len(QUERIES))
        with tracer.start_as_current_span("request") as root:
            root.set_attribute("fairrag.query_id", f"q{q:02d}")
            answer = str(engine.query(QUERIES[q]))
            cited = re.findall(r"\[([^\]\s]+)\]", answer)
            root.set_attribute("fairrag.citations", json.dumps(cited))
        record.append({"query_id": f"q{q:02d}", "ranking": served[-1], "citations": cited})
    tracer_provider.force_flush(60_000)
    tracer_provider.shutdown()
    (out / f"record-{deployment.lower()}.json").write_text(json.dumps(record), encoding="utf-8")


# -- the shares the audit computes, from the record ------------------------------------------------------------------
def record_shares(record: list[dict], provider_of: dict[str, str]) -> tuple[dict[str, float], dict[str, float]]:
    """Per provider: the retrieval share and the citation share as ``audit-log`` computes them (per query, each
    document's share of the query's requests that showed it, and that showed and cited it, summed over queries,
    then normalised)."""
    by_query: dict[str, list[dict]] = defaultdict(list)
    for line in record:
        by_query[line["query_id"]].append(line)
    shown, cited = Counter(), Counter()
    for lines in by_query.values():
        for line in lines:
            for d in line["ranking"]:
                shown[provider_of[d]] += 1 / len(lines)
                if d in line["citations"]:
                    cited[provider_of[d]] += 1 / len(lines)
    return ({p: shown[p] / sum(shown.values()) for p in PROVIDERS},
            {p: cited[p] / sum(cited.values()) for p in PROVIDERS})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/instrumented-deployment"))
    parser.add_argument("--corpus", type=Path, help="a JSONL corpus (doc_id, text, provider); default: apt-cache")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--serve", choices=["A", "B"], help=argparse.SUPPRESS)  # a child: one deployment
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if args.serve:
        corpus = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
        serve(args.serve, corpus, args.endpoint, out, args.requests, args.seed)
        return
    (out / "exports").mkdir(parents=True, exist_ok=True)
    if (out / "store").exists() and any((out / "store").iterdir()):
        raise SystemExit(f"{out / 'store'} already holds traces; choose another --out")
    corpus = build_corpus(args.corpus, args.seed)
    (out / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    port = free_port()
    collect = subprocess.Popen([sys.executable, "-m", "fairrag_core", "collect", "--store", str(out / "store"),
                                "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if collect.poll() is not None or time.monotonic() > deadline:
                    done = collect.poll() is not None
                    why = collect.stderr.read() if done and collect.stderr else "no answer in 60 s"
                    raise SystemExit(f"collect did not start: {why}") from None
                time.sleep(0.2)
        endpoint = f"http://127.0.0.1:{port}/v1/traces"
        for deployment in ("A", "B"):
            started = time.monotonic()
            subprocess.run([sys.executable, __file__, "--out", str(out), "--serve", deployment, "--endpoint", endpoint,
                            "--requests", str(args.requests), "--seed", str(args.seed)], env=env, cwd=ROOT,
                           check=True)
            print(f"deployment {deployment}: {args.requests} requests in {time.monotonic() - started:.1f} s")
    finally:
        collect.send_signal(signal.SIGTERM)
        collect.wait(60)

    sys.path.insert(0, str(ROOT))
    from fairrag_core.data import load_served

    provider_of = {d["doc_id"]: d["provider"] for d in corpus}
    counts = Counter(provider_of.values())
    print(f"\ncorpus: {len(corpus)} Debian packages from {len(PROVIDERS)} maintainer teams ({out / 'corpus.jsonl'})")
    for deployment in ("A", "B"):
        service = f"deployment-{deployment.lower()}"
        record = json.loads((out / f"record-{deployment.lower()}.json").read_text())
        served = [(line["query_id"], tuple(line["ranking"]), tuple(line["citations"])) for line in record]
        for path in (out / "store" / service, out / "exports" / f"{service}.pb"):
            log = load_served(path)
            same = [(e.query_id, e.ranking, e.citations) for e in log.entries] == served
            print(f"{deployment}: {path.relative_to(out)} serves {len(log)} traces"
                  f"{', equal to the pipeline record' if same else ' THAT DIFFER FROM THE PIPELINE RECORD'}"
                  f"{f'; notes: {list(log.notes)}' if log.notes else ''}")
        retrieval, citation = record_shares(record, provider_of)
        print(f"\n{deployment}: the pipeline's own shares (as audit-log computes them)")
        print(f"  {'provider':34s} {'corpus':>7s} {'retrieval':>9s} {'citation':>8s}")
        for p in PROVIDERS:
            print(f"  {p:34s} {counts[p] / len(corpus):7.1%} {retrieval[p]:9.1%} {citation[p]:8.1%}")
    py = ".venv/bin/python -m fairrag_core"
    print("\naudit them (providers from the documents' logged metadata):")
    for deployment in ("a", "b"):
        print(f"  {py} audit-log {out}/store/deployment-{deployment} --provider-from metadata.maintainer")
    print(f"  {py} audit-log {out}/exports/deployment-a.pb --provider-from metadata.maintainer   # the export file")
    print(f"  {py} compare-runs {out}/store/deployment-a {out}/store/deployment-b --provider-from metadata.maintainer "
          f"--report {out}/compare.html   # A vs B, with each one's own findings, and the HTML report")
    print(f"  FAIRRAG_DATA_DIR={out} .venv/bin/streamlit run app.py   # Audit → Served: 'Data folder', store/")


if __name__ == "__main__":
    main()
