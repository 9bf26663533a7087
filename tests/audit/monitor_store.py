"""A generated `collect` store spanning several days (the monitor's tests and the Monitor page's AppTest): each
request a trace with the fair sampler's RERANKER span (fairrag.alpha, the candidates and the 5 served, each with its
metadata.source) started at an explicit time, written as the receiver writes it (TraceStore.append, slimmed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np

from fairrag_core.data.collector import TraceStore
from fairrag_core.data.traces import SAMPLER_SPAN, slim_export

START = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday
PROVIDERS = {"Capital Courier": 0.34, "Harbour Herald": 0.24, "Valley Voice": 0.15, "Metro Mirror": 0.11,
             "Coast Chronicle": 0.10, "Upland Ledger": 0.06}
DOCS = {name: [f"{name.split()[0].lower()}-{j}" for j in range(8)] for name in PROVIDERS}
K, QUERIES = 5, 12


def _value(v):
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    return {"stringValue": str(v)}


def _trace(i: int, start: datetime, served: list[str], candidates: list[str], alpha: float, rng) -> dict:
    trace_id, ns = f"{i:032x}", int(start.timestamp()) * 10**9
    source = {d: name for name, docs in DOCS.items() for d in docs}
    documents = [{"id": d, "score": float(rng.random()), "metadata": {"source": source[d]}} for d in candidates]
    chosen = [next(doc for doc in documents if doc["id"] == d) for d in served]
    a = SAMPLER_SPAN
    attrs = {a["kind"]: "RERANKER", a["alpha"]: alpha, a["seed"]: i, a["k"]: K, a["query_id"]: f"q{i % QUERIES}",
             a["candidates"]: json.dumps(documents), a["chosen"]: json.dumps(chosen)}
    spans = [{"traceId": trace_id, "spanId": f"{2 * i:016x}", "name": "rag", "kind": 1,
              "startTimeUnixNano": str(ns), "endTimeUnixNano": str(ns + 2 * 10**9),
              "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
                             {"key": a["query_id"], "value": {"stringValue": f"q{i % QUERIES}"}}]},
             {"traceId": trace_id, "spanId": f"{2 * i + 1:016x}", "parentSpanId": f"{2 * i:016x}",
              "name": "FairSampler", "kind": 1, "startTimeUnixNano": str(ns + 10**8),
              "endTimeUnixNano": str(ns + 2 * 10**8),
              "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()]}]
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                            "value": {"stringValue": "news-bot"}}]},
                               "scopeSpans": [{"scope": {"name": "fairrag"}, "spans": spans}]}]}


def make_days_store(folder, *, days: int = 6, per_day: int = 40, halve: str | None = None, from_day: int = 3,
                    alpha_from: int | None = None, seed: int = 32):
    """``days`` days of ``per_day`` requests from :data:`START` (one every 30 min from 00:10, then spread), each
    serving 5 documents whose providers are drawn from :data:`PROVIDERS`' shares; from day ``from_day`` on,
    ``halve``'s share is halved (the others rescaled); α is 1.0, and 2.0 from day ``alpha_from``. Returns the
    folder."""
    rng = np.random.default_rng(seed)
    store, names = TraceStore(folder), list(PROVIDERS)
    i = 0
    for day in range(days):
        shares = np.array([PROVIDERS[n] for n in names])
        if halve is not None and day >= from_day:
            shares[names.index(halve)] /= 2
            shares /= shares.sum()
        alpha = 2.0 if alpha_from is not None and day >= alpha_from else 1.0
        for r in range(per_day):
            start = START + timedelta(days=day, minutes=10 + r * (23 * 60 // per_day))
            counts = rng.multinomial(K, shares)
            served = [d for n, c in zip(names, counts) for d in rng.choice(DOCS[n], size=c, replace=False)]
            candidates = sorted({*served, *(rng.choice(DOCS[n]) for n in names)})
            store.append([slim_export(_trace(i, start, served, candidates, alpha, rng))], now=start)
            i += 1
    return folder
