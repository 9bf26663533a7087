"""Uploads keep their name, and their owner keeps them across a browser reload.

* A collection upload is written to ``<root>/collection-<sha256[:12]>/<name>/`` (the parts as
  :func:`fairrag_core.load_collection` reads them, ``corpus.jsonl|csv``, ``queries.jsonl``, ``qrels.txt``), with
  ``upload.json`` beside them: the upload's name, the collection's sha256 (:mod:`.identity`) and each file's own
  name and sha256. The folder's last part is the name, so the loaded collection is called ``my-news``, not
  ``upload-a4697d23cc``; the same files under the same name land in the same folder.
* A log or run upload is written by :func:`fairrag_studio.views.served.save_served_upload` under its own name; a
  trace export (OTLP JSON Lines) is first cut to what the audit reads as it streams in (:func:`slim_trace_upload`:
  no document texts, no prompts), so its limit is the requests it holds, not the bytes of text its spans carry.
* Each browser's uploads are listed in ``<root>/owners/<sha256 of its owner key>.json`` (the key itself is not
  written anywhere): its collection upload (and whether the sidebar had it selected) and its log and run uploads,
  newest first. A new session with the same ``?owner=`` key (a reload) reads it back, so the sidebar still shows
  the uploaded collection and the Audit page still offers the uploaded log or run. Another browser has another
  key and never sees them. Entries whose files are gone are left out.

Pure: no Streamlit.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from fairrag_core.checks import MAX_UPLOAD_REQUESTS, check_memory, max_line_bytes
from fairrag_core.data.loaders import check_upload
from fairrag_core.data.traces import is_otlp_export, slim_export
from fairrag_core.errors import DataFormatError

from .identity import UPLOAD_META, InputIdentity, collection_identity

__all__ = ["upload_name", "save_collection_upload", "remember_collection", "remember_served", "select_collection",
           "KeptUploads", "kept_uploads", "owner_index", "MAX_SERVED", "slim_trace_upload"]

#: How many log and run uploads a browser's index keeps (newest first).
MAX_SERVED = 10


def upload_name(file_name: str, given: str = "") -> str:
    """The name an upload goes by: ``given`` when set, else the file's name without its suffixes; letters,
    digits, ``.``, ``_`` and ``-`` kept (others become ``-``), at most 60 characters, ``upload`` when nothing
    is left.

    >>> upload_name("my-news.jsonl"), upload_name("../x/Küche (2).csv"), upload_name("a.jsonl", "Class 3B")
    ('my-news', 'K-che-2', 'Class-3B')
    >>> upload_name("..")
    'upload'

    """
    text = given.strip() or re.split(r"[/\\]", file_name)[-1].split(".")[0]
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60].strip("-.")
    return cleaned or "upload"


def save_collection_upload(root: Path, corpus: tuple[str, bytes], queries: tuple[str, bytes] | None,
                           qrels: tuple[str, bytes] | None, *, name: str = "") -> Path:
    """Write an uploaded collection under its name (module docstring) and return its folder.

    Each part is checked against the upload limit before anything is written (a :class:`DataFormatError`
    naming the file and the limit)."""
    parts = {"corpus": corpus, "queries": queries, "qrels": qrels}
    for part in parts.values():
        if part is not None:
            check_upload(*part)  # a huge upload is refused before it is written or parsed
    files = {}
    for part, given in parts.items():
        if given is None:
            continue
        target = ("corpus.csv" if given[0].lower().endswith(".csv") else "corpus.jsonl") if part == "corpus" else \
            {"queries": "queries.jsonl", "qrels": "qrels.txt"}[part]
        files[part] = {"name": re.split(r"[/\\]", given[0])[-1], "file": target,
                       "sha256": hashlib.sha256(given[1]).hexdigest()}
    text = "".join(f"{part}:{files[part]['sha256']}\n" for part in ("corpus", "queries", "qrels") if part in files)
    digest = hashlib.sha256(text.encode()).hexdigest()
    label = upload_name(corpus[0], name)
    folder = root / f"collection-{digest[:12]}" / label
    folder.mkdir(parents=True, exist_ok=True)
    for part, given in parts.items():
        if given is not None:
            (folder / files[part]["file"]).write_bytes(given[1])
    meta = {"name": label, "sha256": digest, "files": files,
            "uploaded": datetime.now(UTC).isoformat(timespec="seconds")}
    _write_json(folder / UPLOAD_META, meta)
    return folder


#: Bytes the audit holds per request kept (its served line, ids and per-query rows), for the memory budget: a
#: generous bound on what :func:`~fairrag_core.data.traces.read_traces` keeps of one LlamaIndex request.
_REQUEST_BYTES = 16_000
_TOO_MANY = ("audit it with the command line (python -m fairrag_core audit-log FILE), or point the deployment's "
             "exporter at `fairrag collect` and audit the store")


def slim_trace_upload(name: str, stream: BinaryIO, root: Path) -> Path | None:
    """An uploaded OTLP JSON Lines trace export (gzipped too), read from ``stream`` one line at a time, each export
    cut to what the audit reads (:func:`~fairrag_core.data.traces.slim_export`: ids, names, kinds, times, the trace
    attributes; no document texts, no prompts), written to ``root/served-<sha256 of what is kept>/<name>``. Memory
    holds one line and what is kept, not the texts. The limit is the requests kept
    (:data:`~fairrag_core.checks.MAX_UPLOAD_REQUESTS`, and the memory budget), each line at most
    ``$FAIRRAG_MAX_LINE_MB``. None, with ``stream`` rewound, when the file is no JSON Lines trace export (a RAG log, a
    run, a pretty-printed or protobuf export): the caller saves it as sent, under the byte limit.

    Raises:
        DataFormatError: a line that is no JSON or no OTLP export, a line too long, or more requests than the limit
            (the message names the fix: the command line, or ``collect``).
    """
    stream.seek(0)
    reader = gzip.GzipFile(fileobj=stream) if name.lower().endswith(".gz") else stream
    longest = max_line_bytes()
    try:
        first = reader.readline(longest + 1)
        obj = json.loads(first) if first.strip() else None
    except (OSError, ValueError, RecursionError):
        obj = None
    if not (isinstance(obj, dict) and "resourceSpans" in obj and is_otlp_export(obj)):
        stream.seek(0)
        return None
    root.mkdir(parents=True, exist_ok=True)
    draft = root / f".slim-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
    digest, traces, line = hashlib.sha256(), set(), 0
    try:
        with open(draft, "wb") as out:
            text = first
            while text:
                line += 1
                if len(text) > longest:
                    raise DataFormatError(f"line {line} is over $FAIRRAG_MAX_LINE_MB ({longest:,} bytes); "
                                          f"{_TOO_MANY}", path=name)
                if text.strip():
                    try:
                        export = json.loads(text)
                    except (ValueError, RecursionError) as err:
                        raise DataFormatError(f"line {line} is not JSON ({str(err)[:80]}); upload the export "
                                              "as the collector's file exporter writes it", path=name) from None
                    if isinstance(export, dict) and "resourceSpans" in export:  # logs or metrics: not kept
                        kept = slim_export(export)
                        traces.update(span.get("traceId") for rs in kept["resourceSpans"]
                                      for scope in rs["scopeSpans"] for span in scope["spans"])
                        if len(traces) > MAX_UPLOAD_REQUESTS:
                            raise DataFormatError(f"more than {MAX_UPLOAD_REQUESTS:,} requests (traces), the most "
                                                  f"the app audits from an upload; {_TOO_MANY}", path=name)
                        written = (json.dumps(kept, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
                        digest.update(written)
                        out.write(written)
                text = reader.readline(longest + 1)
        check_memory(len(traces) * _REQUEST_BYTES, f"an upload of {len(traces):,} requests", fix=_TOO_MANY)
        target = root / f"served-{digest.hexdigest()[:10]}" / _unzipped(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(draft, target)
        return target
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        raise DataFormatError(f"cannot read the upload ({err}); upload it again", path=name) from None
    finally:
        draft.unlink(missing_ok=True)


def _unzipped(name: str) -> str:
    """The upload's safe name without ``.gz`` (what is kept is written plain)."""
    from ..views.served import safe_upload_name

    safe = safe_upload_name(name)
    return safe[:-3] if safe.lower().endswith(".gz") else safe


def owner_index(root: Path, owner: str) -> Path:
    """Where the uploads of ``owner`` are listed (named by a hash of the key, so the key is written nowhere)."""
    return root / "owners" / f"{hashlib.sha256(owner.encode()).hexdigest()[:32]}.json"


def _write_json(path: Path, data: dict) -> None:
    """Write ``data`` whole: to a draft first, then renamed over ``path`` (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    draft.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(draft, path)


def _read_index(root: Path, owner: str) -> dict:
    try:
        data = json.loads(owner_index(root, owner).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def remember_collection(root: Path, owner: str, folder: str | os.PathLike, *, selected: bool = True) -> None:
    """Keep ``folder`` as the collection ``owner`` uploaded (and whether the sidebar has it selected)."""
    index = _read_index(root, owner)
    index.update(collection=str(folder), collection_selected=bool(selected))
    _write_json(owner_index(root, owner), index)


def select_collection(root: Path, owner: str, selected: bool) -> None:
    """Record whether the sidebar has ``owner``'s uploaded collection selected (nothing to do without one)."""
    index = _read_index(root, owner)
    if index.get("collection") and bool(index.get("collection_selected")) != selected:
        index["collection_selected"] = selected
        _write_json(owner_index(root, owner), index)


def remember_served(root: Path, owner: str, item: InputIdentity) -> None:
    """Keep a log or run upload for ``owner`` (newest first, :data:`MAX_SERVED` at most, no repeats)."""
    index = _read_index(root, owner)
    served = [s for s in index.get("served", []) if isinstance(s, dict) and s.get("path") != item.path]
    index["served"] = [item.to_dict(), *served][:MAX_SERVED]
    _write_json(owner_index(root, owner), index)


@dataclass(frozen=True)
class KeptUploads:
    """What a browser uploaded earlier: its collection (a folder; None when none or gone), whether the sidebar
    had it selected, and its log and run uploads (newest first, files that still exist)."""

    collection: str | None = None
    collection_selected: bool = False
    served: tuple[InputIdentity, ...] = field(default=())

    @property
    def collection_identity(self) -> InputIdentity | None:
        return collection_identity(self.collection) if self.collection else None


def kept_uploads(root: Path, owner: str) -> KeptUploads:
    """The uploads listed for ``owner`` whose files still exist."""
    index = _read_index(root, owner)
    folder = index.get("collection")
    if not (isinstance(folder, str) and Path(folder).is_dir()):
        folder = None
    served = []
    for item in index.get("served", []):
        try:
            found = InputIdentity.from_dict(item)
        except TypeError:
            continue
        if found.path and Path(found.path).is_file():
            served.append(found)
    return KeptUploads(folder, bool(index.get("collection_selected")) and folder is not None, tuple(served))
