"""What a deployed system served, as one model: a :class:`RagLog` is served rankings (one entry per served ranking)
plus, for a RAG log, the answers and citations that went with them.

Two kinds of files load into it (:func:`load_served` tells them apart by the suffix; the suffixes of each are
in :mod:`fairrag_core.data.formats`):

* a **RAG log** (``.jsonl``), one served answer per line (format below), or an **OTLP JSON trace export** with the
  same suffixes, recognised by its first object (``{"resourceSpans": ...}``) and read by
  :func:`load_traces` (one served answer per trace, with the logged document scores and
  metadata);
* a **served run** (:mod:`fairrag_core.data.served`: expeval/TREC with a sample column, or TREC Fair 2022), one entry
  per sampled ranking, without answers.

Either way the log keeps its identity — file name, sha256 of the bytes, kind (``log``/``run``), format, how many
lines the file holds and how many rankings they make — so that records and reports name their inputs.

A RAG log is JSONL, one served answer per line::

    {"query_id": "rs-q01", "query": "best shoes for a first marathon?", "ranking": ["rs-012", "rs-040", ...],
     "answer": "A cushioned daily trainer ...", "citations": ["rs-012"], "session": "s07",
     "timestamp": "2026-03-02T10:15:00Z"}

* ``query_id`` (string or integer, required) — the information need; lines with the same id are the repeated
  (or stochastic) rankings of one query, like the N samples of Kim & Diaz (2025);
* ``ranking`` (required) — doc ids in the order the generator was given them (distinct, non-empty);
* ``query`` — the text the user typed (kept per line: paraphrases of one need share a ``query_id``);
* ``answer`` — the generated answer (what NLI attribution judges);
* ``citations`` — doc ids the system showed as sources. A missing field means "not logged"; ``[]`` means the
  system showed none;
* ``timestamp``, ``session`` — kept as metadata; any other field goes inside ``"metadata": {...}``;
* ``candidates`` — what the ranking was chosen from (e.g. the retriever's top 20 before a reranker kept 5), in
  logged order: a list of doc ids, or of objects ``{"id": ..., "score": ..., "metadata": {...}}`` (score and
  metadata optional); every ranked document among them. The what-if replays them (with their scores) instead of
  the served rankings. A missing field means "not logged": the ranking itself is not a candidate set.

:func:`load_rag_log` stops at the first problem with the file, the line and the fix, and returns nothing
half-loaded. :meth:`RagLog.check_against` reports doc ids that a collection does not know, with the lines.
"""

from __future__ import annotations

import hashlib
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType

from ..checks import max_log_lines
from ..errors import DataFormatError
from .collection import Collection
from .formats import RUN_READER, format_of, formats_named, is_log
from .loaders import json_lines
from .otlp_proto import is_protobuf
from .phoenix import is_phoenix_spans
from .served import ServedRankings, load_run
from .traces import LogEntry, TraceMap, is_otlp_export, read_traces, share, share_ids, starts_like_export

__all__ = ["LogEntry", "RagLog", "load_rag_log", "load_traces", "load_served", "LOG_FIELDS",
           "NOT_A_LOG"]

#: The fields a log line may have (anything else goes inside ``metadata``).
LOG_FIELDS = ("query_id", "query", "ranking", "answer", "citations", "timestamp", "session", "metadata", "candidates")

#: The fields every line needs, with what the message about one missing or empty says.
_NEEDED = {"query_id": "every line needs the id of the query it answered",
           "ranking": "list the doc ids the generator was given, best first"}

#: What a file that is neither a RAG log nor a trace export is told.
NOT_A_LOG = ("this is neither a RAG log nor a trace export; accepted: a RAG log (JSONL, one served answer per line "
             'with "query_id" and "ranking"), an OTLP JSON trace export ({"resourceSpans": [...]}, one per line or '
             "the whole file, as the OpenTelemetry collector's file exporter writes it; docs/traces.md), either one "
             "gzipped, or a served run file (TREC, expeval, TREC Fair 2022)")


@dataclass(frozen=True)
class RagLog:
    """Served rankings (with answers, for a RAG log), in file order, with where they came from.

    ``source`` is the file's path (or a name), ``sha256`` the sha256 of its bytes, ``kind`` ``"log"`` (a RAG log) or
    ``"run"`` (a served run, one entry per sampled ranking), ``format`` the file format (``jsonl``, ``trec``,
    ``trec-fair-2022``, ``lists``, ``otlp``) and ``file_lines`` the records the file holds (a run's ranked lines; a
    log's lines). ``notes`` say what the loader left out and why (traces that make no served answer).
    ``len(log)`` counts the rankings.
    """

    source: str
    entries: tuple[LogEntry, ...]
    sha256: str = ""
    kind: str = "log"
    format: str = "jsonl"
    file_lines: int | None = None
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def name(self) -> str:
        """The file's name (the last part of ``source``)."""
        return os.path.basename(self.source.rstrip(os.sep)) or self.source

    @property
    def what(self) -> str:
        """``"RAG log"``, ``"trace export"`` or ``"served run"``, for titles and sentences."""
        if self.kind == "run":
            return "served run"
        return "trace export" if self.format == "otlp" else "RAG log"

    def identity(self) -> dict[str, object]:
        """How records and reports name this input: name, path, sha256, kind, format, file lines, rankings."""
        return {"role": self.kind, "name": self.name, "path": self.source, "sha256": self.sha256, "kind": self.kind,
                "format": self.format, "lines": self.file_lines if self.file_lines is not None else len(self),
                "rankings": len(self), **({"requests": len(self)} if self.format == "otlp" else {})}

    @cached_property
    def query_ids(self) -> tuple[str, ...]:
        """Distinct query ids in order of first appearance."""
        return tuple(dict.fromkeys(e.query_id for e in self.entries))

    @property
    def has_answers(self) -> bool:
        return any(e.answer for e in self.entries)

    @property
    def has_citations(self) -> bool:
        return any(e.citations is not None for e in self.entries)

    @property
    def ranking_lengths(self) -> tuple[int, int]:
        """Shortest and longest ranking."""
        lengths = [len(e.ranking) for e in self.entries]
        return min(lengths), max(lengths)

    @classmethod
    def from_served(cls, run: ServedRankings) -> RagLog:
        """A served run (expeval/TREC with samples, TREC Fair 2022) as a log without answers: one entry per sample,
        so a run audits like a log (exposure, ledger, fair target). ``line`` numbers the samples in order; each entry
        keeps the run's scores where the format has them (for the what-if replay).

        >>> log = RagLog.from_served(ServedRankings.from_lists({"q1": [["a", "b"], ["b", "c"]]}))
        >>> [(e.query_id, e.ranking) for e in log.entries]
        [('q1', ('a', 'b')), ('q1', ('b', 'c'))]
        """
        samples = ((qid, ranked.scores, s, sample_id, sample) for qid, ranked in run.queries.items()
                   for s, (sample_id, sample) in enumerate(zip(ranked.sample_ids, ranked.samples())))
        entries = tuple(LogEntry(line=line, query_id=qid, ranking=tuple(sample), metadata={"sample": sample_id},
                                 scores=None if scores is None else tuple(scores[s, :len(sample)].tolist()))
                        for line, (qid, scores, s, sample_id, sample) in enumerate(samples, start=1))
        return cls(run.source or run.run_id, entries, sha256=run.sha256, kind="run", format=run.format.value,
                   file_lines=run.n_lines)

    def check_against(self, collection: Collection) -> None:
        """Raise :class:`DataFormatError` when a ranking, a citation or a logged candidate names a doc id
        ``collection`` lacks.

        The message gives how many ids are unknown, the first one with its line, and the fix.
        """
        known = set(collection.doc_ids)
        unknown: dict[str, tuple[int, str]] = {}
        for entry in self.entries:
            for where, ids in (("ranking", entry.ranking), ("citations", entry.citations or ()),
                               ("candidates", entry.candidates or ())):
                for doc_id in ids:
                    if doc_id not in known and doc_id not in unknown:
                        unknown[doc_id] = (entry.line, where)
        if unknown:
            first, (line, where) = next(iter(unknown.items()))
            examples = ", ".join(repr(d) for d in list(unknown)[:5])
            trace = (next((e.metadata.get("trace_id") for e in self.entries if e.line == line), None)
                     if self.format == "otlp" else None)
            raise DataFormatError(  # a trace export's entries are numbered traces, not file lines: name the trace
                f"{len(unknown)} doc id(s) are not in collection {collection.name!r} (first: {first!r} in "
                f"{where}{f' of trace {trace}' if trace else ''}; all: {examples}{', …' if len(unknown) > 5 else ''}"
                "); audit the log with the collection the system retrieved from (--collection), or fix the ids in the "
                "log" + ("; without a collection, --provider-from or --provider-map name the providers" if trace
                         else ""), path=self.source, line=None if trace else line)


def _id(value: object, name: str, path: Path, line: int, *, fix: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
        raise DataFormatError(f"{name} must be a string (or an integer), got {type(value).__name__}; {fix}",
                              path=path, line=line)
    text = str(value).strip()
    if not text:
        raise DataFormatError(f"{name} is empty; {fix}", path=path, line=line)
    return text


def _ids(obj: Mapping, key: str, path: Path, line: int, *, allow_empty: bool, shared: dict) -> tuple[str, ...]:
    """The doc ids of ``obj[key]``, checked, as one tuple shared with every earlier line that listed the same."""
    value = obj[key]
    if not isinstance(value, list):
        raise DataFormatError(f'field "{key}" must be a list of doc ids, e.g. ["d1", "d2"], '
                              f"got {type(value).__name__}", path=path, line=line)
    if not value and not allow_empty:
        raise DataFormatError(f'field "{key}" is empty; {_NEEDED[key]}', path=path, line=line)
    ids = tuple([v.strip() for v in value]) if all(type(v) is str for v in value) else None  # the usual case
    if ids is None or not all(ids):  # a blank or mistyped id: named
        ids = tuple(_id(v, f'a doc id in "{key}"', path, line, fix="use the doc ids of the collection")
                    for v in value)
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        twice = next(d for d in ids if d in seen or seen.add(d))
        raise DataFormatError(f'field "{key}" lists {twice!r} twice; each doc id may appear once', path=path,
                              line=line)
    return share_ids(shared, ids)


def _text(obj: Mapping, key: str, path: Path, line: int, *, number: bool = False) -> str | None:
    """``obj[key]`` (None when absent or null): a string, stripped, or with ``number`` also a number, as text."""
    value = obj.get(key)
    if isinstance(value, str):
        return value if number else value.strip()
    if value is None:
        return None
    if not number or isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DataFormatError(f'field "{key}" must be {"a string or a number" if number else "a string (or null)"}, '
                              f"got {type(value).__name__}", path=path, line=line)
    return str(value)


_NO_METADATA: Mapping[str, object] = MappingProxyType({})
_CANDIDATES_FIX = ('write "candidates" as a list of doc ids, or of objects {"id": "d1", "score": 0.7, "metadata": '
                   "{...}} (score and metadata optional), holding every ranked document; or leave it out")


def _candidates(value: object, ranking: tuple[str, ...], path: Path, line: int, shared: dict) -> dict[str, object]:
    """A line's ``candidates`` as :class:`LogEntry`'s ``candidates``, ``candidate_scores`` and ``candidate_metadata``
    (ids and scores shared with earlier lines, as rankings are); nothing when the field is absent or null.

    Raises:
        DataFormatError: one line naming the problem and the fix (:data:`_CANDIDATES_FIX`).
    """
    if value is None:
        return {}

    def bad(problem: str) -> DataFormatError:
        return DataFormatError(f'field "candidates" {problem}; {_CANDIDATES_FIX}', path=path, line=line)

    if not isinstance(value, list) or not value:
        raise bad("is empty" if isinstance(value, list) else f"must be a list, got {type(value).__name__}")
    objects = isinstance(value[0], dict)
    if any(isinstance(v, dict) != objects for v in value):
        raise bad("mixes doc ids and objects")
    scores: list[float | None] = []
    metadata: list[Mapping[str, object]] = []
    if objects:
        ids = []
        for v in value:
            unknown = set(v).difference(("id", "score", "metadata"))
            if unknown or "id" not in v:
                raise bad(f"has an object with the field(s) {sorted(unknown)}" if unknown else
                          "has an object without \"id\"")
            score, meta = v.get("score"), v.get("metadata")
            if score is not None and (isinstance(score, bool) or not isinstance(score, numbers.Real)):
                raise bad(f"has a score that is no number ({score!r:.40})")
            if meta is not None and not isinstance(meta, dict):
                raise bad(f"has metadata that is no object ({type(meta).__name__})")
            ids.append(v["id"])
            scores.append(None if score is None else float(score))
            metadata.append(MappingProxyType(meta) if meta else _NO_METADATA)
        value = ids
    ids = _ids({"candidates": value}, "candidates", path, line, allow_empty=False, shared=shared)
    known = set(ids)
    missing = next((d for d in ranking if d not in known), None)
    if missing is not None:
        raise bad(f"lacks the ranked document {missing!r}")
    found: dict[str, object] = {"candidates": ids}
    if any(s is not None for s in scores):
        found["candidate_scores"] = share(shared, tuple(scores))
    if any(metadata):
        found["candidate_metadata"] = tuple(metadata)
    return found


def log_entry(obj: dict, path: Path, line: int, shared: dict, *, first: bool = False) -> LogEntry:
    """One log line as a :class:`LogEntry`. Its ids, rankings and texts are the objects in ``shared`` (one per
    distinct value for the whole log): a log repeats its queries, rankings and answers, and a repeat then costs a
    pointer, not a copy. The ``first`` object of a file, with none of the log's fields, says the file is no log."""
    if first and not any(key in obj for key in LOG_FIELDS):
        raise DataFormatError(f"{NOT_A_LOG} (its first object has the field(s) {sorted(obj)[:5]})", path=path,
                              line=line)
    unknown = set(obj).difference(LOG_FIELDS)
    if unknown:
        raise DataFormatError(f"unknown field(s) {sorted(unknown)}; allowed: {list(LOG_FIELDS)} (put other fields "
                              'inside "metadata": {...})', path=path, line=line)
    for key, fix in _NEEDED.items():
        if key not in obj:
            raise DataFormatError(f'missing field "{key}"; {fix}', path=path, line=line)
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise DataFormatError('field "metadata" must be a JSON object', path=path, line=line)
    citations = (None if obj.get("citations") is None
                 else _ids(obj, "citations", path, line, allow_empty=True, shared=shared))
    ranking = _ids(obj, "ranking", path, line, allow_empty=False, shared=shared)
    candidates = _candidates(obj.get("candidates"), ranking, path, line, shared)
    return LogEntry(
        line=line,
        query_id=share(shared, _id(obj["query_id"], '"query_id"', path, line, fix=_NEEDED["query_id"])),
        ranking=ranking,
        query=share(shared, _text(obj, "query", path, line) or None),
        answer=share(shared, _text(obj, "answer", path, line)),
        citations=citations,
        session=share(shared, _text(obj, "session", path, line, number=True)),
        timestamp=_text(obj, "timestamp", path, line, number=True),
        metadata=metadata,
        **candidates,
    )


def load_rag_log(path: str | os.PathLike, *, collection: Collection | None = None,
                 trace_map: TraceMap | None = None) -> RagLog:
    """Read a JSONL RAG log (format in the module docstring); check its doc ids against ``collection`` if given.

    A file whose first object is an OTLP JSON export (``{"resourceSpans": ...}``, also pretty-printed over the file)
    is read by :func:`load_traces` instead, with ``trace_map`` (which attributes hold the
    fields; default: the OpenInference and GenAI conventions); a first object with none of the log's fields is
    refused with the formats accepted (:data:`NOT_A_LOG`).

    The file is read once, one line at a time (:func:`~fairrag_core.data.files.read_lines`: gzip inflated, the
    sha256 of its bytes taken on the way). At most :func:`~fairrag_core.checks.max_log_lines` lines
    (``$FAIRRAG_MAX_LOG_LINES``, default 2,000,000) are held: each is a Python object.

    Raises:
        DataFormatError: naming the file, the line and the fix (bad JSON, missing or mistyped fields, repeated
            doc ids in a ranking, unknown fields, a lone surrogate escape, an empty file, more lines than a load
            holds, doc ids the collection lacks).

    >>> import json, tempfile
    >>> line = {"query_id": "q1", "ranking": ["d2", "d1"], "answer": "yes", "citations": ["d2"], "session": 7}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(json.dumps(line) + "\\n")
    >>> log = load_rag_log(f.name)
    >>> log.entries[0].ranking, log.entries[0].citations, log.entries[0].session
    (('d2', 'd1'), ('d2',), '7')
    >>> os.remove(f.name)
    """
    path = Path(path)
    if path.is_dir() or is_protobuf(path):  # a folder of trace files (`fairrag collect`), an OTLP protobuf export
        return load_traces(path, trace_map=trace_map, collection=collection)
    if path.is_file() and not is_log(path):
        raise DataFormatError("a RAG log must be JSONL (one JSON object per line, .jsonl); a run file (TREC, "
                              "expeval, TREC Fair 2022) is read by load_served", path=path)
    # A later, columnar log will lift this bound: today every line is a LogEntry (145-215 bytes when its values
    # repeat earlier lines, measured in tests/data/test_rag_log.py), so the bound keeps a load well under 1.5 GB.
    most = max_log_lines()
    digest = hashlib.sha256()
    shared: dict = {}
    entries: list[LogEntry] = []
    try:
        for line, obj in json_lines(path, digest=digest):
            if not entries and (is_otlp_export(obj) or is_phoenix_spans(obj)):  # the first object says what it is
                return load_traces(path, trace_map=trace_map, collection=collection)
            if len(entries) == most:
                raise DataFormatError(f"more than {most:,} log lines, more than one load holds in memory; for "
                                      "exposure only, audit-log --attribution none reads a log of any size "
                                      "column-wise; otherwise split the log (e.g. by day) and audit the parts, or "
                                      "raise the limit with FAIRRAG_MAX_LOG_LINES", path=path, line=line)
            entries.append(log_entry(obj, path, line, shared, first=not entries))
    except DataFormatError as err:
        if entries or err.line is None or not starts_like_export(path):
            raise
        return load_traces(path, trace_map=trace_map, collection=collection)  # a pretty-printed export
    if not entries:
        raise DataFormatError("no log lines found; the file is empty (one JSON object per served answer)", path=path)
    log = RagLog(str(path), tuple(entries), digest.hexdigest(), file_lines=entries[-1].line)
    del entries, shared
    if collection is not None:
        log.check_against(collection)
    return log


def load_traces(path: str | os.PathLike, *, trace_map: TraceMap | None = None,
                collection: Collection | None = None) -> RagLog:
    """Read an OTLP JSON trace export (:func:`~fairrag_core.data.traces.read_traces`) as a RAG log of format
    ``otlp``: one entry per usable trace in order (``line`` numbers them; the trace id is in ``metadata``), with the
    logged scores and document metadata, ``file_lines`` the file's lines and ``notes`` the traces left out and why.
    Its doc ids are checked against ``collection`` when given."""
    export = read_traces(path, trace_map=trace_map)
    log = RagLog(str(Path(path)), export.traces, export.sha256, format="otlp", file_lines=export.file_lines,
                 notes=export.notes)
    if collection is not None:
        log.check_against(collection)
    return log


def load_served(path: str | os.PathLike, *, collection: Collection | None = None, format: str = "auto",
                trace_map: TraceMap | None = None) -> RagLog:
    """Load what a system served, whichever file it is: a RAG log or an OTLP JSON trace export (``.jsonl``,
    ``.json``, also gzipped; :func:`load_rag_log` tells them apart by the first object, ``trace_map`` as there) or a
    served run (any other file: expeval/TREC with a sample column, or TREC Fair 2022; ``format`` as in
    :func:`~fairrag_core.data.served.load_run`), as one :class:`RagLog`; its doc ids are checked against
    ``collection`` when given.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".trec", delete=False) as f:
    ...     _ = f.write("q1 s1 d1 1 2 sys\\nq1 s1 d2 2 1 sys\\nq1 s2 d2 1 5 sys\\n")
    >>> served = load_served(f.name)
    >>> served.kind, served.format, served.file_lines, len(served), [e.ranking for e in served.entries]
    ('run', 'trec', 3, 2, [('d1', 'd2'), ('d2',)])
    >>> os.remove(f.name)
    """
    path = Path(path)
    if is_log(path) or path.is_dir():  # a folder: of trace files
        return load_rag_log(path, collection=collection, trace_map=trace_map)
    # a run format with its own reader in the table (fairrag_core.data.formats) is read by it; TREC and TREC Fair
    # 2022 share load_run, which tells them apart (and names the fix) itself, so they are not sniffed here first
    own_reader = format == "auto" and any(fmt.reader != RUN_READER for fmt in formats_named(path))
    log = RagLog.from_served(format_of(path).load(path) if own_reader else load_run(path, format=format))
    if collection is not None:
        log.check_against(collection)
    return log

