"""The views of a log audit: its headline numbers with intervals, and its exposure ledgers.

:func:`log_summary` gives each headline (means over queries of EE-D, EE-R, EAR, EAE-D, expeval's metrics under a
second user model, and the agreement of logged citations with the judge) with a percentile bootstrap interval
over queries (:mod:`fairrag_core.audit.query_bootstrap`); :func:`log_ledger` the exposure ledger per provider or
group (:func:`~fairrag_core.audit.ledger.exposure_ledger`) with intervals for its shares and its gap to the fair
target. Both are rebuilt from a stored run (its table, documents and seed), so a reopened audit shows the same.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import Collection
from ..errors import InvalidParameterError
from ..metrics.expeval import UserModel
from ..metrics.intervals import ConfidenceInterval
from ..metrics.registry import LOG_HEADLINE, LOG_QUERY, METRICS, Metric, keys
from ..record import SweepRun
from .findings import Finding, sort_findings
from .label_free import label_free_findings
from .ledger import exposure_ledger
from .merit import DEFAULT_GRADES
from .query_bootstrap import ESTIMATE_NOTE, ONE_QUERY, ledger_intervals, mean_interval, ratio_interval
from .rag_log import EXPEVAL_COLUMNS, SOURCE_LABELS
from .share_findings import ledger_findings

__all__ = ["log_summary", "served_unit", "log_ledger", "default_ledger_scope", "log_findings", "QUERY_FACTS",
           "query_columns", "query_headers"]

#: The per-query table's columns that describe a query rather than measure it, with their headers for readers.
QUERY_FACTS = {"query_id": "query", "query": "text", "lines": "N (served)", "m": "useful (m)"}


def _query_metrics() -> list[tuple[str, str, Metric]]:
    """``(column, header, metric)`` of each per-query metric of a log audit (the registry's :data:`LOG_QUERY` list,
    in its order); the metrics measured per attribution source once per source (:data:`SOURCE_LABELS`), together
    where the first of them stands (``ear_cited, eae_d_cited, …, ear_entailed, …``)."""
    metrics = [METRICS[key] for key in keys(LOG_QUERY)]
    per_source = [m for m in metrics if m.per_source]
    out = []
    for metric in metrics:
        if not metric.per_source:
            out.append((metric.key, metric.header, metric))
        elif metric is per_source[0]:
            out += [(f"{m.key}_{source}", f"{m.header} ({source})", m) for source in SOURCE_LABELS for m in per_source]
    return out


def query_columns(*, text: bool = True, intervals: bool = False) -> list[str]:
    """The columns of a log audit's per-query table, in the order the CLI and the app print them: the query's facts
    (:data:`QUERY_FACTS`; ``text``: with what was typed), then every per-query metric (:func:`_query_metrics`);
    ``intervals``: a metric's per-query interval bounds (``ee_d_low``, ``ee_d_high``) right after it."""
    columns = [c for c in QUERY_FACTS if text or c != "query"]
    for column, _, metric in _query_metrics():
        columns += [column, f"{column}_low", f"{column}_high"] if intervals and metric.interval else [column]
    return columns


def query_headers() -> dict[str, str]:
    """Column → header of a log audit's per-query table for readers (``EAR (cited)``, ``providers``), in the order of
    :func:`query_columns`."""
    return {**QUERY_FACTS, **{column: header for column, header, _ in _query_metrics()}}


def _estimate(ci: ConfidenceInterval | None, value: float) -> dict[str, float | str]:
    """The estimate with its interval, or (one query) the value alone with the note saying why."""
    if ci is None:
        return {"estimate": value, "low": np.nan, "high": np.nan, "note": ONE_QUERY}
    return {"estimate": ci.estimate, "low": ci.low, "high": ci.high, "note": ""}


def log_summary(run: SweepRun) -> pd.DataFrame:
    """The headline numbers of a log audit, each with its interval (:data:`ESTIMATE_NOTE` says which).

    One row per metric: ``metric, label, estimate, low, high, queries, over, direction, note``. ``low`` and
    ``high`` are NaN when a single query holds the metric (``note`` says so: no interval over one query). Means
    over queries:
    EE-D over every query, EE-R over the queries with relevance labels (m ≥ 1), EAR and EAE-D per source over
    the queries with attributed lines; when both sources ran, the pooled shares "cited and entailed / cited" and
    "cited and entailed / entailed".
    """
    table, config = run.table, run.record.config
    boot = {"n_boot": config.n_boot, "level": config.level, "seed": run.record.seed}
    model = getattr(config, "user_model", UserModel.STEP)
    expeval = {}  # expeval's metrics, measured under a second user model and labelled with it
    if model is not UserModel.STEP:
        name = f"{model.value}, patience {config.patience:g}" + (f", utility {config.utility:g}"
                                                                  if model is UserModel.GERR else "")
        expeval = {column: f"{what} ({name}; expeval-normalised)" for what, column in EXPEVAL_COLUMNS.items()}
    headline = [METRICS[key] for key in keys(LOG_HEADLINE)]  # the registry's headline metrics, in its order
    specs = [(m.key, expeval.get(m.key, m.label), f"queries with {m.needs}" if m.needs else "every query",
              m.in_headline) for m in headline
             if not m.per_source and (m.key in expeval or m.key not in EXPEVAL_COLUMNS.values())]
    specs += [(f"{m.key}_{source}", f"{m.label} ({label})", f"queries with {source} {served_unit(run)}s",
               m.in_headline)
              for source, label in SOURCE_LABELS.items() for m in headline if m.per_source]
    rows = []
    for column, label, over, direction in specs:
        if column not in table or not table[column].notna().any():
            continue
        values = table[column].to_numpy(dtype=float)
        rows.append({"metric": column, "label": label, "queries": int(table[column].notna().sum()), "over": over,
                     "direction": direction, **_estimate(mean_interval(values, **boot), float(np.nanmean(values)))})
    if "agreed_slots" in table:
        for key, den in (("cited_entailed", "cited_slots"), ("entailed_cited", "entailed_slots")):
            total = float(table[den].sum())
            if total <= 0:
                continue
            rows.append({"metric": key, "label": METRICS[key].label, "queries": int((table[den] > 0).sum()),
                         "over": "pooled slots", "direction": METRICS[key].in_headline,
                         **_estimate(ratio_interval(table["agreed_slots"], table[den], **boot),
                                     float(table["agreed_slots"].sum()) / total)})
    out = pd.DataFrame(rows, columns=["metric", "label", "estimate", "low", "high", "queries", "over", "direction",
                                      "note"])
    out.attrs["note"] = ESTIMATE_NOTE.format(level=config.level)
    return out


def labelled_queries(table: pd.DataFrame) -> pd.Series:
    """The audited queries with relevance labels and at least one useful document (those with a fair target)."""
    return table.loc[table["labelled"].astype(bool) & (table["m"].fillna(0) > 0), "query_id"]


def default_ledger_scope(run: SweepRun) -> bool:
    """Whether the ledger should keep only the queries with relevance labels: yes when some but not all have
    them (then the retrieval share and the fair target cover the same queries and the gap means something)."""
    labelled = len(labelled_queries(run.table))
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
    labelled = labelled_queries(run.table)
    every_query_labelled = len(labelled) == len(run.table)
    rows = documents[documents["query_id"].isin(set(labelled))] if labelled_only else documents
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


def served_unit(run: SweepRun) -> str:
    """What one served line of ``run`` is, in sentences: ``request`` for a trace export (one trace each, whatever
    lines its file has), else ``line``."""
    return "request" if any(i.get("format") == "otlp" for i in run.record.extra.get("inputs", ())) else "line"


def log_findings(run: SweepRun, collection: Collection, *, groupings: list[str] | None = None) -> list[Finding]:
    """What an audit of served data found (:func:`~fairrag_core.audit.share_findings.ledger_findings`): per
    provider, and per group of each of the collection's categories, whether its retrieval share and its attributed
    share differ from its fair share beyond noise (Holm over the groups), most severe first; over the queries with a
    fair target, with the audit's level, resamples and seed (so the intervals are the ledger's); then, over every
    query, the findings that need no relevance labels (:func:`~fairrag_core.audit.label_free.label_free_findings`:
    citations given exposure, retrieval exposure against the audit's ``target_shares`` when given, against presence
    — the logged candidates, else the collection unless it was made from the log — and against merit from the
    system's own scores by the audit's ``merit_grades``/``merit_threshold``, where the candidates carry scores)."""
    config = run.record.config
    lines = run.table.set_index("query_id")["lines"] if "lines" in run.table else None
    from_log = getattr(config, "provider_from", None) is not None or getattr(config, "provider_map", None) is not None
    merit = {"merit_grades": getattr(config, "merit_grades", DEFAULT_GRADES),
             "merit_threshold": getattr(config, "merit_threshold", None)}
    unit = served_unit(run)
    found = []
    for by in groupings or ["provider", *collection.categories()]:
        found += ledger_findings(run.documents, collection, by=by, lines=lines, level=config.level,
                                 n_boot=config.n_boot, seed=run.record.seed, unit=unit)
        found += label_free_findings(run.documents, collection, by=by, lines=lines, level=config.level, unit=unit,
                                     target_shares=getattr(config, "target_shares", None), n_boot=config.n_boot,
                                     seed=run.record.seed, collection_given=not from_log,
                                     k=run.record.extra.get("k_used"), **merit)
    return sort_findings(found)

