"""This browser's jobs on every page: the sidebar panel, and a page's view of its own job.

Owner key (:func:`fairrag_studio.services.state.owner_key`): a key issued by the server
(:mod:`fairrag_studio.services.owners`: 128 random bits and an HMAC tag), kept in the URL (``?owner=…``) and in the
session. Streamlit's session id changes on a reload, the URL does not: a reload of the same address finds its jobs (and,
on a served app, its stored runs), and another browser (another key) never sees them. A key the server did not issue
(``?owner=00000000``) is replaced by a fresh one. The key is set once when missing and put back after every page switch
(``st.navigation`` drops query parameters when it changes page). Anyone given the full address sees the jobs it started:
share the address without ``owner`` to share only the page.

While a job runs, the panel and the page's progress view are fragments that redraw themselves every two seconds
(``st.fragment(run_every=2)``); when a job they follow ends they rerun the whole app once, so the page shows the
result, and stop polling.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from fairrag_core.audit.jobs import Job, JobStatus
from fairrag_core.models.queue import QueueState, model_queues, on_wait, waiting_for

from ..services import jobs
from ..services.state import owner_key

__all__ = ["render_jobs_panel", "follow_job", "eta_text", "queue_text", "waiting_text", "show_queue",
           "model_busy_note",
           "apply_pending_open"]

POLL_SECONDS = 2.0
_ANSWERS_READY = re.compile(r"(\d+ of \d+ answers)")
# Material icons ship with Streamlit; emoji need a font a classroom PC may lack (they showed as empty boxes)
_ICON = {JobStatus.QUEUED: ":material/hourglass_empty:", JobStatus.RUNNING: ":material/autorenew:",
         JobStatus.DONE: ":material/check_circle:", JobStatus.FAILED: ":material/error:",
         JobStatus.CANCELLED: ":material/stop_circle:"}


def eta_text(job: Job) -> str:
    """``3 of 12 · about 4 min left``, ``40% · about 4 min left`` when the job's note counts (or how it ended)."""
    if job.status is JobStatus.DONE:
        return ("done" if job.note else f"done · {job.done} of {job.total}") + (f" · run {job.run_id}" if job.run_id
                                                                                 else "")
    if job.status is JobStatus.FAILED:
        return f"failed: {job.error}"
    if job.status is JobStatus.CANCELLED:
        # a Generate job's note counts its answers ("6 of 20 answers ready · …"); its steps mix answers and checks
        counted = _ANSWERS_READY.match(job.note)
        return f"cancelled after {counted[1] if counted else f'{job.done} of {job.total}'} (finished parts kept)"
    if job.status is JobStatus.QUEUED:
        return "starting…"
    # a job with a note counts its own units there ("8 of 20 answers ready …"): the bar gives the share
    text = (f"{job.fraction:.0%}" if job.note else f"{job.done} of {job.total}") if job.total else "starting…"
    if job.eta is not None:
        text += f" · about {_duration(job.eta)} left"
    elif job.started is not None:
        text += f" · {_duration(time.time() - job.started)} so far"
    return text


def _entries_text(entries, viewer: str) -> tuple[list[str], str]:
    """The distinct descriptions of model-queue entries ``(thread name, activity)`` as ``viewer`` may see them
    (:meth:`~fairrag_studio.services.jobs.JobRunner.describe_thread`), and what one entry is: "answer" when all
    are Generate jobs (one model call per answer), else "model call"."""
    engines = {s.holder_thread for s in model_queues() if s.batched and s.holder_thread}
    # a batching engine's worker holds its model's lock for one step at a time (a call on the model's other context
    # waits for that step): named by what it does, not by its thread's name
    described = [("a step of the answers decoded together", "") if name in engines
                 else jobs.runner().describe_thread(name or "", label, viewer) for name, label in entries]
    unit = "answer" if described and all(kind == "generate" for _, kind in described) else "model call"
    return list(dict.fromkeys(words for words, _ in described)), unit


def queue_text(state: QueueState, place: int, *, viewer: str = "", me: str | None = None) -> str:
    """``waiting for qwen2.5-1.5b: 2 answers ahead of yours (another session's Generate)``: the calls ahead in the
    queue (the one holding the model, then those before ``place``), named as ``viewer`` may see them.

    A batching engine's queue (``state.batched``) holds prompts, not calls, and answers the prompts in its slots
    together, so nothing is "ahead": ``3 of its answers wait for a free slot (place 2; 8 answers at once on
    qwen2.5-0.5b, with another session's Generate)``, counting the waiting thread's prompts from ``place`` on (the
    first of them waits at ``place``; ``me``: its thread's name, when known) and naming the other jobs and pages on
    the model once each."""
    if state.batched:
        return _slot_text(state, place, viewer, me)
    entries = ([(state.holder_thread, state.holder)] if state.holder is not None else []) + \
        list(state.waiting[: place - 1])
    if not entries:
        return f"waiting for {state.model}: yours is next"
    who, unit = _entries_text(entries, viewer)
    return (f"waiting for {state.model}: {len(entries)} {unit}{'s' if len(entries) > 1 else ''} ahead of yours "
            f"({', then '.join(who)})")


def _slot_text(state: QueueState, place: int, viewer: str, me: str | None) -> str:
    """:func:`queue_text` for a batching engine's queue."""
    if me is None:
        me = state.waiting[min(place, len(state.waiting)) - 1][0] if state.waiting else ""
    place = state.place_of(me) or place  # the engine reports a place a moment older than its state
    mine = max(1, sum(name == me for name, _ in state.waiting))
    whose = "its" if jobs.runner().thread_job(me) is not None else "this page's"
    others = [(name, label) for name, label in (*state.answering, *state.waiting) if name != me]
    who = jobs.runner().describe_threads(others, viewer)
    n = len(state.answering)
    at_once = f"{n} answer{'s' if n != 1 else ''}" if n else f"up to {state.batched} answers"
    return (f"{mine} of {whose} answers wait{'s' if mine == 1 else ''} for a free slot (place {place}; {at_once} at "
            f"once on {state.model}" + (f", with {' and '.join(who)})" if who else ")"))


def _together_text(state: QueueState | None, me: str, viewer: str) -> str | None:
    """``answered together with another session's Generate (up to 8 answers at once on qwen2.5-0.5b)``: whom the
    batching engine of ``state`` answers now besides thread ``me`` (None when nobody)."""
    if state is None:
        return None
    who = jobs.runner().describe_threads([(name, label) for name, label in state.answering if name != me], viewer)
    if not who:
        return None
    return f"answered together with {' and '.join(who)} (up to {state.batched} answers at once on {state.model})"


def waiting_text(job: Job) -> str | None:
    """Why a running job moves slowly, when it shares a model with other pages or jobs (None otherwise): the queue
    it waits in now and its place, or, between its turns, whom it takes turns with (a job waits before each of its
    answers, so "waiting right now" alone would come and go with every poll). Said the same way on the job's page
    and in the sidebar.

    On a batched model (``QueueState.batched``) a job whose prompts are all in slots does not wait: it is answered
    together with the others (:func:`_together_text`), also between its prompts (while it judges) for
    :data:`~fairrag_studio.services.jobs.SHARED_MEMORY` seconds; its prompts that wait for a slot say so with their
    place (:func:`queue_text`)."""
    if not job.active:
        return None
    live = jobs.runner().live(job.owner, job.job_id)
    me = jobs.job_thread_name(job.job_id)
    found = waiting_for(me)
    if found is not None:
        return queue_text(*found, viewer=job.owner, me=me)
    answered = next((state for state in model_queues() if state.batched and any(name == me for name, _ in
                                                                                 state.answering)), None)
    if answered is not None:
        if live is not None:
            live.saw(answered)
        return _together_text(answered, me, job.owner)
    shared = live.sharing() if live is not None else None
    if shared is None:
        return None
    if shared.batched or jobs.batched_queue(shared.model) is not None:  # a lock's wait on a batching model too
        return _together_text(jobs.batched_queue(shared.model), me, job.owner)
    entries = ([(shared.holder_thread, shared.holder)] if shared.holder is not None else []) + list(shared.waiting)
    entries = [(name, label) for name, label in dict.fromkeys(entries) if name != me]
    if not entries:
        return None
    who, unit = _entries_text(entries, job.owner)
    return (f"sharing {shared.model} with {' and '.join(who)}: one {unit} at a time, in turns "
            f"(waited {_duration(live.waited())} for it so far)")


def _queue_caption(text: str) -> str:
    """A queue line (:func:`queue_text`) as the orange caption a page shows: "Waiting for …"."""
    return f":orange[{text[0].upper()}{text[1:]}]"


@contextmanager
def show_queue(placeholder) -> Iterator[None]:
    """While this page's own model calls wait for a model another page or job holds, say so in ``placeholder`` (an
    ``st.empty()``), updated about once a second, and clear it when the call's turn comes. A page's script thread
    is blocked while it waits, so only the waiting thread can draw this (``fairrag_core.models.queue.on_wait``)."""
    viewer = owner_key()

    def report(state: QueueState | None, place: int) -> None:
        if state is None:
            placeholder.empty()
        else:
            placeholder.caption(_queue_caption(queue_text(state, place, viewer=viewer,
                                                          me=threading.current_thread().name)))

    with on_wait(report):
        yield


def model_busy_note(model: str, *, viewer: str | None = None) -> str | None:
    """For a page about to call ``model``: who holds it now and how many wait (None when it is free). A batching
    engine answers this run's prompts together with the others': ``qwen2.5-0.5b is answering 8 prompts at once for
    another session's Generate (4 more wait for a free slot): this run joins them.``, named as ``viewer`` (default:
    this browser) may see them."""
    batched = jobs.batched_queue(model)
    if batched is not None:
        n, queued = len(batched.answering), len(batched.waiting)
        who = " and ".join(jobs.runner().describe_threads(batched.answering if n else batched.waiting,
                                                          owner_key() if viewer is None else viewer))
        more = f" ({queued} more wait{'s' if queued == 1 else ''} for a free slot)" if queued and n else ""
        doing = (f"is answering {n} prompt{'s' if n != 1 else ''} at once" if n else
                 f"has {queued} prompt{'s' if queued != 1 else ''} waiting for a free slot")
        return f"{model} {doing} for {who}{more}: this run joins them."
    for state in model_queues():
        if state.model == model and state.holder is not None:
            more = f" and {len(state.waiting)} more waiting" if state.waiting else ""
            return (f"{model} is busy with “{state.holder}”{more}: this run queues behind them, one model call "
                    "at a time, first come first served.")
    return None


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min" if seconds < 5400 else \
        f"{seconds / 3600:.1f} h"


def _ended(owner: str, watched: tuple[str, ...]) -> bool:
    """Whether a job that was running at the last full run has ended since."""
    runner = jobs.runner()
    return any((job := runner.get(owner, job_id)) is not None and not job.active for job_id in watched)


def _job_row(job: Job, owner: str, *, key_prefix: str) -> None:
    st.markdown(f"{_ICON[job.status]} **{job.title}**")
    if job.active:
        st.progress(job.fraction, text=eta_text(job))
        if job.note:
            st.caption(job.note)
        waiting = waiting_text(job)
        if waiting:
            st.caption(_queue_caption(waiting))
        if st.button("Cancel", key=f"{key_prefix}_cancel_{job.job_id}", disabled=job.cancel,
                     help="Stops within one answer; finished parts are kept."):
            jobs.runner().cancel(owner, job.job_id)
            st.rerun()
    else:
        st.caption(eta_text(job))
    live = jobs.runner().live(owner, job.job_id)
    if job.page and live is not None and "controls" in live.partial:
        if st.button("Show the result" if not job.active else "Open its page", key=f"{key_prefix}_open_{job.job_id}",
                     icon=":material/open_in_new:", help="Opens the page with the settings the job was started with"):
            st.session_state["jobs_open"] = job.job_id  # applied by apply_pending_open before the widgets are drawn
            st.rerun()
    elif job.page:
        st.page_link(job.page, label="Open its page", icon=":material/open_in_new:")


def apply_pending_open() -> None:
    """Called by app.py after ``st.navigation`` and before any widget: when "Show the result" was pressed, put the
    job's settings back into the widgets (sidebar and page) and switch to its page."""
    job_id = st.session_state.pop("jobs_open", None)
    if job_id is None:
        return
    owner = owner_key()
    job, live = jobs.runner().get(owner, job_id), jobs.runner().live(owner, job_id)
    if job is None or live is None:
        return
    for key, value in live.partial.get("controls", {}).items():
        st.session_state[key] = value
    st.switch_page(job.page)


def render_jobs_panel(limit: int = 5) -> None:
    """The sidebar's Jobs panel: this browser's newest jobs with progress, ETA, Cancel and a link to the result."""
    owner = owner_key()
    listed = jobs.runner().jobs(owner, limit=limit)
    if not listed:
        return
    watched = tuple(j.job_id for j in listed if j.active)

    @st.fragment(run_every=POLL_SECONDS if watched else None)
    def panel() -> None:
        if watched and _ended(owner, watched):
            st.rerun()  # a job ended: redraw everything once, so its page shows the result
        st.subheader("Jobs")
        for job in jobs.runner().jobs(owner, limit=limit):
            _job_row(job, owner, key_prefix="jobs_panel")

    with st.sidebar:
        panel()


def follow_job(job: Job, *, what: str = "The job") -> None:
    """On the page that started ``job``: its progress and Cancel, redrawn every two seconds until it ends."""
    owner = job.owner

    @st.fragment(run_every=POLL_SECONDS if job.active else None)
    def progress() -> None:
        now = jobs.runner().get(owner, job.job_id)
        if now is None:
            return
        if job.active and not now.active:
            st.rerun()
        if now.active:
            st.info(f"{what} runs in the background: switch pages or reload freely, its progress stays in the "
                    "sidebar. Finished parts are kept if you cancel.")
            st.progress(now.fraction, text=eta_text(now))
            waiting = waiting_text(now)
            if waiting:
                st.caption(_queue_caption(waiting))
            if st.button("Cancel", key=f"page_cancel_{job.job_id}", disabled=now.cancel):
                jobs.runner().cancel(owner, job.job_id)
                st.rerun()

    progress()
