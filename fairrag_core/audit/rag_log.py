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
from ..data.traces import MultipleRetrievals, TraceMap
from ..errors import InvalidParameterError
from ..metrics.attribution import attributed_exposure, eae_d_per_cited, eae_disparity, expected_attribution_rate
from ..metrics.bootstrap import line_intervals
from ..metrics.expeval import METRICS, UserModel
from ..metrics.exposure import ee_disparity, ee_relevance, target_exposure
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
from ..rag.degenerate import answer_flags
from ..rag.judging import JudgeItem, judge_answers
from ..record import RunKind, RunRecord, SweepRun
from ..seeds import check_seed, derive_seed, new_seed
from .log_shards import LogAggregate, served_exposure
from .served import evaluate_run

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["AttributionSource", "LogAuditConfig", "LogAuditRun", "audit_served", "audit_rag_log", "SOURCE_LABELS",
           "EXPEVAL_COLUMNS"]


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
    (:func:`~fairrag_core.data.traces.documents_from_log`); ``what_if_alphas`` (None: no what-if) and
    ``what_if_samples`` replay the logged scores under the fair sampler (:mod:`fairrag_core.audit.what_if`). The
    audit itself reads none of them: the caller loads the log and runs the what-if with them."""

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
    what_if_alphas: tuple[float, ...] | None = WHAT_IF_ALPHAS.field(default=None)
    what_if_samples: int = WHAT_IF_SAMPLES.field(default=100)

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


def _resolve_source(config: LogAuditConfig, log: RagLog | ColumnLog, attributor: Attributor | None
                    ) -> AttributionSource:
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
        if attributor is None:
            raise InvalidParameterError(f"attribution {source.value!r} needs an NLI attributor; pass "
                                        "attributor=load_attributor('qwen-judge') (or --nli on the command line)")
    return source


def _judge(log: RagLog, collection: Collection, texts: dict[str, str], slots: np.ndarray, attributor: Attributor,
           progress: Callable[[int, int], None] | None, policy: CitationPolicy) -> np.ndarray:
    """``(lines, k)`` verdicts: the slot's document supports the line's answer under the citation rule ``policy`` —
    the Playground's judging step (:func:`~fairrag_core.rag.judging.judge_answers`), with each line's query (else
    ``texts``') as the question and the judge's context. A degenerate answer is not judged when the rule skips it."""
    items = []
    for i, entry in enumerate(log.entries):
        question = entry.query or texts.get(entry.query_id) or ""
        skip = bool(entry.answer) and policy.skip_degenerate and bool(answer_flags(entry.answer, question=question))
        items.append(JudgeItem(entry.answer or "", tuple(int(p) for p in slots[i]), question=question,
                               context=question or None, skip=skip))
    verdicts = judge_answers(attributor, collection.documents, items, policy, batch=8, progress=progress)
    return np.array([[v.cited for v in row] for row in verdicts], dtype=bool).reshape(slots.shape)


def _vector(values: np.ndarray, k: int) -> np.ndarray:
    """Exposure of the served documents, zero-padded to at least k entries (the metrics check k ≤ n)."""
    return np.pad(values, (0, max(0, k - values.size)))


def audit_rag_log(log: RagLog | ColumnLog | str | Path, collection: Collection,
                  config: LogAuditConfig = LogAuditConfig(), *, attributor: Attributor | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  collection_source: str | None = None) -> LogAuditRun:
    """Audit a RAG log against ``collection`` (module docstring: what is measured and how).

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
    import pandas as pd

    started = time.perf_counter()
    if not isinstance(log, RagLog | ColumnLog):
        log = load_served(log)
    if isinstance(log, RagLog):
        log.check_against(collection)
    source = _resolve_source(config, log, attributor)
    check_at_most(config.n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                  fix="1,000 resamples are the usual number")
    check_open_unit(config.level, "level", hint="e.g. 0.95")
    shortest, longest = log.ranking_lengths
    k = check_k(config.k if config.k is not None else longest, len(collection))
    notes = []
    if config.k is None and shortest != longest:
        notes.append(f"rankings hold {shortest}–{longest} documents; k = {k} (the longest); shorter rankings fill "
                     "fewer slots")
    seed = config.seed if config.seed is not None else new_seed()
    rng = np.random.default_rng(derive_seed(seed, 1))  # per-query intervals; the report bootstraps with `seed`
    # one shape for every log: its lines as columns (a loaded log turned into them here), or — the exception — the
    # per-query aggregates of its shards (read by workers; no lines)
    columns = LogColumns.of(log, collection) if isinstance(log, RagLog) else log
    aggregated = isinstance(columns, LogAggregate)
    if not aggregated:
        slots = top_slots(columns.slots, k)
        eligible = {"cited": columns.with_citations, "entailed": columns.answered}
        query_lines = columns.query_lines()
    cited = entailed = None
    texts = {x.query_id: x.text for x in collection.queries}
    cited_outside: list[tuple[str, ...]] = [()] * (len(log) if isinstance(log, RagLog) else 0)
    if source in (AttributionSource.LOGGED, AttributionSource.BOTH):
        cited = np.zeros(slots.shape, dtype=bool)
        for i, entry in enumerate(log.entries):
            if entry.citations:
                top = entry.ranking[:k]
                cited[i, :len(top)] = [d in entry.citations for d in top]
                cited_outside[i] = tuple(d for d in entry.citations if d not in top)
        outside = sum(len(c) for c in cited_outside)
        if outside:
            notes.append(f"{outside} citation(s) name documents outside the top {k} the generator read; they count "
                         "in no attribution metric (see the lines table)")
    judged_pairs = 0
    if source in (AttributionSource.JUDGE, AttributionSource.BOTH):
        entailed = _judge(log, collection, texts, slots, attributor, progress, config.citation_policy)
        judged_pairs = int((slots[columns.answered] >= 0).sum())

    query_ids = columns.query_ids
    providers = collection.providers
    doc_ids = np.array(collection.doc_ids, dtype=object)
    labelled = set(collection.qrels)
    rows, doc_parts = [], []
    for q, qid in enumerate(query_ids):
        lines = None if aggregated else query_lines[q]
        served, local, counts, eps = columns.exposure(q, k) if aggregated else served_exposure(slots[lines])
        ee_d = ee_disparity(_vector(eps, k), k)
        row = {"query_id": qid,
               "query": columns.query_texts.get(qid) or texts.get(qid),
               "lines": columns.queries[q].n_lines if aggregated else lines.size, "k": k, "labelled": qid in labelled,
               "m": np.nan, "fairness_question": False, "ee_d": ee_d,  # bias-corrected below
               "ee_d_plug_in": ee_d, "ee_r": np.nan, "documents_reached": served.size,
               "providers_reached": int(np.unique(providers[served]).size),
               "ee_d_low": np.nan, "ee_d_high": np.nan, "ee_r_low": np.nan, "ee_r_high": np.nan}
        part = {"doc_ids": doc_ids[served], "exposure": eps, "target": np.full(served.size, np.nan)}
        relevance_weights = None
        if qid in labelled:
            useful = collection.useful(qid, min_rel=config.min_rel)
            m = int(useful.sum())
            row.update(m=m, fairness_question=m > 1)
            if m:
                full = np.zeros(len(collection))
                full[served] = eps
                row["ee_r"] = ee_relevance(full, useful, k)
                target = target_exposure(useful, k)
                relevance_weights = target[served] / (target @ target)
                part = {"doc_ids": doc_ids, "exposure": full, "target": target}
        if row["lines"] > 1:
            row.update(line_intervals(local, served.size, k, rng, config.n_boot, config.level, relevance_weights,
                                      multiplicity=counts))
        doc_part = pd.DataFrame({"query_id": qid, "doc_id": part["doc_ids"], "exposure": part["exposure"],
                                 "target_exposure": part["target"]})
        for name, verdicts in (("cited", cited), ("entailed", entailed)):
            row[f"ear_{name}"] = row[f"eae_d_{name}"] = row[f"eae_d_per_cited_{name}"] = np.nan
            row[f"{name}_lines"] = 0
            doc_part[f"{name}_exposure"] = np.nan
            if verdicts is None:
                continue
            keep = eligible[name][lines]
            row[f"{name}_lines"] = int(keep.sum())
            if not keep.any():
                continue
            empty_to_dummy = np.where(local[keep] >= 0, local[keep], served.size)  # one item past the served
            eps_a = attributed_exposure(empty_to_dummy, verdicts[lines][keep], served.size + 1)[:served.size]
            row[f"ear_{name}"] = expected_attribution_rate(verdicts[lines][keep])
            # nothing attributed for this query: EAE-D is undefined (NaN), not a "fair" 0
            row[f"eae_d_{name}"] = eae_disparity(_vector(eps_a, k), k) if eps_a.any() else np.nan
            row[f"eae_d_per_cited_{name}"] = eae_d_per_cited(eps_a) if eps_a.any() else np.nan
            credit = pd.Series(eps_a, index=doc_ids[served])
            doc_part[f"{name}_exposure"] = doc_part["doc_id"].map(credit).fillna(0.0).to_numpy()
        if cited is not None and entailed is not None:
            both = eligible["cited"][lines] & eligible["entailed"][lines]
            c, e = cited[lines][both], entailed[lines][both]
            row.update(cited_slots=int(c.sum()), entailed_slots=int(e.sum()), agreed_slots=int((c & e).sum()))
        rows.append(row)
        doc_parts.append(doc_part)

    lines_table = _lines_table(log, slots, doc_ids, cited, entailed, cited_outside) if isinstance(log, RagLog) else None
    table = pd.DataFrame(rows)
    if config.user_model is not UserModel.STEP:
        table = _with_user_model(table, log, collection, config)
    documents = pd.concat(doc_parts, ignore_index=True)
    # the log's absolute path, so that the reproduce command finds it from any directory
    logged = config.log or log.source
    if logged and os.path.exists(logged):  # a file, or a folder of shards
        logged = os.path.abspath(logged)
    resolved = replace(config, log=logged, k=k if config.k is not None else None,
                       attribution=source, seed=seed)
    record = RunRecord(kind=RunKind.AUDIT_LOG, collection=collection_source or collection.source or collection.name,
                       retriever="served",
                       config=resolved, seed=seed, query_ids=tuple(query_ids),
                       attributor=attributor.name if entailed is not None else None,
                       attributor_prompt=getattr(attributor, "prompt_version", None) if entailed is not None else None,
                       wall_seconds=time.perf_counter() - started, sampled_rankings=len(log),
                       extra={"inputs": audit_inputs(log, collection), "served": log.kind,
                              "log_sha256": log.sha256, "lines": log.identity()["lines"], "rankings": len(log),
                              "k_used": k, "notes": notes,
                              "judged_pairs": judged_pairs})
    return LogAuditRun(record=record, table=table, documents=documents, lines=lines_table)


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
