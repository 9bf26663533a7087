"""A keyed store of array folders on disk that every process shares: written atomically, opened memory-mapped.

The mechanism behind the retrieval indexes (:mod:`fairrag_core.retrieval.index_store`: BM25 arrays, dense
embeddings, HNSW graphs) and the parsed-corpus cache (:mod:`fairrag_core.data.collection_cache`). It lives in the
data layer so that the corpus loader can use it without importing the retrieval layer; the module docstring of
:mod:`fairrag_core.retrieval.index_store` says how entries are keyed, written and read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..errors import InvalidParameterError
from .disk_cache import cache_key, cache_root

__all__ = ["IndexStore", "IndexEntry", "default_index_store", "default_index_root", "content_sha256",
           "package_version", "INDEX_ENV", "MANIFEST", "FORMAT"]

#: Environment variable naming the index folder, or ``off`` to keep indexes in memory only.
INDEX_ENV = "FAIRRAG_INDEX"
_OFF = {"0", "off", "false", "no", "none", "disabled"}
#: The manifest's file name; a folder without it is not an index.
MANIFEST = "manifest.json"
#: Layout version, part of every key: a new layout builds new indexes instead of misreading old ones.
FORMAT = 1
_TMP = ".tmp-"


def default_index_root() -> Path | None:
    """The index folder (``None`` when ``$FAIRRAG_INDEX`` turns the store off); read when called."""
    env = os.environ.get(INDEX_ENV, "").strip()
    if env.lower() in _OFF and env:
        return None
    return Path(env).expanduser() if env else cache_root() / "indexes"


def default_index_store() -> IndexStore | None:
    """The store at :func:`default_index_root` (``None`` when turned off)."""
    root = default_index_root()
    return None if root is None else IndexStore(root)


def content_sha256(texts: Sequence[str] | Sequence[Sequence[str]]) -> str:
    """SHA-256 of the indexed texts, each one length-prefixed (so ``["ab", "c"]`` ≠ ``["a", "bc"]``); a pre-tokenised
    document counts as its tokens in JSON. Equal texts in the same order, equal hash, wherever they came from.

    >>> content_sha256(["ab", "c"]) != content_sha256(["a", "bc"])
    True
    """
    digest = hashlib.sha256()
    for text in texts:
        data = (text if isinstance(text, str) else json.dumps(list(text), ensure_ascii=False)).encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def package_version() -> str:
    """The ``fairrag-core`` version, as every record names it (:func:`fairrag_core.record.software`: the installed
    distribution's, else a checkout's ``pyproject.toml``)."""
    from ..record import software

    return software()["version"]


@dataclass(frozen=True)
class IndexEntry:
    """One stored index: its key, where it is and what its manifest says."""

    key: str
    path: Path
    manifest: dict

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", "?"))

    @property
    def collection(self) -> str:
        return str(self.manifest.get("collection") or "")

    @property
    def bytes(self) -> int:
        return int(self.manifest.get("bytes", 0))

    @property
    def built(self) -> str:
        return str(self.manifest.get("built", ""))

    def row(self) -> dict:
        """The fields ``index list`` prints."""
        m = self.manifest
        return {"key": self.key, "kind": self.kind, "collection": self.collection, "documents": m.get("n_docs"),
                "bytes": self.bytes, "built": self.built, "build_seconds": m.get("build_seconds"),
                "ann": m.get("ann"), "recall": m.get("recall"), "recall_k": m.get("recall_k"),
                "model": m.get("model") or m.get("tokenizer"), "version": m.get("version"), "path": str(self.path)}


class IndexStore:
    """Index folders under ``root`` (see the module docstring): look one up by key, save one atomically, list, clear."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root).expanduser()

    @staticmethod
    def key(kind: str, *parts: object) -> str:
        """The key of an index of ``kind`` built from ``parts`` (content hash, tokenizer or model, parameters)."""
        return cache_key("index", FORMAT, kind, *parts)

    def path(self, key: str) -> Path:
        return self.root / key

    def manifest(self, key: str) -> dict | None:
        """The manifest of the index ``key``, or ``None`` when it is not (completely) there."""
        try:
            return json.loads((self.path(key) / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def load(self, key: str) -> tuple[dict[str, np.ndarray], dict] | None:
        """The arrays of the index ``key``, memory-mapped read-only, and its manifest; ``None`` when absent or
        unreadable (a broken index is rebuilt, never trusted)."""
        manifest = self.manifest(key)
        if manifest is None:
            return None
        folder = self.path(key)
        try:
            arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)
                      for name in manifest.get("arrays", [])}
        except (OSError, ValueError):
            return None
        return arrays, manifest

    def save(self, key: str, arrays: Mapping[str, np.ndarray], manifest: Mapping[str, object], *,
             extra: Mapping[str, Callable[[Path], None]] | None = None) -> Path:
        """Write the index ``key`` (its ``arrays`` as ``.npy``, files that ``extra`` writers make from a path, then
        the manifest) into a temporary folder and rename it into place. When another process got there first, its
        index stays and this copy is dropped. Returns the index folder."""
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.path(key)
        tmp = self.root / f"{_TMP}{key[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            for name, array in arrays.items():
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
            for name, write in (extra or {}).items():
                write(tmp / name)
            size = sum(p.stat().st_size for p in tmp.iterdir())
            full = {**manifest, "key": key, "format": FORMAT, "arrays": list(arrays), "files": list(extra or {}),
                    "bytes": size, "built": datetime.now(UTC).isoformat(timespec="seconds"),
                    "version": package_version()}
            (tmp / MANIFEST).write_text(json.dumps(full, indent=1), encoding="utf-8")
            try:
                os.rename(tmp, final)
            except OSError:
                if self.manifest(key) is None:  # not a lost race: a real failure (permissions, full disk…)
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return final

    def try_save(self, key: str, arrays: Mapping[str, np.ndarray], manifest: Mapping[str, object], *,
                 extra: Mapping[str, Callable[[Path], None]] | None = None) -> bool:
        """:meth:`save`, or a warning when the folder cannot be written (read-only, full, another machine's path):
        the caller then keeps the index it built in memory. Returns whether it was saved."""
        try:
            self.save(key, arrays, manifest, extra=extra)
        except OSError as err:
            warnings.warn(f"the retrieval index was not stored in {self.root} ({err.strerror or err}); it is kept in "
                          f"memory for this process. Point ${INDEX_ENV} to a writable folder, or set {INDEX_ENV}=off",
                          RuntimeWarning, stacklevel=3)
            return False
        return True

    def entries(self) -> list[IndexEntry]:
        """Every complete index, oldest first."""
        if not self.root.is_dir():
            return []
        found = []
        for folder in self.root.iterdir():
            if folder.name.startswith(_TMP) or not folder.is_dir():
                continue
            manifest = self.manifest(folder.name)
            if manifest is not None:
                found.append(IndexEntry(folder.name, folder, manifest))
        return sorted(found, key=lambda e: (e.built, e.key))

    def resolve(self, prefix: str) -> IndexEntry:
        """The one index whose key starts with ``prefix`` (as ``index list`` prints it), or raise naming the fix."""
        prefix = prefix.strip().lower()
        matches = [e for e in self.entries() if prefix and e.key.startswith(prefix)]
        if len(matches) != 1:
            what = "no index" if not matches else f"{len(matches)} indexes"
            raise InvalidParameterError(f"{what} under {self.root} has a key starting with {prefix!r}; give a key "
                                        "as `python -m fairrag_core index list` prints it")
        return matches[0]

    def remove(self, key: str) -> None:
        """Delete one index: renamed out of the way first (readers that opened it keep their mapped pages)."""
        trash = self.root / f"{_TMP}del-{key[:16]}-{uuid.uuid4().hex[:8]}"
        os.rename(self.path(key), trash)
        shutil.rmtree(trash, ignore_errors=True)

    def clear(self) -> int:
        """Delete every index and leftover temporary folder (of builds that died); returns how many indexes."""
        removed = 0
        for entry in self.entries():
            self.remove(entry.key)
            removed += 1
        if self.root.is_dir():  # folders of builds that died (a build in progress is younger than an hour)
            for leftover in self.root.glob(f"{_TMP}*"):
                if time.time() - leftover.stat().st_mtime > 3600:
                    shutil.rmtree(leftover, ignore_errors=True)
        return removed

