"""A large RAG log read as columns: what an exposure-only audit needs, without a Python object per line.

:func:`~fairrag_core.data.rag_log.load_rag_log` holds every line as a :class:`~fairrag_core.data.rag_log.LogEntry`
(at most ``$FAIRRAG_MAX_LOG_LINES``, 2,000,000 by default). An exposure-only audit needs far less: which query each
line answered and which documents its ranking held. :func:`read_log_columns` reads the JSONL in blocks of
:data:`~fairrag_core.data.blocks.BLOCK_BYTES` with Arrow's JSON parser (in C++, on every core), keeps per line a
query code and the ranking as collection indices (4 bytes a slot), and per query the first query text, so ten
million lines of five documents take about 250 MB.

It is strict in the same sense as :mod:`fairrag_core.data.columnar`: anything it cannot vouch for in bulk — a field
outside the log format, a value of another type than the format's usual one (an integer query id, a number as a
session), a doc id with surrounding blanks or twice in a ranking, an empty ranking, a byte-order mark, a lone
surrogate escape, a doc id the collection lacks — makes it answer ``None`` and the caller reads the file line by line
(:func:`~fairrag_core.data.rag_log.load_rag_log`, or :func:`~fairrag_core.data.rag_log.first_problem` for a file
too large to hold), which accepts the file or names the line and the fix. Citations and answers are kept only as
"present or not" per line: attribution needs the line-by-line log.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataFormatError
from .blocks import Unchecked, numbers_of, padded_rows, read_ahead, rows_with_repeats, text_blocks
from .collection import Collection
from .loaders import json_lines
from .rag_log import RagLog, log_entry

__all__ = ["ColumnLog", "LogColumns", "top_slots", "read_log_columns", "first_problem", "COLUMNS_FROM_BYTES",
           "COLUMN_READER_TAKES"]

#: What the column reader takes, for the messages that say why a log was not read column-wise.
COLUMN_READER_TAKES = ("it reads query_id, query, ranking, answer, citations, session and timestamp as strings and "
                       "lists of strings, with no metadata object, no blank lines and no blanks around ids")

#: Logs at least this large are read column-wise for an exposure-only audit (``audit-log --attribution none``):
#: every log (a log the reader refuses is read line by line, so small odd logs lose nothing).
COLUMNS_FROM_BYTES = 0

#: The fields of a log line, with the type Arrow must find for the block reader to take the file.
_STRINGS = ("query_id", "query", "answer", "timestamp", "session")
_LISTS = ("ranking", "citations")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class ColumnLog:
    """What a log read column-wise — whole (:class:`LogColumns`) or as its shards' aggregates
    (:class:`~fairrag_core.audit.log_shards.LogAggregate`) — says about itself, named and identified as a
    :class:`~fairrag_core.data.rag_log.RagLog` is: the column reader takes only files without blank lines, so the
    file's lines are the log's lines (``file_lines`` None: identity counts ``len(self)``)."""

    kind: str = field(default="log", kw_only=True)
    format: str = field(default="jsonl", kw_only=True)
    notes: tuple[str, ...] = field(default=(), kw_only=True)
    what: str = field(default="RAG log", kw_only=True)
    name = RagLog.name
    identity = RagLog.identity
    file_lines = None


@dataclass(frozen=True)
class LogColumns(ColumnLog):
    """A RAG log as an exposure audit reads it (line i: query ``query_ids[query_of_line[i]]``, ranking
    ``slots[i, :lengths[i]]`` as indices into the collection's documents, −1 beyond its length)."""

    source: str
    sha256: str
    query_ids: tuple[str, ...]
    query_of_line: np.ndarray
    slots: np.ndarray
    lengths: np.ndarray
    query_texts: dict[str, str]
    answered: np.ndarray        # per line: an answer that is not blank
    with_citations: np.ndarray  # per line: a citations field (an empty list counts)

    def __len__(self) -> int:
        return int(self.query_of_line.size)

    @property
    def ranking_lengths(self) -> tuple[int, int]:
        return int(self.lengths.min()), int(self.lengths.max())

    @classmethod
    def of(cls, log: RagLog, collection: Collection) -> LogColumns:
        """A loaded log's lines as these columns (its doc ids known to ``collection``): the audit reads every log
        in one shape. ``query_texts`` holds each query's first logged text."""
        index = {d: i for i, d in enumerate(collection.doc_ids)}
        entries = log.entries
        lengths = np.fromiter((len(e.ranking) for e in entries), dtype=np.int32, count=len(entries))
        flat = np.fromiter((index[d] for e in entries for d in e.ranking), dtype=np.int32, count=int(lengths.sum()))
        codes = {q: i for i, q in enumerate(log.query_ids)}
        texts = {e.query_id: e.query for e in reversed(entries) if e.query}  # the first text is written last
        return cls(log.source, log.sha256, log.query_ids, np.array([codes[e.query_id] for e in entries]),
                   padded_rows(flat, lengths, fill=-1, dtype=np.int32), lengths, texts,
                   np.array([bool(e.answer) for e in entries], dtype=bool),
                   np.array([e.citations is not None for e in entries], dtype=bool),
                   kind=log.kind, format=log.format, notes=log.notes, what=log.what)

    def query_lines(self) -> list[np.ndarray]:
        """Each query's lines (in file order), in the order of ``query_ids``."""
        order = np.argsort(self.query_of_line, kind="stable")
        return np.split(order, np.searchsorted(self.query_of_line[order], np.arange(1, len(self.query_ids))))


def top_slots(rows: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` slots of each row, −1 beyond the row's width: a view when the rows are that wide (a large
    log's slots are not copied)."""
    if rows.shape[1] >= k:
        return rows[:, :k]
    return np.pad(rows, ((0, 0), (0, k - rows.shape[1])), constant_values=-1)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts as one array; the parts are let go (the copy and the parts never stand side by side for long: the
    peak is one column twice, not every column)."""
    out = np.concatenate(parts)
    parts.clear()
    return out


def _parse(block: memoryview):
    import pyarrow as pa
    import pyarrow.json as pajson

    schema = pa.schema([*((name, pa.string()) for name in _STRINGS), *((name, pa.list_(pa.string()))
                                                                       for name in _LISTS)])
    try:
        return pajson.read_json(pa.py_buffer(block), read_options=pajson.ReadOptions(use_threads=True),
                                parse_options=pajson.ParseOptions(explicit_schema=schema,
                                                                  unexpected_field_behavior="error"),
                                memory_pool=pa.system_memory_pool())
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def _distinct(values) -> tuple[list[str], np.ndarray] | None:
    """The distinct values of a string column and each row's index among them; None for an empty value or one with
    blanks around it (the line reader strips them: it must see the file)."""
    encoded = values.dictionary_encode()
    names = encoded.dictionary.to_pylist()
    if any(not n or n != n.strip() for n in names):
        return None
    return names, numbers_of(encoded.indices, np.int32)


def _doc_codes(values, index: dict[str, int]) -> np.ndarray | None:
    """Collection indices of a flattened list column's values; None for a doc id the collection lacks or one that
    :func:`_distinct` refuses."""
    distinct = _distinct(values)
    if distinct is None:
        return None
    names, rows = distinct
    codes = np.fromiter((index.get(n, -1) for n in names), dtype=np.int32, count=len(names))
    if codes.size and codes.min() < 0:
        return None  # the line reader names the id and its line
    return codes[rows]


def _non_blank(array) -> np.ndarray:
    """True where a string column holds text that is not blank (a present answer or query)."""
    import pyarrow.compute as pc

    if array.null_count == len(array):
        return np.zeros(len(array), dtype=bool)
    # not empty, and not whitespace only (utf8_is_space allocates nothing, unlike trimming)
    present = pc.and_(pc.greater(pc.utf8_length(array), 0), pc.invert(pc.utf8_is_space(array)))
    return np.asarray(pc.fill_null(present, False).to_numpy(zero_copy_only=False), dtype=bool)


def _read(blocks: Iterator[memoryview], collection: Collection):
    import pyarrow.compute as pc

    index = {d: i for i, d in enumerate(collection.doc_ids)}
    query_codes: dict[str, int] = {}
    texts: dict[int, str] = {}  # by query code
    columns: dict[str, list[np.ndarray]] = {name: [] for name in ("query_of_line", "flat", "lengths", "answered",
                                                                   "with_citations")}
    for block, n_lines in blocks:
        if not columns["flat"] and bytes(block[:3]) == b"\xef\xbb\xbf":  # the first block, with a byte-order mark
            return None
        if _SURROGATE_ESCAPE.search(block):
            return None
        table = _parse(block)
        if table is None or n_lines != table.num_rows:
            return None  # refused by Arrow, or blank lines (the line reader numbers lines as the file does)
        ranking = table.column("ranking").combine_chunks()
        qids = table.column("query_id").combine_chunks()
        if ranking.null_count or qids.null_count:
            return None  # a line without a ranking or a query id
        counts = numbers_of(ranking.value_lengths(), np.int32)
        if counts.size and counts.min() == 0:
            return None  # an empty ranking
        codes = _doc_codes(ranking.flatten(), index)
        if codes is None:
            return None
        citations = table.column("citations").combine_chunks()
        if len(citations.flatten()):
            cited_codes = _doc_codes(citations.flatten(), index)
            if cited_codes is None:
                return None
            cited_lengths = numbers_of(pc.fill_null(citations.value_lengths(), 0), np.int32)
            if rows_with_repeats(padded_rows(cited_codes, cited_lengths, fill=-1, dtype=np.int32)):
                return None  # a doc id cited twice on one line
        distinct = _distinct(qids)
        if distinct is None:
            return None
        names, rows = distinct
        for n in names:
            query_codes.setdefault(n, len(query_codes))
        line_codes = np.fromiter((query_codes[n] for n in names), dtype=np.int32, count=len(names))[rows]
        query = table.column("query").combine_chunks()
        with_text = np.flatnonzero(_non_blank(query))
        if with_text.size:  # each query's first text (what the audit shows beside its id)
            _, first_at = np.unique(line_codes[with_text], return_index=True)
            picked = with_text[first_at]
            for code, text in zip(line_codes[picked].tolist(), query.take(picked).to_pylist()):
                texts.setdefault(code, text.strip())
        columns["flat"].append(codes)
        columns["lengths"].append(counts)
        columns["query_of_line"].append(line_codes)
        columns["answered"].append(_non_blank(table.column("answer").combine_chunks()))
        columns["with_citations"].append(~np.asarray(citations.is_null().to_numpy(zero_copy_only=False), dtype=bool))
        del table
    if not sum(map(len, columns["query_of_line"])):
        return None  # no lines
    query_ids = tuple(query_codes)
    return query_ids, {query_ids[code]: text for code, text in texts.items()}, {
        name: _joined(parts) for name, parts in columns.items()}


def read_log_columns(path: str | os.PathLike, collection: Collection) -> LogColumns | None:
    """The JSONL RAG log at ``path`` as columns (module docstring), its doc ids checked against ``collection``;
    None when the file needs the line-by-line reader (for its message, or because it holds something this reader
    does not check)."""
    path = Path(path)
    digest = hashlib.sha256()
    blocks = read_ahead(text_blocks(path, path, digest, count_lines=True))
    try:
        read = _read(blocks, collection)
    except Unchecked:
        return None
    finally:
        blocks.close()
    if read is None:
        return None
    query_ids, texts, columns = read
    slots = padded_rows(columns.pop("flat"), columns["lengths"], fill=-1, dtype=np.int32)
    if rows_with_repeats(slots):
        return None  # a doc id twice in one ranking
    return LogColumns(str(path), digest.hexdigest(), query_ids, slots=slots, query_texts=texts, **columns)


def first_problem(path: str | os.PathLike, collection: Collection | None = None) -> int:
    """Read a JSONL log line by line as :func:`load_rag_log` does, keeping nothing, and raise its first error (the
    line and the fix): what a log too large to hold gets when the column reader
    (:mod:`fairrag_core.data.log_columns`) could not take it. Returns the number of log lines when there is no
    problem."""
    path = Path(path)
    shared: dict = {}
    known = set(collection.doc_ids) if collection is not None else None
    count = 0
    for count, (line, obj) in enumerate(json_lines(path), start=1):
        entry = log_entry(obj, path, line, shared, first=count == 1)
        if known is not None:
            for where, ids in (("ranking", entry.ranking), ("citations", entry.citations or ())):
                missing = next((d for d in ids if d not in known), None)
                if missing is not None:
                    raise DataFormatError(f"doc id {missing!r} in {where} is not in collection {collection.name!r}; "
                                          "audit the log with the collection the system retrieved from "
                                          "(--collection), or fix the ids in the log", path=path, line=line)
        if len(shared) > 1_000_000:  # ids and texts are shared to save memory; here nothing is kept
            shared.clear()
    return count
