"""Served answers from OpenTelemetry traces: an OTLP JSON trace export read as served lines (one per trace), and
the documents of a log (with their providers) when no curated collection exists.

Long because it is one path from a file to served lines — OTLP JSON read and checked with JSON paths, spans reduced
to what is read, traces assembled under two attribute conventions and a trace map, nested retrieval spans made one
retrieval — whose steps share private helpers; the last section (documents and providers without a collection) is
the part that could stand alone.

A deployed RAG system that is traced logs spans, not our JSONL log. :func:`read_traces` reads the export the
OpenTelemetry collector's file exporter writes — one ``{"resourceSpans": [...]}`` object per line (JSON Lines,
gzipped or not), or one such object pretty-printed over the whole file (an OTLP/HTTP JSON payload) — and assembles
the spans of each trace (same ``traceId``, in any order, across lines) into **one served line**
(a :class:`LogEntry`); :func:`~.rag_log.load_traces` makes them a :class:`~.rag_log.RagLog`, and
:func:`~.rag_log.load_rag_log` and :func:`~.rag_log.load_served` recognise such a file by its first object, so every
audit of a RAG log audits a trace export too.

Where each field comes from (the first that a trace has; ``--trace-map KEY=ATTRIBUTE`` names another attribute,
:class:`TraceMap`; docs/traces.md has the full table and the reasons)::

    field       OpenInference (Phoenix, Arize)             OpenTelemetry GenAI (semconv, Development)
    ranking     RERANKER span: reranker.output_documents.{i} (what the generator saw), else
                RETRIEVER span: retrieval.documents.{i}    retrieval span: gen_ai.retrieval.documents
                  .document.id, .document.score,             (a JSON string or an array of
                  .document.metadata (JSON string or kv)      {"id", "score", "metadata", ...} objects)
    query       the retrieval span's input.value            gen_ai.retrieval.query.text
    answer      the last LLM span: llm.output_messages.{j}  the last chat / text_completion /
                .message.content, else output.value (not     generate_content span: gen_ai.output.messages;
                JSON)                                       also gen_ai.completion.{j}.content (OpenLLMetry)
                                                            and the gen_ai.content.completion event
    session     session.id                                  gen_ai.conversation.id
    query_id    fairrag.query_id on any span, else the query text
    citations   fairrag.citations (a JSON list, or an array, of doc ids)
    timestamp   the root span's startTimeUnixNano, as ISO 8601 UTC (``2026-03-02T09:16:00Z``)

Documents are taken in numeric index order (``10`` after ``9``). A document without ``document.id`` takes its
metadata's ``KEY`` with ``--trace-map document_id=metadata.KEY``, else the id of the document at its index in the
retriever span's ``output.value`` (``{"documents": [{"id", ...}]}``: openinference-instrumentation-langchain writes
each document's content and metadata but not its id, which only LangChain's output holds, :func:`_output_ids`); a
trace still without ids is left out, the note naming that fix. Their logged **scores** and **metadata** are
kept (:attr:`LogEntry.scores`, :attr:`LogEntry.doc_metadata`; the trace id in its ``metadata``), aligned with the
ranking. Traces are ordered by the root span's start time (then trace id), so the same export always gives the same
lines, whatever the order of its spans and lines.

**Candidates** (:attr:`LogEntry.candidates`, with their scores and metadata): what the system chose the ranking
from, where the trace says it — (a) the reranker's input, ``reranker.input_documents.{i}.document.{id,score,
metadata}`` (OpenInference; the reranking's outermost span that lists any); else (b) when a reranker chose the
ranking, the documents of the trace's one retrieval (nested spans as one; none when there are several independent
ones: which fed the reranker is not told); else (c) a retrieval span nested in the retrieval whose list is the
ranking that lists more documents, every ranked one among them (the outer list is what was passed on, the inner
one what it was cut from). Otherwise None: the served ranking itself is not a candidate set. Candidates must hold
every ranked document; those that do not (a reranker that adds documents) or that cannot be read (an id missing or
twice) are dropped, and the notes count the traces. Their texts are never read or kept.

A trace that cannot make a served line is **left out and counted** (:attr:`TraceExport.notes`): no retrieval
span (a health check, a chat turn without retrieval), a retrieval without document ids, a document listed twice,
citations that are not a list of ids, no query id and no query text, or **several independent retrieval spans**.

A retrieval span **nested** in another retrieval span of the trace (its descendant through ``parentSpanId``, at any
depth, through spans of any kind, kept or not) is part of that **one retrieval**: the stock
openinference-instrumentation-llama-index writes ``BM25Retriever.retrieve`` with the documents and its child
``BM25Retriever._retrieve`` without; a wrapper may hold them on the inner call instead. The retrieval's documents
are those of its outermost span that lists any (the outermost span's output is what the caller received; the
spans inside are its steps). When a span nested in it lists other document ids (a fusion retriever's inputs), the
outermost list is kept and the trace is counted in the notes. Rerankers nested in a reranker follow the same rule.
Retrievals **independent** of each other (neither an ancestor of the other: an agent's sub-questions, two
retrievers side by side) are left out by default (:attr:`MultipleRetrievals.SKIP`), the note naming, for the first
such trace, the span that holds each one's documents and how many: keeping one of the rankings would credit
exposure to one retrieval and ignore the others, and merging them would invent an order no generator saw. ``FIRST``
or ``LAST`` (by the start of each retrieval's outermost span) keeps one, for systems where that one is known to be
the ranking the generator read. Only when no trace is usable does the load fail. A malformed export (a value of
the wrong type where OTLP JSON says what it must be) fails at once, naming the file, the line and the JSON path
(``resourceSpans[0].scopeSpans[1].spans[4].attributes[2].value``).

Without a collection, :func:`documents_from_log` makes one from the logged doc ids (rankings and citations), each
with its provider from the document's logged metadata (:class:`ProviderSource`, e.g. ``metadata.source`` or the
domain of ``metadata.url``) or from a CSV map (:func:`load_provider_map`); it has no relevance labels, so EE-R and
the fair target are undefined (:data:`NO_RELEVANCE_LABELS`).

References: OTLP JSON encoding (opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding: ids in hex, 64-bit
integers as strings, empty fields omitted); OpenInference semantic conventions (github.com/Arize-ai/openinference,
spec/semantic_conventions.md); OpenTelemetry GenAI semantic conventions, retrieval spans
(opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/#retrievals).
"""

from __future__ import annotations

import ast
import csv
import enum
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import InitVar, dataclass, field, replace
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..checks import max_line_bytes, max_log_lines
from ..errors import DataFormatError, InvalidParameterError
from .collection import Collection, Document
from .fields import lone_surrogate_field
from .files import read_lines
from .loaders import json_lines
from .otlp_proto import hex_id, is_protobuf, read_delimited
from .phoenix import is_phoenix_spans, phoenix_export
from .suffixes import COMPRESSED, JSON_LINES, PROTOBUF

__all__ = ["TRACE_FIELDS", "OTLP_KEYS", "MultipleRetrievals", "TraceMap", "LogEntry", "TraceExport", "read_traces",
           "is_otlp_export", "starts_like_export", "kept_attributes", "slim_export",
           "trace_files", "is_trace_folder",
           "ProviderSource", "LogDocuments", "documents_from_log", "load_provider_map", "NO_RELEVANCE_LABELS",
           "SAMPLER_SPAN"]

#: The keys ``--trace-map`` accepts: the served line's fields, and the parts of a retrieved document.
TRACE_FIELDS = ("query_id", "query", "answer", "citations", "session", "ranking", "documents", "document_id",
                "document_score", "document_metadata")

#: The top-level keys of an OTLP JSON export (traces, logs, metrics); a file whose first object has one is read here.
OTLP_KEYS = ("resourceSpans", "resourceLogs", "resourceMetrics")

#: Why EE-R (and the fair target) have no value when the documents come from the log.
NO_RELEVANCE_LABELS = ("no relevance labels: the documents come from the log (--provider-from, --provider-map), not "
                       "from a collection with qrels; audit with --collection to measure EE-R and the fair target")

_FIX = "write OTLP JSON as the OpenTelemetry collector's file exporter does (docs/traces.md)"
_MAX_DEPTH = 32  # nesting of arrayValue / kvlistValue
_SPANS_PER_LINE = 8  # spans held per log line at most (a bound on memory, like FAIRRAG_MAX_LOG_LINES)

# OpenInference
_KIND = "openinference.span.kind"
_INPUT, _OUTPUT, _OUTPUT_MIME = "input.value", "output.value", "output.mime_type"
_RETRIEVAL_DOCS, _RERANKED_DOCS, _RERANKER_QUERY = "retrieval.documents", "reranker.output_documents", "reranker.query"
_RERANKER_INPUT = "reranker.input_documents"
_LLM_MESSAGES = "llm.output_messages"
_QUERY_KINDS = ("RETRIEVER", "RERANKER")  # the span kinds whose input.value is the query
_SESSION = "session.id"
# OpenTelemetry GenAI
_OPERATION = "gen_ai.operation.name"
_GENAI_DOCS, _GENAI_QUERY = "gen_ai.retrieval.documents", "gen_ai.retrieval.query.text"
_GENAI_OUTPUT, _GENAI_COMPLETION = "gen_ai.output.messages", "gen_ai.completion"
_GENAI_CONVERSATION = "gen_ai.conversation.id"
_GENAI_COMPLETION_EVENT = "gen_ai.content.completion"
_INFERENCE_OPERATIONS = ("chat", "text_completion", "generate_content")
# ours
_QUERY_ID, _CITATIONS = "fairrag.query_id", "fairrag.citations"
#: The attributes of the span the fair sampler of :mod:`fairrag_core.integrations` writes, each read here with no
#: options: a RERANKER span whose input is the candidates and whose output is the sampled ranking; α, the request's
#: seed and k are not read, but kept by a receiver so that every served ranking replays.
SAMPLER_SPAN = MappingProxyType({"kind": _KIND, "query": _RERANKER_QUERY, "query_id": _QUERY_ID,
                                 "candidates": _RERANKER_INPUT, "chosen": _RERANKED_DOCS, "alpha": "fairrag.alpha",
                                 "seed": "fairrag.seed", "k": "fairrag.k"})

_FLAT = re.compile(r"(retrieval\.documents|reranker\.output_documents|reranker\.input_documents|llm\.output_messages"
                   r"|gen_ai\.completion)\.(\d{1,9})\.(.+)")
_EMPTY: Mapping[str, object] = MappingProxyType({})
_DOCUMENT_TEXTS = ("content", "text")  # a document object's texts (``document.content``): never kept as metadata


class MultipleRetrievals(str, enum.Enum):
    """What a trace with several independent retrievals (or rerankers; spans nested in one another are one, module
    docstring) gives: nothing (``skip``, counted), or the ranking of the ``first`` or ``last`` of them by the start
    of their outermost span."""

    SKIP = "skip"
    FIRST = "first"
    LAST = "last"


@dataclass(frozen=True)
class TraceMap:
    """Which attributes :func:`read_traces` reads, beyond the conventions (module docstring).

    ``attributes`` maps a key of :data:`TRACE_FIELDS` to an attribute name. ``query_id``, ``query``, ``answer``,
    ``citations`` and ``session`` are read from the first span of the trace that has the attribute (the root first,
    then by start time); ``ranking`` (a list of doc ids) and ``documents`` (a list of ``{"id", "score", ...}``
    objects, as ``gen_ai.retrieval.documents``) make the spans that carry them retrieval spans; ``document_id``,
    ``document_score`` and ``document_metadata`` rename the parts of a retrieved document (``document.id`` in
    ``retrieval.documents.{i}.document.id``, ``id`` in a JSON document). ``multiple`` says what a trace with
    several independent retrievals gives.

    >>> TraceMap.parse(["query_id=app.intent", "answer=app.reply"]).attributes["answer"]
    'app.reply'
    """

    attributes: Mapping[str, str] = field(default_factory=dict)
    multiple: MultipleRetrievals = MultipleRetrievals.SKIP

    def __post_init__(self) -> None:
        unknown = sorted(set(self.attributes).difference(TRACE_FIELDS))
        if unknown:
            raise InvalidParameterError(f"unknown trace field(s) {unknown}; map one of: {', '.join(TRACE_FIELDS)}")
        empty = [k for k, v in self.attributes.items() if not isinstance(v, str) or not v.strip()]
        if empty:
            raise InvalidParameterError(f"trace field {empty[0]!r} is mapped to no attribute; write "
                                        f"{empty[0]}=ATTRIBUTE, e.g. {empty[0]}=app.{empty[0]}")
        try:
            multiple = MultipleRetrievals(self.multiple)
        except ValueError:
            raise InvalidParameterError(f"multiple retrievals {self.multiple!r} is not one of: skip, first, "
                                        "last") from None
        object.__setattr__(self, "multiple", multiple)
        object.__setattr__(self, "attributes", MappingProxyType({k: v.strip() for k, v in self.attributes.items()}))

    @classmethod
    def parse(cls, items: Iterable[str] = (), *, multiple: MultipleRetrievals | str = MultipleRetrievals.SKIP
              ) -> TraceMap:
        """A map from ``KEY=ATTRIBUTE`` words (``--trace-map``); a key given twice is refused."""
        found: dict[str, str] = {}
        for item in items:
            key, sep, name = str(item).partition("=")
            key = key.strip()
            if not sep:
                raise InvalidParameterError(f"--trace-map {item!r} is not KEY=ATTRIBUTE; e.g. "
                                            "--trace-map query_id=app.intent_id")
            if key in found:
                raise InvalidParameterError(f"--trace-map maps {key!r} twice; keep one attribute per field")
            found[key] = name
        return cls(found, multiple)

    def items(self) -> tuple[str, ...]:
        """The map as ``KEY=ATTRIBUTE`` words, in :data:`TRACE_FIELDS` order."""
        return tuple(f"{k}={self.attributes[k]}" for k in TRACE_FIELDS if k in self.attributes)


def is_otlp_export(obj: object) -> bool:
    """Whether a parsed JSON object is an OTLP JSON export (it has ``resourceSpans``, ``resourceLogs`` or
    ``resourceMetrics``)."""
    return isinstance(obj, dict) and any(k in obj for k in OTLP_KEYS)


# -- reading OTLP JSON -------------------------------------------------------------------------------------------
class _Where:
    """Where a reader is (file, line, JSON path), to name it in errors."""

    __slots__ = ("line", "path")

    def __init__(self, path: object, line: int | None) -> None:
        self.path, self.line = path, line

    def bad(self, at: str, problem: str) -> DataFormatError:
        return DataFormatError(f"{at}: {problem}; {_FIX}", path=self.path, line=self.line)

    def too_many(self, what: str) -> DataFormatError:
        return DataFormatError(f"more than {what}, more than one load holds in memory; split the export (e.g. by day) "
                               "and audit the parts, or raise the limit with FAIRRAG_MAX_LOG_LINES", path=self.path,
                               line=self.line)


def _list(obj: Mapping, key: str, at: str, where: _Where) -> list:
    value = obj.get(key)
    if value is None:  # proto3 JSON leaves empty repeated fields out
        return []
    if not isinstance(value, list):
        raise where.bad(f"{at}.{key}" if at else key, f"expected a JSON array, got {type(value).__name__}")
    return value


def _object(value: object, at: str, where: _Where) -> dict:
    if not isinstance(value, dict):
        raise where.bad(at, f"expected a JSON object, got {type(value).__name__}")
    return value


_INT64 = re.compile(r"-?[0-9]{1,19}")


def _int(value: object, at: str, where: _Where) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT64.fullmatch(value):
        return int(value)
    raise where.bad(at, f"expected a whole number (a 64-bit integer, as a string or a number), got {value!r:.40}")


def _number(value: object) -> float | None:
    """A number, or a string that reads as one (``"NaN"``, ``"Infinity"``, ``"1e-3"``); None otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and len(value) < 40:
        try:
            return float(value)
        except ValueError:
            pass
    return None


def _any_value(value: object, at: str, where: _Where, depth: int = 0) -> object:
    """An OTLP ``AnyValue`` as a Python value (``{}`` is None; ``kvlistValue`` a dict; ``bytesValue`` its base64)."""
    if depth > _MAX_DEPTH:
        raise where.bad(at, f"attribute values nested deeper than {_MAX_DEPTH} levels")
    value = _object(value, at, where)
    if not value:
        return None
    if len(value) != 1:
        raise where.bad(at, f"an attribute value holds one of stringValue, intValue, ...; got {sorted(value)[:4]}")
    kind, inner = next(iter(value.items()))
    here = f"{at}.{kind}"
    if kind == "stringValue" or kind == "bytesValue":
        if not isinstance(inner, str):
            raise where.bad(here, f"expected a string, got {type(inner).__name__}")
        return inner
    if kind == "boolValue":
        if not isinstance(inner, bool):
            raise where.bad(here, f"expected true or false, got {inner!r:.40}")
        return inner
    if kind == "intValue":
        return _int(inner, here, where)
    if kind == "doubleValue":
        number = _number(inner)
        if number is None:
            raise where.bad(here, f"expected a number (or \"NaN\", \"Infinity\"), got {inner!r:.40}")
        return number
    if kind == "arrayValue":
        values = _list(_object(inner, here, where), "values", here, where)
        return [_any_value(v, f"{here}.values[{i}]", where, depth + 1) for i, v in enumerate(values)]
    if kind == "kvlistValue":
        return dict(_pairs(_object(inner, here, where), "values", here, where, depth=depth + 1))
    raise where.bad(at, f"unknown attribute value type {kind!r:.40}; use stringValue, intValue, doubleValue, "
                        "boolValue, arrayValue, kvlistValue or bytesValue")


def _pairs(obj: Mapping, name: str, at: str, where: _Where, keep=None, depth: int = 0) -> Iterator[tuple[str, object]]:
    """``obj[name]``'s ``{"key", "value"}`` pairs (a span's or an event's attributes, a ``kvlistValue``) as
    ``(key, value)``; a pair whose key ``keep`` refuses is skipped unread."""
    for i, pair in enumerate(_list(obj, name, at, where)):
        key = pair.get("key") if isinstance(pair, dict) else None
        if not isinstance(key, str):
            key = _object(pair, f"{at}.{name}[{i}]", where).get("key")
            raise where.bad(f"{at}.{name}[{i}].key", f"expected the attribute's name as a string, got "
                                                     f"{type(key).__name__}")
        if keep is not None and not keep(key):
            continue
        value = pair.get("value", {})
        text = value.get("stringValue") if type(value) is dict and len(value) == 1 and depth <= _MAX_DEPTH else None
        # the usual case (a string) without building the path
        yield key, text if type(text) is str else _any_value(value, f"{at}.{name}[{i}].value", where, depth)


@dataclass(slots=True)
class _Span:
    """What a span contributes: its place in the trace, its kind, and the attributes the assembly may read."""

    trace_id: str
    span_id: str
    parent: str  # the parent's span id, "" for a root span
    name: str
    root: bool
    start: int
    kind: str
    operation: str
    attributes: dict
    output_ids: tuple[str | None, ...] | None = None  # a RETRIEVER span's output.value documents' ids (_cut_io)


class _Wanted:
    """Which attributes of a span are kept (the rest — document contents, prompts, HTTP details — are dropped as
    they are read, so that a large export costs memory for what the audit uses only)."""

    def __init__(self, trace_map: TraceMap) -> None:
        self.shared: dict[str, str] = {}  # one object per distinct key or string value: exports repeat them
        m = trace_map.attributes
        self.mapped = frozenset(m.values())  # kept whole wherever they are (_cut_io)
        self.documents = frozenset(k for k in (_RETRIEVAL_DOCS, _RERANKED_DOCS, _RERANKER_INPUT, _GENAI_DOCS,
                                               m.get("documents")) if k)  # structured lists: kept without texts
        self.ids = _document_keys(trace_map, "")  # a JSON document's id, score and metadata keys
        self.id_part = _document_keys(trace_map, "document.")[0]  # a flat document's id part
        self.names = {_KIND, _OPERATION, _INPUT, _OUTPUT, _OUTPUT_MIME, _RERANKER_QUERY, _SESSION, _GENAI_CONVERSATION,
                      _GENAI_DOCS, _GENAI_QUERY, _GENAI_OUTPUT, _GENAI_COMPLETION, _QUERY_ID, _CITATIONS,
                      _RETRIEVAL_DOCS, _RERANKED_DOCS, _RERANKER_INPUT, *SAMPLER_SPAN.values(), *m.values()}
        documents = _document_keys(trace_map, "document.")
        messages = ("message.content", "message.role", "content", "role")
        self.parts = {_RETRIEVAL_DOCS: documents, _RERANKED_DOCS: documents, _RERANKER_INPUT: documents,
                      _LLM_MESSAGES: messages, _GENAI_COMPLETION: messages}  # of the flat {prefix}.{i}.{part}

    def __call__(self, key: str) -> bool:
        if key in self.names:
            return True
        flat = _FLAT.fullmatch(key)
        return flat is not None and flat.group(3) in self.parts[flat.group(1)]


class _Unread:
    """A :class:`_Wanted` that also remembers the first attribute it refuses that looks like the citations or the
    query id under another name (a key ending in ``citations`` or ``query_id``, a nested ``fairrag`` object), so that
    :func:`read_traces` can name it in a note instead of a silent "attribution: none" (:func:`_absent_notes`)."""

    __slots__ = ("found", "id_part", "mapped", "shared", "wanted")

    def __init__(self, wanted: _Wanted) -> None:
        self.wanted, self.shared, self.found = wanted, wanted.shared, {}
        self.mapped, self.id_part = wanted.mapped, wanted.id_part

    def __call__(self, key: str) -> bool:
        if self.wanted(key):
            return True
        lowered = key.lower()
        kind = ("citations" if lowered.endswith("citations") else
                "query_id" if lowered.endswith(("query_id", "queryid", "query.id")) else
                "fairrag" if lowered == "fairrag" else None)
        if kind is not None and kind not in self.found:
            self.found[kind] = key
        return False


def _absent_notes(found: Mapping[str, str], entries: Iterable[LogEntry], trace_map: TraceMap) -> list[str]:
    """Notes for the citations and query id attributes that no trace has while spans carry a look-alike
    (``found``, by :class:`_Unread`): the key found and the fix (``--trace-map``, or a flat attribute instead of a
    nested object)."""
    entries = list(entries)
    m, notes = trace_map.attributes, []
    for name, attribute, absent, meaning in (
            ("citations", m.get("citations", _CITATIONS), all(e.citations is None for e in entries),
             "attribution: none"),
            ("query_id", m.get("query_id", _QUERY_ID), all(e.query_id == e.query for e in entries),
             "each query is known by its text")):
        if not absent:
            continue
        if name in found:
            notes.append(f"no trace has {attribute} ({meaning}), but spans carry the attribute {found[name]!r}; "
                         f"read it with --trace-map {name}={found[name]}")
        elif "fairrag" in found:
            notes.append(f"no trace has {attribute} ({meaning}), but spans carry a nested {found['fairrag']!r} "
                         f"object; set {attribute} as an attribute of its own, not inside an object (docs/traces.md)")
    return notes


def kept_attributes(trace_map: TraceMap | None = None) -> Callable[[str], bool]:
    """Whether :func:`read_traces` keeps a span attribute of this name (with ``trace_map``): what a receiver keeps
    of the spans it is sent (:mod:`~fairrag_core.data.collector`), dropping document texts, prompts and the rest.
    A name kept here may still be cut by the span it is on (:func:`slim_export`: ``input.value``, ``output.value``,
    the texts inside a structured document list)."""
    return _Wanted(trace_map if trace_map is not None else TraceMap())


def slim_export(export: object, trace_map: TraceMap | None = None) -> dict:
    """One OTLP JSON trace export (a parsed request) checked as :func:`read_traces` checks it, with only what the
    audit reads: each span's ids, name, kind, times, kept attributes (:func:`kept_attributes`) and its events' names
    with their kept attributes, and each resource's ``service.name``. What a receiver stores, and no document text
    or prompt: ``input.value`` and ``output.value`` only where the reader reads them (:func:`_cut_io`; a retriever
    span's ``output.value`` rewritten to its documents' ids) and structured document lists without their texts
    (:func:`_without_texts`). It reads back as the same served lines as ``export``.

    Raises:
        DataFormatError: naming the JSON path, as :func:`read_traces` does.
    """
    wanted = _Wanted(trace_map if trace_map is not None else TraceMap())
    where = _Where("the request", None)
    if not isinstance(export, dict) or "resourceSpans" not in export:
        raise where.bad("the request", 'an OTLP trace export is an object with "resourceSpans"')
    for _ in _spans(export, where, wanted):  # the checks, on what is kept
        pass

    def attributes(obj: dict, keep) -> list:
        kept = []
        for kv in obj.get("attributes") or ():
            if keep(kv["key"]):
                if kv["key"] in wanted.documents:  # a structured list: its ids, scores and metadata, not its texts
                    value = _without_texts(kv.get("value") or {}, wanted.ids)
                    if value is None:
                        continue
                    kv = {"key": kv["key"], "value": value}
                kept.append(kv)
        return kept

    def cut(kept: list) -> list:
        """``kept`` without the ``input.value``/``output.value`` the reader does not read on this span."""
        texts = {kv["key"]: kv.get("value") or {} for kv in kept}
        if _INPUT not in texts and _OUTPUT not in texts:
            return kept
        values = {k: v.get("stringValue") for k, v in texts.items() if k in (_KIND, _OPERATION, _INPUT, _OUTPUT,
                                                                             _OUTPUT_MIME)}
        kind, operation = values.get(_KIND), values.get(_OPERATION)
        ids = _cut_io(values, kind.upper() if isinstance(kind, str) else "",
                      operation if isinstance(operation, str) else "", wanted, {kv["key"] for kv in kept})
        out = []
        for kv in kept:
            if kv["key"] in (_INPUT, _OUTPUT) and kv["key"] not in values:
                if kv["key"] == _OUTPUT and ids is not None:  # what the reader reads of it: the ids, in order
                    out.append({"key": _OUTPUT, "value": {"stringValue": json.dumps(
                        {"documents": [{"id": doc_id} for doc_id in ids]})}})
                continue
            out.append(kv)
        return out

    resources = []
    for resource_spans in export["resourceSpans"]:
        service = attributes(resource_spans.get("resource") or {}, "service.name".__eq__)
        scopes = []
        for scope in resource_spans.get("scopeSpans", resource_spans.get("instrumentationLibrarySpans")) or ():
            spans = []
            for span in scope.get("spans") or ():
                slim = {k: span[k] for k in ("traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano",
                                             "endTimeUnixNano") if k in span}
                slim["attributes"] = cut(attributes(span, wanted))
                events = [{"name": e.get("name"), "attributes": attributes(e, wanted)} for e in span.get("events") or ()
                          if e.get("name") == _GENAI_COMPLETION_EVENT]
                if events:
                    slim["events"] = events
                spans.append(slim)
            scopes.append({"spans": spans})
        resources.append({"resource": {"attributes": service}, "scopeSpans": scopes})
    return {"resourceSpans": resources}


def _without_texts(value: dict, keys: tuple[str, ...]) -> dict | None:
    """A structured document list (``reranker.input_documents`` as Phoenix gives it, ``gen_ai.retrieval.documents``,
    a structured ``retrieval.documents``: an array of kvlists, or a JSON string of objects) without the documents'
    texts (:data:`_DOCUMENT_TEXTS`, also as ``document.content``) unless ``keys`` (the id, score and metadata keys
    the reader reads) name one; None for a value that is no such list (the reader reads nothing from it). The flat
    form loses them by name."""
    def text(key: object) -> bool:
        return (isinstance(key, str) and key.removeprefix("document.") in _DOCUMENT_TEXTS
                and key.removeprefix("document.") not in keys)

    if "stringValue" in value:
        parsed = _json_text(value["stringValue"])
        if not isinstance(parsed, list) or not all(isinstance(doc, dict) for doc in parsed):
            return None
        return {"stringValue": json.dumps([{k: v for k, v in doc.items() if not text(k)} for doc in parsed])}
    docs = (value.get("arrayValue") or {}).get("values")
    if not isinstance(docs, list) or not all(isinstance(d, dict) and isinstance(d.get("kvlistValue"), dict)
                                             for d in docs):
        return None
    return {"arrayValue": {"values": [
        {"kvlistValue": {"values": [kv for kv in d["kvlistValue"].get("values") or ()
                                    if not (isinstance(kv, dict) and text(kv.get("key")))]}} for d in docs]}}


def _is_generator(kind: str, operation: str) -> bool:
    """Whether a span generates the answer (an OpenInference ``LLM`` span, a GenAI inference operation)."""
    return kind == "LLM" or operation in _INFERENCE_OPERATIONS


def _plain_output(attrs: Mapping) -> str | None:
    """A span's ``output.value`` when it is text, not JSON (``output.mime_type``): a generator's answer."""
    output = attrs.get(_OUTPUT)
    return output if isinstance(output, str) and "json" not in str(attrs.get(_OUTPUT_MIME, "")).lower() else None


def _output_ids(value: object) -> tuple[str | None, ...] | None:
    """The ids of the documents a retriever span's ``output.value`` lists, by index (None where one has none):
    LangChain's retriever output, ``{"documents": [{"id", "metadata", "page_content", ...}, ...]}``, the
    ``Document.id`` of each (openinference-instrumentation-langchain writes every document's content and metadata
    as ``retrieval.documents.{i}``, but not its id), or a JSON list of such objects; None when none has an id."""
    parsed = _json_text(value)
    docs = parsed.get("documents") if isinstance(parsed, dict) else parsed
    if not isinstance(docs, list):
        return None
    ids = tuple(_doc_id(doc.get("id")) if isinstance(doc, dict) else None for doc in docs)
    return ids if any(doc_id is not None for doc_id in ids) else None


def _lacks_ids(keys: Iterable[str], id_part: str) -> bool:
    """Whether a span's flat ``retrieval.documents.{i}.*`` (of its attribute ``keys``) lack an id part (``id_part``)
    for some ``i``, or are none."""
    listed, identified = set(), set()
    for key in keys:
        flat = _FLAT.fullmatch(key)
        if flat is not None and flat.group(1) == _RETRIEVAL_DOCS:
            listed.add(flat.group(2))
            if flat.group(3) == id_part:
                identified.add(flat.group(2))
    return not listed or listed != identified


def _cut_io(attrs: dict, kind: str, operation: str, wanted: _Wanted | _Unread, keys: Iterable[str] | None = None
            ) -> tuple[str | None, ...] | None:
    """Cut a span's ``input.value`` and ``output.value`` (in place) to what the assembly reads, since they carry
    prompts, document texts and whole chain outputs: ``input.value`` on retriever and reranker spans (the query),
    ``output.value`` on generator spans when it is text (the answer, :func:`_answer_of`). A retriever span's
    ``output.value`` is read for its documents' ids only (:func:`_output_ids`), returned, and only when its flat
    documents (attribute ``keys``, default those of ``attrs``) lack some. An attribute the trace map names is kept
    whole."""
    mapped = wanted.mapped
    if _INPUT in attrs and _INPUT not in mapped and kind not in _QUERY_KINDS:
        del attrs[_INPUT]
    if _OUTPUT not in attrs:
        return None
    ids = (_output_ids(attrs[_OUTPUT]) if kind == "RETRIEVER" and _lacks_ids(attrs if keys is None else keys,
                                                                             wanted.id_part) else None)
    if _OUTPUT not in mapped and (kind == "RETRIEVER" or not _is_generator(kind, operation)
                                  or _plain_output(attrs) is None):
        del attrs[_OUTPUT]
    return ids


def _document_keys(trace_map: TraceMap, prefix: str) -> tuple[str, ...]:
    """The names of a retrieved document's id, score and metadata (``document.id`` in ``retrieval.documents.{i}.*``,
    ``id`` in a JSON document), unless ``trace_map`` renames them."""
    return tuple(trace_map.attributes.get(f"document_{part}", prefix + part) for part in ("id", "score", "metadata"))


_IN_METADATA = "metadata."  # --trace-map document_id=metadata.KEY: a document's id is its metadata's KEY


def _metadata_key(id_key: str) -> str | None:
    """The metadata key that holds a document's id (``document_id=metadata.KEY``), or None."""
    if not id_key.startswith(_IN_METADATA):
        return None
    return id_key[len(_IN_METADATA):] or None


def _indexed(attributes: Mapping, prefixes: tuple[str, ...]) -> dict[int, dict[str, object]]:
    """The flat attributes ``{prefix}.{i}.{part}`` (a prefix of ``prefixes``) as ``{i: {part: value}}``, in numeric
    order of ``i`` (``10`` after ``9``)."""
    found: dict[int, dict[str, object]] = {}
    for key, value in attributes.items():
        flat = _FLAT.fullmatch(key)
        if flat is not None and flat.group(1) in prefixes:
            found.setdefault(int(flat.group(2)), {})[flat.group(3)] = value
    return {i: found[i] for i in sorted(found)}


def _spans(export: dict, where: _Where, wanted: _Wanted) -> Iterator[_Span]:
    """The spans of one export object, checked as far as the assembly reads them (``instrumentationLibrarySpans``
    is the name older exporters gave ``scopeSpans``)."""
    for r, resource_spans in enumerate(_list(export, "resourceSpans", "", where)):
        at_r = f"resourceSpans[{r}]"
        resource_spans = _object(resource_spans, at_r, where)
        name = "scopeSpans" if "scopeSpans" in resource_spans else "instrumentationLibrarySpans"
        for s, scope in enumerate(_list(resource_spans, name, at_r, where)):
            at_s = f"{at_r}.{name}[{s}]"
            for i, span in enumerate(_list(_object(scope, at_s, where), "spans", at_s, where)):
                yield _span(span, f"{at_s}.spans[{i}]", where, wanted)


def _span(span: object, at: str, where: _Where, wanted: _Wanted) -> _Span:
    span = _object(span, at, where)
    trace_id = span.get("traceId")
    if not isinstance(trace_id, str) or not trace_id.strip():
        raise where.bad(f"{at}.traceId", "every span needs its trace id (hex), got "
                                         f"{'nothing' if trace_id is None else repr(trace_id)[:40]}")
    span_id, parent = span.get("spanId", ""), span.get("parentSpanId", "")
    if not isinstance(span_id, str) or not isinstance(parent, str):
        raise where.bad(f"{at}.{'spanId' if not isinstance(span_id, str) else 'parentSpanId'}",
                        "expected a span id as a hex string")
    # hex as OTLP JSON writes ids, or the base64 of protobuf's generic JSON mapping: one id either way
    trace_id, span_id, parent = hex_id(trace_id, 16), hex_id(span_id, 8), hex_id(parent, 8)
    start = _int(span.get("startTimeUnixNano", 0), f"{at}.startTimeUnixNano", where)
    attributes: dict = {}
    shared = wanted.shared
    for key, value in _pairs(span, "attributes", at, where, wanted):
        attributes[shared.setdefault(key, key)] = shared.setdefault(value, value) if type(value) is str else value
    for e, event in enumerate(_list(span, "events", at, where)):  # the gen_ai.content.completion event (semconv ≤ 1.27)
        here = f"{at}.events[{e}]"
        if _object(event, here, where).get("name") == _GENAI_COMPLETION_EVENT:
            for key, value in _pairs(event, "attributes", here, where, _GENAI_COMPLETION.__eq__):
                attributes.setdefault(key, value)
    kind, operation, name = attributes.get(_KIND), attributes.get(_OPERATION), span.get("name")
    name = shared.setdefault(name, name) if isinstance(name, str) else ""
    kind, operation = kind.upper() if isinstance(kind, str) else "", operation if isinstance(operation, str) else ""
    output_ids = _cut_io(attributes, kind, operation, wanted)  # memory for what is read, as the receiver
    return _Span(trace_id.strip().lower(), span_id, parent.strip(), name, not parent.strip(), start, kind, operation,
                 attributes, output_ids and share_ids(shared, output_ids))


_EXPORT_START = re.compile(r'\{\s*"resource(?:Spans|Logs|Metrics)"')


def starts_like_export(path: str | os.PathLike) -> bool:
    """Whether a file starts like a pretty-printed OTLP JSON export (``{`` then ``"resourceSpans"``, blanks
    between); its first three non-blank lines are read, and a file that cannot be read is not one."""
    lines = read_lines(Path(path))
    try:
        texts = [text for _, text in islice(lines, 3)]
    except DataFormatError:
        return False
    finally:
        lines.close()
    return bool(_EXPORT_START.match("".join(texts).lstrip()))


def _whole_document(path: Path, read: dict) -> dict:
    """A pretty-printed export (one JSON object over many lines, :func:`starts_like_export`), read whole; ``read``
    gets the file's ``lines`` and ``sha256``."""
    digest = hashlib.sha256()
    texts: list[str] = []
    size, last, limit = 0, 0, max_line_bytes()
    for lineno, text in read_lines(path, where=path, digest=digest):
        texts.append(text)
        size, last = size + len(text) + 1, lineno
        if size > limit:
            raise DataFormatError(f"a pretty-printed trace export is read whole, and this one is longer than the "
                                  f"{limit / 1e6:,.0f} MB a loader holds at once; write one export per line (the "
                                  "collector's file exporter does), or raise the limit with FAIRRAG_MAX_LINE_MB",
                                  path=path)
    text = "\n".join(texts)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFormatError(f"invalid JSON ({err.msg} at line {err.lineno}, column {err.colno}); a trace export is "
                              "one JSON object, pretty-printed over the file or one per line", path=path) from None
    except (ValueError, RecursionError) as err:
        raise DataFormatError(f"unreadable JSON ({str(err).split(';')[0][:80]}); {_FIX}", path=path) from None
    where = lone_surrogate_field(text, obj)  # obj is a dict: the text starts with {
    if where is not None:
        raise DataFormatError(f"{where} holds a lone surrogate escape (\\ud800-\\udfff without its pair), which is "
                              "not text; fix the program that wrote the file to write valid UTF-8", path=path)
    read.update(lines=last, sha256=digest.hexdigest())
    return obj


def trace_files(folder: str | os.PathLike) -> list[Path]:
    """The trace files of a folder (a :mod:`~fairrag_core.data.collector` store, or exports put side by side), at
    any depth, in name order: OTLP JSON Lines (``.jsonl``, ``.ndjson``) and protobuf (``.pb``), gzipped or not.

    Raises:
        DataFormatError: the folder holds none.
    """
    folder = Path(folder)
    suffixes = tuple(s + c for s in (*JSON_LINES, *PROTOBUF) for c in ("", *COMPRESSED))
    files = sorted((p for p in folder.rglob("*") if p.is_file() and p.name.lower().endswith(suffixes)
                    and not p.name.startswith(".")), key=lambda p: p.relative_to(folder).parts)
    if not files:
        raise DataFormatError(f"the folder holds no trace files ({', '.join(suffixes)}); point at an export file, "
                              "or at the folder `fairrag collect --store` writes", path=folder)
    return files


def is_trace_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder of trace files (:func:`trace_files`; a ``collect`` store): its first one is
    protobuf or starts with an OTLP JSON export. A folder of shards of one JSONL RAG log is not."""
    path = Path(path)
    if not path.is_dir():
        return False
    try:
        first = trace_files(path)[0]
    except DataFormatError:
        return False
    if is_protobuf(first):
        return True
    try:
        lines = json_lines(first)
        try:
            return is_otlp_export(next(lines, (0, None))[1])
        finally:
            lines.close()
    except DataFormatError:
        return False


def _sources(path: Path, read: dict, keep, files: Iterable[Path] | None = None
             ) -> Iterator[tuple[Path, int | None, dict]]:
    """The export objects of a file or of a folder's trace files (:func:`trace_files`, or ``files``, some of them),
    each with its file and line (the request's number in a protobuf file); once all are read, ``read`` holds the
    ``lines`` and ``sha256`` (of a folder: the lines of all its files, and the sha256 of their names and sha256s in
    order)."""
    try:
        files = (list(files) if files is not None else trace_files(path)) if path.is_dir() else None
    except DataFormatError:  # a folder without trace files: refused as any other non-file is, with the same words
        files = None
    if files is None:
        yield from ((path, line, export) for line, export in _exports(path, read, keep))
        return
    lines, digest = 0, hashlib.sha256()
    for file in files:
        one: dict = {}
        yield from ((file, line, export) for line, export in _exports(file, one, keep))
        lines += one["lines"]
        digest.update(f"{file.relative_to(path).as_posix()}\0{one['sha256']}\n".encode())
    read.update(lines=lines, sha256=digest.hexdigest())


def _exports(path: Path, read: dict, keep=None) -> Iterator[tuple[int | None, dict]]:
    """The export objects of the file with their line (None for a pretty-printed file, read whole; the request's
    number in a protobuf file, :mod:`~fairrag_core.data.otlp_proto`, whose span attributes ``keep`` filters); once
    they are all read, ``read`` holds the file's ``lines`` and ``sha256``."""
    digest, last = hashlib.sha256(), 0
    if is_protobuf(path):
        for last, export in read_delimited(path, digest=digest, keep=keep):
            yield last, export
        read.update(lines=last, sha256=digest.hexdigest())
        return
    try:
        for last, obj in json_lines(path, where=path, digest=digest):  # Phoenix's span JSON read as OTLP
            yield last, phoenix_export(obj, path=path, line=last) if is_phoenix_spans(obj) else obj
    except DataFormatError as err:
        if last or err.line is None or not starts_like_export(path):
            raise  # only a first line that is no JSON object may start a pretty-printed export
        yield None, _whole_document(path, read)
        return
    read.update(lines=last, sha256=digest.hexdigest())


# -- assembling a trace into a served line -----------------------------------------------------------------------
class _Skip(Exception):
    """This trace makes no served line; the reason (its first argument) is counted, and the detail (an optional
    second, e.g. which spans hold documents) is told for the first trace with that reason."""


_NO_RETRIEVAL = "no retrieval span"
_SEVERAL = "several independent retrieval spans (keep the first or the last with --multi-retrieval)"
_NO_DOCUMENTS = "a retrieval span without document ids"
_NO_ID = "a retrieved document without an id"
_TWICE = "a ranking that lists a document twice"
_BAD_CITATIONS = "citations that are not a list of doc ids (each once)"
_NO_QUERY = "no query id and no query text"


def _json_text(value: object) -> object:
    """A JSON string's value (attributes often hold JSON as a string), or the value itself; None when unreadable."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return None if lone_surrogate_field(value, parsed) is not None else parsed


def _metadata(value: object) -> tuple[Mapping[str, object], bool]:
    """A document's metadata as a mapping, and whether it could be read (OpenInference writes a JSON string; some
    instrumentations write Python's ``repr`` of a dict, which is read as a literal)."""
    if value is None:
        return _EMPTY, True
    parsed = _json_text(value)  # a dict stays itself
    if parsed is None and isinstance(value, str) and value.lstrip().startswith("{") and len(value) < 20_000:
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and not all(isinstance(k, str) for k in parsed):
            parsed = None
    if isinstance(parsed, dict):
        return MappingProxyType(parsed) if parsed else _EMPTY, True
    return _EMPTY, False


def _doc_id(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value).strip()
    return text or None


def _ids(values: Iterable[object], missing: str, twice: str) -> tuple[str, ...]:
    """Doc ids, each once; :class:`_Skip` with ``missing`` for a value that is no id, ``twice`` for one repeated."""
    ids = tuple(map(_doc_id, values))
    if None in ids:
        raise _Skip(missing)
    if len(set(ids)) != len(ids):
        raise _Skip(twice)
    return ids  # type: ignore[return-value]


def _json_documents(value: object, trace_map: TraceMap) -> list[tuple[object, object, object]] | None:
    """``(id, score, metadata)`` of a list of document objects (``gen_ai.retrieval.documents``, or a structured
    ``retrieval.documents``); the object's other fields (except its content) join its metadata."""
    value = _json_text(value)
    if not isinstance(value, list):
        return None
    id_key, score_key, meta_key = _document_keys(trace_map, "")
    in_metadata = _metadata_key(id_key)
    out = []
    for doc in value:
        if not isinstance(doc, dict):
            return None
        doc = {k.removeprefix("document."): v for k, v in doc.items()}
        extra = {k: v for k, v in doc.items() if k not in (id_key, score_key, meta_key, *_DOCUMENT_TEXTS)}
        meta, _ = _metadata(doc.get(meta_key))
        doc_id = doc.get(id_key)
        out.append((meta.get(in_metadata) if doc_id is None and in_metadata else doc_id, doc.get(score_key),
                    {**extra, **meta} if extra else doc.get(meta_key)))
    return out


def _documents(span: _Span, trace_map: TraceMap) -> list[tuple[object, object, object]]:
    """The raw documents a retrieval (or reranker) span lists."""
    attrs, m = span.attributes, trace_map.attributes
    if m.get("ranking") in attrs:
        ranking = _json_text(attrs[m["ranking"]])
        return [(v, None, None) for v in ranking] if isinstance(ranking, list) else []
    if m.get("documents") in attrs:
        return _json_documents(attrs[m["documents"]], trace_map) or []
    return _listed(attrs, (_RERANKED_DOCS,) if span.kind == "RERANKER" else (_RETRIEVAL_DOCS, _GENAI_DOCS),
                   trace_map, span.output_ids)


def _listed(attrs: Mapping, keys: tuple[str, ...], trace_map: TraceMap,
            output_ids: tuple[str | None, ...] | None = None) -> list[tuple[object, object, object]]:
    """The raw documents of the first of ``keys`` a span has: flat ``{keys[0]}.{i}.{part}`` first, in numeric order
    of ``i``, else a structured list. A flat document without its id part takes it from its metadata when the trace
    map says so (``document_id=metadata.KEY``), else from ``output_ids`` at the same index ``i`` (a retriever's
    ``output.value``, :func:`_output_ids`: LangChain's ``Document.id``), which also lists the documents with no
    flat part kept (a LangChain document with a text but no metadata)."""
    parts = _document_keys(trace_map, "document.")
    in_metadata = _metadata_key(parts[0])
    flat: dict[int, tuple[object, object, object]] = {}
    for i, doc in _indexed(attrs, keys[:1]).items():
        if any(k in doc for k in parts):
            doc_id = doc.get(parts[0])
            if doc_id is None and in_metadata:
                doc_id = _metadata(doc.get(parts[2]))[0].get(in_metadata)
            flat[i] = (doc_id, doc.get(parts[1]), doc.get(parts[2]))
    if not flat:
        structured = _json_documents(attrs.get(next((k for k in keys if k in attrs), None)), trace_map)
        if structured or not output_ids:
            return structured or []
    if output_ids and (not flat or any(doc_id is None for doc_id, _, _ in flat.values())):
        for i, doc_id in enumerate(output_ids):
            found = flat.get(i, (None, None, None))
            if found[0] is None:
                flat[i] = (doc_id, *found[1:])
    return [flat[i] for i in sorted(flat)]


def _is_retrieval(span: _Span, trace_map: TraceMap) -> bool:
    attrs, m = span.attributes, trace_map.attributes
    return (any(m.get(k) in attrs for k in ("ranking", "documents")) or span.kind == "RETRIEVER"
            or span.operation == "retrieval" or _GENAI_DOCS in attrs
            or any(k.startswith(_RETRIEVAL_DOCS + ".") for k in attrs))


def _is_reranker(span: _Span) -> bool:
    return span.kind == "RERANKER" and any(k.startswith(_RERANKED_DOCS) for k in span.attributes)


def _checked_documents(raw: list[tuple[object, object, object]], shared: dict) -> tuple[tuple, tuple | None,
                                                                                        tuple | None, int]:
    """The documents of the chosen span, checked: their ids (shared), scores and metadata (None when no document
    has one), and how many have unreadable metadata. A metadata string read before gives the same mapping (the same
    document is logged with the same metadata on every line that shows it)."""
    if not raw:
        raise _Skip(_NO_DOCUMENTS)
    try:
        ids = _ids((doc_id for doc_id, _, _ in raw), _NO_ID, _TWICE)
    except _Skip as skip:
        if skip.args[0] == _NO_ID:
            raise _Skip(_NO_ID, _id_fix(raw)) from None
        raise
    read = [shared.get(("metadata", meta)) or shared.setdefault(("metadata", meta), _metadata(meta))
            if isinstance(meta, str) else _metadata(meta) for _, _, meta in raw]
    scores, metas = tuple(_number(score) for _, score, _ in raw), tuple(mapping for mapping, _ in read)
    return (share_ids(shared, ids), None if all(x is None for x in scores) else scores,
            metas if any(metas) else None, sum(not readable for _, readable in read))


def _id_fix(raw: list[tuple[object, object, object]]) -> str:
    """How to give a retrieval's documents their ids (the detail of :data:`_NO_ID`): log them, or read them from a
    key of their metadata, whose keys are named (one ending in ``id`` first)."""
    keys = sorted({k for _, _, meta in raw for k in _metadata(meta)[0] if isinstance(k, str)},
                  key=lambda k: (not k.lower().endswith("id"), k))
    likely = keys[0] if keys and keys[0].lower().endswith("id") else "KEY"
    held = f" (its keys: {', '.join(keys[:6])}{', …' if len(keys) > 6 else ''})" if keys else ""
    return (f"log document.id (LangChain: Document.id) or read it from the metadata{held}: --trace-map "
            f"document_id=metadata.{likely}, docs/traces.md")


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) else None


def _first(spans: list[_Span], *names: str) -> object:
    """The attribute of the first span that has it (``spans`` are in lookup order), the first of ``names`` that one
    has."""
    return next((s.attributes[name] for name in names for s in spans if name in s.attributes), None)


def _message_text(message: object) -> str | None:
    """The text of one GenAI message: its text parts (``{"type": "text", "content": ...}``) joined, or its
    ``content`` string (the older form)."""
    if not isinstance(message, dict):
        return None
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = [p.get("content") for p in parts if isinstance(p, dict) and p.get("type", "text") == "text"
                 and isinstance(p.get("content"), str)]
        return "\n".join(texts) if texts else None
    return message.get("content") if isinstance(message.get("content"), str) else None


def _answer_of(span: _Span) -> str | None:
    attrs = span.attributes
    # llm.output_messages.{j}.message.content, gen_ai.completion.{j}.content
    for parts in _indexed(attrs, (_LLM_MESSAGES, _GENAI_COMPLETION)).values():
        message = {k.removeprefix("message."): v for k, v in parts.items()}
        if isinstance(message.get("content"), str) and message.get("role", "assistant") == "assistant":
            return message["content"]
    output = _plain_output(attrs)
    if output is not None:
        return output
    for key in (_GENAI_OUTPUT, _GENAI_COMPLETION):
        value = attrs.get(key)
        parsed = _json_text(value)
        if isinstance(parsed, list):
            text = next((t for t in map(_message_text, parsed) if t is not None), None)
            if text is not None:
                return text
        elif isinstance(value, str) and key == _GENAI_COMPLETION:
            return value  # the event attribute may hold the completion as plain text
    return None


def _citations(value: object) -> tuple[str, ...]:
    value = _json_text(value)
    if not isinstance(value, list):
        raise _Skip(_BAD_CITATIONS)
    return _ids(value, _BAD_CITATIONS, _BAD_CITATIONS)


def _timestamp(nanos: int) -> str | None:
    """ISO 8601 UTC with the fraction of a second only when there is one (``2026-03-02T09:16:00Z``)."""
    if nanos <= 0:
        return None
    seconds, fraction = divmod(nanos, 1_000_000_000)
    try:
        text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return None
    return text + (f".{fraction:09d}".rstrip("0") if fraction else "") + "Z"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One served answer. ``citations`` is None when the line did not log them (``()``: logged, none shown).

    ``scores`` and ``doc_metadata``, when the source logged them (a trace export does; a JSONL log does not), are
    aligned with ``ranking``: the retriever's score of each document (None where not logged) and its metadata.

    ``candidates`` are the ids of what the system chose the ranking from, in logged order, when the source logged
    them: a reranker's input, the retrieval list a reranker reordered, a retriever's deeper list than it passed on
    (:func:`read_traces`), or a JSONL line's ``candidates``. They hold every ranked document. None means that no
    candidate set was logged: the served ranking itself is **not** one (it is what was chosen, not what it was chosen
    from). ``candidate_scores`` (None where not logged) and ``candidate_metadata`` are aligned with them. The three
    are given as keywords and read as attributes, but held in one slot (``_chosen``): a log without candidates pays
    8 bytes a line for them, not 24, which keeps the default :func:`~fairrag_core.checks.max_log_lines` in bounds.

    Slotted, with an empty ``metadata`` shared by every entry that has none, so that a log of millions of lines fits
    in memory (see :func:`~fairrag_core.checks.max_log_lines`). Defined here, beside the trace reader that builds
    one per trace (its ``metadata`` holds the ``trace_id``); :mod:`.rag_log` reads JSONL lines into it too.
    """

    line: int
    query_id: str
    ranking: tuple[str, ...]
    query: str | None = None
    answer: str | None = None
    citations: tuple[str, ...] | None = None
    session: str | None = None
    timestamp: str | None = None
    metadata: Mapping[str, object] = field(default_factory=dict)
    scores: tuple[float | None, ...] | None = None
    doc_metadata: tuple[Mapping[str, object], ...] | None = None
    candidates: InitVar[tuple[str, ...] | None] = None  # read through the properties below
    candidate_scores: InitVar[tuple[float | None, ...] | None] = None
    candidate_metadata: InitVar[tuple[Mapping[str, object], ...] | None] = None
    _chosen: tuple | None = field(default=None, init=False, repr=False)  # (candidates, their scores, metadata)

    def __post_init__(self, candidates, candidate_scores, candidate_metadata) -> None:
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)) if self.metadata else _EMPTY)
        for name in ("scores", "doc_metadata"):
            value = getattr(self, name)
            if value is not None and len(value) != len(self.ranking):
                raise InvalidParameterError(f"{name} holds {len(value)} values for a ranking of {len(self.ranking)} "
                                            "documents; give one per ranked document (None where not logged)")
        if candidates is None:
            if candidate_scores is not None or candidate_metadata is not None:
                raise InvalidParameterError("candidate scores or metadata without candidates; give the candidates' "
                                            "ids too")
            return
        for name, value in (("candidate_scores", candidate_scores), ("candidate_metadata", candidate_metadata)):
            if value is not None and len(value) != len(candidates):
                raise InvalidParameterError(f"{name} holds {len(value)} values for {len(candidates)} candidates; "
                                            "give one per candidate (None where not logged)")
        among = set(candidates)
        missing = next((d for d in self.ranking if d not in among), None)
        if missing is not None:
            raise InvalidParameterError(f"the candidates lack the ranked document {missing!r}; candidates are what "
                                        "the ranking was chosen from: list every ranked document among them")
        object.__setattr__(self, "_chosen", (candidates, candidate_scores, candidate_metadata))


for _i, _name in enumerate(("candidates", "candidate_scores", "candidate_metadata")):  # LogEntry's one slot, read
    setattr(LogEntry, _name, property(lambda self, i=_i: None if self._chosen is None else self._chosen[i],
                                      doc=f"LogEntry.{_name} (the class docstring)"))
del _i, _name


@dataclass(frozen=True)
class TraceExport:
    """What :func:`read_traces` read: the usable traces in order, what was left out and why (``notes``), the
    file's lines and the sha256 of its bytes."""

    traces: tuple[LogEntry, ...]
    notes: tuple[str, ...] = ()
    file_lines: int = 0
    sha256: str = ""


def _nested(candidates: list[_Span], spans: list[_Span], links: Mapping[str, str]) -> list[list[_Span]]:
    """``candidates`` (retrieval spans, or reranker spans, in order of start) grouped by nesting: each group is an
    outermost candidate and the candidates below it at any depth (``parentSpanId`` links through any spans of the
    trace, ``links`` holding those of the spans not kept), outermost first; the groups in order of their outermost
    span's start. A span id that links back to itself (a malformed export) ends the walk."""
    parent_of = {**links, **{s.span_id.strip(): s.parent for s in spans if s.span_id.strip()}}
    ids: dict[str, _Span] = {}
    for s in candidates:
        ids.setdefault(s.span_id.strip(), s)
    groups: dict[int, list[tuple[int, _Span]]] = {}
    outers: dict[int, _Span] = {}
    for s in candidates:
        outer, depth, at, seen = s, 0, s.parent, set()
        while at and at not in seen:
            seen.add(at)
            if at in ids and ids[at] is not s:
                outer, depth = ids[at], depth + 1
            at = parent_of.get(at, "")
        outers[id(outer)] = outer
        groups.setdefault(id(outer), []).append((depth, s))
    order = sorted(groups, key=lambda k: (outers[k].start, outers[k].span_id))
    return [[s for _, s in sorted(groups[k], key=lambda d: (d[0], d[1].start, d[1].span_id))] for k in order]


def _held(group: list[_Span], trace_map: TraceMap) -> tuple[_Span, list[tuple[object, object, object]], bool]:
    """The span of a nested group whose documents make the ranking (the outermost that lists any; the outermost
    when none does), those documents, and whether a span nested in it lists other document ids."""
    listed = [(s, docs) for s in group if (docs := _documents(s, trace_map))]
    if not listed:
        return group[0], [], False
    (span, docs), *inner = listed
    ids = [_doc_id(doc_id) for doc_id, _, _ in docs]
    return span, docs, any([_doc_id(doc_id) for doc_id, _, _ in other] != ids for _, other in inner)


def _which(groups: list[list[_Span]], trace_map: TraceMap) -> str:
    """The independent retrievals of a trace, each by the span that holds its documents and how many it holds."""
    told = []
    for group in groups:
        span, docs, _ = _held(group, trace_map)
        name = span.name or (f"span {span.span_id}" if span.span_id else "an unnamed span")
        told.append(f"{name} with {len(docs) or 'no'} document{'' if len(docs) == 1 else 's'}")
    return "its retrievals: " + ", ".join(told)


def _candidate_documents(group: list[_Span], chosen: _Span, documents: list, retrievals: list[_Span], reranked: bool,
                         spans: list[_Span], links: Mapping[str, str], trace_map: TraceMap
                         ) -> list[tuple[object, object, object]]:
    """The raw documents the ranking was chosen from, or ``[]`` when the trace does not say (module docstring,
    *Candidates*): a reranker's ``reranker.input_documents`` (the outermost span of the reranking that lists them);
    else, for a reranking, the list of the trace's one retrieval (not of several independent ones: which fed the
    reranker is not told); else, for a retrieval, a span nested in it that lists more documents, every ranked one
    among them (the outermost span's list is what was passed on)."""
    if reranked:
        inputs = next((docs for s in group if (docs := _listed(s.attributes, (_RERANKER_INPUT,), trace_map))), [])
        if inputs or not retrievals:
            return inputs
        found = _nested(retrievals, spans, links) if len(retrievals) > 1 else [retrievals]
        return _held(found[0], trace_map)[1] if len(found) == 1 else []
    ranked = {_doc_id(doc_id) for doc_id, _, _ in documents}
    for s in group[group.index(chosen) + 1:]:
        docs = _documents(s, trace_map)
        if len({_doc_id(doc_id) for doc_id, _, _ in docs} | ranked) == len(docs) > len(ranked):  # a strict superset
            return docs
    return []


def _assemble(trace_id: str, spans: list[_Span], trace_map: TraceMap, shared: dict,
              links: Mapping[str, str] = _EMPTY) -> tuple[int, LogEntry, int, bool, str]:
    """One trace as a served line (its strings and id tuples the objects in ``shared``, one per distinct value;
    ``line`` 0 until the traces are ordered) with the root span's start (nanoseconds since the epoch; 0 when not
    logged), the count of its documents' unreadable metadata, whether nested retrieval spans listed different
    documents and why its logged candidates were dropped (``""`` when they were not), or :class:`_Skip` with the
    reason. ``links`` maps the span ids of the trace's spans that were not kept to their parents', to follow nesting
    through them."""
    by_start = sorted(spans, key=lambda s: (s.start, s.span_id))
    lookup = sorted(spans, key=lambda s: (not s.root, s.start, s.span_id))  # the root first
    rerankers = [s for s in by_start if _is_reranker(s)]
    retrievals = [s for s in by_start if _is_retrieval(s, trace_map) and not _is_reranker(s)]
    candidates = rerankers or retrievals
    if not candidates:
        raise _Skip(_NO_RETRIEVAL)
    groups = _nested(candidates, spans, links) if len(candidates) > 1 else [candidates]
    if len(groups) > 1 and trace_map.multiple is MultipleRetrievals.SKIP:
        raise _Skip(_SEVERAL, _which(groups, trace_map))
    group = groups[-1] if trace_map.multiple is MultipleRetrievals.LAST else groups[0]
    chosen, documents, differ = _held(group, trace_map)
    ranking, scores, doc_metadata, unreadable = _checked_documents(documents, shared)
    candidates, candidate_scores, candidate_metadata, dropped = _checked_candidates(
        _candidate_documents(group, chosen, documents, retrievals, bool(rerankers), spans, links, trace_map), ranking,
        shared)
    m = trace_map.attributes
    if "query" in m:
        query = _text(_first(lookup, m["query"]))
    else:
        sources = [chosen, *(s for s in group if s is not chosen), *(retrievals if rerankers else ())]
        query = next((_text(s.attributes[key]) for s in sources
                      for key in (_GENAI_QUERY, _RERANKER_QUERY, _INPUT)
                      if key in s.attributes and (key != _INPUT or s.kind in _QUERY_KINDS)
                      and _text(s.attributes[key]) is not None), None)
    query = query or None
    if "answer" in m:
        answer = _text(_first(lookup, m["answer"]))
    else:
        generators = [s for s in by_start if _is_generator(s.kind, s.operation)]
        answer = next((a.strip() for a in map(_answer_of, reversed(generators)) if a is not None), None)
    query_id = _doc_id(_first(lookup, m.get("query_id", _QUERY_ID))) or query
    if not query_id:
        raise _Skip(_NO_QUERY)
    raw_citations = _first(lookup, m.get("citations", _CITATIONS))
    citations = None if raw_citations is None else _citations(raw_citations)
    session = _first(lookup, m["session"]) if "session" in m else _first(lookup, _SESSION, _GENAI_CONVERSATION)
    session = (str(session) if isinstance(session, (str, int, float)) and not isinstance(session, bool)
               and str(session).strip() else None)
    start = next((s.start for s in by_start if s.root), by_start[0].start)
    return start, LogEntry(
        0, share(shared, query_id), ranking, share(shared, query), share(shared, answer),
        None if citations is None else share_ids(shared, citations), share(shared, session), _timestamp(start),
        {"trace_id": trace_id}, scores, doc_metadata, candidates, candidate_scores, candidate_metadata,
    ), unreadable, differ, dropped


_CANDIDATES_UNREADABLE = "a document without an id or listed twice"
_CANDIDATES_SHORT = "not every served document among them (a reranker that adds documents)"


def _checked_candidates(raw: list[tuple[object, object, object]], ranking: tuple[str, ...], shared: dict
                        ) -> tuple[tuple[str, ...] | None, tuple | None, tuple | None, str]:
    """The candidates (ids, scores and metadata, as :func:`_checked_documents` checks them; the scores shared too),
    or Nones with why they were dropped: they must be readable and hold the whole ranking."""
    if not raw:
        return None, None, None, ""
    try:
        ids, scores, metadata, _ = _checked_documents(raw, shared)
    except _Skip:
        return None, None, None, _CANDIDATES_UNREADABLE
    if not set(ranking).issubset(ids):
        return None, None, None, _CANDIDATES_SHORT
    return ids, share(shared, scores), metadata, ""


def share(shared: dict, value):
    """``value`` as the one object in ``shared`` equal to it (None stays None): a log repeats its texts (this and
    :func:`share_ids` serve the JSONL reader, :mod:`.rag_log`, too)."""
    return value if value is None else shared.setdefault(value, value)


def share_ids(shared: dict, ids: tuple[str, ...]) -> tuple[str, ...]:
    """``ids`` as the one tuple shared with every earlier equal ranking, of shared strings: a log repeats them."""
    found = shared.get(ids)
    return found if found is not None else shared.setdefault(ids, tuple(shared.setdefault(d, d) for d in ids))


def read_traces(path: str | os.PathLike, *, trace_map: TraceMap | None = None,
                files: Iterable[Path] | None = None) -> TraceExport:
    """Read an OTLP JSON trace export (module docstring) as its usable traces, in order. ``files``: of a folder,
    the trace files to read (a selection of a ``collect`` store by service and hour,
    :mod:`~fairrag_core.data.store_window`); default all of them.

    The file is read once, one line at a time (:func:`~fairrag_core.data.loaders.json_lines`: gzip inflated, the
    sha256 of its bytes taken on the way; a pretty-printed file is read whole, up to ``$FAIRRAG_MAX_LINE_MB``). At
    most :func:`~fairrag_core.checks.max_log_lines` traces, and 8 times as many spans that the assembly reads, are
    held; of the other spans only their parent links (two ids each, to find nested retrievals), as many at most.
    :func:`~fairrag_core.data.rag_log.load_traces` makes the result a RAG log.

    Raises:
        DataFormatError: naming the file, the line (JSON Lines) and the JSON path, and the fix: malformed JSON or
            OTLP, an export without spans, no usable trace (with the reasons), more traces than a load holds.

    >>> import json, tempfile
    >>> def kv(key, value):
    ...     return {"key": key, "value": {"stringValue": value}}
    >>> spans = [{"traceId": "ab", "spanId": "2", "parentSpanId": "1", "startTimeUnixNano": "1772442960000000000",
    ...           "attributes": [kv("openinference.span.kind", "RETRIEVER"), kv("input.value", "marathon shoe?"),
    ...                          kv("retrieval.documents.1.document.id", "d2"),
    ...                          kv("retrieval.documents.0.document.id", "d1")]},
    ...          {"traceId": "ab", "spanId": "1", "startTimeUnixNano": "1772442960000000000",
    ...           "attributes": [kv("fairrag.query_id", "q1")]}]
    >>> export = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(json.dumps(export) + "\\n")
    >>> trace = read_traces(f.name).traces[0]
    >>> trace.query_id, trace.ranking, trace.query, trace.timestamp
    ('q1', ('d1', 'd2'), 'marathon shoe?', '2026-03-02T09:16:00Z')
    >>> os.remove(f.name)
    """
    path = Path(path)
    trace_map = trace_map if trace_map is not None else TraceMap()
    wanted = _Unread(_Wanted(trace_map))  # what is kept, and the look-alikes of what is not found
    most_traces = max_log_lines()
    most_spans = _SPANS_PER_LINE * most_traces
    traces: dict[str, list[_Span]] = {}
    links: dict[str, dict[str, str]] = {}  # per trace, the parent of each span not kept (nesting runs through it)
    held, linked, other_signals, read = 0, 0, 0, {}
    for source, lineno, export in _sources(path, read, wanted, files):
        where = _Where(source, lineno)
        if "resourceSpans" not in export:
            if is_otlp_export(export):
                other_signals += 1  # logs or metrics written to the same file
                continue
            raise where.bad("the export", "an OTLP trace export is an object with \"resourceSpans\"; got the "
                                          f"field(s) {sorted(export)[:5]}")
        for span in _spans(export, where, wanted):
            if not span.attributes and not span.root and span.trace_id in traces:
                if span.span_id.strip():  # nothing the assembly reads (an HTTP call, a tool's internals) but its link
                    linked += 1
                    if linked > most_spans:
                        raise where.too_many(f"{most_spans:,} span links to follow")
                    links.setdefault(span.trace_id, {})[span.span_id.strip()] = span.parent
                continue
            spans = traces.get(span.trace_id)
            if spans is None:
                if len(traces) == most_traces:
                    raise where.too_many(f"{most_traces:,} traces")
                spans = traces[span.trace_id] = []
            held += 1
            if held > most_spans:
                raise where.too_many(f"{most_spans:,} spans to assemble")
            spans.append(span)
    if not traces:
        what = " (only logs or metrics)" if other_signals else ""
        raise DataFormatError(f"no spans found{what}; export traces (the collector's traces pipeline, or Phoenix's "
                              "spans), see docs/traces.md", path=path)
    lines: list[tuple[int, str, LogEntry]] = []
    skipped: Counter = Counter()
    examples: dict[str, tuple[str, str | None]] = {}  # reason: the first trace, and what it told
    unreadable, shared, differ, first_differ = 0, {}, 0, ""
    no_candidates: Counter = Counter()  # why a trace's logged candidates were dropped
    first_without = ""
    for trace_id in list(traces):
        spans = traces.pop(trace_id)  # freed as it is assembled
        try:
            start, entry, bad, nested, dropped = _assemble(trace_id, spans, trace_map, shared,
                                                           links.pop(trace_id, _EMPTY))
        except _Skip as skip:
            skipped[skip.args[0]] += 1
            examples.setdefault(skip.args[0], (trace_id, skip.args[1] if len(skip.args) > 1 else None))
            continue
        unreadable += bad
        differ += nested
        first_differ = first_differ or (trace_id if nested else "")
        if dropped:
            no_candidates[dropped] += 1
            first_without = first_without or trace_id
        lines.append((start, trace_id, entry))
    del traces, shared, links

    def first(reason: str) -> str:
        trace, detail = examples[reason]
        return f" (first: trace {trace[:16]}{f'; {detail}' if detail else ''})"

    if not lines:  # the first trace named only where it tells more than the reason
        reasons = "; ".join(f"{n} with {r}{first(r) if examples[r][1] else ''}" for r, n in skipped.most_common())
        raise DataFormatError(f"none of the {sum(skipped.values())} traces makes a served answer ({reasons}); a trace "
                              "needs a retrieval span with document ids (OpenInference RETRIEVER, or GenAI "
                              "gen_ai.retrieval.documents): name other attributes with --trace-map (docs/traces.md)",
                              path=path)
    notes = []
    if skipped:
        parts = ", ".join(f"{n} with {reason}{first(reason)}" for reason, n in skipped.most_common())
        notes.append(f"{sum(skipped.values())} of {len(lines) + sum(skipped.values())} traces left out: {parts}")
    if differ:
        notes.append(f"{differ} trace(s) have a retrieval span nested in another that lists other documents; each "
                     f"keeps the outermost span's list (first: trace {first_differ[:16]})")
    if unreadable:
        notes.append(f"{unreadable} retrieved document(s) have metadata that is not a JSON object; it is left out")
    if other_signals:
        notes.append(f"{other_signals} export line(s) hold logs or metrics, not spans; they are left out")
    if no_candidates:
        notes.append(f"{sum(no_candidates.values())} trace(s) log candidates that are left out, so they have no "
                     f"candidate set: {', '.join(f'{n} with {why}' for why, n in no_candidates.most_common())} "
                     f"(first: trace {first_without[:16]})")
    notes += _absent_notes(wanted.found, (entry for _, _, entry in lines), trace_map)
    lines.sort(key=lambda t: t[:2])  # by the root span's start, then trace id; lines numbered in that order
    return TraceExport(tuple(replace(entry, line=i) for i, (_, _, entry) in enumerate(lines, start=1)), tuple(notes),
                       read["lines"], read["sha256"])


# -- documents without a collection ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProviderSource:
    """Where a logged document's provider comes from (``--provider-from``): a field of its logged metadata
    (``metadata.source``, nested ``metadata.origin.site``; a key with dots, ``metadata.file.name``, is found whole
    first) or its id (``id``); with ``domain``, the host of the URL found there, lower-cased, without ``www.``.

    >>> rule = ProviderSource.parse("domain:metadata.url")
    >>> rule.provider("d1", {"url": "https://www.Example.org/shoes/1"}), str(rule)
    ('example.org', 'domain:metadata.url')
    >>> ProviderSource.parse("metadata.source").provider("d1", {"source": "Acme"})
    'Acme'
    """

    path: tuple[str, ...]
    domain: bool = False

    def __post_init__(self) -> None:
        if not self.path or self.path[0] not in ("metadata", "id") or (self.path[0] == "id") != (len(self.path) == 1) \
                or not all(self.path):
            raise InvalidParameterError(f"provider source {'.'.join(self.path)!r} is not metadata.KEY or id; e.g. "
                                        "--provider-from metadata.source or --provider-from domain:metadata.url")

    @classmethod
    def parse(cls, text: str) -> ProviderSource:
        text = text.strip()
        domain = text.startswith("domain:")
        return cls(tuple(text.removeprefix("domain:").strip().split(".")), domain)

    def __str__(self) -> str:
        return ("domain:" if self.domain else "") + ".".join(self.path)

    def provider(self, doc_id: str, metadata: Mapping[str, object]) -> str | None:
        """The provider of one logged document, or None when its metadata does not say."""
        value = doc_id if self.path[0] == "id" else _lookup(metadata, list(self.path[1:]))
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return None
        text = str(value).strip()
        if self.domain:
            try:
                host = urlsplit(text if "//" in text else "//" + text).hostname if text else None
            except ValueError as err:  # e.g. an unclosed IPv6 bracket, "http://[::1"
                raise DataFormatError(f"{self} of document {doc_id!r} is not a URL ({err}: {text[:80]!r}); fix the "
                                      "logged URL, or name the providers another way (--provider-from metadata.KEY, "
                                      "or --provider-map)") from None
            text = host.removeprefix("www.") if host else ""
        return text or None


def _lookup(metadata: object, keys: list[str]) -> object:
    """``metadata[k1][k2]…``, a key with dots matched whole before its parts (longest first)."""
    if not keys:
        return metadata
    if not isinstance(metadata, Mapping):
        return None
    for cut in range(len(keys), 0, -1):
        key = ".".join(keys[:cut])
        if key in metadata:
            found = _lookup(metadata[key], keys[cut:])
            if found is not None:
                return found
    return None


class ServedLog(Protocol):
    """What :func:`documents_from_log` reads of a log (a :class:`~.rag_log.RagLog`)."""

    @property
    def name(self) -> str: ...

    @property
    def entries(self) -> tuple[Any, ...]: ...


@dataclass(frozen=True)
class LogDocuments:
    """The documents a log names, as a collection (no texts, no queries, no relevance labels), and what was
    assumed on the way (``notes``)."""

    collection: Collection
    notes: tuple[str, ...] = ()


def load_provider_map(path: str | os.PathLike) -> dict[str, tuple[str, dict[str, str]]]:
    """Read a provider map: CSV with the header ``doc_id,provider`` and optional further columns, each a fairness
    category (``region`` or, as in a corpus CSV, ``group:region``); an empty cell leaves the document without a
    group in that category. Returns ``{doc_id: (provider, {category: group})}``.

    Raises:
        DataFormatError: naming the file, the line and the fix (a wrong header, a row of the wrong width, an empty
            doc id or provider, a doc id twice).
    """
    path = Path(path)
    rows: dict[str, tuple[str, dict[str, str]]] = {}
    header: list[str] | None = None
    for lineno, text in read_lines(path, where=path):
        def bad(problem: str, lineno: int = lineno) -> DataFormatError:
            return DataFormatError(problem, path=path, line=lineno)
        try:
            cells = [c.strip() for c in next(csv.reader([text]))]
        except (csv.Error, StopIteration) as err:
            raise bad(f"unreadable CSV ({err}); write one row per line: doc_id,provider[,groups]") from None
        if header is None:
            names = [c.lower() for c in cells[:2]]
            categories = [c.removeprefix("group:").strip() for c in cells[2:]]
            if names != ["doc_id", "provider"] or not all(categories) or len(set(categories)) != len(categories):
                raise bad("the first row must be the header doc_id,provider followed by one distinct name per group "
                          f"column (e.g. doc_id,provider,region), got {text[:80]!r}")
            header = categories
            continue
        if len(cells) != 2 + len(header):
            raise bad(f"{len(cells)} cell(s), the header has {2 + len(header)}; one cell per column")
        doc_id, provider = cells[0], cells[1]
        if not doc_id or not provider:
            raise bad(f"{'doc_id' if not doc_id else 'provider'} is empty; name the document and who provides it (a "
                      "document the map leaves out is its own provider)")
        if doc_id in rows:
            raise bad(f"doc id {doc_id!r} is mapped twice; keep one row per document")
        rows[doc_id] = (provider, {c: g for c, g in zip(header, cells[2:]) if g})
    if header is None:
        raise DataFormatError("the provider map is empty; write the header doc_id,provider and one row per document",
                              path=path)
    return rows


def documents_from_log(log: ServedLog, *, provider_from: ProviderSource | None = None,
                       provider_map: Mapping[str, tuple[str, Mapping[str, str]]] | None = None) -> LogDocuments:
    """The documents ``log`` names (its rankings', logged candidates' and citations' doc ids, in order of first
    appearance) as a :class:`~.collection.Collection` with their providers, for an audit without a curated
    collection.

    A document's provider is its row in ``provider_map``, else what ``provider_from`` reads from its logged metadata
    (the first line that says; a document whose lines disagree keeps the first and is counted in the notes), else
    the document itself (the collection's convention: a document without a provider is its own). The collection
    has no texts, queries or relevance labels: EE-R and the fair target are undefined
    (:data:`NO_RELEVANCE_LABELS`), and the NLI judge cannot read the documents.

    >>> from fairrag_core.data.rag_log import LogEntry, RagLog
    >>> log = RagLog("x", (LogEntry(1, "q1", ("a", "b"), doc_metadata=({"source": "Acme"}, {})),))
    >>> docs = documents_from_log(log, provider_from=ProviderSource.parse("metadata.source"))
    >>> [(d.doc_id, d.provider) for d in docs.collection.documents], docs.notes
    ([('a', 'Acme'), ('b', 'b')], ('1 of 2 documents have no metadata.source in the log; each is its own provider',))
    """
    if provider_from is None and provider_map is None:
        raise InvalidParameterError("name where the providers come from: provider_from (--provider-from) or "
                                    "provider_map (--provider-map), or audit with a collection")
    found: dict[str, str | None] = {}
    disagree: set[str] = set()
    for entry in log.entries:
        listed = [(entry.ranking, entry.doc_metadata or ())]
        if entry.candidates is not None:  # what the ranking was chosen from is in the audit's documents too
            listed.append((entry.candidates, entry.candidate_metadata or ()))
        for ids, metas in listed:
            for i, doc_id in enumerate(ids):
                try:
                    provider = (None if provider_from is None
                                else provider_from.provider(doc_id, metas[i] if i < len(metas) else _EMPTY))
                except DataFormatError as err:  # where it was logged: the line, or the trace of an export
                    trace = entry.metadata.get("trace_id") if getattr(log, "format", "") == "otlp" else None
                    raise DataFormatError(f"query {entry.query_id!r}{f' (trace {trace})' if trace else ''}: {err}",
                                          path=getattr(log, "source", log.name), line=None if trace else entry.line
                                          ) from None
                if doc_id not in found or found[doc_id] is None:
                    found[doc_id] = provider
                elif provider is not None and provider != found[doc_id]:
                    disagree.add(doc_id)
        for doc_id in entry.citations or ():
            found.setdefault(doc_id, None)
    mapped = provider_map or {}
    documents = [Document(doc_id, "", provider=mapped[doc_id][0], groups=mapped[doc_id][1]) if doc_id in mapped
                 else Document(doc_id, "", provider=provider or doc_id) for doc_id, provider in found.items()]
    own = sum(provider is None and doc_id not in mapped for doc_id, provider in found.items())
    notes = []
    if own:
        said = [*(["no row in the provider map"] if provider_map is not None else []),
                *([f"no {provider_from} in the log"] if provider_from is not None else [])]
        notes.append(f"{own} of {len(documents)} documents have {' and '.join(said)}; each is its own provider")
    if disagree:
        notes.append(f"{len(disagree)} document(s) have different {provider_from} on different lines (first: "
                     f"{sorted(disagree)[0]!r}); each keeps the first")
    identity = json.dumps([[d.doc_id, d.provider, dict(d.groups)] for d in documents], sort_keys=True)
    collection = Collection(f"documents of {log.name}", tuple(documents),
                            sha256=hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest())
    return LogDocuments(collection, tuple(notes))
