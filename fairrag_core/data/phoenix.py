"""Phoenix's own span JSON read as OTLP: the spans Arize Phoenix's client returns, written one per line, audit as
the OTLP export of the same spans does.

Phoenix (arize-phoenix 20.x, client ``arize-phoenix-client``) serves a project's spans from ``GET
/v1/projects/{project}/spans``; ``phoenix.client.Client().spans.get_spans(project_identifier=..., limit=...)``
returns them as ``phoenix.client.__generated__.v1.Span`` dicts (the server's ``routers/v1/spans.py``, ``Span``)::

    {"id": "U3BhbjoxMg==", "name": "BM25Retriever.retrieve",
     "context": {"trace_id": "0f3c...", "span_id": "9a1b..."}, "parent_id": "77c2..." | null,
     "span_kind": "RETRIEVER", "start_time": "2026-03-02T09:16:00.123456+00:00", "end_time": "...",
     "status_code": "OK", "status_message": "", "attributes": {...}, "events": [...]}

Phoenix stores a span's attributes *nested* (``phoenix.trace.attributes.unflatten``: ``fairrag.query_id`` becomes
``{"fairrag": {"query_id": ...}}``, ``retrieval.documents.0.document.id`` a list of ``{"document": {"id": ...}}``,
and ``document.metadata`` parsed from its JSON string into an object), pops ``openinference.span.kind`` into
``span_kind``, and serves them flattened again to dotted keys (``flatten(..., recurse_on_sequence=True)``) by the
REST route, but nested by other routes and by dataframes turned back into spans (``helpers.spans.dataframe_to_spans``:
``attributes.retrieval.documents`` a list of ``{"document.id": ...}`` objects). :func:`phoenix_export` reads any of
these the same way: every nested object and every list of objects is flattened to dotted keys with numeric indices
(Phoenix's own rule), so ``fairrag.*`` and ``retrieval.documents.{i}.document.*`` are found however they were
nested, except a document's ``document.metadata``, kept whole as an object (its keys may hold dots); the span kind
goes back to ``openinference.span.kind``, the start time to nanoseconds. The result is one OTLP JSON export
(``{"resourceSpans": [...]}``) that :func:`~fairrag_core.data.traces.read_traces` assembles as it assembles any.

A file of Phoenix spans is JSON Lines: one span per line (the recipe in docs/traces.md writes this), or one page of
the REST answer (``{"data": [spans], "next_cursor": ...}``) per line. Its first object says what it is
(:func:`is_phoenix_spans`); the served-formats table reads it as a trace export.

>>> span = {"name": "retrieve", "context": {"trace_id": "ab", "span_id": "01"}, "parent_id": None,
...         "span_kind": "RETRIEVER", "start_time": "2026-03-02T09:16:00Z", "end_time": "2026-03-02T09:16:01Z",
...         "status_code": "OK", "attributes": {"fairrag": {"query_id": "q1"},
...         "retrieval": {"documents": [{"document": {"id": "d1", "metadata": {"source": "Acme"}}}]}}}
>>> is_phoenix_spans(span)
True
>>> [(kv["key"], kv["value"]) for kv in phoenix_export(span)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
...  ["attributes"]]  # doctest: +NORMALIZE_WHITESPACE
[('fairrag.query_id', {'stringValue': 'q1'}), ('retrieval.documents.0.document.id', {'stringValue': 'd1'}),
 ('retrieval.documents.0.document.metadata', {'kvlistValue': {'values': [{'key': 'source',
   'value': {'stringValue': 'Acme'}}]}}), ('openinference.span.kind', {'stringValue': 'RETRIEVER'})]
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta

from ..errors import DataFormatError

__all__ = ["is_phoenix_spans", "phoenix_export", "flat_attributes"]

_KIND = "openinference.span.kind"
_METADATA = "document.metadata"  # kept whole: an object whose keys may hold dots
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIX = ("write each span as phoenix.client's spans.get_spans returns it, one JSON object per line "
        "(docs/traces.md, From Phoenix)")


def _is_span(obj: object) -> bool:
    context = obj.get("context") if isinstance(obj, dict) else None
    return isinstance(context, dict) and "trace_id" in context and "span_id" in context


def is_phoenix_spans(obj: object) -> bool:
    """Whether a parsed JSON object is a Phoenix span (``context.trace_id`` and ``context.span_id``) or a page of
    them (``{"data": [span, ...]}``, its first a span)."""
    if _is_span(obj):
        return True
    data = obj.get("data") if isinstance(obj, dict) else None
    return isinstance(data, list) and bool(data) and _is_span(data[0])


def flat_attributes(attributes: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    """``(dotted key, value)`` of nested attributes: an object's keys joined with dots, a list holding objects
    indexed (``retrieval.documents.0.document.id``; Phoenix's ``flatten(recurse_on_sequence=True)``), any other
    list kept whole; a ``document.metadata`` object is kept whole, None values are dropped."""
    for key, value in attributes.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and not name.endswith(_METADATA):
            yield from flat_attributes(value, name)
        elif isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    yield from flat_attributes(item, f"{name}.{i}")
        elif value is not None:
            yield name, value


def _regrouped(pairs: Iterator[tuple[str, object]]) -> dict[str, object]:
    """The flat pairs with ``….document.metadata.KEY`` (metadata served flattened) gathered back into one
    ``….document.metadata`` object (``KEY`` whole, dots and all)."""
    out: dict[str, object] = {}
    for key, value in pairs:
        head, sep, rest = key.partition(_METADATA + ".")
        if sep and rest:
            meta = out.setdefault(head + _METADATA, {})
            if isinstance(meta, dict):
                meta[rest] = value
                continue
        out[key] = value
    return out


def _any_value(value: object) -> dict:
    """A Python value as an OTLP JSON ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value if math.isfinite(value) else str(value)}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": [{"key": str(k), "value": _any_value(v)} for k, v in value.items()
                                           if v is not None]}}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": value if isinstance(value, str) else str(value)}


class _Bad(Exception):
    """A span that cannot be read; its argument is the message (the field and the fix)."""


def _nanos(value: object, at: str) -> str:
    """An ISO 8601 time (Phoenix's ``start_time``) as nanoseconds since the epoch, exactly (microseconds)."""
    if value is None:
        return "0"
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise _Bad(f"{at}: {value!r:.60} is not an ISO 8601 time; {_FIX}") from None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)  # Phoenix writes UTC
    return str((when - _EPOCH) // timedelta(microseconds=1) * 1000)


def _span(span: object, at: str) -> dict:
    if not _is_span(span):
        raise _Bad(f"{at}: not a Phoenix span (no context.trace_id and context.span_id); {_FIX}")
    context, attributes = span["context"], span.get("attributes") or {}
    if not isinstance(attributes, Mapping):
        raise _Bad(f"{at}.attributes: expected a JSON object, got {type(attributes).__name__}; {_FIX}")
    flat = _regrouped(flat_attributes(attributes))
    kind = span.get("span_kind")
    if isinstance(kind, str) and kind and kind.upper() != "UNKNOWN":
        flat.setdefault(_KIND, kind)
    out = {"traceId": str(context["trace_id"]), "spanId": str(context["span_id"]),
           "parentSpanId": str(span.get("parent_id") or ""), "name": str(span.get("name") or ""),
           "startTimeUnixNano": _nanos(span.get("start_time"), f"{at}.start_time"),
           "attributes": [{"key": k, "value": _any_value(v)} for k, v in flat.items()]}
    events = [{"name": e.get("name"), "attributes": [{"key": k, "value": _any_value(v)}
                                                       for k, v in flat_attributes(e.get("attributes") or {})]}
              for e in span.get("events") or () if isinstance(e, Mapping)]
    if events:
        out["events"] = events
    return out


def phoenix_export(obj: Mapping, *, path: object = None, line: int | None = None) -> dict:
    """One Phoenix span, or one page of them (``{"data": [...]}``), as an OTLP JSON trace export (module
    docstring); ``path`` and ``line`` say where it was read, for errors.

    Raises:
        DataFormatError: a span without its context, attributes that are not an object, a start time that is not
            ISO 8601, naming the file, the line and the field.
    """
    try:
        if _is_span(obj):
            spans = [_span(obj, "the span")]
        else:
            spans = [_span(s, f"data[{i}]") for i, s in enumerate(obj.get("data") or ())]
    except _Bad as bad:
        raise DataFormatError(str(bad), path=path, line=line) from None
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}
