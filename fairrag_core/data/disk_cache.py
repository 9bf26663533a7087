"""An on-disk cache of model outputs that every process shares: answers, NLI judgements, anything JSON.

Generating an answer or judging a (document, answer) pair costs seconds on a CPU, and the same ones come back:
the next sweep, the app after a restart, a second process, the class after the teacher ran ``warm`` the night
before. :class:`DiskCache` keeps them in one SQLite file, keyed by a SHA-256 of everything that determines the
output (the caller builds the key: model identity with its weights hash, decoding settings, prompt; see
:mod:`fairrag_core.rag.generation` and :mod:`fairrag_core.rag.attribution`).

Why SQLite and not DuckDB (which holds the run store): this is a key-value table read and written a few rows at a
time by several processes at once. SQLite in WAL mode lets any number of processes read while one writes (a
DuckDB file admits one process at a time), waits for a writer itself (``busy_timeout``), commits a few rows in
well under a millisecond, and ships with Python. Every operation opens a connection and closes it (the same
rule as the run store); writes are ``BEGIN IMMEDIATE`` transactions, so a process killed mid-write leaves the
file as it was before. WAL needs a local file system (not NFS).

Location: ``$FAIRRAG_CACHE_DB`` (a file), else ``cache.sqlite`` in ``$FAIRRAG_CACHE`` or ``~/.cache/fairrag``.
``FAIRRAG_CACHE_DB=off`` turns the disk cache off (answers are then cached in memory only, per process).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..text import human_bytes
from .sqlite_file import SqliteFile

__all__ = ["DiskCache", "CacheStats", "cache_key", "cache_root", "default_cache_path", "default_disk_cache",
           "CACHE_ENV"]

#: Environment variable naming the cache file, or ``off`` to run without a disk cache.
CACHE_ENV = "FAIRRAG_CACHE_DB"
_OFF = {"0", "off", "false", "no", "none", "disabled"}
_CHUNK = 500  # keys per SELECT … IN (…): well under SQLite's limit on host parameters
_SCHEMA = ("CREATE TABLE IF NOT EXISTS entries (kind TEXT NOT NULL, key TEXT NOT NULL, model TEXT NOT NULL, "
           "value TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (kind, key)) WITHOUT ROWID")


def cache_key(*parts: Any) -> str:
    """SHA-256 (hex) of ``parts`` as canonical JSON: equal parts, equal key; any difference, another key.

    >>> cache_key("answer", "m", [1, 2]) == cache_key("answer", "m", (1, 2))
    True
    >>> len(cache_key("x"))
    64
    """
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_root() -> Path:
    """The folder of every persistent cache: ``$FAIRRAG_CACHE``, else ``~/.cache/fairrag`` (read when called)."""
    root = os.environ.get("FAIRRAG_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "fairrag"


def default_cache_path() -> Path | None:
    """The cache file (``None`` when ``$FAIRRAG_CACHE_DB`` turns it off)."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if env.lower() in _OFF:
        return None
    if env:
        return Path(env).expanduser()
    return cache_root() / "cache.sqlite"


_shared: dict[Path, DiskCache] = {}
_shared_lock = threading.Lock()


def default_disk_cache() -> DiskCache | None:
    """The process's cache at :func:`default_cache_path` (``None`` when turned off); read when called."""
    path = default_cache_path()
    if path is None:
        return None
    with _shared_lock:
        return _shared.setdefault(path, DiskCache(path))


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds: entries per kind and per (kind, model), and its size on disk (file + WAL)."""

    path: Path
    entries: dict[str, int]
    by_model: dict[tuple[str, str], int]
    bytes: int

    @property
    def total(self) -> int:
        return sum(self.entries.values())

    def describe(self) -> str:
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(self.entries.items())) or "empty"
        return f"{self.path}: {kinds}; {human_bytes(self.bytes)} on disk"


class DiskCache(SqliteFile):
    """JSON values under ``(kind, key)`` in a SQLite file shared by every process (see the module docstring).

    ``timeout``: seconds a write waits for another process's write before :class:`StoreBusyError`.
    """

    schema = (_SCHEMA,)
    what = "the answer cache"
    elsewhere = f"point ${CACHE_ENV} to a writable file, or set {CACHE_ENV}=off to run without it"

    def _busy_message(self) -> str:
        return (f"the answer cache {self.path} stayed locked by another process's write for more than "
                f"{self.timeout:g} s; wait for it, or set {CACHE_ENV} to another file (or {CACHE_ENV}=off) for this "
                "run")

    def _broken_message(self, text: str) -> str:
        return (f"the answer cache {self.path} cannot be used ({text}). It holds only cached answers and "
                f"judgements: delete it to start a new one, or set {CACHE_ENV}=off")

    # -- operations -------------------------------------------------------------------------------------------
    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, Any]:
        """The stored values of those ``keys`` that are in the cache (missing keys are absent)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}

        def read(con):
            found = {}
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start:start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for key, value in con.execute(f"SELECT key, value FROM entries WHERE kind = ? AND key IN ({marks})",
                                              [kind, *chunk]):
                    found[key] = json.loads(value)
            return found

        return self._run(read)

    def put_many(self, kind: str, items: Mapping[str, Any] | Iterable[tuple[str, Any]], *, model: str) -> int:
        """Store values (JSON-serialisable) under their keys, made by ``model`` (its identity); keys already there
        keep their first value. Returns how many were new."""
        rows = [(kind, key, model, json.dumps(value, allow_nan=True), time.time())
                for key, value in (items.items() if isinstance(items, Mapping) else items)]
        if not rows:
            return 0

        def write(con):
            before = con.total_changes
            con.executemany("INSERT OR IGNORE INTO entries VALUES (?, ?, ?, ?, ?)", rows)
            return con.total_changes - before

        return self._run(write, write=True)

    def model_of(self, kind: str, key: str) -> str | None:
        """The identity of the model that made the entry (``None`` when absent)."""
        found = self._run(lambda con: con.execute("SELECT model FROM entries WHERE kind = ? AND key = ?",
                                                  [kind, key]).fetchone())
        return found[0] if found else None

    def stats(self) -> CacheStats:
        """Entries per kind and per (kind, model), and the bytes of the file and its WAL."""
        rows = self._run(lambda con: con.execute("SELECT kind, model, count(*) FROM entries GROUP BY kind, model")
                         .fetchall())
        entries: dict[str, int] = {}
        for kind, _, n in rows:
            entries[kind] = entries.get(kind, 0) + n
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return CacheStats(self.path, entries, {(k, m): n for k, m, n in rows}, size)

    def clear(self, kind: str | None = None) -> int:
        """Delete every entry (of ``kind``, when given); returns how many."""
        def wipe(con):
            cursor = con.execute("DELETE FROM entries" + (" WHERE kind = ?" if kind else ""), [kind] if kind else [])
            return cursor.rowcount

        removed = self._run(wipe, write=True)
        self._run(lambda con: con.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        return removed
