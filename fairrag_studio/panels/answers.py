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

from ..services import jobs
from ..services.state import controls_snapshot, owner_key
from .jobs import eta_text, waiting_text

__all__ = ["answers_key", "latest_answers_job", "answers_work", "start_answers_job", "follow_answers", "kept_answers",
           "stopped_text"]

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


def answer_progress(k: int, progress: Callable[[int, int, str], None], *, ready: Callable[[], int],
                    lists: int | None = None) -> Callable[[str, int, int], None]:
    """An :class:`~fairrag_core.rag.pipeline.AnswerStream` progress handler that turns its stages into one
    count of work units: each of the ``lists`` answers is 1 unit to generate and ``k`` to judge (one per shown
    document; a chunk's share moves with each judge call). ``progress(done, total, note)`` moves after every
    answer and every judged document, so the bar and the ETA never sit still for a whole chunk. ``lists`` (the
    distinct lists to answer) is read from the first report when not given; ``ready()`` counts the answers that
    have their citations."""
    state = {"lists": lists, "generated": 0, "judge": (0, 0)}

    def report(stage: str, done: int, of: int) -> None:
        if stage != "judge" and state["lists"] is None:
            state["lists"] = of
        n = state["lists"] or 0
        if stage == "generate":
            state["generated"] = done
            state["judge"] = (0, 0)
        elif stage == "judge":
            state["judge"] = (done, of)
        else:  # "attribute": the chunk's answers have their citations
            state["judge"] = (0, 0)
        answered = ready()
        judging = state["generated"] - answered  # answers of this chunk waiting for their citations
        judged_done, judged_of = state["judge"]
        share = judged_done / judged_of if judged_of else 0.0
        total = n * (1 + k)
        units = state["generated"] + k * answered + int(k * judging * share)
        if stage == "generate":
            note = f"{answered} of {n} answers ready · generated answer {done} of {n}"
        elif stage == "judge":
            note = (f"{answered} of {n} answers ready · checking citations of the next {judging}: "
                    f"{judged_done} of {judged_of} document checks")
        else:
            note = f"{answered} of {n} answers ready" + ("; generating the next…" if answered < n else ".")
        progress(min(units, total), total, note)

    return report


def answers_work(*, collection, retriever, generator, attributor, query: str, config: RagConfig, scores,
                 total: int) -> jobs.Work:
    """The work of a Generate job (:class:`~fairrag_studio.services.jobs.JobRunner`): ``query``'s ``total``
    distinct answers, each appended to ``partial["answers"]`` once its citations are checked, the run in
    ``partial["rag"]``."""
    def work(ctx: jobs.JobContext) -> None:
        answers: list[ListAnswer] = ctx.partial["answers"]
        ctx.progress(0, total * (1 + config.k), "Starting…")
        report = answer_progress(config.k, ctx.progress, ready=lambda: len(answers), lists=total)
        ctx.partial["rag"] = run_rag(collection, retriever, generator, attributor, query, config, scores=scores,
                                     # one list at a time: each answer shows as soon as its citations are
                                     # checked (growing chunks showed them 1, 1, 2, 4, 8, … at once)
                                     n_boot=300, stream=AnswerStream(chunk=1, progress=report,
                                                                     on_answer=answers.append, tick=ctx.tick))
        return None

    return work


def start_answers_job(run_key: tuple, title: str, *, collection, retriever, generator, attributor, query: str,
                      config: RagConfig, scores, total: int) -> Job:
    """Start generating ``query``'s answers in a worker thread (models and scores come from the page)."""
    work = answers_work(collection=collection, retriever=retriever, generator=generator, attributor=attributor,
                        query=query, config=config, scores=scores, total=total)
    return jobs.runner().submit(owner_key(), "generate", title, work, key=answers_key(run_key), page=PLAYGROUND,
                                total=total * (1 + config.k), partial={"answers": [],
                                                      "controls": controls_snapshot(st.session_state)})


def follow_answers(job: Job, partial: dict | None, show: Callable[[ListAnswer], None]) -> None:
    """The running job's progress, its Stop button and the answers finished so far, redrawn every second."""
    owner = job.owner

    @st.fragment(run_every=1.0)
    def progress() -> None:
        now = jobs.runner().get(owner, job.job_id)
        if now is None or not now.active:
            st.rerun()  # finished, failed or cancelled: the page draws the outcome
        waiting = waiting_text(now)
        st.progress(now.fraction, text=f"{eta_text(now)} · {waiting}" if waiting else
                    f"{now.note} · {eta_text(now)}" if now.note else eta_text(now))
        if st.button("Stop", key="stop_generation", disabled=now.cancel,
                     help="Finished answers are kept: press Generate again to resume."):
            jobs.runner().cancel(owner, job.job_id)
            st.rerun()
        st.caption("Answers are made in the background: you can use other pages meanwhile; the sidebar shows "
                   "the progress.")
        for answer in list((partial or {}).get("answers", [])):
            show(answer)

    progress()


def kept_answers(partial: dict | None) -> list[ListAnswer]:
    """The answers a stopped (or running) Generate job finished, with their citations (none after an app restart:
    they are in the caches, and Generate brings them back at once)."""
    return list((partial or {}).get("answers", []))


def stopped_text(partial: dict | None, distinct: int) -> str:
    """What the page says after Stop: how many of the ``distinct`` answers were finished (the job's own steps
    count document checks too: "78 of 120" for 6 of 20 answers in issue 31)."""
    made = f"{len(kept_answers(partial))} of {distinct} answers" if partial is not None else "some answers"
    return (f"Stopped after {made}; press **Generate answers** to resume (the finished answers come from the "
            "cache).")
