"""The job table: long work (an answer sweep, an audit with answers) that runs outside a page, one row per job.

A row says who started the job (``owner``: a key per browser, so that two users never see each other's jobs),
what it is (``kind``, ``title``, a ``key`` naming the request it answers), where it stands (``status``:
queued → running → done | failed | cancelled; ``done`` of ``total`` steps; an ETA), and what it left: an
``error`` message, or the ``run_id`` of the finished run in the run store (:mod:`.store`). The work itself runs
elsewhere (the app's worker threads, :mod:`fairrag_studio.services.jobs`); this module only keeps the table.

Why SQLite (a file ``jobs.sqlite`` beside the run store) and not a table in the DuckDB run store: a job writes its
progress after every step while every open page reads the table every two seconds. A DuckDB file admits one
process at a time and a save of a run can hold it for a second; SQLite in WAL mode lets any number of readers in
while one writer commits a row in well under a millisecond, and waits for a writer itself (``busy_timeout``).
The same rule as the run store and the answer cache holds: every operation opens the file and closes it; writes
are ``BEGIN IMMEDIATE`` transactions, so a process killed mid-write leaves the table as it was.

ETA after ``done`` of ``total`` steps started ``t₀`` ago: ``t₀ · (total − done) / (done − base)``, where ``base`` steps
were already finished when the job started (a straight-line estimate; steps that come from the answer cache make it
optimistic, slow first model loads pessimistic).
"""

from __future__ import annotations

import enum
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..data.sqlite_file import SqliteFile
from ..errors import InvalidParameterError
from .store import default_store_path

__all__ = ["JobStatus", "Job", "JobTable", "default_jobs_path", "JOBS_ENV", "INTERRUPTED"]

#: Environment variable naming the job table's file (default: ``jobs.sqlite`` beside the run store).
JOBS_ENV = "FAIRRAG_JOBS"
#: The error of a job whose app stopped (or was stopped) while it ran.
INTERRUPTED = ("the app stopped while this job ran; start it again (finished answers and judgements come from the "
               "cache)")

_SCHEMA = ("CREATE TABLE IF NOT EXISTS jobs (job_id TEXT PRIMARY KEY, owner TEXT NOT NULL, kind TEXT NOT NULL, "
           "title TEXT NOT NULL, key TEXT NOT NULL, page TEXT NOT NULL, status TEXT NOT NULL, done INTEGER NOT NULL, "
           "total INTEGER NOT NULL, note TEXT NOT NULL, eta REAL, created REAL NOT NULL, started REAL, "
           "updated REAL NOT NULL, error TEXT, run_id TEXT, cancel INTEGER NOT NULL, pid INTEGER NOT NULL)",
           "CREATE INDEX IF NOT EXISTS jobs_owner ON jobs (owner, created)")
_COLUMNS = ("job_id", "owner", "kind", "title", "key", "page", "status", "done", "total", "note", "eta", "created",
            "started", "updated", "error", "run_id", "cancel", "pid")


class JobStatus(str, enum.Enum):
    """Where a job stands; the last three are final."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)


@dataclass(frozen=True)
class Job:
    """One row of the job table (times are Unix seconds)."""

    job_id: str
    owner: str
    kind: str
    title: str
    key: str
    page: str
    status: JobStatus
    done: int
    total: int
    note: str
    eta: float | None
    created: float
    started: float | None
    updated: float
    error: str | None
    run_id: str | None
    cancel: bool
    pid: int

    @property
    def fraction(self) -> float:
        """Share of the steps finished, in [0, 1]."""
        return min(self.done / self.total, 1.0) if self.total > 0 else 0.0

    @property
    def active(self) -> bool:
        return not self.status.final


def default_jobs_path() -> Path:
    """``$FAIRRAG_JOBS``, else ``jobs.sqlite`` in the run store's folder."""
    env = os.environ.get(JOBS_ENV, "").strip()
    return Path(env).expanduser() if env else default_store_path().with_name("jobs.sqlite")


def _row(values: tuple) -> Job:
    data = dict(zip(_COLUMNS, values))
    return Job(**{**data, "status": JobStatus(data["status"]), "cancel": bool(data["cancel"])})


class JobTable(SqliteFile):
    """Create, update and list jobs in a SQLite file shared by every thread and process (module docstring).

    Every read takes the ``owner`` and returns only that owner's jobs: a job id alone never reveals another
    user's job. ``timeout``: seconds a write waits for another writer before :class:`StoreBusyError`.
    """

    schema = _SCHEMA

    def __init__(self, path: str | os.PathLike | None = None, *, timeout: float = 30.0) -> None:
        super().__init__(path or default_jobs_path(), timeout=timeout)

    what = "the job table"
    elsewhere = f"set ${JOBS_ENV} (or $FAIRRAG_RUNS) to a writable place"

    def _busy_message(self) -> str:
        return (f"the job table {self.path} stayed locked by another writer for more than {self.timeout:g} s; try "
                f"again, or set ${JOBS_ENV} to another file")

    def _broken_message(self, text: str) -> str:
        return (f"the job table {self.path} cannot be used ({text}). It only lists jobs (finished runs are in the run "
                f"store): delete it to start a new one, or set ${JOBS_ENV} elsewhere")

    def _sql(self, sql: str, args: tuple | list = (), *, write: bool = False) -> list[tuple] | int:
        """One statement: its rows (a read) or the number of rows it changed (a write, in one transaction)."""
        if write:
            return self._run(lambda con: con.execute(sql, args).rowcount, write=True)
        return self._run(lambda con: con.execute(sql, args).fetchall())

    # -- writes -----------------------------------------------------------------------------------------------
    def create(self, owner: str, kind: str, title: str, *, key: str = "", page: str = "", total: int = 0) -> Job:
        """A new queued job of ``owner``; returns its row."""
        if not owner or not isinstance(owner, str):
            raise InvalidParameterError("a job needs an owner (the browser session's key); got none")
        now = time.time()
        values = (uuid.uuid4().hex[:12], owner, kind, title, key, page, JobStatus.QUEUED.value, 0, int(total), "",
                  None, now, None, now, None, None, 0, os.getpid())
        self._sql(f"INSERT INTO jobs VALUES ({', '.join('?' * len(_COLUMNS))})", values, write=True)
        return _row(values)

    def start(self, job_id: str) -> None:
        """Mark the job running (its ETA clock starts now)."""
        now = time.time()
        self._sql("UPDATE jobs SET status = ?, started = ?, updated = ? WHERE job_id = ? AND status = ?",
                  (JobStatus.RUNNING.value, now, now, job_id, JobStatus.QUEUED.value), write=True)

    def progress(self, job_id: str, done: int, total: int, note: str = "", *, base: int = 0,
                 eta: float | None = None) -> None:
        """``done`` of ``total`` steps finished; the ETA follows from the time since the start (module docstring),
        counting only the steps after the first ``base`` (those a resumed job found finished), unless the caller
        measured it (``eta``, seconds)."""
        now = time.time()
        if eta is None:
            found = self._sql("SELECT started FROM jobs WHERE job_id = ?", (job_id,))
            started = found[0][0] if found and found[0][0] is not None else now
            made = done - base
            eta = (now - started) * (total - done) / made if made > 0 and done <= total else None
        self._sql("UPDATE jobs SET done = ?, total = ?, note = ?, eta = ?, updated = ? WHERE job_id = ?",
                  (int(done), int(total), note, eta, now, job_id), write=True)

    def finish(self, job_id: str, status: JobStatus, *, error: str | None = None, run_id: str | None = None) -> None:
        """Close the job as done, failed (with ``error``, the message the user sees) or cancelled."""
        if not JobStatus(status).final:
            raise InvalidParameterError(f"finish a job as done, failed or cancelled, not {JobStatus(status).value}")
        self._sql("UPDATE jobs SET status = ?, error = ?, run_id = ?, eta = NULL, updated = ? WHERE job_id = ?",
                  (JobStatus(status).value, error, run_id, time.time(), job_id), write=True)

    def request_cancel(self, owner: str, job_id: str) -> bool:
        """Ask ``owner``'s job to stop (the worker checks between steps); False when it was already over."""
        changed = self._sql("UPDATE jobs SET cancel = 1, updated = ? WHERE job_id = ? AND owner = ? AND status IN "
                            "(?, ?)", (time.time(), job_id, owner, JobStatus.QUEUED.value, JobStatus.RUNNING.value),
                            write=True)
        if not changed and self.get(owner, job_id) is None:
            raise InvalidParameterError(f"no job {job_id!r} in this session; the jobs panel lists this session's jobs")
        return bool(changed)

    def interrupt_orphans(self, alive: set[str], *, pid: int | None = None) -> int:
        """Mark as failed the unfinished jobs of process ``pid`` (default: this one) that are not in ``alive``, and
        every unfinished job of a process that no longer exists (an app that stopped or was killed mid-job).
        Returns how many were marked."""
        pid = os.getpid() if pid is None else pid
        rows = self._sql("SELECT job_id, pid FROM jobs WHERE status IN (?, ?)",
                         (JobStatus.QUEUED.value, JobStatus.RUNNING.value))
        lost = [job_id for job_id, owner_pid in rows
                if (owner_pid == pid and job_id not in alive) or (owner_pid != pid and not _process_exists(owner_pid))]
        for job_id in lost:
            self.finish(job_id, JobStatus.FAILED, error=INTERRUPTED)
        return len(lost)

    def delete_finished(self, owner: str) -> int:
        """Forget ``owner``'s finished jobs (their runs stay in the run store)."""
        return self._sql("DELETE FROM jobs WHERE owner = ? AND status IN (?, ?, ?)",
                         (owner, JobStatus.DONE.value, JobStatus.FAILED.value, JobStatus.CANCELLED.value), write=True)

    # -- reads ------------------------------------------------------------------------------------------------
    def get(self, owner: str, job_id: str) -> Job | None:
        """``owner``'s job ``job_id`` (None when there is none, or it is someone else's)."""
        rows = self._sql(f"SELECT {', '.join(_COLUMNS)} FROM jobs WHERE job_id = ? AND owner = ?", (job_id, owner))
        return _row(rows[0]) if rows else None

    def list(self, owner: str, *, key: str | None = None, limit: int = 50) -> list[Job]:
        """``owner``'s jobs, newest first (only those for request ``key`` when given)."""
        where, args = ("owner = ? AND key = ?", (owner, key)) if key is not None else ("owner = ?", (owner,))
        rows = self._sql(f"SELECT {', '.join(_COLUMNS)} FROM jobs WHERE {where} ORDER BY created DESC, rowid DESC "
                         "LIMIT ?", (*args, int(limit)))
        return [_row(r) for r in rows]

    def cancel_requested(self, job_id: str) -> bool:
        rows = self._sql("SELECT cancel FROM jobs WHERE job_id = ?", (job_id,))
        return bool(rows and rows[0][0])


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
