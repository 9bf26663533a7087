"""The α sweep through the whole RAG pipeline: one row per (query, α) with EE-D, EE-R, EU, EAR and EAE-D.

Kim & Diaz (2025), §4–5: a collection × α grid plus the deterministic baseline (α = ∞) gives Figures 3–5 and
the inputs of Tables 1–2 (:mod:`fairrag_core.rag.tables`). A :class:`RagSweep` is planned as (query, α) tasks,
each with its own seeds, so that a caller can run them one at a time, show progress, stop and resume, and a
re-run of a task gives the same result. Answers are cached across samples, α values and queries.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..checks import check_alpha
from ..data import Collection
from ..errors import InvalidParameterError
from ..options import option
from ..ranking.sweep import SweepConfig, select_queries, system_of
from ..record import RunKind, RunRecord, SweepRun
from ..retrieval import Retriever
from ..seeds import derive_seed, new_seed
from ..settings import SamplingSettings, fields_of
from .attribution import Attributor
from .generation import Generator
from .labels import load_utility_labels, useful_vector
from .pipeline import AnswerSettings, AnswerStream, RagConfig, run_rag

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["Usefulness", "RagSweepConfig", "RagSweep", "SweepTask", "TaskResult", "rag_sweep"]


class Usefulness(str, enum.Enum):
    """Where a sweep's usefulness labels (for EE-R and the oracle) come from."""

    UTILITY = "utility"  # Algorithm 1's utility labels of the generator (shipped as utility.<generator>.qrels)
    RELEVANCE = "relevance"  # the collection's qrels, rel ≥ min_rel


@dataclass(frozen=True, kw_only=True)
class RagSweepConfig(SweepConfig, AnswerSettings):
    """A sweep with answers: the exposure sweep's grid and sampling, how answers are made and scored, where the
    usefulness labels come from, and whether the deterministic baseline (α = ∞) is added."""

    n_samples: int = 20
    usefulness: Usefulness = option("--labels", default=Usefulness.UTILITY, cli_default=None, always=True,
                                    default_text="the generator's utility labels when they exist, else relevance",
                                    help="usefulness labels for EE-R and the oracle")
    deterministic_baseline: bool = True


@dataclass(frozen=True)
class SweepTask:
    """One (query, α) cell of a RAG sweep, with the seeds that make it reproducible on its own."""

    query_id: str
    query_index: int
    alpha: float
    alpha_index: int
    seed: int
    oracle_seed: int


@dataclass(frozen=True)
class TaskResult:
    """What one task produced: the per-run metrics row and the per-candidate exposure frame."""

    task: SweepTask
    row: dict
    documents: pd.DataFrame


_DOCUMENT_COLUMNS = ["query_id", "alpha", "doc_id", "exposure", "target_exposure", "attributed_exposure"]


class RagSweep:
    """A planned RAG sweep, run one task at a time so that a caller can show progress, stop, and resume.

    ``tasks`` lists every (query, α) cell (the deterministic baseline is ``alpha = inf``). ``run(task)``
    is a pure function of the task and the models: re-running a cell gives the same result, and answers
    come from the generator's cache when a top-k list recurs (across samples, α values and queries).
    """

    def __init__(self, collection: Collection, retriever: Retriever, generator: Generator, attributor: Attributor,
                 config: RagSweepConfig) -> None:
        if not config.alphas:
            raise InvalidParameterError("give at least one α value, e.g. 0,1,2,4,8")
        alphas = [check_alpha(a) for a in config.alphas]
        if config.deterministic_baseline and not any(np.isinf(a) for a in alphas):
            alphas.append(float("inf"))
        queries = select_queries(collection, config.query_ids, need_qrels=False)
        if config.usefulness is Usefulness.UTILITY:
            qrels = load_utility_labels(collection, generator.name)
            self.useful = {q.query_id: useful_vector(collection, qrels, q.query_id) for q in queries}
        else:
            self.useful = {q.query_id: collection.useful(q.query_id, min_rel=config.min_rel) for q in queries}
        self.collection, self.retriever, self.generator, self.attributor = collection, retriever, generator, attributor
        self.config = config
        self.seed = config.seed if config.seed is not None else new_seed()
        self.queries = queries
        self.alphas = alphas
        self.tasks = [
            SweepTask(query_id=q.query_id, query_index=qi, alpha=a, alpha_index=ai,
                      seed=derive_seed(self.seed, qi, ai),
                      oracle_seed=derive_seed(self.seed, qi, 1_000_003))
            for qi, q in enumerate(queries) for ai, a in enumerate(alphas)
        ]
        self._scores: dict[str, np.ndarray] = {}

    def run(self, task: SweepTask, *, tick: Callable[[], None] | None = None,
            progress: Callable[[str, int, int], None] | None = None,
            on_answer: Callable[[object], None] | None = None) -> TaskResult:
        """One task's row and documents. ``tick()`` is called before every model call, ``progress`` after every
        answer and judged document and ``on_answer`` with each answer (see
        :class:`~fairrag_core.rag.pipeline.AnswerStream`): a caller that raises from ``tick`` stops the task within
        one answer or one judged document, and what was finished stays in the caches."""
        query = self.queries[task.query_index]
        if query.query_id not in self._scores:
            self._scores[query.query_id] = self.retriever.score(query.text)
        shared = fields_of(self.config, SamplingSettings, AnswerSettings) | {"seed": task.seed}
        config = RagConfig(alpha=task.alpha, oracle_seed=task.oracle_seed, **shared)
        run = run_rag(self.collection, self.retriever, self.generator, self.attributor, query.text, config,
                      useful=self.useful[query.query_id], scores=self._scores[query.query_id], n_boot=200,
                      stream=AnswerStream(tick=tick, progress=progress, on_answer=on_answer))
        m = int(run.ranking.labels.sum()) if run.ranking.labels is not None else 0
        row = {"query_id": query.query_id, "system": system_of(task.alpha), "alpha": task.alpha, "m": m,
               "fairness_question": m > 1, **{name: np.nan if value is None else value  # None: undefined
                                              for name, value in run.metrics().items()}, "oracle_eu": run.oracle_eu,
               "distinct_lists": len(run.answers), "seed": run.ranking.seed}
        documents = run.ranking.documents_table()[["doc_id", "exposure", "target_exposure"]]
        documents.insert(0, "alpha", task.alpha)
        documents.insert(0, "query_id", query.query_id)
        documents["attributed_exposure"] = run.attributed_exposure
        return TaskResult(task=task, row=row, documents=documents)

    def collect(self, results: Sequence[TaskResult], *, wall_seconds: float | None = None,
                generator_calls: int | None = None) -> SweepRun:
        """The finished ``results`` (in task order) as a :class:`~fairrag_core.record.SweepRun` with its record;
        ``record.complete`` says whether every task is in."""
        import pandas as pd

        ordered = sorted(results, key=lambda r: (r.task.query_index, r.task.alpha_index))
        frames = [r.documents for r in ordered]
        documents = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=_DOCUMENT_COLUMNS)
        record = RunRecord(
            kind=RunKind.RAG_SWEEP, collection=self.collection.source or self.collection.name,
            retriever=self.retriever.name,
            config=self.config, seed=self.seed, query_ids=tuple(q.query_id for q in self.queries),
            generator=self.generator.name, prompt_style=self.generator.style.name,
            attributor=self.attributor.name, attributor_prompt=getattr(self.attributor, "prompt_version", None),
            complete=len(ordered) == len(self.tasks),
            wall_seconds=wall_seconds, generator_calls=generator_calls,
            sampled_rankings=len(ordered) * self.config.n_samples)
        return SweepRun(record=record, table=pd.DataFrame([r.row for r in ordered]), documents=documents)


def rag_sweep(collection: Collection, retriever: Retriever, generator: Generator, attributor: Attributor,
              config: RagSweepConfig, *, progress: Callable[[int, int], None] | None = None) -> SweepRun:
    """Every (query, α) of ``config`` through the RAG pipeline: one row per (query, α) with EE-D, EE-R, EU,
    normalised EU, EAR and EAE-D.

    The deterministic retriever is included as ``alpha = inf`` (``system = "deterministic"``). Answers
    are cached across α values and queries, so a top-k list that recurs is generated once. The record holds the
    settings, the seed, the model names, the wall time and the generator calls. ``progress(done, total)`` is
    called after each (query, α). See :class:`RagSweep` to run it step by step.
    """
    sweep = RagSweep(collection, retriever, generator, attributor, config)
    calls_before = generator.cache.misses
    start = time.perf_counter()
    results = []
    for task in sweep.tasks:
        results.append(sweep.run(task))
        if progress is not None:
            progress(len(results), len(sweep.tasks))
    return sweep.collect(results, wall_seconds=time.perf_counter() - start,
                         generator_calls=generator.cache.misses - calls_before)
