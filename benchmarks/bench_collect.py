"""How fast ``collect`` ingests spans, and how much memory it holds, on this machine.

Starts ``python -m fairrag_core collect --port 0`` as its own process (listening on 127.0.0.1) and posts
``--spans`` spans to it as an OpenTelemetry SDK exporter does: OTLP/HTTP protobuf requests of 512 spans (the
BatchSpanProcessor's default batch), from ``--clients`` connections at once. Each request holds 128 traces of the
stock LlamaIndex shape (a CHAIN root; a RETRIEVER ``retrieve`` span with 5 documents, each with its id, score,
metadata and a 600-character text; its inner ``_retrieve`` span; an LLM span with a 2,000-character prompt and an
answer), so the receiver parses everything an instrumentor sends and drops the texts and prompts.

Prints the spans per second (all spans acknowledged and written, over the wall time from the first request to the
receiver's exit), the receiver's peak resident memory (VmHWM), the bytes sent and the bytes stored, and the time
``load_served`` takes to read the store back. The client runs on the same machine and takes CPU from the receiver
(on 2 cores, the figures are a lower bound).

Run: ``python benchmarks/bench_collect.py [--spans 100000] [--clients 2]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from fairrag_core.data.otlp_proto import json_to_request

SPANS_PER_REQUEST = 512
TEXT = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et "
        "dolore magna aliqua. ") * 6


def kv(key, value):
    kind = {str: "stringValue", float: "doubleValue", int: "intValue"}[type(value)]
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def template(number: int):
    """A request of 128 four-span traces (module docstring) as a message; :func:`body` gives each its own ids."""
    spans = []
    for t in range(SPANS_PER_REQUEST // 4):
        trace = f"{number:016x}{t:016x}"
        start = 1_772_442_960_000_000_000 + (number * 128 + t) * 1_000_000
        ids = [f"{t:08x}{s:08x}" for s in range(4)]
        docs = []
        for i in range(5):
            doc = f"news-{(number * 7 + t * 5 + i) % 300:03d}"
            docs += [kv(f"retrieval.documents.{i}.document.id", doc),
                     kv(f"retrieval.documents.{i}.document.score", 10.0 - i),
                     kv(f"retrieval.documents.{i}.document.metadata", json.dumps({"source": f"pub-{i % 6}"})),
                     kv(f"retrieval.documents.{i}.document.content", TEXT)]
        query = kv("input.value", f"question {t}")
        spans += [
            {"traceId": trace, "spanId": ids[0], "name": "query", "startTimeUnixNano": str(start),
             "endTimeUnixNano": str(start + 900), "attributes": [kv("openinference.span.kind", "CHAIN"), query]},
            {"traceId": trace, "spanId": ids[1], "parentSpanId": ids[0], "name": "BM25Retriever.retrieve",
             "startTimeUnixNano": str(start + 1), "endTimeUnixNano": str(start + 100),
             "attributes": [kv("openinference.span.kind", "RETRIEVER"), query, *docs]},
            {"traceId": trace, "spanId": ids[2], "parentSpanId": ids[1], "name": "BM25Retriever._retrieve",
             "startTimeUnixNano": str(start + 2), "endTimeUnixNano": str(start + 99),
             "attributes": [kv("openinference.span.kind", "RETRIEVER"), query]},
            {"traceId": trace, "spanId": ids[3], "parentSpanId": ids[0], "name": "llm",
             "startTimeUnixNano": str(start + 200), "endTimeUnixNano": str(start + 800),
             "attributes": [kv("openinference.span.kind", "LLM"),
                            kv("llm.input_messages.0.message.content", TEXT * 3 + TEXT[:200]),
                            kv("output.value", "An answer citing the articles.")]},
        ]
    export = {"resourceSpans": [{"resource": {"attributes": [kv("service.name", "news-assistant")]},
                                 "scopeSpans": [{"scope": {"name": "openinference.instrumentation.llama_index"},
                                                 "spans": spans}]}]}
    return json_to_request(export)


def body(message, number: int) -> bytes:
    """``message`` serialized with trace ids of its own (request ``number``): every trace distinct."""
    for i, span in enumerate(message.resource_spans[0].scope_spans[0].spans):
        span.trace_id = number.to_bytes(8, "big") + (i // 4).to_bytes(8, "big")
    return message.SerializeToString()


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=2)
    args = parser.parse_args()
    n_requests = -(-args.spans // SPANS_PER_REQUEST)
    templates = [template(i) for i in range(args.clients)]  # one a client; each request gets its own trace ids
    sent = [0]
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        receiver = subprocess.Popen([sys.executable, "-m", "fairrag_core", "collect", "--port", "0", "--store",
                                     str(store)], stdout=subprocess.PIPE, text=True)
        url = urlsplit(receiver.stdout.readline().split(" at ", 1)[1].split(" into ", 1)[0])
        receiver.stdout.readline()
        retries = [0]
        lock = threading.Lock()
        todo = iter(range(n_requests))

        def client(message) -> None:
            connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    break
                data = body(message, i)
                with lock:
                    sent[0] += len(data)
                while True:
                    connection.request("POST", url.path, body=data, headers={"Content-Type": "application/x-protobuf"})
                    answer = connection.getresponse()
                    answer.read()
                    if answer.status == 200:
                        break
                    if answer.status != 503:
                        raise SystemExit(f"the receiver answered {answer.status}")
                    with lock:
                        retries[0] += 1
                    time.sleep(float(answer.headers.get("Retry-After", "1")) / 10)
            connection.close()

        began = time.perf_counter()
        threads = [threading.Thread(target=client, args=(m,)) for m in templates]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peak = peak_memory_mb(receiver.pid)
        receiver.send_signal(signal.SIGINT)
        tail = receiver.communicate(timeout=600)[0].strip()
        wall = time.perf_counter() - began
        stored = sum(p.stat().st_size for p in store.rglob("*.jsonl"))
        print(f"{n_requests * SPANS_PER_REQUEST:,} spans in {n_requests:,} protobuf requests of {SPANS_PER_REQUEST} "
              f"from {args.clients} clients: {wall:.1f} s, {n_requests * SPANS_PER_REQUEST / wall:,.0f} spans/s; "
              f"receiver peak memory {peak:,.0f} MB; {sent[0] / 1e6:,.1f} MB sent, {stored / 1e6:,.1f} MB stored; "
              f"{retries[0]} requests retried after 503")
        print(f"receiver: {tail}")
        from fairrag_core.data import load_served

        began = time.perf_counter()
        log = load_served(store)
        seconds = time.perf_counter() - began
        print(f"load_served(store): {len(log):,} traces in {seconds:.1f} s ({'; '.join(log.notes) or 'no notes'})")


if __name__ == "__main__":
    main()
