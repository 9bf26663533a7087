"""What every input of an audit is: its name as the user knows it, its sha256, and for a log or run its counts.

An audit reads a collection (its corpus, queries and qrels) and, for a served audit, a RAG log or a run file.
:class:`InputIdentity` names each one the way the person who chose or uploaded it knows it (``my-news``,
``run.trec``), with the sha256 of its bytes, where it is kept, and — for a log or run — how many lines the file has
and how many rankings it holds (a log: one ranking per line; a run: one ranking per sample, over many lines).
Every audit records them (``record.extra["inputs"]``: :func:`audit_inputs`), and the CLI's text, the app and the
reports name every input with its sha256.

A collection's sha256 is the sha256 of the text ``corpus:<sha256 of its corpus file>\\n`` followed by the same line
for ``queries``, ``qrels`` and ``aspect_qrels`` when the collection has them: it depends on the files' bytes only,
not on their names or where they are, so the same files uploaded twice, or a copy in a data folder, have the same
sha256. An uploaded collection's folder holds ``upload.json`` (:data:`UPLOAD_META`) with the upload's own name and
its files' names, written by the app.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .demo import DEMO_COLLECTIONS, demo_folder
from .files import file_sha256 as read_sha256

__all__ = ["InputIdentity", "UPLOAD_META", "COLLECTION_PARTS", "file_sha256", "collection_sha256",
           "collection_identity", "qrels_identity", "served_identity", "count_lines", "short_sha", "audit_inputs",
           "stat_key", "remember_file_sha256"]

#: The file beside an uploaded collection's parts that keeps the upload's name and its files' names.
UPLOAD_META = "upload.json"
#: A collection's parts in the order its sha256 takes them: (part, the names load_collection looks for).
COLLECTION_PARTS = (("corpus", ("corpus.jsonl", "corpus.csv")), ("queries", ("queries.jsonl",)),
                    ("qrels", ("qrels.txt", "qrels.qrels")), ("aspect_qrels", ("aspect_qrels.tsv",)))
_CHUNK = 1 << 20
_SHA_CACHE: dict[tuple[str, int, int], str] = {}
_LINES_CACHE: dict[tuple[str, int, int], int] = {}


def stat_key(path: Path) -> tuple[str, int, int]:
    """A file as the sha256 memo knows it: its resolved path, size and modification time (ns)."""
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


def remember_file_sha256(key: tuple[str, int, int], sha256: str) -> None:
    """Let :func:`file_sha256` answer ``sha256`` for the file at ``key`` (:func:`stat_key`) without reading it:
    what a reader that hashed the file on the way, or a persistent memo, already knows
    (:mod:`fairrag_core.data.collection_cache`)."""
    _SHA_CACHE[key] = sha256


def short_sha(sha256: str, digits: int = 12) -> str:
    """The first ``digits`` hex digits and an ellipsis (``—`` when unknown).

    >>> short_sha("3f2a" * 16), short_sha("")
    ('3f2a3f2a3f2a…', '—')
    """
    return f"{sha256[:digits]}…" if sha256 else "—"


@dataclass(frozen=True)
class InputIdentity:
    """One input of an audit.

    ``role``: ``collection``, ``qrels``, ``log`` (a RAG log) or ``run`` (a run file); ``name``: the file or folder
    name the user knows (an upload keeps its own); ``sha256``: of its bytes (a collection: see the module
    docstring), empty when unknown; ``path``: where this server keeps it; ``upload``: whether it came from a
    browser; ``lines``: the file's lines (a log or run); ``rankings``: the rankings it holds (a log: its lines; a
    run: its samples; a trace export: its requests, one trace each); ``format``: the served format
    (:mod:`~fairrag_core.data.formats`; ``otlp`` is counted in requests, empty when not recorded)."""

    role: str
    name: str
    sha256: str = ""
    path: str = ""
    upload: bool = False
    lines: int | None = None
    rankings: int | None = None
    format: str = ""

    @property
    def text(self) -> str:
        """``my-news (upload, sha256 3f2a4b5c6d7e…)``: how pages and labels name it."""
        words = (["upload"] if self.upload else []) + ([f"sha256 {short_sha(self.sha256)}"] if self.sha256 else [])
        return f"{self.name} ({', '.join(words)})" if words else self.name

    @property
    def full_text(self) -> str:
        """``my-news (upload; sha256 <64 hex digits>)``: how reports name it."""
        words = (["upload"] if self.upload else []) + [f"sha256 {self.sha256 or 'not recorded'}"]
        return f"{self.name} ({'; '.join(words)})"

    @property
    def counts(self) -> str:
        """``5,000 lines holding 500 rankings`` (a run), ``200 lines`` (a log: one ranking per line) or ``200
        requests`` (a trace export: its lines are export batches, not requests)."""
        if self.format == "otlp" and self.rankings is not None:
            return f"{self.rankings:,} requests"
        if self.role == "run":
            lines = f"{self.lines:,} lines" if self.lines is not None else "lines not counted"
            return f"{lines} holding {self.rankings:,} rankings" if self.rankings is not None else lines
        if self.lines is not None:
            return f"{self.lines:,} lines"
        return f"{self.rankings:,} lines" if self.rankings is not None else ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> InputIdentity:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a data file's bytes, read as every loader reads (:func:`~fairrag_core.data.files.file_sha256`: a
    regular file, within the budget), remembered per path, size and modification time."""
    path = Path(path)
    key = stat_key(path)
    if key not in _SHA_CACHE:
        _SHA_CACHE[key] = read_sha256(path)
    return _SHA_CACHE[key]


def _parts(folder: Path) -> dict[str, Path]:
    found = ((part, [folder / n for n in names if (folder / n).is_file()]) for part, names in COLLECTION_PARTS)
    return {part: paths[0] for part, paths in found if paths}


def collection_sha256(folder: str | os.PathLike) -> str:
    """The collection's sha256 (module docstring) from the files of ``folder``."""
    text = "".join(f"{part}:{file_sha256(path)}\n" for part, path in _parts(Path(folder)).items())
    return hashlib.sha256(text.encode()).hexdigest()


def _folder(source: str) -> Path:
    return demo_folder(source) if source in DEMO_COLLECTIONS else Path(source)


def _upload_meta(folder: Path) -> dict | None:
    try:
        return json.loads((folder / UPLOAD_META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def collection_identity(source: str) -> InputIdentity:
    """A collection by its source (a demo name or a folder): an upload's own name, else the demo's or the
    folder's name; its sha256 (empty when the folder is gone)."""
    folder = _folder(source)
    meta = _upload_meta(folder) if folder.is_dir() else None
    name = (meta or {}).get("name") or (source if source in DEMO_COLLECTIONS else folder.name or source)
    try:
        sha = collection_sha256(folder) if folder.is_dir() else ""
    except OSError:
        sha = ""
    return InputIdentity("collection", str(name), sha, "" if source in DEMO_COLLECTIONS else str(folder),
                         upload=meta is not None)


def qrels_identity(source: str) -> InputIdentity | None:
    """The collection's relevance labels (qrels): the uploaded file's own name when it was uploaded, and its
    sha256; None when the collection has none."""
    folder = _folder(source)
    path = _parts(folder).get("qrels") if folder.is_dir() else None
    if path is None:
        return None
    meta = _upload_meta(folder) or {}
    name = ((meta.get("files") or {}).get("qrels") or {}).get("name") or path.name
    return InputIdentity("qrels", str(name), file_sha256(path), str(path), upload=bool(meta))


def count_lines(path: str | os.PathLike) -> int:
    """Lines of a (possibly gzipped) text file: its newline characters, plus one for a last line without one
    (remembered per path, size and modification time)."""
    path = Path(path)
    key = stat_key(path)
    if key not in _LINES_CACHE:
        opener = gzip.open if path.suffix.lower() == ".gz" else open
        lines, last = 0, b"\n"
        with opener(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
        _LINES_CACHE[key] = lines + (last != b"\n")
    return _LINES_CACHE[key]


def served_identity(path: str | os.PathLike, kind: str, *, rankings: int, sha256: str = "",
                    upload: bool = False, format: str = "") -> InputIdentity:
    """A RAG log (``kind="log"``) or a run file (``"run"``) at ``path``: its name, the sha256 of its bytes
    (``sha256`` when the loader took it on the way, else read here), its lines, the ``rankings`` it holds and its
    ``format``."""
    path = Path(path)
    return InputIdentity(kind, path.name, sha256 or file_sha256(path), str(path), upload=upload,
                         lines=count_lines(path), rankings=int(rankings), format=format)


def audit_inputs(log, collection) -> list[dict]:
    """Every input of a served audit, as :meth:`InputIdentity.to_dict`: the RAG log or run file (its name, sha256,
    lines and rankings, from the :class:`~fairrag_core.data.rag_log.RagLog` that read it), the collection and, when
    it has them, its qrels."""
    items = [InputIdentity(log.kind, log.name, log.sha256, log.source, lines=log.identity()["lines"],
                           rankings=len(log), format=log.format)]
    if collection.source:
        items.append(collection_identity(collection.source))
        qrels = qrels_identity(collection.source)
        if qrels is not None:
            items.append(qrels)
    else:
        items.append(InputIdentity("collection", collection.name, collection.sha256))
    return [item.to_dict() for item in items]
