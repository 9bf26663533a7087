"""Audit a RAG log: who a deployed system exposed, which sources its answers rest on, and how far from fair.

The lines of a :class:`~fairrag_core.data.rag_log.RagLog` that share a ``query_id`` are the N served rankings
of that query, so the metrics of Kim & Diaz (2025) apply to what was *served* instead of what was sampled:

* exposure under the step model MU(i) = 1[i ≤ k] (Eq. 4–5): ε_d = (1/N_q) Σ_lines 1[d in the top k]; k defaults
  to the longest ranking (the generator saw the whole ranking) and is set lower when the log holds longer
  rankings than the generator read. EE-D = ‖ε‖²/k (Eq. 16) is the disparity the log delivered (the plug-in);
  ``ee_d_unbiased`` is the bias-corrected estimate of the serving policy's EE-D (needs N_q ≥ 2);
* EE-R (Eq. 28) and the fair target ε* (Eq. 6) where the collection has relevance labels for the query
  (useful = grade ≥ ``min_rel``; the candidates are the whole collection: the system could have served any
  document);
* attribution of the answers (Eq. 8–11): AR, EAR, attributed exposure ε^a and EAE-D, from the citations the
  system logged ("cited by the system"), from an NLI judge ("entailed per the judge": the document, premise,
  entails the answer, hypothesis, with the query as context), or both side by side. Lines without citations
  (logged source) or without an answer (judge) are left out of that source's attribution;
* the exposure ledger per provider and per group (:func:`~fairrag_core.audit.ledger.exposure_ledger`) with
  percentile bootstrap intervals over queries, and the gap to the fair target.

Judging is the only slow step: it calls the attributor once per distinct (document, answer, query), reports
progress through a callback, and the attributor caches every pair. Everything else is vectorised per query:
a 10,000-line log audits in well under a second on a laptop (``benchmarks/bench_rag_log.py``).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..checks import check_k, check_open_unit, check_positive_int
from ..data import Collection
from ..data.rag_log import RagLog, load_rag_log
from ..errors import InvalidParameterError
from ..metrics.attribution import attributed_exposure, eae_disparity, expected_attribution_rate
from ..metrics.exposure import ee_disparity, ee_relevance, expected_exposure, target_exposure, unbiased_ee_disparity
from ..rag.attribution import Attributor
from ..record import RunKind, RunRecord, SweepRun
from ..seeds import new_seed
from ..settings import Settings
from .ledger import exposure_ledger
from .query_bootstrap import ESTIMATE_NOTE, ledger_intervals, mean_interval, ratio_interval

__all__ = ["AttributionSource", "LogAuditConfig", "LogAuditRun", "audit_rag_log", "log_summary", "log_ledger",
           "default_ledger_scope", "SOURCE_LABELS"]


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
class LogAuditConfig(Settings):
    """How a RAG log is audited: the log's path, k (None: the longest ranking), the attribution source, the
    relevance grade from which a document is useful, and the bootstrap (resamples, level, seed)."""

    log: str = ""
    k: int | None = None
    attribution: AttributionSource = AttributionSource.AUTO
    min_rel: int = 1
    n_boot: int = 1000
    level: float = 0.95
    seed: int | None = None


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


def _resolve_source(config: LogAuditConfig, log: RagLog, attributor: Attributor | None) -> AttributionSource:
    source = config.attribution
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


def _judge(log: RagLog, collection: Collection, slots: np.ndarray, attributor: Attributor,
           progress: Callable[[int, int], None] | None, chunk: int = 8) -> np.ndarray:
    """``(lines, k)`` verdicts: the slot's document entails the line's answer. One call per distinct pair,
    grouped by document (the LLM judge shares each document's prompt prefix)."""
    docs = collection.documents
    pairs: dict[int, dict[tuple[str, str | None], list[tuple[int, int]]]] = {}
    texts = {q.query_id: q.text for q in collection.queries}
    for i, entry in enumerate(log.entries):
        if not entry.answer:
            continue
        context = entry.query or texts.get(entry.query_id)
        for j, doc in enumerate(slots[i]):
            if doc >= 0:
                pairs.setdefault(int(doc), {}).setdefault((entry.answer, context), []).append((i, j))
    total = sum(len(v) for v in pairs.values())
    verdicts = np.zeros(slots.shape, dtype=bool)
    done = 0
    if progress is not None:
        progress(0, total)
    for doc, claims in pairs.items():
        keys = list(claims)
        for start in range(0, len(keys), chunk):
            part = keys[start:start + chunk]
            found = attributor.entails([docs[doc].full_text] * len(part), [a for a, _ in part],
                                       contexts=[c for _, c in part])
            for key, entails in zip(part, found):
                for i, j in claims[key]:
                    verdicts[i, j] = entails
            done += len(part)
            if progress is not None:
                progress(done, total)
    return verdicts


def _padded(local: np.ndarray, n_local: int) -> tuple[np.ndarray, int]:
    """Local item indices with empty slots (-1) turned into distinct dummy items beyond ``n_local``."""
    if (local >= 0).all():
        return local, n_local
    out = local.copy()
    holes = np.flatnonzero(out.ravel() < 0)
    out.ravel()[holes] = n_local + np.arange(holes.size)
    return out, n_local + holes.size


def _vector(values: np.ndarray, k: int) -> np.ndarray:
    """Exposure of the served documents, zero-padded to at least k entries (the metrics check k ≤ n)."""
    return np.pad(values, (0, max(0, k - values.size)))


def audit_rag_log(log: RagLog | str | Path, collection: Collection, config: LogAuditConfig = LogAuditConfig(), *,
                  attributor: Attributor | None = None, progress: Callable[[int, int], None] | None = None,
                  collection_source: str | None = None) -> LogAuditRun:
    """Audit a RAG log against ``collection`` (module docstring: what is measured and how).

    Args:
        log: a loaded :class:`RagLog` or the path of a JSONL log.
        collection: the documents the system retrieved from; unknown doc ids raise with the line and the fix.
        config: k, attribution source, ``min_rel``, bootstrap settings and seed (None: fresh, recorded).
        attributor: the NLI judge, needed for attribution ``judge`` or ``both``.
        progress: called as ``progress(done, total)`` over the distinct (document, answer) pairs judged; raise
            from it to stop (finished pairs stay in the attributor's cache).
        collection_source: what ``--collection`` should say in the reproduce command (default: its name).

    Returns:
        A :class:`LogAuditRun` with a :class:`~fairrag_core.record.RunRecord` of kind ``audit-log``.
    """
    started = time.perf_counter()
    if not isinstance(log, RagLog):
        log = load_rag_log(log)
    log.check_against(collection)
    check_positive_int(config.n_boot, "n_boot", hint="bootstrap resamples, e.g. 1000")
    check_open_unit(config.level, "level", hint="e.g. 0.95")
    shortest, longest = log.ranking_lengths
    k = check_k(config.k if config.k is not None else longest, len(collection))
    notes = []
    if config.k is None and shortest != longest:
        notes.append(f"rankings hold {shortest}–{longest} documents; k = {k} (the longest); shorter rankings fill "
                     "fewer slots")
    source = _resolve_source(config, log, attributor)
    seed = config.seed if config.seed is not None else new_seed()
    index = {d: i for i, d in enumerate(collection.doc_ids)}
    n_lines = len(log)
    slots = np.full((n_lines, k), -1, dtype=np.int64)
    for i, entry in enumerate(log.entries):
        top = entry.ranking[:k]
        slots[i, :len(top)] = [index[d] for d in top]
    cited = entailed = None
    cited_outside: list[tuple[str, ...]] = [()] * n_lines
    has_citations = np.array([e.citations is not None for e in log.entries])
    has_answer = np.array([bool(e.answer) for e in log.entries])
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
        entailed = _judge(log, collection, slots, attributor, progress)
        judged_pairs = int((slots[has_answer] >= 0).sum())

    query_codes, query_ids = pd.factorize(pd.Series([e.query_id for e in log.entries]))
    order = np.argsort(query_codes, kind="stable")
    bounds = np.searchsorted(query_codes[order], np.arange(len(query_ids) + 1))
    providers = collection.providers
    doc_ids = np.array(collection.doc_ids, dtype=object)
    labelled = set(collection.qrels)
    texts = {x.query_id: x.text for x in collection.queries}
    rows, doc_parts = [], []
    for q, qid in enumerate(query_ids):
        lines = order[bounds[q]:bounds[q + 1]]
        block = slots[lines]
        served, local = np.unique(block, return_inverse=True)
        local = local.reshape(block.shape)
        if served[0] < 0:  # -1 marks empty slots of short rankings
            served, local = served[1:], local - 1
        rect, n_items = _padded(local, served.size)
        eps = expected_exposure(rect, n_items)[:served.size]
        row = {"query_id": qid,
               "query": next((log.entries[i].query for i in lines if log.entries[i].query), None) or texts.get(qid),
               "lines": lines.size, "k": k, "labelled": qid in labelled, "m": np.nan,
               "fairness_question": False, "ee_d": ee_disparity(_vector(eps, k), k),
               "ee_d_unbiased": unbiased_ee_disparity(rect, n_items) if lines.size > 1 else np.nan,
               "ee_r": np.nan, "documents_reached": served.size,
               "providers_reached": int(np.unique(providers[served]).size)}
        part = {"doc_ids": doc_ids[served], "exposure": eps, "target": np.full(served.size, np.nan)}
        if qid in labelled:
            useful = collection.useful(qid, min_rel=config.min_rel)
            m = int(useful.sum())
            row.update(m=m, fairness_question=m > 1)
            if m:
                full = np.zeros(len(collection))
                full[served] = eps
                row["ee_r"] = ee_relevance(full, useful, k)
                part = {"doc_ids": doc_ids, "exposure": full, "target": target_exposure(useful, k)}
        doc_part = pd.DataFrame({"query_id": qid, "doc_id": part["doc_ids"], "exposure": part["exposure"],
                                 "target_exposure": part["target"]})
        for name, verdicts, eligible in (("cited", cited, has_citations), ("entailed", entailed, has_answer)):
            row[f"ear_{name}"] = row[f"eae_d_{name}"] = np.nan
            row[f"{name}_lines"] = 0
            doc_part[f"{name}_exposure"] = np.nan
            if verdicts is None:
                continue
            keep = eligible[lines]
            row[f"{name}_lines"] = int(keep.sum())
            if not keep.any():
                continue
            rect_a, n_a = _padded(local[keep], served.size)
            eps_a = attributed_exposure(rect_a, verdicts[lines][keep], n_a)[:served.size]
            row[f"ear_{name}"] = expected_attribution_rate(verdicts[lines][keep])
            row[f"eae_d_{name}"] = eae_disparity(_vector(eps_a, k), k)
            credit = pd.Series(eps_a, index=doc_ids[served])
            doc_part[f"{name}_exposure"] = doc_part["doc_id"].map(credit).fillna(0.0).to_numpy()
        if cited is not None and entailed is not None:
            both = has_citations[lines] & has_answer[lines]
            c, e = cited[lines][both], entailed[lines][both]
            row.update(cited_slots=int(c.sum()), entailed_slots=int(e.sum()), agreed_slots=int((c & e).sum()))
        rows.append(row)
        doc_parts.append(doc_part)

    lines_table = _lines_table(log, slots, doc_ids, cited, entailed, cited_outside)
    table = pd.DataFrame(rows)
    documents = pd.concat(doc_parts, ignore_index=True)
    resolved = replace(config, log=config.log or log.source, k=k if config.k is not None else None,
                       attribution=source, seed=seed)
    record = RunRecord(kind=RunKind.AUDIT_LOG, collection=collection_source or collection.name, retriever="served",
                       config=resolved, seed=seed, query_ids=tuple(query_ids),
                       attributor=attributor.name if entailed is not None else None,
                       wall_seconds=time.perf_counter() - started, sampled_rankings=n_lines,
                       extra={"log_sha256": log.sha256, "lines": n_lines, "k_used": k, "notes": notes,
                              "judged_pairs": judged_pairs})
    return LogAuditRun(record=record, table=table, documents=documents, lines=lines_table)


def _lines_table(log: RagLog, slots: np.ndarray, doc_ids: np.ndarray, cited: np.ndarray | None,
                 entailed: np.ndarray | None, cited_outside: list[tuple[str, ...]]) -> pd.DataFrame:
    def picked(verdicts: np.ndarray | None, i: int) -> tuple[str, ...] | None:
        if verdicts is None:
            return None
        return tuple(doc_ids[slots[i][verdicts[i] & (slots[i] >= 0)]])

    return pd.DataFrame({
        "line": [e.line for e in log.entries], "query_id": [e.query_id for e in log.entries],
        "session": [e.session for e in log.entries], "timestamp": [e.timestamp for e in log.entries],
        "query": [e.query for e in log.entries], "answer": [e.answer for e in log.entries],
        "shown": [tuple(doc_ids[row[row >= 0]]) for row in slots],
        "cited": [picked(cited, i) if log.entries[i].citations is not None else None for i in range(len(log))],
        "entailed": [picked(entailed, i) if log.entries[i].answer else None for i in range(len(log))],
        "cited_outside": cited_outside,
    })


def log_summary(run: SweepRun) -> pd.DataFrame:
    """The headline numbers of a log audit, each with its interval (:data:`ESTIMATE_NOTE` says which).

    One row per metric: ``metric, label, estimate, low, high, queries, over, direction``. Means over queries:
    EE-D over every query, EE-R over the queries with relevance labels (m ≥ 1), EAR and EAE-D per source over
    the queries with attributed lines; when both sources ran, the pooled shares "cited and entailed / cited" and
    "cited and entailed / entailed".
    """
    table, config = run.table, run.record.config
    boot = {"n_boot": config.n_boot, "level": config.level, "seed": run.record.seed}
    specs = [("ee_d", "EE-D", "every query", "lower = fairer"),
             ("ee_r", "EE-R", "queries with relevance labels", "higher = better")]
    for source, label in SOURCE_LABELS.items():
        specs += [(f"ear_{source}", f"EAR ({label})", f"queries with {source} lines", "share of shown documents "
                   "the answers rest on"),
                  (f"eae_d_{source}", f"EAE-D ({label})", f"queries with {source} lines", "lower = fairer")]
    rows = []
    for column, label, over, direction in specs:
        if column not in table or not table[column].notna().any():
            continue
        ci = mean_interval(table[column].to_numpy(dtype=float), **boot)
        rows.append({"metric": column, "label": label, "estimate": ci.estimate, "low": ci.low, "high": ci.high,
                     "queries": int(table[column].notna().sum()), "over": over, "direction": direction})
    if "agreed_slots" in table:
        for name, label, den in (("cited_entailed", "citations the judge supports", "cited_slots"),
                                 ("entailed_cited", "entailing documents the system cited", "entailed_slots")):
            ci = ratio_interval(table["agreed_slots"], table[den], **boot)
            if ci is not None:
                rows.append({"metric": name, "label": label, "estimate": ci.estimate, "low": ci.low,
                             "high": ci.high, "queries": int((table[den] > 0).sum()), "over": "pooled slots",
                             "direction": "agreement of the two sources"})
    out = pd.DataFrame(rows, columns=["metric", "label", "estimate", "low", "high", "queries", "over", "direction"])
    out.attrs["note"] = ESTIMATE_NOTE.format(level=config.level)
    return out


def _labelled_queries(table: pd.DataFrame) -> pd.Series:
    return table.loc[table["labelled"].astype(bool) & (table["m"].fillna(0) > 0), "query_id"]


def default_ledger_scope(run: SweepRun) -> bool:
    """Whether the ledger should keep only the queries with relevance labels: yes when some but not all have
    them (then the retrieval share and the fair target cover the same queries and the gap means something)."""
    labelled = len(_labelled_queries(run.table))
    return 0 < labelled < len(run.table)


def log_ledger(run: SweepRun, collection: Collection, *, by: str = "provider", source: str | None = None,
               labelled_only: bool = False, intervals: bool = True) -> pd.DataFrame:
    """The exposure ledger of a log audit, with percentile bootstrap intervals over queries.

    ``source`` (``"cited"`` or ``"entailed"``; default: the first measured) fills the attributed column.
    ``labelled_only`` keeps the queries with relevance labels, so that the retrieval share and the fair target
    cover the same queries (the gap is only computed then, or when every query is labelled).
    """
    documents = run.documents
    measured = [s for s in SOURCE_LABELS if f"{s}_exposure" in documents and documents[f"{s}_exposure"].notna().any()]
    if source is not None and source not in measured:
        raise InvalidParameterError(f"attribution source {source!r} was not measured in this audit; "
                                    f"measured: {measured or 'none'}")
    source = source or (measured[0] if measured else None)
    labelled = _labelled_queries(run.table)
    every_query_labelled = len(labelled) == len(run.table)
    rows = documents[documents["query_id"].isin(set(labelled))] if labelled_only else documents
    rows = rows.drop(columns=[c for c in ("attributed_exposure",) if c in rows])
    rows = rows.assign(attributed_exposure=rows[f"{source}_exposure"] if source else np.nan)
    if not (labelled_only or every_query_labelled):
        rows = rows.assign(target_exposure=np.nan)
    ledger = exposure_ledger(rows, collection, by=by)
    if intervals and not rows.empty:
        config = run.record.config
        bounds = ledger_intervals(rows, collection, by=by, n_boot=config.n_boot, level=config.level,
                                  seed=run.record.seed)
        ledger = ledger.merge(bounds, on="group", how="left")
    ledger.attrs["source"] = source
    return ledger
