"""Background jobs: long work (an answer sweep, an audit with answers) runs in a worker thread, not in the page.

A page script stops when its user moves to another page, reloads, or touches a widget; a sweep with answers takes
minutes to hours. So a page hands the work to :class:`JobRunner`, which starts one daemon thread per job and keeps
the job's row in the job table (:class:`fairrag_core.audit.jobs.JobTable`, a SQLite file beside the run store):
status, progress, ETA, the error message or the run it saved. Every page draws this session's jobs in the sidebar
(:mod:`fairrag_studio.panels.jobs`), and the page that started a job shows its result when it is done.

The work is a function ``work(ctx) -> run_id | None`` of a :class:`JobContext`. It reports ``ctx.progress(done,
total)``, calls ``ctx.tick()`` between steps (and passes it to the models as
:class:`~fairrag_core.rag.pipeline.AnswerStream`'s tick, so a Cancel takes effect within one answer), and keeps
what it finished in ``ctx.partial`` (a plain dict the page reads; finished answers are also in the disk caches).
The thread never touches Streamlit: models and plans are made in the page script (with their spinners) and handed
over. One process holds the threads; the registry is a module singleton per job-table file, so every session of
the server shares it while each sees only its own jobs (the owner key, :func:`fairrag_studio.services.state.owner_key`).

Stopping the server (SIGTERM, or Ctrl+C) must not wait for a job. Streamlit's handler stops the server and the
interpreter then runs its exit handlers; the first is :func:`_stop_jobs_at_exit` (registered with the first runner,
after the model catalog's, which frees the models and would wait for a model call in progress). It marks every
running job failed with :data:`~fairrag_core.audit.jobs.INTERRUPTED` at once, asks each to stop at its next model
call, and gives them :data:`SHUTDOWN_GRACE` seconds. A job still inside one long model call after that (a
llama.cpp generation cannot be interrupted from Python) would hold the exit for as long as the call lasts, so in a
Streamlit server the process then ends there (``os._exit(0)``, after flushing the logs): the job's row already says
what happened, and finished answers are in the caches. Outside a server (tests, scripts) nothing is cut short.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fairrag_core import FairRAGError
from fairrag_core.audit.jobs import INTERRUPTED, Job, JobStatus, JobTable, default_jobs_path
from fairrag_core.models.queue import QueueState, activity, model_queues, on_wait

__all__ = ["JobCancelled", "JobContext", "LiveJob", "JobRunner", "runner", "job_thread_name", "batched_queue",
           "SHUTDOWN_GRACE", "SHARED_MEMORY"]

_log = logging.getLogger(__name__)

#: How many finished jobs keep their results in memory (for their pages and "Show the result").
KEEP_FINISHED = 64
#: Seconds the server, once asked to stop, waits for its jobs to reach their next model call and stop.
SHUTDOWN_GRACE = 1.5
#: Seconds a job that waited for a model still counts as sharing it: two Generate jobs take turns answer by answer,
#: and between its turns a job judges with another model, so "is it waiting right now" flickers every few seconds.
SHARED_MEMORY = 60.0


def job_thread_name(job_id: str) -> str:
    """The name of the thread that runs job ``job_id`` (how a model queue lists it)."""
    return f"fairrag-job-{job_id}"


def batched_queue(model: str) -> QueueState | None:
    """The batching engine's queue of ``model`` now (None when the model batches nothing, or has nothing to do). A
    wait for such a model's *lock* (its weights loading, a prompt being tokenised, a call on its other context) is
    a moment within the batching, not a turn taken with the other jobs."""
    return next((state for state in model_queues() if state.model == model and state.batched), None)


class JobCancelled(Exception):
    """Raised by :meth:`JobContext.tick` once the job's user pressed Cancel (never seen by a page)."""


@dataclass
class LiveJob:
    """The part of a job that lives in this process: its thread, its cancel flag and what it has finished."""

    job_id: str
    owner: str
    cancel: threading.Event = field(default_factory=threading.Event)
    partial: dict = field(default_factory=dict)
    thread: threading.Thread | None = None
    kind: str = ""
    #: the model queue the job waits in now and its place there (None while it does not wait)
    queue: tuple[QueueState, int] | None = None
    #: the last queue it waited in and when (``time.monotonic()``) it last saw it: whom it shares the model with
    shared: tuple[QueueState, float] | None = None
    #: seconds spent waiting for models, finished waits only (:meth:`waited` adds the current one)
    waited_before: float = 0.0
    wait_since: float | None = None

    def waited(self, now: float | None = None) -> float:
        """Seconds this job has spent waiting for models so far."""
        now = time.monotonic() if now is None else now
        return self.waited_before + (now - self.wait_since if self.wait_since is not None else 0.0)

    def sharing(self, now: float | None = None) -> QueueState | None:
        """The queue of the model this job shares with others: the one it waits in now, or the last one it waited
        in (or was seen answered in, :meth:`saw`) less than :data:`SHARED_MEMORY` seconds ago (None when it has had
        a model to itself since)."""
        if self.queue is not None:
            return self.queue[0]
        now = time.monotonic() if now is None else now
        if self.shared is not None and now - self.shared[1] < SHARED_MEMORY:
            return self.shared[0]
        return None

    def report_wait(self, state: QueueState | None, place: int) -> None:
        """The :func:`~fairrag_core.models.queue.on_wait` callback of the job's thread: when it starts waiting for
        a model, about once a second while it waits, and with ``None`` when its turn comes.

        Only a lock's wait counts in :meth:`waited`: prompts waiting for a batching engine's slot wait for answers
        decoded together (often the job's own earlier ones), which is how that engine works, not a turn lost."""
        now = time.monotonic()
        if state is None:
            if self.wait_since is not None:
                self.waited_before += now - self.wait_since
            self.wait_since, self.queue = None, None
            if self.shared is not None:
                self.shared = (self.shared[0], now)
            return
        if self.wait_since is None and not state.batched:
            self.wait_since = now
        self.queue, self.shared = (state, place), (state, now)

    def saw(self, state: QueueState) -> None:
        """Remember that this job was seen answered on the batched model of ``state`` (:meth:`sharing`): a job whose
        prompts find free slots never waits, and between its prompts (judging) it is in no queue at all."""
        self.shared = (state, time.monotonic())


class JobContext:
    """What a job's work function gets: progress reports, the cancel check, and ``partial`` for its results."""

    def __init__(self, table: JobTable, live: LiveJob, rates: dict[str, float] | None = None,
                 runner: JobRunner | None = None) -> None:
        self._table, self._live, self._runner = table, live, runner
        self.job_id = live.job_id
        self.partial = live.partial
        self._base: int | None = None
        self._started = time.monotonic()
        self._rates = rates if rates is not None else {}

    @property
    def cancelled(self) -> bool:
        return self._live.cancel.is_set()

    def tick(self) -> None:
        """Raise :class:`JobCancelled` when Cancel was pressed (call it between steps and before model calls)."""
        if self._live.cancel.is_set():
            raise JobCancelled

    def progress(self, done: int, total: int, note: str = "") -> None:
        """``done`` of ``total`` steps finished (the first report's ``done`` counts as found finished).

        The ETA is ``s · (total − done) · n``: ``s`` the seconds per step this job measured on this machine
        *working* (time since its start less the time it waited for models, over the steps it made; before its
        first step, the last job of its kind's), ``n`` the jobs taking turns on its model (itself and the running
        jobs it shares the model with, :meth:`LiveJob.sharing`; a page's one call is a wait, not a turn). Elapsed
        time over steps made would count the waits as work and swing with every turn (46 → 8 → 12 → 25 min in
        issue 31). On a batched model (``QueueState.batched``, or the lock of a model whose engine works now,
        :func:`batched_queue`) ``n`` is 1: its answers decode together with the others', so the seconds it measured
        per step already include the sharing."""
        if self._base is None:
            self._base = done
        now = time.monotonic()
        made = done - self._base
        if made > 0:
            self._rates[self._live.kind] = max(0.0, now - self._started - self._live.waited(now)) / made
        per_step = self._rates.get(self._live.kind)
        eta = None
        if per_step is not None and done <= total:
            shared = self._live.sharing(now)
            batched = shared is not None and (shared.batched or batched_queue(shared.model) is not None)
            others = _others(shared, job_thread_name(self.job_id)) if shared is not None and not batched else []
            turns = 1 + sum(self._runner is not None and self._runner.running_thread(name) for name in others)
            eta = per_step * (total - done) * turns
        self._table.progress(self.job_id, done, total, note, base=self._base, eta=eta)


def _others(state: QueueState, me: str) -> list[str]:
    """The threads other than ``me`` that hold or wait for the model of ``state``, each once."""
    names = ([state.holder_thread] if state.holder_thread else []) + [name for name, _ in state.waiting]
    return list(dict.fromkeys(name for name in names if name != me))


Work = Callable[[JobContext], "str | None"]


class JobRunner:
    """Start, cancel and list jobs; one daemon thread per job (see the module docstring)."""

    def __init__(self, table: JobTable) -> None:
        self.table = table
        self._live: dict[str, LiveJob] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # the process is shutting down: a cancelled job failed, not cancelled
        self._rates: dict[str, float] = {}  # seconds per step of each kind of job, as last measured
        try:  # rows left running by a process that is gone (an app that was stopped or killed mid-job)
            table.interrupt_orphans(set())
        except FairRAGError as err:
            _log.warning("could not tidy the job table: %s", err)

    def submit(self, owner: str, kind: str, title: str, work: Work, *, key: str = "", page: str = "",
               total: int = 0, partial: dict | None = None) -> Job:
        """Record a queued job of ``owner`` and start its thread; ``partial`` seeds what it has finished."""
        job = self.table.create(owner, kind, title, key=key, page=page, total=total)
        live = LiveJob(job.job_id, owner, partial=dict(partial or {}), kind=kind)
        thread = threading.Thread(target=self._run, args=(live, work, title), name=job_thread_name(job.job_id),
                                  daemon=True)
        live.thread = thread
        with self._lock:
            self._prune()
            self._live[job.job_id] = live
        thread.start()
        return job

    def _prune(self) -> None:
        """Forget the results of all but the newest :data:`KEEP_FINISHED` finished jobs (a long-lived server would
        otherwise hold every answer it ever made); their rows and saved runs stay."""
        finished = [job_id for job_id, live in self._live.items() if live.thread is not None
                    and not live.thread.is_alive()]
        for job_id in finished[:-KEEP_FINISHED] if len(finished) > KEEP_FINISHED else []:
            del self._live[job_id]

    def _run(self, live: LiveJob, work: Work, title: str) -> None:
        ctx = JobContext(self.table, live, self._rates, self)
        status, error, run_id = JobStatus.DONE, None, None
        try:
            self.table.start(live.job_id)
            ctx.tick()  # cancelled while queued
            # how the model queues name this job to the others waiting, and how it learns where it waits
            with activity(title), on_wait(live.report_wait):
                run_id = work(ctx)
        except JobCancelled:
            status, error = ((JobStatus.FAILED, INTERRUPTED) if self._stopping.is_set()
                             else (JobStatus.CANCELLED, None))
        except FairRAGError as err:
            status, error = JobStatus.FAILED, str(err)
        except Exception as err:  # a bug or a model crash: the user sees its type and message, the log the trace
            _log.exception("job %s failed", live.job_id)
            status, error = JobStatus.FAILED, f"{type(err).__name__}: {err}"
        try:
            self.table.finish(live.job_id, status, error=error, run_id=run_id)
        except FairRAGError:
            _log.exception("job %s finished (%s) but its row could not be updated", live.job_id, status.value)

    def cancel(self, owner: str, job_id: str) -> bool:
        """Ask ``owner``'s job to stop; it stops at its next tick. False when it had already finished."""
        asked = self.table.request_cancel(owner, job_id)
        live = self.live(owner, job_id)
        if live is not None:
            live.cancel.set()
        return asked

    def jobs(self, owner: str, *, key: str | None = None, limit: int = 50) -> list[Job]:
        """``owner``'s jobs, newest first."""
        return self.table.list(owner, key=key, limit=limit)

    def latest(self, owner: str, key: str) -> Job | None:
        """``owner``'s newest job for request ``key``."""
        found = self.table.list(owner, key=key, limit=1)
        return found[0] if found else None

    def get(self, owner: str, job_id: str) -> Job | None:
        return self.table.get(owner, job_id)

    def live(self, owner: str, job_id: str) -> LiveJob | None:
        """The in-process part of ``owner``'s job (None after a restart of the app, or for another owner's job)."""
        with self._lock:
            live = self._live.get(job_id)
        return live if live is not None and live.owner == owner else None

    def running_thread(self, thread_name: str) -> bool:
        """Whether ``thread_name`` is the thread of a job of this runner that still runs."""
        found = self.thread_job(thread_name)
        return found is not None and found.thread is not None and found.thread.is_alive()

    def thread_job(self, thread_name: str) -> LiveJob | None:
        """The job of this runner that ``thread_name`` runs (None for a page's or another thread)."""
        with self._lock:
            return next((live for live in self._live.values() if job_thread_name(live.job_id) == thread_name), None)

    def describe_thread(self, thread_name: str, label: str, viewer: str) -> tuple[str, str]:
        """Who a model queue's entry is, as ``viewer`` may see it, and the entry's job kind ("" for a page's call):
        "your job “Answers · …”" for the viewer's own job, "another session's Generate" for another browser's (its
        title holds that browser's query, which the viewer must not see), and a page's call by what it does
        ("FAIR-QR run", its query left out: the page may be another browser's)."""
        found = self.thread_job(thread_name)
        if found is None:
            return label.split(" · ")[0], ""
        if found.owner == viewer:
            return f"your job “{label}”", found.kind
        return _other_sessions(_KIND_WORDS.get(found.kind, found.kind), [found.owner]), found.kind

    def describe_threads(self, entries, viewer: str) -> list[str]:
        """Who the distinct threads of queue entries ``(thread name, activity)`` are, as ``viewer`` may see them
        (:meth:`describe_thread`), one phrase per job or page call: other sessions' jobs of one kind are counted,
        not listed ("another session's Generate", "another session's 2 Generate jobs", "3 Generate jobs of 2 other
        sessions"): a job with 20 prompts in a batching engine's queue is one job, and no session's query shows."""
        slots: list[str | tuple[str]] = []  # a phrase, or (kind words,) for other sessions' jobs of that kind
        others: dict[str, list[str]] = {}  # kind words -> the owner of each of other sessions' jobs of that kind
        for name, label in dict(entries).items():  # each thread once, in order of first appearance
            found = self.thread_job(name)
            if found is None or found.owner == viewer:
                slots.append(self.describe_thread(name, label, viewer)[0])
                continue
            word = _KIND_WORDS.get(found.kind, found.kind)
            if word not in others:
                slots.append((word,))
            others.setdefault(word, []).append(found.owner)

        return list(dict.fromkeys(slot if isinstance(slot, str) else _other_sessions(slot[0], others[slot[0]])
                                  for slot in slots))

    def shutdown(self, grace: float = SHUTDOWN_GRACE) -> list[str]:
        """Stop every job of this process: mark it failed with :data:`INTERRUPTED` now (so the row is right even if
        the process is killed next), ask it to stop at its next tick, and wait up to ``grace`` seconds for the
        threads. Returns the ids of the jobs still running (inside one long model call)."""
        self._stopping.set()
        with self._lock:
            running = [live for live in self._live.values() if live.thread is not None and live.thread.is_alive()]
        for live in running:
            live.cancel.set()
        for live in running:
            try:
                self.table.finish(live.job_id, JobStatus.FAILED, error=INTERRUPTED)
            except FairRAGError as err:
                _log.warning("job %s: could not mark it interrupted: %s", live.job_id, err)
        deadline = time.monotonic() + grace
        for live in running:
            live.thread.join(max(0.0, deadline - time.monotonic()))
        return [live.job_id for live in running if live.thread.is_alive()]

    def wait(self, job_id: str, timeout: float | None = None) -> bool:
        """Block until the job's thread ends (for tests and scripts); False on timeout."""
        with self._lock:
            live = self._live.get(job_id)
        if live is None or live.thread is None:
            return True
        live.thread.join(timeout)
        return not live.thread.is_alive()


#: How a job's kind is named to other sessions (a kind not listed is named as it is).
_KIND_WORDS = {"generate": "Generate"}


def _other_sessions(word: str, owners: list[str]) -> str:
    """Other sessions' jobs of one kind (``word``), one owner per job, without their titles (they hold queries)."""
    if len(owners) == 1:
        return f"another session's {word}"
    if len(set(owners)) == 1:
        return f"another session's {len(owners)} {word} jobs"
    return f"{len(owners)} {word} jobs of {len(set(owners))} other sessions"

_runners: dict[Path, JobRunner] = {}
_runners_lock = threading.Lock()
_exit_hook = threading.Event()


def runner(path: str | Path | None = None) -> JobRunner:
    """The process's runner for the job table at ``path`` (default: ``$FAIRRAG_JOBS`` or beside the run store)."""
    where = Path(path) if path else default_jobs_path()
    with _runners_lock:
        if where not in _runners:
            _runners[where] = JobRunner(JobTable(where))
        if not _exit_hook.is_set():
            import fairrag_core.models.catalog  # noqa: F401 (its exit handler, registered first, must run after ours)

            atexit.register(_stop_jobs_at_exit)
            _exit_hook.set()
        return _runners[where]


def _served_by_streamlit() -> bool:
    """Whether this process is a Streamlit server whose SIGTERM handler stops it (``streamlit run``; not AppTest,
    pytest or a script)."""
    handler = signal.getsignal(signal.SIGTERM)
    return callable(handler) and getattr(handler, "__module__", "").startswith("streamlit.")


def _stop_jobs_at_exit(grace: float = SHUTDOWN_GRACE) -> None:
    """At interpreter exit: stop every runner's jobs (:meth:`JobRunner.shutdown`); in a Streamlit server where a job,
    a page (FAIR-QR, RichRAG) or the preload is still inside a model call after ``grace`` seconds, end the process now
    instead of waiting for the call (llama.cpp cannot be interrupted mid-call)."""
    with _runners_lock:
        runners = list(_runners.values())
    started = time.monotonic()
    stuck = [job_id for each in runners for job_id in each.shutdown(grace)]
    if not _served_by_streamlit():
        return
    # a page's own model call (FAIR-QR, RichRAG) or the preload holds a model too: the catalog's exit handler would
    # wait for it to finish before freeing the weights
    from fairrag_core.models.catalog import busy_models

    while busy_models() and time.monotonic() - started < grace:
        time.sleep(0.05)
    busy = busy_models()
    if stuck or busy:
        _log.warning("stopping now: %s inside a model call; jobs are marked failed (start them again to resume "
                     "from the caches)", ", ".join([*(f"job {j}" for j in stuck), *(f"model {m}" for m in busy)]))
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(0)
