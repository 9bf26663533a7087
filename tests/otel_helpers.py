"""OpenTelemetry into ``collect``, as the instrumentor and framework-pipeline tests use it: a loopback
:class:`~fairrag_core.data.collector.Receiver`, a tracer provider that exports to it with the SDK's own OTLP/HTTP
protobuf exporter, the flush that ends a run, and the spans the receiver stored.

The SDK and its exporter are dev requirements (requirements-dev.txt); a test module that uses this calls
``pytest.importorskip`` on them first, so it is skipped, not failed, where they are missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairrag_core.data.collector import Receiver


@pytest.fixture
def receiver(tmp_path):
    """A receiver on a free loopback port, storing under ``tmp_path / "store"``; stopped after the test."""
    r = Receiver(tmp_path / "store", port=0).start()
    yield r
    r.stop()


def traced(receiver: Receiver, service: str):
    """A tracer provider exporting to ``receiver`` as the SDK's OTLP/HTTP protobuf exporter does."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.url, timeout=10)))
    return provider


def finish(provider, receiver: Receiver) -> None:
    """Export every span still batched in ``provider``, shut it down and stop ``receiver``, which refused none."""
    assert provider.force_flush(20_000)
    provider.shutdown()
    receiver.stop()
    assert receiver.counts["rejected"] == 0


def stored_spans(store: Path) -> list[dict]:
    """Every span the receiver stored under ``store`` (OTLP JSON, one export a line), in file order."""
    return [span for f in sorted(store.rglob("*.jsonl")) for line in f.read_text().splitlines()
            for rs in json.loads(line)["resourceSpans"] for scope in rs["scopeSpans"] for span in scope["spans"]]
