"""A SQLite file shared by every thread and process: the answer/judgement cache and the app's job table.

Open late, close early: each operation opens its own connection and closes it (a handle held for a process's
life locks others out). The file is in WAL mode (readers never wait for a writer; with ``synchronous=NORMAL`` a
killed process loses nothing committed), and writes take the write lock up front (``BEGIN IMMEDIATE``), so two
writers queue instead of deadlocking. A writer that waits longer than ``timeout`` gets
:class:`~fairrag_core.errors.StoreBusyError`; any other SQLite failure is a
:class:`~fairrag_core.errors.StoreError` whose message names the file and the fix.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import StoreBusyError, StoreError, StoreFullError, StoreReadOnlyError

__all__ = ["SqliteFile"]

T = TypeVar("T")


class SqliteFile:
    """Base of a store kept in one SQLite file: short-lived connections, WAL, queued writers, clear errors.

    Subclasses give ``schema`` (``CREATE … IF NOT EXISTS`` statements, run once per object), ``what`` (the file's
    name for a reader) and ``elsewhere`` (how to point it at another file), and two messages: :meth:`_busy_message`
    and :meth:`_broken_message` (:meth:`_open_message` is made of ``what`` and ``elsewhere``). A read-only file or
    folder and a full disk get their own errors (:class:`~fairrag_core.errors.StoreReadOnlyError`,
    :class:`~fairrag_core.errors.StoreFullError`), never the "delete it" advice meant for a damaged file.
    """

    schema: tuple[str, ...] = ()
    what = "the file"
    elsewhere = "point it to another file"

    def __init__(self, path: str | os.PathLike, *, timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        self._ready = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    # -- messages (what the file is and how to get past it) ------------------------------------------------------
    def _open_message(self, err: Exception) -> str:
        return f"cannot open {self.what} {self.path} ({err}); {self.elsewhere}"

    def _busy_message(self) -> str:
        raise NotImplementedError

    def _broken_message(self, text: str) -> str:
        raise NotImplementedError

    def _error(self, err: Exception) -> StoreError:
        text = str(err)
        if "locked" in text or "busy" in text:
            return StoreBusyError(self._busy_message())
        lowered = text.lower()
        if ("disk is full" in lowered or "no space left" in lowered or getattr(err, "errno", None) == 28
                or self._disk_full()):  # SQLite may only say "disk I/O error" or "unable to open database file"
            return StoreFullError(f"the disk holding {self.what} {self.path} is full ({text}): free space there, or "
                                  f"{self.elsewhere}")
        if ("readonly" in lowered or "read-only" in lowered or "permission denied" in lowered
                or getattr(err, "errno", None) in (1, 13, 30)):
            return StoreReadOnlyError(f"{self.what} {self.path} cannot be written here ({text}): make it and its "
                                      f"folder writable, or {self.elsewhere}")
        return StoreError(self._broken_message(text))

    def _disk_full(self) -> bool:
        """Whether the folder of the file has (almost) no free space left."""
        try:
            stats = os.statvfs(self.path.parent)
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < 64 * 1024

    # -- connections ----------------------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as err:
            problem = self._error(err)
            raise (problem if type(problem) is not StoreError else StoreError(self._open_message(err))) from None
        try:
            con.execute("PRAGMA synchronous=NORMAL")  # with WAL: safe against a killed process
            if not self._ready:
                if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    con.execute("PRAGMA journal_mode=WAL")  # a property of the file: set once, kept
                for statement in self.schema:
                    con.execute(statement)
                self._ready = True
        except sqlite3.Error as err:
            con.close()
            raise self._error(err) from None
        return con

    def _run(self, work: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        """``work(connection)`` on a fresh connection (in one ``BEGIN IMMEDIATE`` transaction when ``write``)."""
        con = self._connect()
        try:
            if write:
                con.execute("BEGIN IMMEDIATE")  # take the write lock now: no deadlock with another writer
                try:
                    out = work(con)
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
                return out
            return work(con)
        except sqlite3.Error as err:
            raise self._error(err) from None
        finally:
            con.close()
