"""Running sweeps from a page: fast exposure sweeps at once, RAG sweeps as background jobs.

A sweep with answers is planned in the page script (the models load there, under their spinners) and handed to a job
(:mod:`fairrag_studio.services.jobs`): a worker thread runs its (query, α) tasks one by one, reports progress, stops at
Cancel within one answer, keeps every finished task in the job, and saves the finished sweep to the run store. The page
follows the job and shows what is finished; leaving the page or reloading the browser does not stop it. A new job for
the same request starts from the tasks an earlier (cancelled or failed) one finished.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

import numpy as np
import streamlit as st

from fairrag_core import InvalidParameterError
from fairrag_core.audit.jobs import JobStatus
from fairrag_core.checks import parse_alphas as parse_grid
from fairrag_core.rag.sweep import RagSweep, RagSweepConfig, Usefulness
from fairrag_core.ranking.sweep import SweepConfig, exposure_sweep
from fairrag_core.record import RunKind, SweepRun

from ..services import jobs, resources
from ..services.run_scope import browser_runs
from ..services.state import Settings, controls_snapshot, owner_key
from .answers import answer_progress
from .jobs import follow_job

__all__ = ["SweepRequest", "parse_alphas", "run_exposure_request", "request_key", "rag_job"]


def parse_alphas(text: str) -> tuple[float, ...]:
    """The α grid typed on a page, sorted (the core parser, shared with the CLI). ``inf`` is accepted and
    dropped: the deterministic baseline is added to every sweep anyway.

    >>> parse_alphas("8, 0, 2, inf")
    (0.0, 2.0, 8.0)
    """
    finite = sorted(a for a in parse_grid(text) if not math.isinf(a))
    if not finite:
        raise InvalidParameterError("give at least one finite α value, e.g. 0, 1, 2, 4, 8 (the deterministic "
                                    "baseline is added for you)")
    return tuple(finite)


@dataclass(frozen=True)
class SweepRequest:
    """What a page asked for; its hash keys the finished results in the session."""

    settings: Settings
    query_ids: tuple[str, ...]
    alphas: tuple[float, ...]
    generate: bool
    usefulness: Usefulness = Usefulness.UTILITY  # for RAG sweeps: Algorithm 1 utility labels or relevance qrels


def run_exposure_request(request: SweepRequest) -> SweepRun:
    """Exposure-only sweep (with the deterministic baseline); cached per request in the session."""
    store = st.session_state["exposure_sweeps"]
    if request not in store:
        s = request.settings
        store[request] = exposure_sweep(
            resources.collection(s.collection), resources.retriever_for(s),
            SweepConfig(alphas=(*request.alphas, float("inf")), n_samples=s.n_samples, k=s.k, seed=s.seed,
                        candidates=s.candidates, query_ids=request.query_ids))
    return store[request]


def _plan(request: SweepRequest) -> RagSweep:
    s = request.settings
    config = RagSweepConfig(alphas=request.alphas, n_samples=s.n_samples, k=s.k, seed=s.seed,
                            candidates=s.candidates, usefulness=request.usefulness, query_ids=request.query_ids,
                            **s.citation.citation_fields())
    return RagSweep(resources.collection(s.collection), resources.retriever_for(s),
                    resources.generator(s.generator, s.device, s.prompt_style),
                    resources.attributor(s.attributor, s.device), config)


def request_key(request: SweepRequest, kind: str) -> str:
    """A stable name of (job kind, request) for the job table (``hash()`` changes from one process to the next)."""
    return hashlib.sha256(f"{kind}|{request!r}".encode()).hexdigest()[:20]


#: Progress units per run of a sweep: a run's answers and judged documents move the bar within its share.
_UNITS = 1000


def _task_label(task) -> str:
    return f"{task.query_id}, {'deterministic' if np.isinf(task.alpha) else f'α = {task.alpha:g}'}"


def _sweep_work(sweep: RagSweep, store, *, label: str, save_as: RunKind | None):
    """The job's work: every unfinished task (``ctx.partial["results"]``), then the finished sweep saved."""
    def work(ctx: jobs.JobContext) -> str | None:
        done = ctx.partial.setdefault("results", {})
        total = len(sweep.tasks)
        start, calls_before = time.perf_counter(), sweep.generator.cache.misses
        ctx.progress(len(done) * _UNITS, total * _UNITS, "Starting…")
        for task in sweep.tasks:
            if task in done:
                continue
            ctx.tick()
            heading = f"Run {len(done) + 1} of {total}: {_task_label(task)}"
            ctx.progress(len(done) * _UNITS, total * _UNITS, heading)
            answers: list = []

            def within(units: int, of: int, note: str, finished: int = len(done), heading: str = heading) -> None:
                # the task's own answers and judged documents move the bar, not only finished runs
                share = units / of if of else 0.0
                ctx.progress(finished * _UNITS + min(int(share * _UNITS), _UNITS - 1), total * _UNITS,
                             f"{heading} · {note}")

            done[task] = sweep.run(task, tick=ctx.tick, on_answer=answers.append,
                                   progress=answer_progress(sweep.config.k, within, ready=lambda a=answers: len(a)))
            ctx.progress(len(done) * _UNITS, total * _UNITS, f"Finished {_task_label(task)}")
        result = sweep.collect(list(done.values()), wall_seconds=time.perf_counter() - start,
                               generator_calls=sweep.generator.cache.misses - calls_before)
        if save_as is not None:
            result = result.as_kind(save_as)
        run_id = store.save(result, label=label)
        ctx.partial["result"] = result.saved_as(run_id)
        return run_id
    return work


def rag_job(request: SweepRequest, *, run: bool, kind: str, title: str, label: str, page: str,
            save_as: RunKind | None = None) -> tuple[RagSweep, jobs.Job | None, SweepRun | None]:
    """Start (when ``run`` and none is running) or follow this browser's job for ``request``.

    Returns the planned sweep, the newest job for the request (None before the first Run) and what there is to
    show: the saved sweep when the job is done, else its finished tasks so far (None when there are none).
    """
    sweep = _plan(request)
    owner, key, runner = owner_key(), request_key(request, kind), jobs.runner()
    job = runner.latest(owner, key)
    live = runner.live(owner, job.job_id) if job is not None else None
    if run and (job is None or job.status in (JobStatus.FAILED, JobStatus.CANCELLED)):
        earlier = dict(live.partial.get("results", {})) if live is not None else {}
        work = _sweep_work(sweep, browser_runs(), label=label, save_as=save_as)
        runner.submit(owner, kind, title, work, key=key, page=page, total=len(sweep.tasks) * _UNITS,
                      partial={"results": earlier, "controls": controls_snapshot(st.session_state)})
        st.rerun()  # the sidebar's Jobs panel, drawn before the job existed, lists and follows it from the next run
    if job is None:
        return sweep, None, None
    follow_job(job, what=title)
    if live is not None and "result" in live.partial:
        return sweep, job, live.partial["result"]
    if job.run_id is not None:  # done in an earlier process of the app: the store has it
        return sweep, job, browser_runs().load(job.run_id)
    finished = dict(live.partial.get("results", {})) if live is not None else {}
    return sweep, job, sweep.collect(list(finished.values())) if finished else None
