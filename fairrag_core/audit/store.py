"""Run store: an embedded DuckDB file holding every saved run (its record, tidy rows and per-document details).

A run can be listed, reopened, compared and reproduced from its :class:`~fairrag_core.record.RunRecord`. The default
file is ``$FAIRRAG_RUNS`` or ``~/.cache/fairrag/runs.duckdb``. Rows live in one long table keyed by
``run_id``, so runs of different kinds share a schema (missing columns are NULL).

Several processes share one store (the app, a CLI sweep, a second user's app). DuckDB lets one process at a
time open a file, so every operation opens the file late and closes it early: a connection lives for one save,
one list or one load (about 50 ms), never for the life of a :class:`RunStore`. An operation that finds the file
held by another process waits for it with growing pauses (up to ``timeout`` seconds, a log line after the first
second) and then raises :class:`~fairrag_core.errors.StoreBusyError` naming that process, never DuckDB's raw
lock error. Threads of one process (the app's sessions and background jobs) share DuckDB's in-process database,
where two threads opening, creating and writing at once fail (a catalog write-write conflict, or a missing pandas
scan while another thread closes the database), so an operation also takes this process's lock for the store file:
the threads of one process take turns, about 50 ms each. A save is one transaction that writes the run's rows first
and its ``runs`` line last, so a process killed mid-save leaves nothing listed (DuckDB drops the uncommitted
transaction when the file is next opened).

A run may name its ``owner``: the app saves each browser's runs under that browser's key, so that an app served to
a network lists and reopens only a browser's own runs (:meth:`RunStore.list`, :meth:`RunStore.load` with
``owner=``); the CLI saves without one (NULL) and lists everything. Stores made before the column existed gain it
(NULL for their runs) the first time this version opens them.

Failures are :class:`~fairrag_core.errors.StoreError` subclasses whose message names the real fix: the file or
its folder is read-only (:class:`StoreReadOnlyError`), the disk is full (:class:`StoreFullError`), the file is
not a readable store (:class:`StoreDamagedError`), or another process holds it
(:class:`~fairrag_core.errors.StoreBusyError`). The way around all of them is the same knob: another store, with
``--store PATH`` (CLI) or ``$FAIRRAG_RUNS``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ..errors import (
    InvalidParameterError,
    StoreBusyError,
    StoreDamagedError,
    StoreError,
    StoreFullError,
    StoreReadOnlyError,
)
from ..record import RunKind, RunRecord, SweepRun
from ..settings import Settings

__all__ = ["RunStore", "default_store_path", "DEFAULT_TIMEOUT", "StoreReadOnlyError", "StoreFullError",
           "StoreDamagedError"]

#: Seconds an operation waits for another process to release the store before it gives up.
DEFAULT_TIMEOUT = 120.0

_log = logging.getLogger(__name__)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (run_id VARCHAR PRIMARY KEY, created TIMESTAMP, kind VARCHAR, "
    "collection VARCHAR, label VARCHAR, config JSON, n_rows INTEGER, owner VARCHAR)",
    "CREATE TABLE IF NOT EXISTS run_rows (run_id VARCHAR, row_index INTEGER, data JSON)",
    # Optional second table per run (e.g. per-document exposure behind an audit's ledger).
    "CREATE TABLE IF NOT EXISTS run_details (run_id VARCHAR, row_index INTEGER, data JSON)",
)
_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.*?) \(PID (?P<pid>\d+)\)")
_FILE_NAMED = re.compile(r'(?:Cannot open|Could not write|Could not read|Could not truncate|Could not sync) file '
                         r'"(?P<file>[^"]+)"')
# The operating system's codes for a read-only place and a full disk, and its words for them as DuckDB passes them on.
_READ_ONLY_CODES, _FULL_CODES = (errno.EACCES, errno.EPERM, errno.EROFS), (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY_WORDS, _FULL_WORDS = tuple(map(os.strerror, _READ_ONLY_CODES)), tuple(map(os.strerror, _FULL_CODES))
_OTHER_STORE = "save to another store with --store PATH or $FAIRRAG_RUNS"


_LOCKS: dict[str, threading.Lock] = {}  # one lock per store file, shared by every thread of this process
_LOCKS_GUARD = threading.Lock()


def upgrade_table(kind: RunKind, table: pd.DataFrame) -> pd.DataFrame:
    """A stored table in today's columns. EE-D is one number everywhere: ``ee_d`` the bias-corrected estimate with
    ``ee_d_low``/``ee_d_high``, ``ee_d_plug_in`` the plug-in. Log audits stored before kept the plug-in as ``ee_d``
    and the corrected estimate as ``ee_d_corrected`` (earlier still, its interval as ``ee_d_low``/``ee_d_high``);
    sweeps stored before kept only the plug-in, which stays their ``ee_d`` (named so in ``ee_d_plug_in``)."""
    if table.empty or "ee_d" not in table or "ee_d_plug_in" in table:
        return table
    out = table.copy()
    out["ee_d_plug_in"] = out["ee_d"]
    if kind is RunKind.AUDIT_LOG and "ee_d_corrected" in out:
        low = out.get("ee_d_corrected_low", out.get("ee_d_low"))
        high = out.get("ee_d_corrected_high", out.get("ee_d_high"))
        out["ee_d"] = out["ee_d_corrected"].fillna(out["ee_d_plug_in"])
        out["ee_d_low"], out["ee_d_high"] = low, high
        out = out.drop(columns=[c for c in ("ee_d_corrected", "ee_d_corrected_low", "ee_d_corrected_high",
                                            "ee_d_unbiased") if c in out])
    return out


def default_store_path() -> Path:
    env = os.environ.get("FAIRRAG_RUNS")
    return Path(env) if env else Path.home() / ".cache" / "fairrag" / "runs.duckdb"


def _cell(value):
    """JSON form of one table cell that ``to_json`` would get wrong (it writes ±inf as null)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if value is pd.NA or value is pd.NaT:
        return None
    raise TypeError(f"cannot store a value of type {type(value).__name__} in the run store")


def _records(table: pd.DataFrame) -> list[str]:
    """One JSON text per row; ±inf (the deterministic α) and NaN survive (DuckDB's JSON accepts them)."""
    return [json.dumps(row, default=_cell) for row in table.to_dict(orient="records")]


def _holder(err: Exception) -> str:
    """Who holds the file, from DuckDB's message (``PID 123, /usr/bin/python``), or ``another process``."""
    found = _HOLDER.search(str(err))
    return f"process {found['pid']} ({found['program']})" if found else "another process"


def _mount_of(path: Path) -> str:
    """``/dev/vda (mounted on /)``: the file system holding ``path`` (its mount point, and its device when
    ``/proc/mounts`` names it)."""
    place = Path(os.path.abspath(path))
    while not place.exists() and place != place.parent:
        place = place.parent
    mount = place
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    device = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 1 and fields[1] == str(mount):
                device = fields[0]  # the last line for a mount point is the one in effect
    return f"{device} (mounted on {mount})" if device else str(mount)


def _store_error(path: Path, text: str, *, doing: str, code: int | None = None) -> StoreError:
    """The :class:`StoreError` for a failure (DuckDB's message, or an OSError's ``errno``) with its real fix."""
    if code in _FULL_CODES or any(w in text for w in _FULL_WORDS):
        return StoreFullError(f"the disk holding the run store {path} is full ({text}): free space on "
                              f"{_mount_of(path)}, or {_OTHER_STORE}")
    if code in _READ_ONLY_CODES or any(w in text for w in _READ_ONLY_WORDS):
        named = _FILE_NAMED.search(text)
        blocked = Path(named["file"]) if named else path
        if blocked == path and path.exists():
            where = f"the file {path} is read-only here: make it writable (chmod u+w {path})"
        else:  # the store's folder: a new store, or DuckDB's write-ahead log beside it (runs.duckdb.wal)
            where = (f"its folder {path.parent} is read-only here (DuckDB writes {path.name} and {path.name}.wal "
                     f"in it): make the folder writable (chmod u+w {path.parent})")
        return StoreReadOnlyError(f"cannot {doing} the run store {path} ({text}): {where}, or {_OTHER_STORE}")
    return StoreDamagedError(f"cannot {doing} the run store {path}: {text}. If the file is damaged, move it aside "
                             "(the app and the CLI start a new one) or point $FAIRRAG_RUNS / --store elsewhere")


def _process_lock(path: Path) -> threading.Lock:
    """This process's lock for the store at ``path``."""
    key = os.path.abspath(path)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


def _insert_rows(con, table: str, run_id: str, records: list[str]) -> None:
    """Append ``records`` to ``table`` under ``run_id`` (one bulk insert from a registered frame)."""
    if not records:
        return
    frame = pd.DataFrame({"run_id": run_id, "row_index": range(len(records)), "data": records})
    con.register("_incoming", frame)
    try:
        con.execute(f"INSERT INTO {table} SELECT run_id, row_index, data::JSON FROM _incoming")
    finally:
        con.unregister("_incoming")


class RunStore:
    """Save, list, load and delete runs in a DuckDB file (created on first use), safely from several processes.

    ``timeout``: seconds an operation waits while another process holds the file (default
    :data:`DEFAULT_TIMEOUT`). The object holds no connection; ``with`` is kept for callers written when it did.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = Path(path) if path else default_store_path()
        self.timeout = float(timeout)
        self._schema_ready = False

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        """Nothing to release: every operation closes its own connection."""

    # -- connections ------------------------------------------------------------------------------------------
    def _open(self):
        """A fresh connection, waiting (with growing pauses) while another process holds the file."""
        import duckdb

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            if err.errno in _READ_ONLY_CODES + _FULL_CODES:
                raise _store_error(self.path, f"cannot create {err.filename or self.path.parent}: {err.strerror}",
                                   doing="create", code=err.errno) from None
            raise StoreError(f"cannot create the folder of the run store {self.path} ({err.strerror}); set "
                             "$FAIRRAG_RUNS or --store to a writable file") from None
        deadline = time.monotonic() + self.timeout
        pause, waited_loudly = 0.02, False
        while True:
            try:
                return duckdb.connect(str(self.path))
            except duckdb.Error as err:
                if "Could not set lock" not in str(err) and "Conflicting lock" not in str(err):
                    raise _store_error(self.path, str(err), doing="open") from None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreBusyError(
                        f"the run store {self.path} has been in use by {_holder(err)} for more than "
                        f"{self.timeout:g} s. Wait for that process to finish (a sweep or audit saving its run "
                        "takes seconds; an old app or Python session holding the file open needs to be closed), "
                        f"or {_OTHER_STORE}") from None
                _log.debug("run store %s held by %s; retrying in %.2f s", self.path, _holder(err), pause)
                if not waited_loudly and self.timeout - left > 1.0:
                    _log.warning("waiting for the run store %s, held by %s (up to %g s)", self.path, _holder(err),
                                 self.timeout)
                    waited_loudly = True
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.5)

    @contextlib.contextmanager
    def _connection(self, *, write: bool = False) -> Iterator:
        """One short-lived connection inside one transaction (committed on success, rolled back otherwise).

        It holds this process's lock for the file (another thread's operation waits for it, up to ``timeout``)."""
        import duckdb

        lock = _process_lock(self.path)
        if not lock.acquire(timeout=self.timeout):
            raise StoreBusyError(f"the run store {self.path} has been in use by another thread of this process for "
                                 f"more than {self.timeout:g} s; wait for that operation to finish, or {_OTHER_STORE}")
        try:
            con = self._open()
            try:
                if not self._schema_ready:
                    for statement in _SCHEMA:
                        con.execute(statement)
                    if not con.execute("SELECT 1 FROM information_schema.columns WHERE table_name = 'runs' AND "
                                       "column_name = 'owner'").fetchone():  # a store made before runs had owners
                        con.execute("ALTER TABLE runs ADD COLUMN IF NOT EXISTS owner VARCHAR")
                    self._schema_ready = True
                con.execute("BEGIN TRANSACTION")
                try:
                    yield con
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
            except duckdb.Error as err:
                text = str(err)
                if any(w in text for w in _READ_ONLY_WORDS + _FULL_WORDS):
                    raise _store_error(self.path, text, doing="write to" if write else "read") from None
                raise StoreError(f"the run store {self.path} failed to {'write' if write else 'read'}: {err}") from None
            finally:
                con.close()
        finally:
            lock.release()

    # -- operations -------------------------------------------------------------------------------------------
    def save(self, run: SweepRun, *, label: str = "", owner: str | None = None) -> str:
        """Store ``run`` (its record, table and per-document details) atomically; return its new id.

        ``owner``: who saved it (the app's key for a browser; None from the CLI). The rows go in first and the
        ``runs`` line last, in one transaction: a reader never lists a run whose rows are not all there, and a
        process killed mid-save leaves no trace. The record keeps its inputs' names and sha256
        (:meth:`~fairrag_core.record.RunRecord.with_inputs`) and the software that made it, so a stored run names
        both even after its collection has changed.
        """
        run_id = uuid.uuid4().hex[:12]
        record = run.record.with_inputs()
        records = _records(run.table)
        detail_records = _records(run.documents) if run.documents is not None and len(run.documents) else []
        config = json.dumps(record.to_dict())
        with self._connection(write=True) as con:
            _insert_rows(con, "run_rows", run_id, records)
            _insert_rows(con, "run_details", run_id, detail_records)
            con.execute("INSERT INTO runs (run_id, created, kind, collection, label, config, n_rows, owner) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [run_id, datetime.now(UTC).replace(tzinfo=None), record.kind.value, record.collection,
                         label, config, len(records), owner])
        return run_id

    def add_extra(self, run_id: str, key: str, value: object, *, config: Settings | None = None,
                  owner: str | None = None) -> None:
        """Keep ``value`` under ``key`` in the stored run's record (``extra``): a result computed later about the
        same run, such as the what-if replay of a log audit run from the app. With ``config``, the record's settings
        become ``config`` (they gain the options that result used, e.g. the what-if's grid and N, so the run's
        reproduce command includes them). The numbers of the run are untouched. With ``owner``, only that owner's
        runs can be changed."""
        with self._connection(write=True) as con:
            record = self._record(con, run_id, owner)
            data = (record if config is None else replace(record, config=config)).to_dict()
            data["extra"] = {**data.get("extra", {}), key: value}
            con.execute("UPDATE runs SET config = ? WHERE run_id = ?", [json.dumps(data), run_id])

    def list(self, *, owner: str | None = None) -> pd.DataFrame:
        """Runs, newest first: run_id, created, kind, collection, label, rows, and the key settings.

        Every run by default (the CLI); with ``owner``, only the runs saved under that owner."""
        where, args = ("WHERE owner = ? ", [owner]) if owner is not None else ("", [])
        with self._connection() as con:
            runs = con.execute("SELECT run_id, created, kind, collection, label, n_rows AS rows, config FROM runs "
                               f"{where}ORDER BY created DESC", args).df()
        if runs.empty:
            return runs.drop(columns=["config"])
        records = [RunRecord.from_dict(json.loads(c), kind=k) for c, k in zip(runs.pop("config"), runs["kind"])]
        runs["generator"] = [r.generator for r in records]
        runs["retriever"] = [r.retriever for r in records]
        runs["alphas"] = [list(getattr(r.config, "alphas", None) or ((r.config.alpha,) if hasattr(r.config, "alpha")
                                                                     else ())) for r in records]  # a rank: its α
        runs["n_samples"] = [getattr(r.config, "n_samples", None) for r in records]  # a log audit has no N
        runs["k"] = [getattr(r.config, "k", None) for r in records]
        runs["seed"] = [r.seed for r in records]
        return runs

    def load(self, run_id: str, *, owner: str | None = None) -> SweepRun:
        """The stored run: its record, its table and its per-document details (empty when saved without).

        With ``owner``, a run saved under another owner (or by the CLI) is refused as if it did not exist."""
        with self._connection() as con:  # one transaction: the record and its rows come from one snapshot
            record = self._record(con, run_id, owner)
            rows, details = ([json.loads(r[0]) for r in con.execute(
                f"SELECT data FROM {table} WHERE run_id = ? ORDER BY row_index", [run_id]).fetchall()]
                for table in ("run_rows", "run_details"))
        return SweepRun(record=record, table=upgrade_table(record.kind, pd.DataFrame(rows)),
                        documents=pd.DataFrame(details), run_id=run_id)

    def load_record(self, run_id: str, *, owner: str | None = None) -> RunRecord:
        with self._connection() as con:
            return self._record(con, run_id, owner)

    def owner_of(self, run_id: str) -> str | None:
        """Who saved ``run_id`` (None for a run saved by the CLI or before runs had owners)."""
        with self._connection() as con:
            self._record(con, run_id)  # refuses an unknown run
            return con.execute("SELECT owner FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]

    def _record(self, con, run_id: str, owner: str | None = None) -> RunRecord:
        found = con.execute("SELECT config, kind, owner FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if found is None:
            raise InvalidParameterError(f"no run {run_id!r} in {self.path}; "
                                        "list runs with `python -m fairrag_core runs`")
        if owner is not None and found[2] != owner:
            raise InvalidParameterError(f"run {run_id!r} was not saved from this browser; the app opens only the "
                                        "runs listed under Stored runs")
        return RunRecord.from_dict(json.loads(found[0]), kind=found[1])

    def delete(self, run_id: str, *, owner: str | None = None) -> None:
        """Remove a run (its ``runs`` line first, so it is never listed half-deleted); with ``owner``, only if it
        is that owner's."""
        with self._connection(write=True) as con:
            if owner is not None:
                self._record(con, run_id, owner)
            for table in ("runs", "run_rows", "run_details"):
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
