"""Loaders for collections on disk: corpus, queries and qrels files, and whole collection folders.

Every loader stops at the first problem and raises :class:`~fairrag_core.errors.DataFormatError` naming the
file, the line and the fix; nothing is half-loaded. Files are read one line at a time by
:func:`~fairrag_core.data.files.read_lines`: regular files only, gzipped content inflated, lines ended by ``\\n``
(or ``\\r\\n``), blank lines skipped.

File formats
------------
corpus
    JSONL: one object per line with ``doc_id``, ``text`` and optional ``title``, ``provider``,
    ``groups`` (object of strings). CSV: header ``doc_id,text[,title,provider,group:<category>...]``.
queries
    JSONL with ``query_id``, ``text``, optional ``answer`` and optional
    ``aspects: [{"aspect": ..., "answer": ...}]``. In every JSONL file a string holding a lone surrogate escape
    (``"\\ud800"``) is refused; U+2028, U+2029 and U+0085 inside strings are text.
qrels
    TREC format, whitespace separated: ``query_id 0 doc_id relevance`` (relevance: a whole number in the digits 0-9,
    at most 1,000,000 either side of 0); lines starting with ``#`` are comments.
aspect qrels (RichRAG)
    TSV with the header ``query_id<TAB>aspect_index<TAB>doc_id``: document ``doc_id`` covers aspect
    ``aspect_index`` (0-based, in the order of the query's ``aspects`` in queries.jsonl); one line per pair.
collection folder
    ``corpus.jsonl`` or ``corpus.csv``, optional ``queries.jsonl``, optional ``qrels.txt``, optional
    ``aspect_qrels.tsv``.
"""

from __future__ import annotations

import csv
import functools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from ..checks import MAX_GRADE
from ..errors import DataFormatError, UnknownCollectionError
from .aspect_qrels import load_aspect_qrels
from .collection import Aspect, Collection, Document, Query
from .collection_cache import cached_documents, gc_paused
from .demo import DEMO_COLLECTIONS, demo_folder
from .fields import SURROGATE_FIX, ascii_int, lone_surrogate_field
from .files import Digest, check_upload, read_lines
from .identity import COLLECTION_PARTS, collection_sha256

__all__ = ["load_corpus", "load_queries", "load_qrels", "load_aspect_qrels", "load_collection", "read_lines",
           "json_lines", "check_upload"]

_CORPUS_FIELDS = {"doc_id", "text", "title", "provider", "groups"}
_QUERY_FIELDS = {"query_id", "text", "answer", "short_answers", "aspects"}
_GROUP_PREFIX = "group:"
_MOST_EMPTY_ROWS = 1_000_000  # in a row, in a CSV corpus


def json_lines(source: Path | bytes, *, where: object = None, digest: Digest | None = None
               ) -> Iterator[tuple[int, dict]]:
    """The JSON object on each non-blank line of ``source`` (a path or bytes), with its line number.

    Read by :func:`~fairrag_core.data.files.read_lines` (one line at a time, gzip inflated, ``where`` and
    ``digest`` as there). A string anywhere in the object that holds a lone surrogate escape is refused with its
    field (:func:`~fairrag_core.data.fields.lone_surrogate_field`).
    """
    where = (source if isinstance(source, Path) else "<data>") if where is None else where
    for lineno, line in read_lines(source, where=where, digest=digest):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            hint = (" (the line holds a carriage return: save the file with LF or CRLF line ends, not CR alone)"
                    if "\r" in line else "")
            raise DataFormatError(
                f"invalid JSON ({err.msg} at column {err.colno}); each line must be one JSON object{hint}",
                path=where,
                line=lineno,
            ) from None
        except ValueError as err:  # e.g. an integer of more than 4,300 digits
            raise DataFormatError(f"unreadable JSON value ({str(err).split(';')[0]}); write long numbers as "
                                  "strings", path=where, line=lineno) from None
        except RecursionError:
            raise DataFormatError("JSON nested too deeply to read; each line must be one flat JSON object",
                                  path=where, line=lineno) from None
        if not isinstance(obj, dict):
            raise DataFormatError("expected a JSON object on each line", path=where, line=lineno)
        field = lone_surrogate_field(line, obj)
        if field is not None:
            raise DataFormatError(f"{field} holds {SURROGATE_FIX}", path=where, line=lineno)
        yield lineno, obj


def _string(obj: Mapping, key: str, path: Path, line: int, *, fix: str | None = None) -> str:
    """``obj[key]`` stripped: a required non-empty string when ``fix`` says how to give it, else optional (absent
    or null: "")."""
    value = obj.get(key)
    if fix is not None and key not in obj:
        raise DataFormatError(f"missing field {key!r}; {fix}", path=path, line=line)
    if fix is None and value is None:
        return ""
    if not isinstance(value, str):
        raise DataFormatError(f"field {key!r} must be a string, got {type(value).__name__}", path=path, line=line)
    if fix is not None and not value.strip():
        raise DataFormatError(f"field {key!r} is empty; give it some text or drop the line", path=path, line=line)
    return value.strip()


def _known_fields(obj: Mapping, allowed: set[str], path: Path, line: int, hint: str = "") -> None:
    unknown = set(obj) - allowed
    if unknown:
        raise DataFormatError(f"unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}{hint}", path=path,
                              line=line)


def _check_unique(seen: dict[str, int], key: str, what: str, path: Path, line: int) -> None:
    if key in seen:
        raise DataFormatError(
            f"duplicate {what} {key!r} (first seen on line {seen[key]}); ids must be unique",
            path=path,
            line=line,
        )
    seen[key] = line


def _document(rec: Mapping, path: Path, line: int, seen: dict[str, int],
              groups: Callable[[], dict[str, str]]) -> Document:
    """A corpus record (a JSON object, or a CSV row by column name) as a :class:`Document`, checked as both formats
    check it, in this order: its doc_id and text, its ``groups`` (read when both are there), a doc_id not seen
    before, then the optional title and provider."""
    doc_id = _string(rec, "doc_id", path, line, fix="every document needs a unique doc_id")
    text = _string(rec, "text", path, line, fix="every document needs its text")
    labels = groups()
    _check_unique(seen, doc_id, "doc_id", path, line)
    return Document(doc_id, text, _string(rec, "title", path, line), _string(rec, "provider", path, line),
                    labels)


def _json_groups(obj: Mapping, path: Path, line: int) -> dict[str, str]:
    groups = obj.get("groups") or {}
    if not isinstance(groups, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in groups.items()
    ):
        raise DataFormatError(
            'field "groups" must map category names to non-empty label strings, e.g. {"region": "Africa"}',
            path=path,
            line=line,
        )
    return {k.strip(): v.strip() for k, v in groups.items()}


def _corpus_from_jsonl(path: Path, digest: Digest | None = None) -> list[Document]:
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for line, obj in json_lines(path, digest=digest):
        _known_fields(obj, _CORPUS_FIELDS, path, line, ' (put fairness labels inside "groups": {"region": ...})')
        docs.append(_document(obj, path, line, seen, functools.partial(_json_groups, obj, path, line)))
    return docs


class _CsvFeed:
    """The lines of a CSV file for :func:`csv.reader`, each with its ``\\n`` (quoted cells span lines), and the
    number of the last line given (the reader's own count is wrong after a run of blank lines)."""

    def __init__(self, path: Path, digest: Digest | None = None) -> None:
        self.path, self.line, self.digest = path, 0, digest

    def __iter__(self) -> Iterator[str]:
        # read_lines skips blank lines; give them back (a blank line may sit inside a quoted cell), at most one more
        # than a cell can hold: a longer run is skipped rows outside a cell and an overlong cell inside one
        most = csv.field_size_limit() + 1
        for lineno, text in read_lines(self.path, digest=self.digest):
            for blank in range(self.line + 1, min(lineno, self.line + 1 + most)):
                self.line = blank
                yield "\n"
            self.line = lineno
            yield text + "\n"


def _csv_rows(reader, feed: _CsvFeed) -> Iterable[list[str]]:
    """The reader's rows; a CSV error (a cell over the field limit, broken quoting) names its line and the fix."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise DataFormatError(f"unreadable CSV ({err}); close every quote (a quote inside a cell is written "
                                  f"\"\"), and keep cells under {csv.field_size_limit():,} characters (or use "
                                  "corpus.jsonl for long documents)", path=feed.path, line=feed.line) from None


def _corpus_from_csv(path: Path, digest: Digest | None = None) -> list[Document]:
    feed = _CsvFeed(path, digest)
    reader = csv.reader(feed)
    try:
        header = [h.strip() for h in next(_csv_rows(reader, feed))]
    except StopIteration:
        raise DataFormatError("empty file; expected a header doc_id,text[,title,provider,group:<category>...]",
                              path=path, line=1) from None
    missing = [c for c in ("doc_id", "text") if c not in header]
    if missing:
        raise DataFormatError(
            f"missing column(s) {missing}; the header must contain doc_id and text "
            "(optional: title, provider, group:<category>)",
            path=path,
            line=1,
        )
    for col in header:
        if col not in ("doc_id", "text", "title", "provider") and not (
            col.startswith(_GROUP_PREFIX) and len(col) > len(_GROUP_PREFIX)
        ):
            raise DataFormatError(
                f"unknown column {col!r}; fairness columns must be named group:<category>, e.g. group:{col}",
                path=path,
                line=1,
            )
    if len(set(header)) != len(header):
        raise DataFormatError("repeated column names in the header", path=path, line=1)
    docs: list[Document] = []
    seen: dict[str, int] = {}
    empty = 0  # empty rows in a row: skipped, but each costs a step, so a file of nothing but ",\n" is cut short
    for row in _csv_rows(reader, feed):
        line = feed.line
        if not any(cell.strip() for cell in row):
            empty += 1
            if empty > _MOST_EMPTY_ROWS:
                raise DataFormatError(f"more than {_MOST_EMPTY_ROWS:,} empty rows in a row; delete them (a corpus "
                                      "row holds a doc_id and a text)", path=path, line=line)
            continue
        empty = 0
        if len(row) != len(header):
            raise DataFormatError(
                f"expected {len(header)} cells, found {len(row)}; quote cells that contain commas",
                path=path,
                line=line,
            )
        rec = dict(zip(header, row))
        groups = {col[len(_GROUP_PREFIX):]: rec[col].strip()
                  for col in header if col.startswith(_GROUP_PREFIX) and rec[col].strip()}
        docs.append(_document(rec, path, line, seen, lambda: groups))  # noqa: B023 (called now)
    return docs


def load_corpus(path: str | os.PathLike) -> list[Document]:
    """Read documents from a ``.jsonl`` or ``.csv`` file (format in the module docstring).

    Raises:
        DataFormatError: naming the file, the line and the fix (bad JSON/CSV, missing or empty
            fields, duplicate ids, bad encoding, unknown columns).
    """
    return _parse_corpus(Path(path))


_CORPUS_PARSERS = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def _corpus_parser(path: Path) -> str:
    """How the corpus file ``path`` is parsed, by its suffix: ``jsonl`` or ``csv``."""
    parser = _CORPUS_PARSERS.get(path.suffix.lower())
    if parser is None:
        raise DataFormatError("unsupported corpus format; use .jsonl or .csv", path=path)
    return parser


def _parse_corpus(path: Path, digest: Digest | None = None) -> list[Document]:
    """:func:`load_corpus`, feeding every byte read to ``digest`` (the parsed-corpus cache keys what it stores by
    the sha256 of exactly the bytes parsed)."""
    parse = _corpus_from_jsonl if _corpus_parser(path) == "jsonl" else _corpus_from_csv
    with gc_paused():
        docs = parse(path, digest)
    if not docs:
        raise DataFormatError("no documents found; the file is empty", path=path)
    return docs


def load_queries(path: str | os.PathLike) -> list[Query]:
    """Read queries from JSONL: ``query_id``, ``text``, optional ``answer`` (descriptive), ``short_answers`` (a
    list of acceptable short answers: the entity, number or name; the first is the canonical one) and
    ``aspects``."""
    path = Path(path)
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for line, obj in json_lines(path):
        _known_fields(obj, _QUERY_FIELDS, path, line)
        qid = _string(obj, "query_id", path, line, fix="every query needs a unique query_id")
        text = _string(obj, "text", path, line, fix="every query needs its text")
        answer = _string(obj, "answer", path, line) or None
        short = obj.get("short_answers") or []
        if not isinstance(short, list) or not all(isinstance(a, str) and a.strip() for a in short):
            raise DataFormatError('"short_answers" must be a list of non-empty strings (acceptable short answers, '
                                  'e.g. ["Northmark Harbor 12", "Harbor 12"])', path=path, line=line)
        raw_aspects = obj.get("aspects") or []
        if not isinstance(raw_aspects, list):
            raise DataFormatError('"aspects" must be a list of {"aspect": ..., "answer": ...}', path=path, line=line)
        aspects = []
        for item in raw_aspects:
            if not isinstance(item, dict) or not isinstance(item.get("aspect"), str) or not item["aspect"].strip():
                raise DataFormatError('each aspect needs a non-empty "aspect" string (and an "answer")',
                                      path=path, line=line)
            ans = item.get("answer", "")
            if not isinstance(ans, str):
                raise DataFormatError('an aspect "answer" must be a string', path=path, line=line)
            aspects.append(Aspect(item["aspect"].strip(), ans.strip()))
        _check_unique(seen, qid, "query_id", path, line)
        queries.append(Query(qid, text, answer, tuple(aspects), tuple(dict.fromkeys(a.strip() for a in short))))
    return queries


def load_qrels(path: str | os.PathLike, *, doc_ids: Iterable[str] | None = None,
               query_ids: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
    """Read TREC qrels (``query_id 0 doc_id relevance``) into ``{query_id: {doc_id: rel}}``.

    ``relevance`` is a whole number in ASCII digits with |relevance| ≤ :data:`~fairrag_core.checks.MAX_GRADE`
    (1,000,000; negative grades such as TREC's -2 for junk are kept). With ``doc_ids`` (and ``query_ids``, when not
    empty) every line is checked against them as it is read.

    Raises:
        DataFormatError: naming the file, the line and the fix.
    """
    path = Path(path)
    known_docs = None if doc_ids is None else set(doc_ids)
    known_queries = set(query_ids or ())
    qrels: dict[str, dict[str, int]] = {}
    for line, raw in read_lines(path, comments=True):
        parts = raw.split()
        if parts and parts[0].startswith("#"):  # "#" after a non-ASCII space
            continue
        if len(parts) != 4:
            raise DataFormatError(
                f"expected 4 fields 'query_id 0 doc_id relevance', found {len(parts)}", path=path, line=line
            )
        qid, _, doc_id, rel = parts
        grade = int(rel) if rel.isdigit() and rel.isascii() and len(rel) < 7 else ascii_int(rel)  # the usual case first
        if grade is None or abs(grade) > MAX_GRADE:
            raise DataFormatError(f"relevance {rel[:24]!r} is not a whole number from -{MAX_GRADE:,} to "
                                  f"{MAX_GRADE:,} in the digits 0-9; write grades like 0, 1, 2", path=path, line=line)
        if known_docs is not None and doc_id not in known_docs:
            raise DataFormatError(
                f"unknown doc_id {doc_id!r}; every judged document must be in the corpus", path=path, line=line
            )
        if known_queries and qid not in known_queries:
            raise DataFormatError(
                f"unknown query_id {qid!r}; every judged query must be in queries.jsonl", path=path, line=line
            )
        judged = qrels.setdefault(qid, {})
        if doc_id in judged:
            raise DataFormatError(f"duplicate judgement for ({qid}, {doc_id}); keep one line per pair",
                                  path=path, line=line)
        judged[doc_id] = grade
    return qrels


def _find(folder: Path, names: tuple[str, ...]) -> Path | None:
    """The first of ``names`` in ``folder`` that exists as anything (a FIFO, a link to a device or a folder too: its
    loader then says what it is, rather than the collection silently lacking it)."""
    candidates = (folder / name for name in names)
    return next((path for path in candidates if path.is_symlink() or path.exists()), None)


def load_collection(name_or_path: str | os.PathLike) -> Collection:
    """Load a demo collection by name (see :data:`DEMO_COLLECTIONS`) or a folder holding
    ``corpus.jsonl|corpus.csv``, optional ``queries.jsonl``, optional ``qrels.txt`` and optional
    ``aspect_qrels.tsv`` (RichRAG).

    Qrels are checked against the corpus and the queries: unknown ids raise with the line number.
    """
    folder = demo_folder(str(name_or_path)) if str(name_or_path) in DEMO_COLLECTIONS else Path(name_or_path)
    if not folder.is_dir():
        raise UnknownCollectionError(
            f"no collection {str(name_or_path)!r}: use one of {', '.join(DEMO_COLLECTIONS)} "
            "or a folder with corpus.jsonl (or corpus.csv), queries.jsonl and qrels.txt"
        )
    paths = {part: _find(folder, names) for part, names in COLLECTION_PARTS}
    if paths["corpus"] is None:
        raise UnknownCollectionError(f"{folder} has no corpus.jsonl or corpus.csv")
    docs = cached_documents(paths["corpus"], _parse_corpus, parser=_corpus_parser(paths["corpus"]),
                            collection=folder.name)
    doc_ids = [d.doc_id for d in docs]
    queries = load_queries(paths["queries"]) if paths["queries"] else []
    qrels = (load_qrels(paths["qrels"], doc_ids=doc_ids, query_ids=[q.query_id for q in queries])
             if paths["qrels"] else {})
    aspect_qrels = (load_aspect_qrels(paths["aspect_qrels"], queries=queries, doc_ids=doc_ids)
                    if paths["aspect_qrels"] else {})
    source = str(name_or_path) if str(name_or_path) in DEMO_COLLECTIONS else str(folder.resolve())
    return Collection(folder.name, tuple(docs), tuple(queries), qrels, aspect_qrels, source=source,
                      sha256=collection_sha256(folder))
