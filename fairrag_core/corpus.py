"""Collections: documents, queries and relevance labels, and their loaders.

Conventions (written down once, used everywhere):

* A document is addressed by its ``doc_id`` in files and by its **0-based position** in
  ``Collection.documents`` inside arrays (scores, rankings, exposure vectors).
* ``provider`` is who receives credit/exposure (a brand, an outlet, a person). When a file omits it,
  the document is its own provider (``provider = doc_id``).
* ``groups`` maps a fairness category to a label, e.g. ``{"region": "Africa", "gender": "female"}``.
  ``"Unknown"`` is an ordinary label; a *missing* label is an error only where a group metric needs it
  (:meth:`Collection.group_labels`).
* Relevance labels come from TREC qrels (``qid 0 doc_id rel``); unjudged documents count as ``rel = 0``.

File formats
------------
corpus
    JSONL: one object per line with ``doc_id``, ``text`` and optional ``title``, ``provider``,
    ``groups`` (object of strings). CSV: header ``doc_id,text[,title,provider,group:<category>...]``.
queries
    JSONL with ``query_id``, ``text``, optional ``answer`` and optional
    ``aspects: [{"aspect": ..., "answer": ...}]``.
qrels
    TREC format, whitespace separated: ``query_id 0 doc_id relevance`` (integer relevance).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .errors import DataFormatError, InvalidParameterError, MissingGroupLabelError, UnknownCollectionError

__all__ = [
    "Aspect",
    "Document",
    "Query",
    "Collection",
    "DEMO_COLLECTIONS",
    "assets_dir",
    "load_corpus",
    "load_queries",
    "load_qrels",
    "load_collection",
]

#: Bundled demo collections, in the order the UI lists them.
DEMO_COLLECTIONS: tuple[str, ...] = ("running-shoes", "news", "people", "multi-faceted")

UNKNOWN_GROUP = "Unknown"

_CORPUS_FIELDS = {"doc_id", "text", "title", "provider", "groups"}
_QUERY_FIELDS = {"query_id", "text", "answer", "aspects"}
_GROUP_PREFIX = "group:"


@dataclass(frozen=True)
class Document:
    """One retrievable item. ``provider`` is who gets exposure; ``groups`` maps category → label."""

    doc_id: str
    text: str
    title: str = ""
    provider: str = ""
    groups: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.provider:
            object.__setattr__(self, "provider", self.doc_id)
        object.__setattr__(self, "groups", MappingProxyType(dict(self.groups)))

    @property
    def full_text(self) -> str:
        """Title and text joined: what retrievers index and prompts show."""
        return f"{self.title}. {self.text}" if self.title else self.text


@dataclass(frozen=True)
class Aspect:
    """A sub-intent of a multi-faceted query (RichRAG) and its sub-answer."""

    aspect: str
    answer: str


@dataclass(frozen=True)
class Query:
    """A user request with an optional gold answer and optional aspects."""

    query_id: str
    text: str
    answer: str | None = None
    aspects: tuple[Aspect, ...] = ()


@dataclass(frozen=True)
class Collection:
    """A corpus with its queries and relevance labels (``qrels[query_id][doc_id] = rel``)."""

    name: str
    documents: tuple[Document, ...]
    queries: tuple[Query, ...] = ()
    qrels: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.documents:
            raise InvalidParameterError(f"collection {self.name!r} has no documents; add at least one")
        seen: set[str] = set()
        for doc in self.documents:
            if doc.doc_id in seen:
                raise InvalidParameterError(f"duplicate doc_id {doc.doc_id!r}; every document needs a unique id")
            seen.add(doc.doc_id)
        qids: set[str] = set()
        for query in self.queries:
            if query.query_id in qids:
                raise InvalidParameterError(f"duplicate query_id {query.query_id!r}; every query needs a unique id")
            qids.add(query.query_id)
        for qid, judged in self.qrels.items():
            unknown = [d for d in judged if d not in seen]
            if unknown:
                raise InvalidParameterError(
                    f"qrels for query {qid!r} name unknown doc ids {unknown[:5]}; fix the ids or add the documents"
                )

    # -- lookups -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.documents)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {doc.doc_id: i for i, doc in enumerate(self.documents)}

    @cached_property
    def _queries_by_id(self) -> dict[str, Query]:
        return {q.query_id: q for q in self.queries}

    @property
    def doc_ids(self) -> list[str]:
        return [d.doc_id for d in self.documents]

    @property
    def texts(self) -> list[str]:
        """Indexed text of each document (title + text), in collection order."""
        return [d.full_text for d in self.documents]

    @cached_property
    def providers(self) -> np.ndarray:
        """Provider of each document, as an object array aligned with ``documents``."""
        return np.array([d.provider for d in self.documents], dtype=object)

    def index_of(self, doc_id: str) -> int:
        try:
            return self._index[doc_id]
        except KeyError:
            raise InvalidParameterError(f"unknown doc_id {doc_id!r} in collection {self.name!r}") from None

    def query(self, query_id: str) -> Query:
        try:
            return self._queries_by_id[query_id]
        except KeyError:
            known = ", ".join(list(self._queries_by_id)[:5])
            raise InvalidParameterError(
                f"unknown query_id {query_id!r} in collection {self.name!r}; known ids start with: {known}"
            ) from None

    def find_query(self, text: str) -> Query | None:
        """The collection's query whose text equals ``text`` (case- and space-insensitive), if any."""
        wanted = " ".join(text.lower().split())
        for query in self.queries:
            if " ".join(query.text.lower().split()) == wanted:
                return query
        return None

    def relevance(self, query_id: str) -> np.ndarray:
        """Graded relevance of every document for ``query_id`` (unjudged → 0), aligned with ``documents``."""
        rel = np.zeros(len(self.documents), dtype=np.int64)
        for doc_id, grade in self.qrels.get(query_id, {}).items():
            rel[self._index[doc_id]] = grade
        return rel

    def useful(self, query_id: str, *, min_rel: int = 1) -> np.ndarray:
        """Boolean usefulness labels for ``query_id``: ``relevance >= min_rel``."""
        return self.relevance(query_id) >= min_rel

    def categories(self) -> list[str]:
        """Fairness categories that appear on at least one document, sorted."""
        return sorted({c for d in self.documents for c in d.groups})

    def group_labels(self, category: str, *, fill: str | None = None) -> np.ndarray:
        """Label of every document in ``category``.

        Raises:
            MissingGroupLabelError: some documents have no label and ``fill`` is None. Pass
                ``fill="Unknown"`` to treat them as their own group, or label them in the corpus file.
        """
        labels = [d.groups.get(category) for d in self.documents]
        missing = [d.doc_id for d, lab in zip(self.documents, labels) if lab is None]
        if missing and fill is None:
            if len(missing) == len(labels):
                raise MissingGroupLabelError(
                    f"no document in {self.name!r} has a label for category {category!r}; "
                    f"known categories: {self.categories() or 'none'}"
                )
            raise MissingGroupLabelError(
                f"{len(missing)} document(s) in {self.name!r} have no {category!r} label "
                f"(first: {missing[:5]}); label them in the corpus file or pass fill={UNKNOWN_GROUP!r}"
            )
        return np.array([fill if lab is None else lab for lab in labels], dtype=object)

    def subset(self, indices: Iterable[int]) -> Collection:
        """A collection over some of the documents (e.g. first-stage candidates), keeping their qrels."""
        docs = tuple(self.documents[int(i)] for i in indices)
        keep = {d.doc_id for d in docs}
        qrels = {q: {d: r for d, r in j.items() if d in keep} for q, j in self.qrels.items()}
        return Collection(self.name, docs, self.queries, qrels)


# -- reading files ----------------------------------------------------------------------------------
def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataFormatError("file not found; check the path", path=path) from None
    except IsADirectoryError:
        raise DataFormatError("is a folder, expected a file", path=path) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataFormatError(
            f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at offset {err.start}); re-save the file as UTF-8",
            path=path,
            line=line,
        ) from None


def _json_lines(path: Path) -> Iterable[tuple[int, dict]]:
    text = _read_text(path)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(
                f"invalid JSON ({err.msg} at column {err.colno}); each line must be one JSON object",
                path=path,
                line=lineno,
            ) from None
        if not isinstance(obj, dict):
            raise DataFormatError("expected a JSON object on each line", path=path, line=lineno)
        yield lineno, obj


def _required_str(obj: Mapping, key: str, path: Path, line: int, *, fix: str) -> str:
    if key not in obj:
        raise DataFormatError(f"missing field {key!r}; {fix}", path=path, line=line)
    value = obj[key]
    if not isinstance(value, str):
        raise DataFormatError(f"field {key!r} must be a string, got {type(value).__name__}", path=path, line=line)
    if not value.strip():
        raise DataFormatError(f"field {key!r} is empty; give it some text or drop the line", path=path, line=line)
    return value.strip()


def _optional_str(obj: Mapping, key: str, path: Path, line: int) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DataFormatError(f"field {key!r} must be a string, got {type(value).__name__}", path=path, line=line)
    return value.strip()


def _check_unique(seen: dict[str, int], key: str, what: str, path: Path, line: int) -> None:
    if key in seen:
        raise DataFormatError(
            f"duplicate {what} {key!r} (first seen on line {seen[key]}); ids must be unique",
            path=path,
            line=line,
        )
    seen[key] = line


def _corpus_from_jsonl(path: Path) -> list[Document]:
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for line, obj in _json_lines(path):
        unknown = set(obj) - _CORPUS_FIELDS
        if unknown:
            raise DataFormatError(
                f"unknown field(s) {sorted(unknown)}; allowed: {sorted(_CORPUS_FIELDS)} "
                "(put fairness labels inside \"groups\": {\"region\": ...})",
                path=path,
                line=line,
            )
        doc_id = _required_str(obj, "doc_id", path, line, fix="every document needs a unique doc_id")
        text = _required_str(obj, "text", path, line, fix="every document needs its text")
        groups = obj.get("groups") or {}
        if not isinstance(groups, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in groups.items()
        ):
            raise DataFormatError(
                'field "groups" must map category names to non-empty label strings, e.g. {"region": "Africa"}',
                path=path,
                line=line,
            )
        _check_unique(seen, doc_id, "doc_id", path, line)
        docs.append(
            Document(
                doc_id=doc_id,
                text=text,
                title=_optional_str(obj, "title", path, line),
                provider=_optional_str(obj, "provider", path, line),
                groups={k.strip(): v.strip() for k, v in groups.items()},
            )
        )
    return docs


def _corpus_from_csv(path: Path) -> list[Document]:
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
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
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise DataFormatError(
                f"expected {len(header)} cells, found {len(row)}; quote cells that contain commas",
                path=path,
                line=line,
            )
        rec = dict(zip(header, row))
        doc_id = _required_str(rec, "doc_id", path, line, fix="every document needs a unique doc_id")
        body = _required_str(rec, "text", path, line, fix="every document needs its text")
        _check_unique(seen, doc_id, "doc_id", path, line)
        groups = {
            col[len(_GROUP_PREFIX):]: rec[col].strip()
            for col in header
            if col.startswith(_GROUP_PREFIX) and rec[col].strip()
        }
        docs.append(
            Document(
                doc_id=doc_id,
                text=body,
                title=rec.get("title", "").strip(),
                provider=rec.get("provider", "").strip(),
                groups=groups,
            )
        )
    return docs


def load_corpus(path: str | os.PathLike) -> list[Document]:
    """Read documents from a ``.jsonl`` or ``.csv`` file (format in the module docstring).

    Raises:
        DataFormatError: naming the file, the line and the fix (bad JSON/CSV, missing or empty
            fields, duplicate ids, bad encoding, unknown columns).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        docs = _corpus_from_jsonl(path)
    elif suffix == ".csv":
        docs = _corpus_from_csv(path)
    else:
        raise DataFormatError("unsupported corpus format; use .jsonl or .csv", path=path)
    if not docs:
        raise DataFormatError("no documents found; the file is empty", path=path)
    return docs


def load_queries(path: str | os.PathLike) -> list[Query]:
    """Read queries from JSONL: ``query_id``, ``text``, optional ``answer`` and ``aspects``."""
    path = Path(path)
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for line, obj in _json_lines(path):
        unknown = set(obj) - _QUERY_FIELDS
        if unknown:
            raise DataFormatError(f"unknown field(s) {sorted(unknown)}; allowed: {sorted(_QUERY_FIELDS)}",
                                  path=path, line=line)
        qid = _required_str(obj, "query_id", path, line, fix="every query needs a unique query_id")
        text = _required_str(obj, "text", path, line, fix="every query needs its text")
        answer = _optional_str(obj, "answer", path, line) or None
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
        queries.append(Query(qid, text, answer, tuple(aspects)))
    return queries


def load_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Read TREC qrels (``query_id 0 doc_id relevance``) into ``{query_id: {doc_id: rel}}``."""
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    for line, raw in enumerate(_read_text(path).splitlines(), start=1):
        parts = raw.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != 4:
            raise DataFormatError(
                f"expected 4 fields 'query_id 0 doc_id relevance', found {len(parts)}", path=path, line=line
            )
        qid, _, doc_id, rel = parts
        try:
            grade = int(rel)
        except ValueError:
            raise DataFormatError(f"relevance {rel!r} is not an integer", path=path, line=line) from None
        judged = qrels.setdefault(qid, {})
        if doc_id in judged:
            raise DataFormatError(f"duplicate judgement for ({qid}, {doc_id}); keep one line per pair",
                                  path=path, line=line)
        judged[doc_id] = grade
    return qrels


def assets_dir() -> Path:
    """Folder of the bundled assets (override with the ``FAIRRAG_ASSETS`` environment variable)."""
    env = os.environ.get("FAIRRAG_ASSETS")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "assets"


def _find(folder: Path, stem: str, suffixes: tuple[str, ...]) -> Path | None:
    for suffix in suffixes:
        candidate = folder / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def load_collection(name_or_path: str | os.PathLike) -> Collection:
    """Load a demo collection by name (see :data:`DEMO_COLLECTIONS`) or a folder holding
    ``corpus.jsonl|corpus.csv``, optional ``queries.jsonl`` and optional ``qrels.txt``.

    Qrels are checked against the corpus and the queries: unknown ids raise with the line number.
    """
    folder = Path(name_or_path)
    if str(name_or_path) in DEMO_COLLECTIONS:
        folder = assets_dir() / "collections" / str(name_or_path)
    if not folder.is_dir():
        raise UnknownCollectionError(
            f"no collection {str(name_or_path)!r}: use one of {', '.join(DEMO_COLLECTIONS)} "
            "or a folder with corpus.jsonl (or corpus.csv), queries.jsonl and qrels.txt"
        )
    corpus_path = _find(folder, "corpus", (".jsonl", ".csv"))
    if corpus_path is None:
        raise UnknownCollectionError(f"{folder} has no corpus.jsonl or corpus.csv")
    docs = load_corpus(corpus_path)
    queries_path = _find(folder, "queries", (".jsonl",))
    queries = load_queries(queries_path) if queries_path else []
    qrels_path = _find(folder, "qrels", (".txt", ".qrels"))
    qrels = load_qrels(qrels_path) if qrels_path else {}
    if qrels_path:
        _check_qrels(qrels, qrels_path, {d.doc_id for d in docs}, {q.query_id for q in queries})
    return Collection(folder.name, tuple(docs), tuple(queries), qrels)


def _check_qrels(qrels: Mapping[str, Mapping[str, int]], path: Path, doc_ids: set[str], query_ids: set[str]) -> None:
    lines = _read_text(path).splitlines()
    for lineno, raw in enumerate(lines, start=1):
        parts = raw.split()
        if len(parts) != 4:
            continue
        qid, _, doc_id, _ = parts
        if doc_id not in doc_ids:
            raise DataFormatError(
                f"unknown doc_id {doc_id!r}; every judged document must be in the corpus", path=path, line=lineno
            )
        if query_ids and qid not in query_ids:
            raise DataFormatError(
                f"unknown query_id {qid!r}; every judged query must be in queries.jsonl", path=path, line=lineno
            )
