"""Uploads keep their name, and their owner keeps them across a browser reload.

* A collection upload is written to ``<root>/collection-<sha256[:12]>/<name>/`` (the parts as
  :func:`fairrag_core.load_collection` reads them, ``corpus.jsonl|csv``, ``queries.jsonl``, ``qrels.txt``), with
  ``upload.json`` beside them: the upload's name, the collection's sha256 (:mod:`.identity`) and each file's own
  name and sha256. The folder's last part is the name, so the loaded collection is called ``my-news``, not
  ``upload-a4697d23cc``; the same files under the same name land in the same folder.
* A log or run upload is written by :func:`fairrag_studio.views.served.save_served_upload` under its own name.
* Each browser's uploads are listed in ``<root>/owners/<sha256 of its owner key>.json`` (the key itself is not
  written anywhere): its collection upload (and whether the sidebar had it selected) and its log and run uploads,
  newest first. A new session with the same ``?owner=`` key (a reload) reads it back, so the sidebar still shows
  the uploaded collection and the Audit page still offers the uploaded log or run. Another browser has another
  key and never sees them. Entries whose files are gone are left out.

Pure: no Streamlit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from fairrag_core.data.loaders import check_upload

from .identity import UPLOAD_META, InputIdentity, collection_identity

__all__ = ["upload_name", "save_collection_upload", "remember_collection", "remember_served", "select_collection",
           "KeptUploads", "kept_uploads", "owner_index", "MAX_SERVED"]

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
