"""Audit what a deployed system served — a RAG log or a served run, one model
(:class:`~fairrag_core.data.rag_log.RagLog`) and one audit (:func:`audit_served`): who it exposed, which sources
its answers rest on, and how far from fair.

(Long because it is the one audit of everything served — lines read one by one, a large log read column-wise
(:mod:`fairrag_core.data.log_columns`) or aggregated per query by the workers that read its shards
(:mod:`.log_shards`) — and one per-query computation serves all three.)

The entries that share a ``query_id`` are the N served rankings of that query, so the metrics of Kim & Diaz (2025)
apply to what was *served* instead of what was sampled:

* exposure under the step model MU(i) = 1[i ≤ k] (Eq. 4–5): ε_d = (1/N_q) Σ_lines 1[d in the top k]; k defaults
  to the longest ranking (the generator saw the whole ranking) and is set lower when the log holds longer
  rankings than the generator read. EE-D = ‖ε‖²/k (Eq. 16): ``ee_d`` is the serving policy's EE-D, estimated as
  everywhere in the package — bias-corrected, with the basic bootstrap interval over the query's lines
  (``ee_d_low``, ``ee_d_high``; :mod:`fairrag_core.metrics.bootstrap`) — and ``ee_d_plug_in`` the disparity of
  the lines as served. A query served once has its plug-in as ``ee_d`` and no interval;
* EE-R (Eq. 28) and the fair target ε* (Eq. 6) where the collection has relevance labels for the query
  (useful = grade ≥ ``min_rel``; the candidates are the whole collection: the system could have served any
  document);
* attribution of the answers (Eq. 8–11): AR, EAR, attributed exposure ε^a and EAE-D, from the citations the
  system logged ("cited by the system"), from an NLI judge ("entailed per the judge": the document, premise,
  entails the answer, hypothesis, with the query as context), or both side by side. Lines without citations
  (logged source) or without an answer (judge) are left out of that source's attribution;
* the exposure ledger per provider and per group with percentile bootstrap intervals over queries, and the gap
  to the fair target, and the headline numbers with their intervals (:mod:`fairrag_core.audit.log_report`).

The audit is named steps, each callable on its own (:func:`audit_rag_log` runs them in order): :func:`read_log`;
:func:`plan_log_audit` (settings resolved, the log as columns, the judge's items: a :class:`LogAuditPlan`, with
the distinct pairs the judge will be asked in :meth:`LogAuditPlan.judge_pairs`); the judge
(:func:`judge_log`); then :func:`finish_log_audit` — the logged citations
(:func:`logged_citations`), each query's exposure and attribution (:mod:`.log_exposure`), the lines table and the
record. A backend judges the planned pairs and runs the rest once (``backends/workloads.py``).

Judging is the only slow step: it calls the attributor once per distinct (document, answer, query), reports
progress through a callback, and the attributor caches every pair. Everything else is vectorised per query:
a 10,000-line log audits in well under a second on a laptop (``benchmarks/bench_rag_log.py``).
"""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..checks import MAX_RESAMPLES, check_at_most, check_k, check_open_unit
from ..data import Collection
from ..data.identity import audit_inputs
from ..data.log_columns import ColumnLog, LogColumns, top_slots
from ..data.rag_log import RagLog, load_served
from ..data.store_window import when_arg
from ..data.traces import MultipleRetrievals, TraceMap
from ..errors import InvalidParameterError
from ..metrics.expeval import METRICS, UserModel
from ..models.catalog import DEFAULTS
from ..option_types import level_arg, positive_arg, unit_arg
from ..options import (
    MIN_REL,
    MULTI_RETRIEVAL,
    PROVIDER_FROM,
    PROVIDER_MAP,
    SEED,
    TRACE_MAP,
    WHAT_IF_ALPHAS,
    WHAT_IF_SAMPLES,
    no_option,
    option,
)
from ..rag.attribution import Attributor
from ..rag.citations import CitationPolicy
from ..rag.judging import JudgeItem
from ..record import RunKind, RunRecord, SweepRun
from ..seeds import check_seed, new_seed
from .log_exposure import measure_queries, with_candidates
from .log_judge import Pair, judge_items, judge_verdicts, planned_pairs
from .log_shards import LogAggregate
from .merit import DEFAULT_GRADES, grades_arg, threshold_arg
from .served import evaluate_run
from .target_shares import target_shares_arg
from .windows import window_arg

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["AttributionSource", "LogAuditConfig", "LogAuditRun", "audit_served", "audit_rag_log", "SOURCE_LABELS",
           "EXPEVAL_COLUMNS", "LogAuditPlan", "read_log", "plan_log_audit", "judge_log", "logged_citations",
           "finish_log_audit"]


class AttributionSource(str, enum.Enum):
    """Where attribution comes from: ``logged`` citations, the NLI ``judge``, ``both`` side by side, or ``none``.
    ``auto`` is ``logged`` when the log has citations, else ``none`` (judging is slow, so it is never implied)."""

    AUTO = "auto"
    NONE = "none"
    LOGGED = "logged"
    JUDGE = "judge"
    BOTH = "both"


#: Column suffix and reader's label of each measured source.
SOURCE_LABELS = {"cited": "cited by the system", "entailed": "entailed per the judge"}


@dataclass(frozen=True, kw_only=True)
class LogAuditConfig(CitationPolicy):
    """How a RAG log is audited: the log's path, k (None: the longest ranking), the attribution source, the
    relevance grade from which a document is useful, the bootstrap (resamples, level, seed), and an optional
    second user model for the served rankings: ``gerr`` or ``rbp`` with ``patience`` (and ``utility`` for
    gerr) add expeval's normalised disparity, relevance and difference per labelled query
    (:func:`~fairrag_core.audit.served.evaluate_run` on the whole rankings); ``step`` (default) adds nothing
    beyond the paper's EE-D and EE-R. The citation-rule fields (:class:`~fairrag_core.rag.citations.CitationPolicy`,
    paper's argmax by default; the CLI and the app use the fitted preset rule) decide "entailed per the judge";
    a log has no retrieved pool, so there is no control document.

    How the log is read and what runs with the audit are settings too, so that a stored run's reproduce command holds
    them: ``trace_map`` (``KEY=ATTRIBUTE`` words, in :data:`~fairrag_core.data.traces.TRACE_FIELDS` order) and
    ``multi_retrieval`` read a trace export (:class:`~fairrag_core.data.traces.TraceMap`); ``provider_from`` or
    ``provider_map`` (a CSV's path) name the documents' providers of a log audited without a collection
    (:func:`~fairrag_core.data.traces.documents_from_log`); ``service``, ``since`` and ``until`` select a ``collect``
    store's traces by service and root-span start time (:mod:`~fairrag_core.data.store_window`); ``what_if_alphas``
    (None: no what-if) and ``what_if_samples`` replay the logged scores under the fair sampler
    (:mod:`fairrag_core.audit.what_if`). The audit itself reads none of them: the caller loads the log and runs the
    what-if with them."""

    control_margin: float | None = no_option(default=None)  # a log has no retrieved pool: no control document
    log: str = option("log", default="", path=True, help="the RAG log (.jsonl), or a served run file (expeval/TREC "
                                                         "with samples, TREC Fair 2022): each sample is one line")
    k: int | None = option("-k", "--k", default=None, parse=positive_arg, default_text="the longest ranking",
                           help="documents the generator read; set it when the log's rankings are longer than what "
                                "the generator saw")
    attribution: AttributionSource = option(
        "--attribution", default=AttributionSource.AUTO,
        help="auto (logged citations if the log has them, else none), none, logged, judge (NLI), or both side by side")
    min_rel: int = MIN_REL.field(default=1)
    user_model: UserModel = option(
        "--user-model", default=UserModel.STEP,
        help="step (the paper's 1[i ≤ k], EE-D and EE-R) or also expeval's gerr/rbp on the whole rankings "
             "(normalised disparity, relevance, difference per labelled query)")
    patience: float = option("--patience", default=0.5, parse=unit_arg, help="gerr/rbp patience p")
    utility: float = option("--utility", default=0.5, parse=unit_arg, help="gerr utility u")
    n_boot: int = option("--boot", default=1000, parse=positive_arg, help="bootstrap resamples over queries")
    level: float = option("--level", default=0.95, parse=level_arg, help="interval level")
    seed: int | None = SEED.field(default=None)
    # printed in this order after the seed (the reproduce command reads the fields in order)
    trace_map: tuple[str, ...] = TRACE_MAP.field(default=())
    multi_retrieval: MultipleRetrievals = MULTI_RETRIEVAL.field(default=MultipleRetrievals.SKIP)  # noqa: RUF009
    provider_from: str | None = PROVIDER_FROM.field(default=None)
    provider_map: str | None = PROVIDER_MAP.field(default=None)
    # of a `collect` store: which service and window of root-span start times (fairrag_core.data.store_window)
    service: str | None = option("--service", default=None, metavar="NAME", default_text="every service",
                                 help="of a `collect` store: only this service's traces (its service.name)")
    since: str | None = option("--since", default=None, parse=when_arg, metavar="TIME",
                               default_text="the store's first trace",
                               help="of a `collect` store: only traces whose root span started at or after TIME "
                                    "(UTC: 2026-11-27, 2026-11-27T10:30:00Z, or 90m, 24h, 7d before now)")
    until: str | None = option("--until", default=None, parse=when_arg, metavar="TIME",
                               default_text="the store's last trace",
                               help="of a `collect` store: only traces whose root span started before TIME (as "
                                    "--since)")
    # of a `collect` store: audited window by window (fairrag_core.audit.monitor)
    window: str | None = option("--window", default=None, parse=window_arg, metavar="SIZE",
                                default_text="none (one audit of the whole selection)",
                                help="of a `collect` store: audit it per UTC-aligned window (1h, 1d or 7d): shares, "
                                     "EE-D and findings per window, deployment changes and drift alarms")
    changes: str | None = option("--changes", default=None, path=True, metavar="FILE", default_text="none",
                                 help="with --window: a time,label CSV of deployment changes to mark on the timeline")
    what_if_alphas: tuple[float, ...] | None = WHAT_IF_ALPHAS.field(default=None)
    what_if_samples: int = WHAT_IF_SAMPLES.field(default=100)
    target_shares: str | None = option(
        "--target-shares", default=None, path=True, parse=target_shares_arg, metavar="FILE",
        default_text="none (no stated target)",
        help="a provider,share CSV (or JSON provider → share) of stated shares (a contract, a policy, a population): "
             "each provider's retrieval-exposure share is tested against it; needs no relevance labels")
    # merit from the system's own scores, where the logged candidates carry them (fairrag_core.audit.merit)
    merit_grades: int = option("--merit-grades", default=DEFAULT_GRADES, parse=grades_arg, metavar="G",
                               help="merit tiers by score quantile within each query's logged candidates (4: "
                                    "quartiles) for exposure against merit from the system's own scores")
    merit_threshold: float | None = option(
        "--merit-threshold", default=None, parse=threshold_arg, metavar="T", default_text="none (tiers by quantile)",
        help="instead of quantile tiers: a candidate scored at least T is meritorious, the others not")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.seed is not None:
            check_seed(self.seed)
        # KEY=ATTRIBUTE words checked and written one way (a key given twice, an unknown key: the fix)
        object.__setattr__(self, "trace_map", TraceMap.parse(self.trace_map).items())
        if self.what_if_alphas is not None:  # an empty grid is no what-if (and no empty --what-if-alphas)
            object.__setattr__(self, "what_if_alphas", tuple(self.what_if_alphas) or None)
        if self.control_margin is not None:
            raise InvalidParameterError("a RAG log has no retrieved pool to draw a control document from; leave "
                                        "control_margin unset (None) for log audits")


@dataclass(frozen=True)
class LogAuditRun(SweepRun):
    """A log audit: ``table`` per query, ``documents`` per (query, document), ``lines`` per log line.

    ``documents`` has ``query_id, doc_id, exposure, target_exposure, cited_exposure, entailed_exposure`` (NaN
    where not measured); ``lines`` has ``line, query_id, session, timestamp, query, answer, shown, cited,
    entailed, cited_outside`` (doc-id tuples; not kept by the run store, which keeps the log's path and sha256).
    """

    lines: pd.DataFrame | None = None

    @property
    def sources(self) -> tuple[str, ...]:
        """The measured attribution sources: ``cited`` and/or ``entailed``."""
        return tuple(s for s in SOURCE_LABELS if f"ear_{s}" in self.table and self.table[f"ear_{s}"].notna().any())


def _resolve_source(config: LogAuditConfig, log: RagLog | ColumnLog, judge: bool) -> AttributionSource:
    source = config.attribution
    if isinstance(log, ColumnLog):  # read column-wise: rankings, not citations or answers; exposure only
        if source not in (AttributionSource.AUTO, AttributionSource.NONE):
            raise InvalidParameterError(f"{log.source} was read column-wise (a large log): it audits exposure only; "
                                        "use attribution 'none', or split the log to judge or read its citations")
        if config.user_model is not UserModel.STEP:
            raise InvalidParameterError(f"{log.source} was read column-wise (a large log): the second user model "
                                        f"{config.user_model.value!r} needs the log read line by line; use 'step'")
        return AttributionSource.NONE
    if source is AttributionSource.AUTO:
        return AttributionSource.LOGGED if log.has_citations else AttributionSource.NONE
    if source in (AttributionSource.LOGGED, AttributionSource.BOTH) and not log.has_citations:
        raise InvalidParameterError(f"{log.source} logs no citations; use attribution 'judge' (NLI) or 'none'")
    if source in (AttributionSource.JUDGE, AttributionSource.BOTH):
        if not log.has_answers:
            raise InvalidParameterError(f"{log.source} logs no answers to judge; use attribution 'logged' or 'none'")
        if not judge:
            raise InvalidParameterError(f"attribution {source.value!r} needs an NLI attributor; pass "
                                        f"attributor=load_attributor({DEFAULTS['attributor']!r}) (or --nli on the "
                                        "command line)")
    return source


@dataclass(frozen=True)
class LogAuditPlan:
    """A log audit planned (:func:`plan_log_audit`): everything decided before any judging or exposure — the log read
    as columns, the resolved attribution source, k, the seed and the judge's items — so that a stage can be run or
    replaced on its own (a backend judges :meth:`judge_pairs` and the rest runs once on the driver).

    ``slots`` are the lines' top-k collection positions (−1: an empty slot; None for the aggregates of a sharded log)
    and ``judge_items`` the answers to judge, one per line (empty unless the source is ``judge`` or ``both``)."""

    log: RagLog | ColumnLog
    collection: Collection
    config: LogAuditConfig
    source: AttributionSource
    k: int
    seed: int
    columns: LogColumns | LogAggregate
    slots: np.ndarray | None
    notes: tuple[str, ...]
    judge_items: tuple[JudgeItem, ...]
    started: float

    @property
    def judged(self) -> bool:
        """The judge's verdicts are measured (attribution ``judge`` or ``both``)."""
        return self.source in (AttributionSource.JUDGE, AttributionSource.BOTH)

    def judge_pairs(self) -> list[Pair]:
        """The distinct (document, claim, question) the judge step will ask, in its order, asking no model
        (:func:`~fairrag_core.audit.log_judge.planned_pairs`)."""
        if not self.judged:
            return []
        return planned_pairs(self.collection.documents, self.judge_items, self.config.citation_policy)


def read_log(log: RagLog | ColumnLog | str | Path, collection: Collection) -> RagLog | ColumnLog:
    """The log loaded (a path is read by :func:`~fairrag_core.data.rag_log.load_served`) and a loaded log's
    doc ids checked against ``collection``."""
    if not isinstance(log, RagLog | ColumnLog):
        log = load_served(log)
    if isinstance(log, RagLog):
        log.check_against(collection)
    return log


def plan_log_audit(log: RagLog | ColumnLog, collection: Collection, config: LogAuditConfig, *, judge: bool,
                   started: float | None = None) -> LogAuditPlan:
    """The settings checked and resolved (``judge``: an NLI judge will be given) and the log turned into the
    columns every later step reads, with the judge's items; no judging, no exposure."""
    started = time.perf_counter() if started is None else started
    source = _resolve_source(config, log, judge)
    check_at_most(config.n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                  fix="1,000 resamples are the usual number")
    check_open_unit(config.level, "level", hint="e.g. 0.95")
    shortest, longest = log.ranking_lengths
    k = check_k(config.k if config.k is not None else longest, len(collection))
    notes = []
    if config.k is None and shortest != longest:
        notes.append(f"rankings hold {shortest}–{longest} documents; k = {k} (the longest); shorter rankings fill "
                     "fewer slots")
    # one shape for every log: its lines as columns (a loaded log turned into them here), or — the exception — the
    # per-query aggregates of its shards (read by workers; no lines)
    columns = LogColumns.of(log, collection) if isinstance(log, RagLog) else log
    slots = None if isinstance(columns, LogAggregate) else top_slots(columns.slots, k)
    plan = LogAuditPlan(log=log, collection=collection, config=config, source=source, k=k,
                        seed=config.seed if config.seed is not None else new_seed(), columns=columns, slots=slots,
                        notes=tuple(notes), judge_items=(), started=started)
    if not plan.judged:
        return plan
    return replace(plan, judge_items=judge_items(log, collection, slots, config.citation_policy))


def judge_log(plan: LogAuditPlan, attributor: Attributor, progress: Callable[[int, int], None] | None = None
              ) -> np.ndarray:
    """The judge step, the slow one: the ``(lines, k)`` verdicts of ``attributor`` — the NLI judge, or a backend's
    judgements of :meth:`LogAuditPlan.judge_pairs` served as one — under the plan's citation rule
    (:func:`~fairrag_core.audit.log_judge.judge_verdicts`)."""
    return judge_verdicts(attributor, plan.collection.documents, plan.judge_items, plan.config.citation_policy,
                          plan.k, progress)


def logged_citations(plan: LogAuditPlan) -> tuple[np.ndarray | None, list[tuple[str, ...]], list[str]]:
    """The ``(lines, k)`` verdicts of the logged citations (None unless the source is ``logged`` or
    ``both``), each line's citations outside the top k, and the note that counts them."""
    log, k = plan.log, plan.k
    outside: list[tuple[str, ...]] = [()] * (len(log) if isinstance(log, RagLog) else 0)
    if plan.source not in (AttributionSource.LOGGED, AttributionSource.BOTH):
        return None, outside, []
    cited = np.zeros(plan.slots.shape, dtype=bool)
    for i, entry in enumerate(log.entries):
        if entry.citations:
            top = entry.ranking[:k]
            cited[i, :len(top)] = [d in entry.citations for d in top]
            outside[i] = tuple(d for d in entry.citations if d not in top)
    count = sum(len(c) for c in outside)
    notes = [f"{count} citation(s) name documents outside the top {k} the generator read; they count in no "
             "attribution metric (see the lines table)"] if count else []
    return cited, outside, notes


def finish_log_audit(plan: LogAuditPlan, entailed: np.ndarray | None = None, *, attributor: Attributor | None = None,
                     collection_source: str | None = None) -> LogAuditRun:
    """Everything after the judge, run once: the logged citations, each query's exposure and attribution
    (:func:`~fairrag_core.audit.log_exposure.measure_queries`), the second user model, the lines table and the
    record. ``entailed`` are :func:`judge_log`'s verdicts by ``attributor`` (None when the judge is not measured)."""
    log, collection, config, k = plan.log, plan.collection, plan.config, plan.k
    cited, cited_outside, cite_notes = logged_citations(plan)
    table, documents = measure_queries(plan.columns, collection, k, plan.slots, cited, entailed,
                                       min_rel=config.min_rel, n_boot=config.n_boot, level=config.level,
                                       seed=plan.seed)
    documents = with_candidates(documents, log, collection)  # what each query's lines chose from, where logged
    doc_ids = np.array(collection.doc_ids, dtype=object)
    lines_table = (_lines_table(log, plan.slots, doc_ids, cited, entailed, cited_outside) if isinstance(log, RagLog)
                   else None)
    if config.user_model is not UserModel.STEP:
        table = _with_user_model(table, log, collection, config)
    # the log's absolute path, so that the reproduce command finds it from any directory
    logged = config.log or log.source
    if logged and os.path.exists(logged):  # a file, or a folder of shards
        logged = os.path.abspath(logged)
    resolved = replace(config, log=logged, k=k if config.k is not None else None,
                       attribution=plan.source, seed=plan.seed)
    judged_pairs = int((plan.slots[plan.columns.answered] >= 0).sum()) if entailed is not None else 0
    record = RunRecord(kind=RunKind.AUDIT_LOG, collection=collection_source or collection.source or collection.name,
                       retriever="served",
                       config=resolved, seed=plan.seed, query_ids=tuple(plan.columns.query_ids),
                       attributor=attributor.name if entailed is not None else None,
                       attributor_prompt=getattr(attributor, "prompt_version", None) if entailed is not None else None,
                       wall_seconds=time.perf_counter() - plan.started, sampled_rankings=len(log),
                       extra={"inputs": audit_inputs(log, collection), "served": log.kind,
                              "log_sha256": log.sha256, "rankings": len(log),
                              # a trace export's requests beside its file's lines (RagLog.identity)
                              **{k: v for k, v in log.identity().items() if k in ("lines", "requests")},
                              "k_used": k, "notes": [*plan.notes, *cite_notes],
                              "judged_pairs": judged_pairs})
    return LogAuditRun(record=record, table=table, documents=documents, lines=lines_table)


def audit_rag_log(log: RagLog | ColumnLog | str | Path, collection: Collection,
                  config: LogAuditConfig = LogAuditConfig(), *, attributor: Attributor | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  collection_source: str | None = None) -> LogAuditRun:
    """Audit a RAG log against ``collection`` (module docstring: what is measured and how): :func:`read_log`,
    :func:`plan_log_audit`, :func:`judge_log` when the judge is measured, then :func:`finish_log_audit`.

    Args:
        log: a loaded :class:`RagLog`, or the path of a RAG log (JSONL) or of a served run (TREC, expeval, TREC Fair
            2022), read by :func:`~fairrag_core.data.rag_log.load_served`; or a large log read column-wise
            (:class:`~fairrag_core.data.log_columns.LogColumns`: exposure only, under the step user, and no
            ``lines`` table).
        collection: the documents the system retrieved from; unknown doc ids raise with the line and the fix.
        config: k, attribution source, ``min_rel``, bootstrap settings and seed (None: fresh, recorded).
        attributor: the NLI judge, needed for attribution ``judge`` or ``both``.
        progress: called as ``progress(done, total)`` over the distinct (document, answer) pairs judged; raise
            from it to stop (finished pairs stay in the attributor's cache).
        collection_source: what ``--collection`` should say in the reproduce command (default: the collection's
            ``source``, its demo name or folder path).

    Returns:
        A :class:`LogAuditRun` with a :class:`~fairrag_core.record.RunRecord` of kind ``audit-log``.
    """
    started = time.perf_counter()
    plan = plan_log_audit(read_log(log, collection), collection, config, judge=attributor is not None,
                          started=started)
    entailed = judge_log(plan, attributor, progress) if plan.judged else None
    return finish_log_audit(plan, entailed, attributor=attributor, collection_source=collection_source)


#: One audit for everything served: a RAG log, a served run, later a trace export (``audit_rag_log`` is its first
#: name, kept for existing callers).
audit_served = audit_rag_log


#: Columns added by a second user model (expeval's normalised metrics).
EXPEVAL_COLUMNS = {metric: f"expeval_{metric}" for metric in METRICS}


def _with_user_model(table: pd.DataFrame, log: RagLog, collection: Collection, config: LogAuditConfig) -> pd.DataFrame:
    """Add expeval's normalised metrics under ``config.user_model`` for the queries the collection judges."""
    import pandas as pd

    labelled: dict[str, list[list[str]]] = {}  # {query_id: [ranking per line]}
    for entry in log.entries:
        if entry.query_id in collection.qrels:
            labelled.setdefault(entry.query_id, []).append(list(entry.ranking))
    extra = pd.DataFrame(columns=list(EXPEVAL_COLUMNS.values()))
    if labelled:  # rbp ignores the utility
        values = evaluate_run(qrels=collection, run=labelled, user_model=config.user_model.value,
                              patience=config.patience, utility=config.utility)
        extra = values[list(EXPEVAL_COLUMNS)].rename(columns=EXPEVAL_COLUMNS)
    return table.merge(extra, left_on="query_id", right_index=True, how="left")


def _lines_table(log: RagLog, slots: np.ndarray, doc_ids: np.ndarray, cited: np.ndarray | None,
                 entailed: np.ndarray | None, cited_outside: list[tuple[str, ...]]) -> pd.DataFrame:
    import pandas as pd

    def picked(verdicts: np.ndarray | None, i: int) -> tuple[str, ...] | None:
        if verdicts is None:
            return None
        return tuple(doc_ids[slots[i][verdicts[i] & (slots[i] >= 0)]])

    entries, kept = log.entries, ("line", "query_id", "session", "timestamp", "query", "answer")
    return pd.DataFrame({
        **{name: [getattr(e, name) for e in entries] for name in kept},
        "shown": [tuple(doc_ids[row[row >= 0]]) for row in slots],
        "cited": [picked(cited, i) if e.citations is not None else None for i, e in enumerate(entries)],
        "entailed": [picked(entailed, i) if e.answer else None for i, e in enumerate(entries)],
        "cited_outside": cited_outside,
    })
