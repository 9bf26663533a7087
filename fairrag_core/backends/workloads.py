"""The long commands split into tasks for a :class:`~fairrag_core.backends.executor.Backend` (issue 14, item 1).

Each workload is a picklable *spec* (what a worker loads: catalog names, the collection's name or folder, the
settings with the seed fixed), a module-level task function ``fn(state, task)``, and a driver function that plans
the tasks, maps them on the backend and collects the results **in task order**, so that every backend gives the
table the local code gives for the same seed:

=================  ============================================  ==================================================
command            one task                                      what a worker holds (built once)
=================  ============================================  ==================================================
``exposure-sweep`` one α over every query (the α's own stream    the planned candidates (no model)
                   ``default_rng([seed, α index])`` is drawn for
                   all queries at once, so a finer split would
                   change the draws)
``sweep``          one (query, α) cell with its seeds            collection, retriever, generator, NLI attributor
                   (:class:`~fairrag_core.rag.sweep.SweepTask`)
``label-utility``  one query (closed-book answer + one answer    collection, retriever, generator
                   per candidate)
``fair-qr-eval``   one (category, query)                         collection, BM25, dense model, refiners
``audit-log``      a chunk of distinct (document, answer)        the NLI attributor
                   pairs for the judge; the audit itself
                   (vectorised, seconds) stays on the driver
=================  ============================================  ==================================================

Answers and judgements go through the models' caches as they do locally: each worker opens the shared SQLite
disk cache (:mod:`fairrag_core.data.disk_cache`, WAL) with its own connections, at the path the driver uses
(``cache_db`` of a spec), so work done on Ray is found by later local runs and the other way round — when the
workers can reach that path (one machine, or a shared file system). The driver saves the result to the run store.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol

import numpy as np
import pandas as pd

from ..audit.rag_log import LogAuditConfig, LogAuditRun, finish_log_audit, judge_log, plan_log_audit, read_log
from ..data import Collection, load_collection
from ..data.disk_cache import CACHE_ENV, default_cache_path
from ..data.rag_log import RagLog
from ..errors import DataFormatError, InvalidParameterError
from ..fairqr.evaluate import FairQREvalConfig, evaluate_fair_qr
from ..fairqr.loop import FairQRResult
from ..rag.attribution import Attributor
from ..rag.generation import Generator
from ..rag.labels import UtilityLabelConfig, label_utility
from ..rag.sweep import RagSweep, RagSweepConfig, SweepTask, TaskResult
from ..ranking.sweep import ExposurePlan, SweepConfig, collect_exposure_sweep, exposure_alpha, plan_exposure_sweep
from ..record import SweepRun
from ..retrieval import Retriever, build_retriever
from ..seeds import new_seed
from .executor import Backend

__all__ = ["InputsSpec", "ModelsSpec", "CatalogModels", "RagSweepSpec", "LabelSpec", "FairQRSpec", "JudgeSpec",
           "cache_setting", "exposure_sweep_on", "rag_sweep_on", "label_utility_on", "fair_qr_eval_on",
           "audit_rag_log_on", "CollectionSpec", "read_log_on"]

Progress = Callable[[int, int], None] | None


def cache_setting() -> str:
    """The driver's disk cache as a worker should use it: the file's path, or ``off``."""
    path = default_cache_path()
    return "off" if path is None else str(path)


@contextmanager
def _use_cache(setting: str | None):
    """While a worker builds its models, the disk cache is ``setting`` (the driver's); the environment is restored
    afterwards (the caches keep the file they opened), so building on the driver changes nothing there."""
    before = os.environ.get(CACHE_ENV)
    if setting is not None:
        os.environ[CACHE_ENV] = setting
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before


# -- specs ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InputsSpec:
    """A collection (demo name, or a folder every worker can read) and its first-stage retriever."""

    collection: str
    retriever: str = "bm25"
    model: str | None = None
    device: str | None = None

    def build(self) -> tuple[Collection, Retriever]:
        collection = load_collection(self.collection)
        return collection, build_retriever(self.retriever, collection.texts, model=self.model, device=self.device,
                                           collection=collection.name)


class ModelsSpec(Protocol):
    """Builds the language models of a worker from names (never a loaded model)."""

    def generator(self) -> Generator: ...

    def attributor(self) -> Attributor: ...


@dataclass(frozen=True)
class CatalogModels:
    """Models by their catalog names, as the command line names them (``--generator``, ``--nli``, ``--device``)."""

    generator_name: str | None = None
    prompt_style: str | None = None  # None: the generator's default style
    nli: str | None = None
    device: str | None = None

    def generator(self) -> Generator:
        from ..models.catalog import DEFAULTS, load_language_model

        name = self.generator_name or DEFAULTS["generator"]
        model = load_language_model(name, device=self.device)
        return Generator(model) if self.prompt_style is None else Generator(model, style=self.prompt_style)

    def attributor(self) -> Attributor:
        from ..rag.attribution import load_attributor

        return load_attributor(self.nli, device=self.device)


@dataclass(frozen=True)
class _Data:
    """A worker state that is plain data (an exposure plan): ``build()`` returns it."""

    value: Any
    uses_models: ClassVar[bool] = False

    def build(self) -> Any:
        return self.value


# -- exposure-sweep ------------------------------------------------------------------------------------------------
def _exposure_task(plan: ExposurePlan, a_index: int):
    return exposure_alpha(plan, a_index)


def exposure_sweep_on(backend: Backend, collection: Collection, retriever: Retriever, config: SweepConfig, *,
                      progress: Progress = None) -> SweepRun:
    """:func:`~fairrag_core.ranking.sweep.exposure_sweep` with one task per α on ``backend`` (same table)."""
    plan = plan_exposure_sweep(collection, retriever, config)
    parts = backend.map(_exposure_task, plan.tasks, spec=_Data(plan), state=plan, progress=progress)
    return collect_exposure_sweep(plan, parts)


# -- sweep (RAG) ---------------------------------------------------------------------------------------------------
def _seeded(config):
    return config if config.seed is not None else replace(config, seed=new_seed())


@dataclass(frozen=True)
class RagSweepSpec:
    """A RAG sweep as a worker rebuilds it: inputs, models, the config with its seed, the disk cache to use."""

    inputs: InputsSpec
    models: ModelsSpec
    config: RagSweepConfig
    cache_db: str | None = None
    uses_models: ClassVar[bool] = True

    def build(self) -> RagSweep:
        collection, retriever = self.inputs.build()
        with _use_cache(self.cache_db):
            return RagSweep(collection, retriever, self.models.generator(), self.models.attributor(), self.config)


def _rag_task(sweep: RagSweep, task: SweepTask) -> tuple[TaskResult, int]:
    before = sweep.generator.cache.misses
    result = sweep.run(task)
    return result, sweep.generator.cache.misses - before


def rag_sweep_on(backend: Backend, spec: RagSweepSpec, *, progress: Progress = None) -> SweepRun:
    """:func:`~fairrag_core.rag.sweep.rag_sweep` with one task per (query, α) on ``backend``.

    The driver builds the sweep from ``spec`` too (to plan and collect; models load on first use, so it loads no
    weights when the tasks run elsewhere). ``generator_calls`` in the record sums the workers' generations: each
    worker keeps its own memory cache, so a top-k list met by two workers is generated twice unless the disk cache
    is shared.
    """
    spec = replace(spec, config=_seeded(spec.config))
    sweep = spec.build()
    start = time.perf_counter()
    done = backend.map(_rag_task, sweep.tasks, spec=spec, state=sweep, progress=progress)
    return sweep.collect([r for r, _ in done], wall_seconds=time.perf_counter() - start,
                         generator_calls=sum(calls for _, calls in done))


# -- label-utility -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LabelSpec:
    """Utility labelling (Algorithm 1) as a worker rebuilds it."""

    inputs: InputsSpec
    models: ModelsSpec
    config: UtilityLabelConfig
    cache_db: str | None = None
    uses_models: ClassVar[bool] = True

    def build(self) -> tuple[Collection, Retriever, Generator, UtilityLabelConfig]:
        collection, retriever = self.inputs.build()
        with _use_cache(self.cache_db):
            return collection, retriever, self.models.generator(), self.config


def _label_task(state, query_id: str) -> pd.DataFrame:
    collection, retriever, generator, config = state
    return label_utility(collection, generator, retriever, replace(config, query_ids=(query_id,)))


def label_utility_on(backend: Backend, spec: LabelSpec, *, progress: Progress = None) -> pd.DataFrame:
    """:func:`~fairrag_core.rag.labels.label_utility` with one task per query on ``backend`` (same table)."""
    collection = load_collection(spec.inputs.collection)
    ids = spec.config.query_ids or tuple(q.query_id for q in collection.queries)
    missing = [q for q in ids if not collection.query(q).answer]
    if missing:
        raise InvalidParameterError(
            f"queries {missing[:5]} have no gold answer; utility labels need an \"answer\" for every query")
    frames = backend.map(_label_task, ids, spec=spec, progress=progress)
    return pd.concat(frames, ignore_index=True)


# -- fair-qr-eval --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FairQRSpec:
    """FAIR-QR's evaluation as a worker rebuilds it: the collection, the refiner's name, the dense baseline."""

    collection: str
    refiner: str
    config: FairQREvalConfig
    dense: bool = False
    device: str | None = None
    cache_db: str | None = None

    @property
    def uses_models(self) -> bool:
        return self.dense or self.refiner != "keywords"

    def build(self) -> dict:
        from ..fairqr import build_refiner
        collection = load_collection(self.collection)
        bm25 = build_retriever("bm25", collection.texts, collection=collection.name)
        dense = (build_retriever("dense", collection.texts, device=self.device, collection=collection.name)
                 if self.dense else None)
        refiners: dict[str, Any] = {}

        def refiner_for(category):
            if category not in refiners:
                with _use_cache(self.cache_db):
                    refiners[category] = build_refiner(self.refiner, collection, category, bm25, device=self.device)
            return refiners[category]

        return {"collection": collection, "bm25": bm25, "dense": dense, "refiner_for": refiner_for,
                "config": self.config}


def _fair_qr_task(state: dict, task: tuple[str, str]) -> tuple[pd.DataFrame, list[FairQRResult]]:
    category, query_id = task
    config = replace(state["config"], categories=(category,), query_ids=(query_id,))
    return evaluate_fair_qr(state["collection"], state["bm25"], state["refiner_for"], config, dense=state["dense"])


def fair_qr_eval_on(backend: Backend, spec: FairQRSpec, *,
                    progress: Progress = None) -> tuple[pd.DataFrame, list[FairQRResult]]:
    """:func:`~fairrag_core.fairqr.evaluate.evaluate_fair_qr` with one task per (category, query) on ``backend``
    (same table and traces, category by category as the local loop)."""
    config = spec.config
    if config.cutoff < 1 or config.top_k < config.cutoff:
        raise InvalidParameterError(f"need 1 ≤ cutoff ≤ top_k, got cutoff={config.cutoff}, top_k={config.top_k}")
    collection = load_collection(spec.collection)
    ids = config.query_ids or tuple(q.query_id for q in collection.queries if q.query_id in collection.qrels)
    if not ids:
        raise InvalidParameterError(f"{collection.name!r} has no queries with qrels to evaluate on")
    tasks = [(c, q) for c in config.categories for q in ids]
    parts = backend.map(_fair_qr_task, tasks, spec=spec, progress=progress)
    table = pd.concat([t for t, _ in parts], ignore_index=True)
    table.attrs.update(parts[0][0].attrs)
    return table, [trace for _, traces in parts for trace in traces]


# -- audit-log -----------------------------------------------------------------------------------------------------
class _Judged(Attributor):
    """The workers' judgements, served under the real attributor's name (the audit pass on the driver)."""

    def __init__(self, name: str, rows: dict[tuple[str, str, str | None], np.ndarray]) -> None:
        super().__init__()
        self.disk = None  # the workers wrote their judgements to the disk cache already
        self.name, self.rows = name, rows

    def _class_probabilities(self, premises, hypotheses, contexts):
        return np.stack([self.rows[k] for k in zip(premises, hypotheses, contexts)])


@dataclass(frozen=True)
class JudgeSpec:
    """The NLI attributor of ``audit-log --attribution judge|both`` as a worker loads it."""

    models: ModelsSpec
    cache_db: str | None = None
    uses_models: ClassVar[bool] = True

    def build(self) -> Attributor:
        with _use_cache(self.cache_db):
            return self.models.attributor()


def _judge_task(attributor: Attributor, pairs: Sequence[tuple[str, str, str | None]]) -> np.ndarray:
    return attributor.class_probabilities([p for p, _, _ in pairs], [h for _, h, _ in pairs],
                                          contexts=[c for _, _, c in pairs])


def audit_rag_log_on(backend: Backend, log: RagLog, collection: Collection, config: LogAuditConfig, spec: JudgeSpec,
                     attributor_name: str, *, chunk: int = 16, progress: Progress = None,
                     collection_source: str | None = None) -> LogAuditRun:
    """:func:`~fairrag_core.audit.rag_log.audit_rag_log` with the NLI judge's pairs judged on ``backend``.

    The audit runs once, as its steps: the driver plans it (:func:`~fairrag_core.audit.rag_log.plan_log_audit`),
    whose :meth:`~fairrag_core.audit.rag_log.LogAuditPlan.judge_pairs` are the distinct (document, answer, question)
    pairs the judge will be asked, asking no model; the pairs, in that order (grouped by document), go to the
    workers in chunks of ``chunk``; the judge step then reads their judgements and the rest of the audit
    (:func:`~fairrag_core.audit.rag_log.finish_log_audit`) runs on the driver. Only for attribution ``judge`` or
    ``both``: without a judge there is no model work to send anywhere.
    """
    started = time.perf_counter()
    plan = plan_log_audit(read_log(log, collection), collection, config, judge=True, started=started)
    pairs = plan.judge_pairs()
    chunks = [pairs[i:i + chunk] for i in range(0, len(pairs), chunk)]
    rows = backend.map(_judge_task, chunks, spec=spec, progress=progress)
    judged = _Judged(attributor_name, dict(zip(pairs, np.concatenate(rows))) if rows else {})
    entailed = judge_log(plan, judged) if plan.judged else None
    return finish_log_audit(plan, entailed, attributor=judged, collection_source=collection_source)


# -- a large log's shards ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CollectionSpec:
    """A collection by its demo name or folder (every worker must be able to read it); no model."""

    collection: str
    uses_models: bool = False

    def build(self) -> Collection:
        return load_collection(self.collection)


def _read_shard(collection: Collection, task: tuple[str, int | None]):
    from ..audit.log_shards import aggregate_shard
    from ..data.log_columns import COLUMN_READER_TAKES, first_problem, read_log_columns

    path, k = task
    columns = read_log_columns(path, collection)
    if columns is None:
        first_problem(path, collection)  # raises the line's error
        raise DataFormatError(f"the column reader does not take this shard as written: {COLUMN_READER_TAKES}",
                              path=path)
    return aggregate_shard(columns, len(collection), k)


def read_log_on(backend: Backend, log: str | os.PathLike, collection: Collection, collection_source: str, *,
                k: int | None = None, progress: Progress = None):
    """A large log — one file, or a folder of its shards (:func:`~fairrag_core.audit.log_shards.log_shards`) — read
    and aggregated per query on ``backend``, one task a shard: each worker parses and checks its shard column-wise
    and reduces it to each query's distinct top-``k`` sets with their counts
    (:func:`~fairrag_core.audit.log_shards.aggregate_shard`); the driver merges them in shard order
    (:func:`~fairrag_core.audit.log_shards.merge_aggregates`) and the exposure audit reads the merged aggregates,
    with the numbers of the same log read here in one piece. The shards must be readable at the same paths on every
    node."""
    from ..audit.log_shards import log_shards, merge_aggregates

    shards = [(str(s), k) for s in log_shards(log)]
    parts = backend.map(_read_shard, shards, spec=CollectionSpec(collection_source), state=collection,
                        progress=progress)
    return merge_aggregates(parts, os.path.abspath(log), len(collection))
