"""What every input of an audit is: its name as the user knows it, its sha256, and for a log or run its counts.

An audit reads a collection (its corpus, queries and qrels) and, for a served audit, a RAG log or a run file.
:class:`InputIdentity` names each one the way the person who uploaded or chose it knows it (``my-news``,
``run.trec``), with the sha256 of its bytes, where this server keeps it, and — for a log or run — how many lines
the file has and how many rankings it holds (a log: one ranking per line; a run: one ranking per sample, over
many lines). The app records them in a run's ``record.extra["inputs"]`` before saving it, shows them in the
sidebar, the pages and the stored-run labels, and the reports name every input with its sha256.

This module is the app's adapter to the core's record: it reads ``record.extra`` defensively (``.get``), so that
runs saved by the CLI or by earlier versions (which only carry ``log_sha256`` and ``lines``) still get a name,
and can later be pointed at the core's own identity fields. Pure: no Streamlit.

A collection's sha256 is the sha256 of the text ``corpus:<sha256 of its corpus file>\\n`` followed by the same line
for ``queries``, ``qrels`` and ``aspect_qrels`` when the collection has them: it depends on the files' bytes only,
not on their names or where they are, so the same files uploaded twice, or a copy in a data folder, have the same
sha256.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shlex
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from fairrag_core import DEMO_COLLECTIONS
from fairrag_core.data.demo import demo_folder
from fairrag_core.record import RunRecord, command_path

__all__ = ["InputIdentity", "UPLOAD_META", "COLLECTION_PARTS", "file_sha256", "collection_sha256",
           "collection_identity", "qrels_identity", "served_identity", "count_lines", "record_inputs",
           "with_inputs", "fingerprint", "short_sha", "collection_label", "reproduce_command", "served_kind",
           "served_counts", "audit_inputs"]

#: The file beside an uploaded collection's parts that keeps the upload's name and its files' names.
UPLOAD_META = "upload.json"
#: A collection's parts in the order its sha256 takes them: (part, the names load_collection looks for).
COLLECTION_PARTS = (("corpus", ("corpus.jsonl", "corpus.csv")), ("queries", ("queries.jsonl",)),
                    ("qrels", ("qrels.txt", "qrels.qrels")), ("aspect_qrels", ("aspect_qrels.tsv",)))
_CHUNK = 1 << 20
_SHA_CACHE: dict[tuple[str, int, int], str] = {}
_LINES_CACHE: dict[tuple[str, int, int], int] = {}


def _stat_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


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
    run: its samples)."""

    role: str
    name: str
    sha256: str = ""
    path: str = ""
    upload: bool = False
    lines: int | None = None
    rankings: int | None = None

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
        """``5,000 lines holding 500 rankings`` (a run) or ``200 lines`` (a log: one ranking per line)."""
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
    """sha256 of a file's bytes, read in 1 MB chunks (remembered per path, size and modification time)."""
    path = Path(path)
    key = _stat_key(path)
    if key not in _SHA_CACHE:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        _SHA_CACHE[key] = digest.hexdigest()
    return _SHA_CACHE[key]


def _parts(folder: Path) -> dict[str, Path]:
    found = {}
    for part, names in COLLECTION_PARTS:
        for name in names:
            if (folder / name).is_file():
                found[part] = folder / name
                break
    return found


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


def collection_label(source: str) -> str:
    """How pages name a collection: a demo by its name; an upload or a folder with its sha256
    (``my-news (upload, sha256 3f2a…)``)."""
    if source in DEMO_COLLECTIONS:
        return source
    return collection_identity(source).text


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
    key = _stat_key(path)
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
                    upload: bool = False) -> InputIdentity:
    """A RAG log (``kind="log"``) or a run file (``"run"``) at ``path``: its name, the sha256 of its bytes
    (``sha256`` when the loader took it on the way, else read here), its lines and the ``rankings`` it holds."""
    path = Path(path)
    return InputIdentity(kind, path.name, sha256 or file_sha256(path), str(path), upload=upload,
                         lines=count_lines(path), rankings=int(rankings))


def served_kind(record: RunRecord) -> str:
    """``run`` or ``log``: what a log audit read (the recorded inputs, else the file's suffix)."""
    for item in record_inputs(record, compute=False):
        if item.role in ("log", "run"):
            return item.role
    kind = record.extra.get("log_kind") or record.extra.get("kind")
    if kind in ("log", "run"):
        return kind
    log = str(getattr(record.config, "log", "") or "")
    return "log" if log.lower().endswith((".jsonl", ".ndjson", ".json", ".jsonl.gz")) else "run"


def served_counts(record: RunRecord) -> str:
    """``5,000 lines holding 500 rankings`` for a run, ``200 lines`` for a log (from the recorded inputs; older
    records only know the rankings, which for a run they called lines)."""
    for item in record_inputs(record, compute=False):
        if item.role in ("log", "run"):
            return item.counts
    rankings = record.extra.get("rankings", record.extra.get("lines"))
    if rankings is None:
        return ""
    return f"{rankings:,} rankings" if served_kind(record) == "run" else f"{rankings:,} lines"


def record_inputs(record: RunRecord, *, compute: bool = True) -> list[InputIdentity]:
    """Every input of a run: those the app recorded (``extra["inputs"]``), else what the record knows — the log
    from ``config.log`` with ``extra["log_sha256"]`` and ``extra["lines"]``, the collection and its qrels from
    ``record.collection`` (their sha256 read now when ``compute``, and the folder still exists)."""
    recorded = record.extra.get("inputs")
    if recorded:
        return [InputIdentity.from_dict(item) for item in recorded]
    out = []
    log = str(getattr(record.config, "log", "") or "")
    if log:
        kind = "log" if log.lower().endswith((".jsonl", ".ndjson", ".json")) else "run"
        out.append(InputIdentity(kind, Path(log).name, record.extra.get("log_sha256") or "", log,
                                 rankings=record.extra.get("lines")))
    if compute and record.collection:
        out.append(collection_identity(record.collection))
        qrels = qrels_identity(record.collection)
        if qrels is not None:
            out.append(qrels)
    return out


def with_inputs(run, inputs: list[InputIdentity], *, fingerprint_of: str | None = None):
    """``run`` with ``inputs`` (and the ``fingerprint`` of its request) recorded in ``record.extra``."""
    from dataclasses import replace

    extra = dict(run.record.extra, inputs=[i.to_dict() for i in inputs])
    if fingerprint_of is not None:
        extra["fingerprint"] = fingerprint_of
    return replace(run, record=replace(run.record, extra=extra))


def fingerprint(kind: str, inputs: list[InputIdentity], settings: dict) -> str:
    """What makes two audits the same: their kind, every input's role and sha256 (not its name or path), and the
    settings. Two requests with the same fingerprint give the same numbers, so the second reopens the first."""
    text = json.dumps({"kind": kind, "inputs": sorted((i.role, i.sha256) for i in inputs), "settings": settings},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def audit_inputs(record: RunRecord) -> tuple[list[InputIdentity], str]:
    """The inputs of a simulated audit (its collection and qrels, by sha256) and the fingerprint of its request:
    the inputs and every setting that changes its numbers (config, seed, retriever, models, queries)."""
    inputs = [collection_identity(record.collection)]
    qrels = qrels_identity(record.collection)
    if qrels is not None:
        inputs.append(qrels)
    settings = {"config": record.config.to_dict(), "seed": record.seed, "retriever": record.retriever,
                "generator": record.generator, "prompt_style": record.prompt_style, "attributor": record.attributor,
                "attributor_prompt": record.attributor_prompt, "query_ids": list(record.query_ids)}
    return inputs, fingerprint(record.kind.value, inputs, settings)


def reproduce_command(record: RunRecord, inputs: list[InputIdentity] | None = None) -> tuple[str, str]:
    """The command that reproduces ``record``, with each upload named by its own name instead of the folder this
    server keeps it in, and a note saying what each name stands for (empty when nothing was uploaded)."""
    command = record.command()
    notes = []
    for item in inputs if inputs is not None else record_inputs(record):
        if not item.upload or not item.path:
            continue
        where = command_path(item.path)
        quoted = shlex.quote(where)
        if quoted not in command:
            continue
        command = command.replace(quoted, shlex.quote(item.name))
        what = ("the folder of your uploaded collection files (corpus, queries, qrels)" if item.role == "collection"
                else f"your uploaded {'run file' if item.role == 'run' else 'RAG log'}")
        notes.append(f"{item.name} is {what}, sha256 {item.sha256}; this server keeps a copy at {where}.")
    return command, " ".join(notes)
