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
from ..record import SweepRun
from .findings import Finding, sort_findings
from .ledger import exposure_ledger
from .query_bootstrap import ESTIMATE_NOTE, ONE_QUERY, ledger_intervals, mean_interval, ratio_interval
from .rag_log import SOURCE_LABELS
from .share_findings import ledger_findings

__all__ = ["log_summary", "log_ledger", "default_ledger_scope", "log_findings"]

#: The attribution headlines of a log audit, per source: column prefix, label, what the value means.
_ATTRIBUTION_SPECS = (("ear", "EAR", "share of shown documents the answers rest on"),
                      ("eae_d", "EAE-D", "lower = fairer; scales with how much is cited"),
                      ("eae_d_per_cited", "EAE-D/cited",
                       "comparable with EE-D: above it, citations are more concentrated than retrieval"))


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
    specs = [("ee_d", "EE-D", "every query", "lower = fairer"),
             ("ee_r", "EE-R", "queries with relevance labels", "higher = better")]
    model = getattr(config, "user_model", UserModel.STEP)
    if model is not UserModel.STEP:
        name = f"{model.value}, patience {config.patience:g}" + (f", utility {config.utility:g}"
                                                                  if model is UserModel.GERR else "")
        specs += [(f"expeval_{what}", f"{what} ({name}; expeval-normalised)", "queries with relevance labels",
                   direction) for what, direction in (("disparity", "lower = fairer"), ("relevance", "higher = better"),
                                                      ("difference", "lower = closer to the fair target"))]
    specs += [(f"{metric}_{source}", f"{title} ({label})", f"queries with {source} lines", direction)
              for source, label in SOURCE_LABELS.items() for metric, title, direction in _ATTRIBUTION_SPECS]
    rows = []
    for column, label, over, direction in specs:
        if column not in table or not table[column].notna().any():
            continue
        values = table[column].to_numpy(dtype=float)
        rows.append({"metric": column, "label": label, "queries": int(table[column].notna().sum()), "over": over,
                     "direction": direction, **_estimate(mean_interval(values, **boot), float(np.nanmean(values)))})
    if "agreed_slots" in table:
        for name, label, den in (("cited_entailed", "citations the judge supports", "cited_slots"),
                                 ("entailed_cited", "entailing documents the system cited", "entailed_slots")):
            total = float(table[den].sum())
            if total <= 0:
                continue
            rows.append({"metric": name, "label": label, "queries": int((table[den] > 0).sum()),
                         "over": "pooled slots", "direction": "agreement of the two sources",
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


def log_findings(run: SweepRun, collection: Collection, *, groupings: list[str] | None = None) -> list[Finding]:
    """What an audit of served data found (:func:`~fairrag_core.audit.share_findings.ledger_findings`): per
    provider, and per group of each of the collection's categories, whether its retrieval share and its attributed
    share differ from its fair share beyond noise (Holm over the groups), most severe first; over the queries with a
    fair target, with the audit's level, resamples and seed (so the intervals are the ledger's)."""
    config = run.record.config
    lines = run.table.set_index("query_id")["lines"] if "lines" in run.table else None
    found = []
    for by in groupings or ["provider", *collection.categories()]:
        found += ledger_findings(run.documents, collection, by=by, lines=lines, level=config.level,
                                 n_boot=config.n_boot, seed=run.record.seed)
    return sort_findings(found)

