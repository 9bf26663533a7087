"""Regenerate ``assets/logs/running-shoes.otlp.jsonl``: the demo RAG log ``running-shoes.jsonl`` as the
OpenTelemetry traces its help bot would have exported, in OpenInference form (docs/traces.md).

Each of the log's 200 lines becomes one trace of three spans: a ``CHAIN`` root (the request: ``fairrag.query_id``,
``session.id``, ``fairrag.citations``, started at the line's timestamp), a ``RETRIEVER`` span (``input.value``: what
the user typed; ``retrieval.documents.{i}.document.id``, ``.score`` — the BM25 score of the shown document for that
text — and ``.metadata``, a JSON string with the document's ``source`` (its provider in the collection), ``url`` and
``segment``) and an ``LLM`` span (``output.value``: the answer). Two health-check traces without retrieval are mixed
in, as a real export holds them; the reader leaves them out and says so.

The collector's file exporter writes one export per line. Here each session's spans make one line, except that the
LLM span of a session's last request arrives with the next session's line (a batch flushed before the span ended),
and the spans of each line are shuffled (seeded), so reading the file proves that the reader assembles traces
whatever the order and the line of their spans. Everything is deterministic: ids are hashes of the line number, the
shuffles are seeded, the scores come from the same BM25 as the log. Auditing this file gives the numbers of
auditing ``running-shoes.jsonl`` (``tests/data/test_traces.py`` checks it).

Run: ``PYTHONPATH=. python assets/logs/make_running_shoes_traces.py`` (a few seconds).
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path

import numpy as np

from fairrag_core import BM25Retriever, load_collection

HERE = Path(__file__).resolve().parent
LOG = HERE / "running-shoes.jsonl"
OUT = HERE / "running-shoes.otlp.jsonl"
SEED = 2026
MS = 1_000_000  # nanoseconds


def _id(text: str, hex_digits: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:hex_digits]


def _kv(key: str, value) -> dict:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # OTLP JSON writes 64-bit integers as strings
    return {"key": key, "value": {"stringValue": value}}


def _span(trace_id: str, name: str, parent: str | None, start: int, end: int, attributes: dict) -> dict:
    span = {"traceId": trace_id, "spanId": _id(f"{trace_id}:{name}", 16), "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
            "attributes": [_kv(k, v) for k, v in attributes.items()], "status": {}}
    if parent is not None:
        span["parentSpanId"] = _id(f"{trace_id}:{parent}", 16)
    return span


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def trace(i: int, row: dict, shoes, scores: np.ndarray) -> tuple[list[dict], list[dict]]:
    """The spans of log line ``i``: (the app's root span, the instrumented retriever and LLM spans)."""
    trace_id = _id(f"running-shoes:{i}", 32)
    start = int(datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")).timestamp()) * 1_000_000_000
    retrieved = {"openinference.span.kind": "RETRIEVER", "input.value": row["query"]}
    for rank, doc_id in enumerate(row["ranking"]):
        doc = shoes.documents[shoes.index_of(doc_id)]
        meta = {"source": doc.provider, "url": f"https://{_slug(doc.provider)}.example/products/{doc_id}",
                "segment": doc.groups.get("segment", "")}
        retrieved[f"retrieval.documents.{rank}.document.id"] = doc_id
        retrieved[f"retrieval.documents.{rank}.document.score"] = round(float(scores[shoes.index_of(doc_id)]), 4)
        retrieved[f"retrieval.documents.{rank}.document.metadata"] = json.dumps(meta)
    root = _span(trace_id, "rag", None, start, start + 2400 * MS, {
        "openinference.span.kind": "CHAIN", "input.value": row["query"], "session.id": row["session"],
        "fairrag.query_id": row["query_id"], "fairrag.citations": json.dumps(row["citations"])})
    retriever = _span(trace_id, "retrieve", "rag", start + 3 * MS, start + 41 * MS, retrieved)
    llm = _span(trace_id, "generate", "rag", start + 45 * MS, start + 2390 * MS, {
        "openinference.span.kind": "LLM", "llm.model_name": "smollm2-135m", "output.value": row["answer"],
        "output.mime_type": "text/plain"})
    return [root], [retriever, llm]


def main() -> None:
    shoes = load_collection("running-shoes")
    bm25 = BM25Retriever(shoes.texts)
    rows = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = np.random.default_rng(SEED)
    sessions: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        sessions.setdefault(row["session"], []).append(i)
    exports: list[tuple[list[dict], list[dict]]] = []
    late: list[dict] = []  # the LLM span of a session's last request, flushed with the next session
    for n, lines in enumerate(sessions.values()):
        app, instrumented = [], list(late)
        for i in lines:
            root, spans = trace(i, rows[i], shoes, bm25.score(rows[i]["query"]))
            app += root
            instrumented += spans
        late = [instrumented.pop()] if n < len(sessions) - 1 else []
        if n in (4, 19):  # a health check: a trace without retrieval
            first = int(app[0]["startTimeUnixNano"]) - 20_000 * MS
            app.append(_span(_id(f"healthz:{n}", 32), "GET /healthz", None, first, first + 2 * MS,
                             {"http.route": "/healthz", "http.response.status_code": 200}))
        exports.append((app, instrumented))
    with OUT.open("w", encoding="utf-8") as out:
        for app, instrumented in exports:
            app = [app[j] for j in rng.permutation(len(app))]
            instrumented = [instrumented[j] for j in rng.permutation(len(instrumented))]
            scopes = [{"scope": {"name": "running_shoes_helpbot", "version": "1.0"}, "spans": app},
                      {"scope": {"name": "openinference.instrumentation.demo", "version": "0.1"},
                       "spans": instrumented}]
            if rng.random() < 0.5:
                scopes.reverse()
            export = {"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "running-shoes-helpbot")]},
                                         "scopeSpans": scopes}]}
            out.write(json.dumps(export, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({len(exports)} export lines, {len(rows)} traces of 3 spans and 2 health checks, "
          f"{OUT.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
