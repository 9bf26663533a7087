"""OTLP protobuf trace exports read as the OTLP JSON that :mod:`~fairrag_core.data.traces` reads, so there is one
reader of spans.

The OpenTelemetry SDKs' OTLP exporters send binary ``ExportTraceServiceRequest`` messages (OTLP/HTTP with
``Content-Type: application/x-protobuf``, or gRPC), with no JSON option in the Python SDK. :func:`request_to_json`
turns one such message into the dict its OTLP JSON encoding would parse to (opentelemetry.io/docs/specs/otlp/
#json-protobuf-encoding: ids in lower-case hex, 64-bit integers as strings, camelCase names, empty fields left
out), keeping of each span only what the trace reader may use when ``keep`` names the attributes: its ids, name,
kind, start and end times, the kept attributes, and its events' names with their kept attributes.

A **file** of protobuf requests (suffix ``.pb``, e.g. ``traces.otlp.pb``, gzipped or not) is a sequence of
*length-delimited* requests — each preceded by its length as a base-128 varint, as protobuf's
``writeDelimitedTo``/``parseDelimitedFrom`` write them (:func:`write_delimited`) — so that a process can append a
request at a time; a file that is one bare request (no length prefix) is read too.

Requires ``opentelemetry-proto`` (requirements.txt), imported on first use.
"""

from __future__ import annotations

import base64
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import DataFormatError
from .files import read_chunks
from .suffixes import PROTOBUF, with_compressed

__all__ = ["is_protobuf", "request_to_json", "json_to_request", "read_delimited",
           "delimited", "write_delimited", "hex_id"]


_FIX = "send or write ExportTraceServiceRequest messages as the OTLP exporters do (docs/traces.md)"
_MAX_DEPTH = 32


def is_protobuf(name: str | os.PathLike) -> bool:
    """Whether a file's name says it holds OTLP protobuf (:data:`~fairrag_core.data.suffixes.PROTOBUF`, gzipped or
    not)."""
    return Path(name).name.lower().endswith(with_compressed(PROTOBUF))


def _request_type():
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return ExportTraceServiceRequest


def hex_id(value: str, size: int) -> str:
    """A trace (``size`` 16) or span (``size`` 8) id as lower-case hex: hex as OTLP JSON writes it, or the base64
    that protobuf's generic JSON mapping writes for ``bytes`` (``AAECAwQFBgc=``); any other text unchanged (stripped).

    >>> hex_id("AAECAwQFBgc=", 8), hex_id("0001020304050607", 8), hex_id(" ABC ", 8)
    ('0001020304050607', '0001020304050607', 'ABC')
    """
    text = value.strip()
    if len(text) == 2 * size:
        try:
            bytes.fromhex(text)
            return text.lower()
        except ValueError:
            pass
    if len(text) == 4 * math.ceil(size / 3):
        try:
            raw = base64.b64decode(text, validate=True)
        except ValueError:
            raw = b""
        if len(raw) == size:
            return raw.hex()
    return text


def _value(value, depth: int = 0) -> dict:
    """An ``AnyValue`` message as OTLP JSON."""
    which = value.WhichOneof("value")
    if which is None or depth > _MAX_DEPTH:
        return {}
    if which == "string_value":
        return {"stringValue": value.string_value}
    if which == "int_value":
        return {"intValue": str(value.int_value)}
    if which == "double_value":
        number = value.double_value
        return {"doubleValue": number if math.isfinite(number) else str(number).replace("inf", "Infinity")
                .replace("nan", "NaN")}
    if which == "bool_value":
        return {"boolValue": value.bool_value}
    if which == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode("ascii")}
    if which == "array_value":
        return {"arrayValue": {"values": [_value(v, depth + 1) for v in value.array_value.values]}}
    return {"kvlistValue": {"values": [{"key": kv.key, "value": _value(kv.value, depth + 1)}
                                       for kv in value.kvlist_value.values]}}


def _attributes(pairs, keep: Callable[[str], bool] | None) -> list[dict]:
    return [{"key": kv.key, "value": _value(kv.value)} for kv in pairs if keep is None or keep(kv.key)]


def _span(span, keep: Callable[[str], bool] | None) -> dict:
    out: dict = {"traceId": span.trace_id.hex(), "spanId": span.span_id.hex()}
    if span.parent_span_id:
        out["parentSpanId"] = span.parent_span_id.hex()
    for key, field in (("name", span.name), ("kind", span.kind), ("startTimeUnixNano", span.start_time_unix_nano),
                       ("endTimeUnixNano", span.end_time_unix_nano)):
        if field:  # proto3 JSON leaves default values out
            out[key] = field if key in ("name", "kind") else str(field)
    attributes = _attributes(span.attributes, keep)
    if attributes:
        out["attributes"] = attributes
    events = [{"name": e.name, "timeUnixNano": str(e.time_unix_nano), "attributes": _attributes(e.attributes, keep)}
              for e in span.events]
    if events:
        out["events"] = events
    return out


def request_to_json(data: bytes, *, keep: Callable[[str], bool] | None = None,
                    resource_keys: tuple[str, ...] | None = None) -> dict:
    """One binary ``ExportTraceServiceRequest`` as its OTLP JSON dict (module docstring). ``keep``: which span and
    event attributes to keep (all when None); ``resource_keys``: which resource attributes (all when None).

    Raises:
        DataFormatError: the bytes are not an ``ExportTraceServiceRequest``.
    """
    request = _request_type()()
    try:
        request.ParseFromString(bytes(data))
    except Exception:  # google.protobuf.message.DecodeError (its text names only the message type)
        raise DataFormatError(f"not an OTLP protobuf ExportTraceServiceRequest (the bytes do not decode); {_FIX}"
                              ) from None
    resources = []
    for rs in request.resource_spans:
        scopes = [{"scope": {"name": ss.scope.name, "version": ss.scope.version},
                   "spans": [_span(s, keep) for s in ss.spans]} for ss in rs.scope_spans]
        kept = [kv for kv in rs.resource.attributes if resource_keys is None or kv.key in resource_keys]
        resources.append({"resource": {"attributes": _attributes(kept, None)}, "scopeSpans": scopes})
    return {"resourceSpans": resources}


def _any(value: dict):
    """OTLP JSON ``AnyValue`` → message fields (for :func:`json_to_request`)."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    out = AnyValue()
    if not value:
        return out
    (kind, inner), = value.items()
    if kind == "stringValue":
        out.string_value = inner
    elif kind == "intValue":
        out.int_value = int(inner)
    elif kind == "doubleValue":
        out.double_value = float(inner)
    elif kind == "boolValue":
        out.bool_value = inner
    elif kind == "bytesValue":
        out.bytes_value = base64.b64decode(inner)
    elif kind == "arrayValue":
        out.array_value.values.extend(_any(v) for v in inner.get("values", []))
    elif kind == "kvlistValue":
        for kv in inner.get("values", []):
            out.kvlist_value.values.add(key=kv["key"]).value.CopyFrom(_any(kv.get("value", {})))
    return out


def json_to_request(export: dict):
    """An OTLP JSON trace export (hex ids) as an ``ExportTraceServiceRequest`` message: what an SDK exporter would
    have sent for the same spans (tests, benchmarks, converting a JSON export to ``.pb``)."""
    request = _request_type()()
    for rs in export.get("resourceSpans", []):
        out_rs = request.resource_spans.add()
        for kv in rs.get("resource", {}).get("attributes", []):
            out_rs.resource.attributes.add(key=kv["key"]).value.CopyFrom(_any(kv.get("value", {})))
        for ss in rs.get("scopeSpans", []):
            out_ss = out_rs.scope_spans.add()
            for span in ss.get("spans", []):
                s = out_ss.spans.add(trace_id=bytes.fromhex(span["traceId"]), span_id=bytes.fromhex(span["spanId"]),
                                     parent_span_id=bytes.fromhex(span.get("parentSpanId", "")),
                                     name=span.get("name", ""), kind=int(span.get("kind", 0)),
                                     start_time_unix_nano=int(span.get("startTimeUnixNano", 0)),
                                     end_time_unix_nano=int(span.get("endTimeUnixNano", 0)))
                for kv in span.get("attributes", []):
                    s.attributes.add(key=kv["key"]).value.CopyFrom(_any(kv.get("value", {})))
                for event in span.get("events", []):
                    e = s.events.add(name=event.get("name", ""), time_unix_nano=int(event.get("timeUnixNano", 0)))
                    for kv in event.get("attributes", []):
                        e.attributes.add(key=kv["key"]).value.CopyFrom(_any(kv.get("value", {})))
    return request


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def delimited(requests) -> bytes:
    """``requests`` (messages, or their serialized bytes), each preceded by its length: a protobuf trace file's
    bytes."""
    out = bytearray()
    for request in requests:
        data = request if isinstance(request, bytes | bytearray) else request.SerializeToString()
        out += _varint(len(data)) + bytes(data)
    return bytes(out)


def write_delimited(path: str | os.PathLike, requests) -> None:
    """Append ``requests`` to ``path`` as :func:`delimited` writes them."""
    with open(path, "ab") as f:
        f.write(delimited(requests))


def _read_varint(buffer: bytearray, at: int) -> tuple[int, int] | None:
    """The varint at ``at`` and the position after it; None when the buffer ends inside it."""
    value = shift = 0
    while at < len(buffer):
        byte = buffer[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ValueError("a length prefix longer than 10 bytes")
    return None


def read_delimited(path: str | os.PathLike, *, digest=None, keep: Callable[[str], bool] | None = None
                   ) -> Iterator[tuple[int, dict]]:
    """The requests of a protobuf trace file (module docstring) as ``(number, OTLP JSON dict)``, numbered from 1,
    read in chunks (gzip inflated, within ``$FAIRRAG_MAX_FILE_MB``; ``digest`` gets the raw bytes). A file whose
    first byte is ``0x0A`` (a request's first field) is one bare request: a length-delimited file would start with
    a request of 10 bytes, too short to hold a span.

    Raises:
        DataFormatError: naming the file and the request: a length that runs past the end, bytes that are no request.
    """
    path = Path(path)
    buffer, number, at, bare = bytearray(), 0, 0, None
    for chunk in read_chunks(path, where=path, digest=digest):
        buffer += chunk
        if bare is None and buffer:
            bare = buffer[0] == 0x0A
        if bare:
            continue
        while True:
            try:
                head = _read_varint(buffer, at)
            except ValueError as err:
                raise DataFormatError(f"request {number + 1}: {err}; {_FIX}", path=path) from None
            if head is None or head[1] + head[0] > len(buffer):
                break
            length, start = head
            try:
                export = request_to_json(buffer[start:start + length], keep=keep)
            except DataFormatError as err:
                raise DataFormatError(f"request {number + 1}: {err}", path=path) from None
            number += 1
            yield number, export
            at = start + length
        del buffer[:at]
        at = 0
    if bare:
        try:
            yield 1, request_to_json(buffer, keep=keep)
        except DataFormatError as err:
            raise DataFormatError(str(err), path=path) from None
    elif buffer:
        raise DataFormatError(f"the file ends inside a request (after request {number}: {len(buffer)} bytes "
                              f"left); {_FIX}", path=path)
