"""Uploads keep their name, and their owner keeps them across a browser reload.

* A collection upload is written to ``<root>/collection-<sha256[:12]>/<name>/`` (the parts as
  :func:`fairrag_core.load_collection` reads them, ``corpus.jsonl|csv``, ``queries.jsonl``, ``qrels.txt``), with
  ``upload.json`` beside them: the upload's name, the collection's sha256 (:mod:`.identity`) and each file's own
  name and sha256. The folder's last part is the name, so the loaded collection is called ``my-news``, not
  ``upload-a4697d23cc``; the same files under the same name land in the same folder. The name is the one the
  uploader gives, else the corpus file's stem — unless that stem is the generic ``corpus`` (:data:`GENERIC_STEMS`),
  which names no collection: then the sidebar asks for a name, and without one the upload is called
  ``corpus-<sha256[:8]>``, so two uploads of different ``corpus.jsonl`` files never share a name. A collection
  folder uploaded as a ``.zip`` (:func:`unzip_collection`) is named after the folder it holds, else the zip.
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
import io
import json
import os
import re
import secrets
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from fairrag_core.checks import MAX_UPLOAD_REQUESTS, check_memory, max_line_bytes, max_upload_bytes
from fairrag_core.data.loaders import check_upload
from fairrag_core.data.traces import is_otlp_export, slim_export
from fairrag_core.errors import DataFormatError

from .identity import COLLECTION_PARTS, UPLOAD_META, InputIdentity, collection_identity

__all__ = ["upload_name", "suggested_name", "GENERIC_STEMS", "unzip_collection", "save_collection_upload",
           "remember_collection", "remember_served", "select_collection", "KeptUploads",
           "kept_uploads", "owner_index", "MAX_SERVED", "slim_trace_upload", "safe_upload_name"]

#: How many log and run uploads a browser's index keeps (newest first).
MAX_SERVED = 10
#: File stems that name a collection's part, not the collection: an upload called so is asked for a name.
GENERIC_STEMS = frozenset(names[0].split(".")[0] for _, names in COLLECTION_PARTS) | {"upload"}


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


def suggested_name(file_name: str) -> str:
    """The name the sidebar's name field starts with for an upload of ``file_name``: its stem
    (:func:`upload_name`), or "" when that is generic (:data:`GENERIC_STEMS`: the field then asks for one).

    >>> suggested_name("debian-packages.jsonl"), suggested_name("corpus.jsonl"), suggested_name("Corpus.CSV")
    ('debian-packages', '', '')
    """
    stem = upload_name(file_name)
    return "" if stem.lower() in GENERIC_STEMS else stem


def unzip_collection(file_name: str, data: bytes) -> tuple[str, dict[str, tuple[str, bytes]]]:
    """A collection folder uploaded as a zip: its name (the folder holding the corpus inside the zip, else the
    zip's stem; "" when generic) and its parts by part name (``corpus``, ``queries``, ``qrels``: each
    ``(its name in the zip, its bytes)``, as :func:`save_collection_upload` takes them). The parts are found by
    the names :func:`fairrag_core.load_collection` looks for, in the corpus's folder; each is read up to the upload
    limit (``$FAIRRAG_MAX_UPLOAD_MB``), whatever size the zip claims.

    Raises:
        DataFormatError: no zip, no corpus in it, more than one corpus, a part over the upload limit, or
            ``aspect_qrels.tsv`` (uploads take corpus, queries and qrels; load the folder with the CLI).
    """
    limit = max_upload_bytes()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir() and "__MACOSX" not in m.filename]
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise DataFormatError(f"not a readable zip ({err}); zip the collection's folder again", path=file_name) \
            from None
    wanted = {name: part for part, names in COLLECTION_PARTS for name in names}
    corpora = [m for m in members if m.filename.rsplit("/", 1)[-1] in ("corpus.jsonl", "corpus.csv")]
    if len(corpora) != 1:
        found = ", ".join(m.filename for m in corpora[:3])
        raise DataFormatError(("no corpus.jsonl or corpus.csv in the zip" if not corpora else
                               f"more than one corpus in the zip ({found})") + "; zip one collection's folder",
                              path=file_name)
    folder = corpora[0].filename.rpartition("/")[0]
    parts: dict[str, tuple[str, bytes]] = {}
    for member in members:
        where, _, base = member.filename.rpartition("/")
        if where != folder or base not in wanted:
            continue
        if wanted[base] == "aspect_qrels":
            raise DataFormatError("aspect_qrels.tsv is not read from uploads; load this collection from its "
                                  "folder (the CLI's --collection PATH, or the server's data folder)", path=file_name)
        with archive.open(member) as stream:
            content = stream.read(limit + 1)
        if len(content) > limit:
            raise DataFormatError(f"{member.filename} is over the {limit / 1e6:,.0f} MB the app accepts; put the "
                                  "collection in the server's data folder or load it with the CLI", path=file_name)
        parts[wanted[base]] = (base, content)
    stem = folder.rsplit("/", 1)[-1] if folder else re.split(r"[/\\]", file_name)[-1]
    return suggested_name(stem), parts


def save_collection_upload(root: Path, corpus: tuple[str, bytes], queries: tuple[str, bytes] | None,
                           qrels: tuple[str, bytes] | None, *, name: str = "") -> Path:
    """Write an uploaded collection under its name (module docstring: ``name``, else the corpus file's stem, else
    ``corpus-<sha256[:8]>``) and return its folder.

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
    if not name.strip() and label.lower() in GENERIC_STEMS:  # "corpus" names no collection: its content does
        label = f"{label}-{digest[:8]}"
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


def safe_upload_name(name: str) -> str:
    """The browser's file name made safe to write: its last path part, characters other than letters, digits,
    ``.``, ``_`` and ``-`` replaced by ``_``, at most 120 characters (the end, with the suffix, is kept), never
    starting with a dot (``upload`` is put in front); ``upload.jsonl`` when nothing is left.

    >>> safe_upload_name("../../etc/run.tsv.gz"), safe_upload_name(".."), safe_upload_name("my log (1).jsonl")
    ('run.tsv.gz', 'upload.jsonl', 'my_log__1_.jsonl')
    """
    last = re.split(r"[/\\]", name)[-1]
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", last)[-120:]
    if not cleaned.strip("._-"):
        return "upload.jsonl"
    return "upload" + cleaned if cleaned.startswith(".") else cleaned


def _unzipped(name: str) -> str:
    """The upload's safe name without ``.gz`` (what is kept is written plain)."""
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
