"""The Playground's Generate as a background job: answers stream into the job, the page polls them.

The job runs :func:`fairrag_core.run_rag` with an :class:`~fairrag_core.rag.pipeline.AnswerStream`: each answer,
once its citations are checked, is appended to ``partial["answers"]``; ``tick`` stops it within one model call at
Cancel; the finished run lands in ``partial["rag"]``. The page draws the answers done so far in a fragment that
redraws itself every second (``st.fragment(run_every=1)``) and reruns the page once when the job ends. Finished
answers and judgements stay in the models' caches, so Generate after a Cancel resumes where it stopped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import streamlit as st

from fairrag_core import RagConfig, run_rag
from fairrag_core.audit.jobs import Job
from fairrag_core.rag.pipeline import AnswerStream, ListAnswer

from . import jobs
from .jobs_panel import eta_text, owner_key
from .state import controls_snapshot

__all__ = ["answers_key", "latest_answers_job", "start_answers_job", "follow_answers"]

PLAYGROUND = "app_pages/playground.py"


def answers_key(run_key: tuple) -> str:
    """A stable name of the Playground's (settings, query, α) for the job table."""
    return hashlib.sha256(f"generate|{run_key!r}".encode()).hexdigest()[:20]


def latest_answers_job(run_key: tuple) -> tuple[Job | None, dict | None]:
    """This browser's newest Generate job for ``run_key`` and its in-process results (None after an app restart)."""
    owner, runner = owner_key(), jobs.runner()
    job = runner.latest(owner, answers_key(run_key))
    live = runner.live(owner, job.job_id) if job is not None else None
    return job, live.partial if live is not None else None


def start_answers_job(run_key: tuple, title: str, *, collection, retriever, generator, attributor, query: str,
                      config: RagConfig, scores, total: int) -> Job:
    """Start generating ``query``'s answers in a worker thread (models and scores come from the page)."""
    def work(ctx: jobs.JobContext) -> None:
        answers: list[ListAnswer] = ctx.partial["answers"]

        def report(stage: str, done: int, lists: int) -> None:
            ready = len(answers)
            note = (f"{done} of {lists} answers generated; checking their citations (NLI)…" if stage == "generate"
                    else f"{ready} of {lists} answers ready" + ("; generating the next…" if ready < lists else "."))
            ctx.progress(ready, lists, note)

        ctx.progress(0, total, "Starting…")
        ctx.partial["rag"] = run_rag(collection, retriever, generator, attributor, query, config, scores=scores,
                                     n_boot=300, stream=AnswerStream(chunk=1, growing=True, progress=report,
                                                                     on_answer=answers.append, tick=ctx.tick))
        return None

    return jobs.runner().submit(owner_key(), "generate", title, work, key=answers_key(run_key), page=PLAYGROUND,
                                total=total, partial={"answers": [],
                                                      "controls": controls_snapshot(st.session_state)})


def follow_answers(job: Job, partial: dict | None, show: Callable[[ListAnswer], None]) -> None:
    """The running job's progress, its Stop button and the answers finished so far, redrawn every second."""
    owner = job.owner

    @st.fragment(run_every=1.0)
    def progress() -> None:
        now = jobs.runner().get(owner, job.job_id)
        if now is None or not now.active:
            st.rerun()  # finished, failed or cancelled: the page draws the outcome
        st.progress(now.fraction, text=now.note or eta_text(now))
        if st.button("Stop", key="stop_generation", disabled=now.cancel,
                     help="Finished answers are kept: press Generate again to resume."):
            jobs.runner().cancel(owner, job.job_id)
            st.rerun()
        st.caption("Answers are made in the background: you can use other pages meanwhile; the sidebar shows "
                   "the progress.")
        for answer in list((partial or {}).get("answers", [])):
            show(answer)

    progress()
