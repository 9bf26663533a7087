"""Running sweeps from a page: fast exposure sweeps at once, RAG sweeps task by task with progress and Stop.

Finished (query, α) tasks are kept in ``st.session_state`` as they complete, so pressing Stop (or any widget,
which interrupts the script) loses nothing: the next Run resumes with the tasks that are left.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import streamlit as st

from fairrag_core import FairRAGError, InvalidParameterError
from fairrag_core.checks import parse_alphas as parse_grid
from fairrag_core.rag.sweep import RagSweep, RagSweepConfig, Usefulness
from fairrag_core.ranking.sweep import SweepConfig, exposure_sweep
from fairrag_core.record import SweepRun

from . import resources
from .state import Settings

__all__ = ["SweepRequest", "parse_alphas", "run_exposure_request", "run_rag_request"]


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
                            per_claim=s.citation.per_claim, entail_threshold=s.citation.threshold,
                            control_margin=s.citation.control_margin, skip_degenerate=s.citation.skip_degenerate)
    return RagSweep(resources.collection(s.collection), resources.retriever_for(s),
                    resources.generator(s.generator, s.device, s.prompt_style),
                    resources.attributor(s.attributor, s.device), config)


def run_rag_request(request: SweepRequest, *, run: bool) -> tuple[RagSweep, dict]:
    """Plan the RAG sweep; when ``run``, work through the unfinished tasks with a progress bar and a Stop button."""
    sweep = _plan(request)
    done = st.session_state["sweep_results"].setdefault(request, {})
    todo = [t for t in sweep.tasks if t not in done]
    if run and todo:
        bar = st.progress(len(done) / len(sweep.tasks), text="Starting…")
        st.button("Stop", key=f"stop_{hash(request)}",
                  help="Finished (query, α) runs are kept; press Run again to continue.")
        start = time.perf_counter()
        for task in todo:
            alpha = "deterministic" if np.isinf(task.alpha) else f"α = {task.alpha:g}"
            bar.progress(len(done) / len(sweep.tasks),
                         text=f"Run {len(done) + 1} of {len(sweep.tasks)}: {task.query_id}, {alpha} "
                              f"({time.perf_counter() - start:.0f} s so far)")
            try:
                done[task] = sweep.run(task)
            except FairRAGError as err:
                st.error(str(err))
                break
        bar.empty()
    return sweep, done
