"""The audit's tables and its stakeholder report, built from a sweep table and its per-document exposure.

Pure functions (no Streamlit), so the report a page offers is the report the tests check. Every headline mean
comes with a percentile bootstrap interval over queries (:mod:`fairrag_core.audit.query_bootstrap`), which
contains the mean printed beside it; ledgers carry the same kind of interval for their shares and gap.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd

from fairrag_core import Collection, exposure_ledger
from fairrag_core.audit.comparison_findings import sweep_findings
from fairrag_core.audit.ledger import ledger_top
from fairrag_core.audit.query_bootstrap import ESTIMATE_NOTE, ledger_intervals, mean_interval
from fairrag_core.metrics.registry import LEDGER, METRICS, SWEEP, keys
from fairrag_core.record import SweepRun

from .. import charts
from ..services.identity import record_inputs, reproduce_command
from . import explain
from .methodology import methodology_sections
from .report import ReportSection, audit_report_html

__all__ = ["system_label", "summary_by_system", "summary_with_intervals", "ledger_for", "groupings", "build_report",
           "compare_runs", "display_summary", "display_ledger", "with_interval", "default_system_index", "per_query",
           "INTERVAL_NOTE"]

#: What the bracketed intervals of the audit's tables are (the estimate is the mean printed beside them).
INTERVAL_NOTE = ("Each number is the " + ESTIMATE_NOTE.format(level=0.95)
                 + " in the column beside it; the interval contains the number.")

#: The per-system metrics of sweeps and audits (from the metric registry).
METRIC_COLUMNS = keys(SWEEP)

#: Column headers for readers (tables shown in the app and the report): the registry's label of each per-system and
#: ledger metric; the other columns of the summary and the ledger with their underscores as spaces.
DISPLAY_NAMES = {**{key: METRICS[key].label for key in (*METRIC_COLUMNS, *keys(LEDGER))},
                 **{column: column.replace("_", " ") for column in ("queries", "system", "group", "documents",
                                                                    "retrieval_exposure", "attributed_exposure",
                                                                    "target_exposure")}}


def system_label(alpha: float) -> str:
    return "deterministic" if np.isinf(alpha) else f"α = {alpha:g}"


def summary_by_system(table: pd.DataFrame) -> pd.DataFrame:
    """Mean of every metric per α (deterministic last), over the queries with a fairness question if any."""
    kept = table[table["fairness_question"]] if table["fairness_question"].any() else table
    present = [c for c in METRIC_COLUMNS if c in kept]
    out = kept.groupby("alpha", as_index=False).agg(queries=("query_id", "nunique"),
                                                    **{c: (c, "mean") for c in present})
    out.insert(0, "system", out["alpha"].map(system_label))
    return out.sort_values("alpha").reset_index(drop=True)


def summary_with_intervals(table: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """:func:`summary_by_system` plus ``<metric>_low`` and ``<metric>_high``: a 95% percentile bootstrap interval
    over the queries of each system's mean (the same queries as the mean: those with a fairness question)."""
    kept = table[table["fairness_question"]] if table["fairness_question"].any() else table
    out = summary_by_system(table)
    for metric in [c for c in METRIC_COLUMNS if c in out]:
        lows, highs = [], []
        for alpha in out["alpha"]:
            values = kept.loc[np.isclose(kept["alpha"].astype(float), alpha), metric].to_numpy(dtype=float)
            ci = mean_interval(values, n_boot=n_boot, seed=seed)
            lows.append(np.nan if ci is None else ci.low)
            highs.append(np.nan if ci is None else ci.high)
        out[f"{metric}_low"], out[f"{metric}_high"] = lows, highs
    return out


def with_interval(low: float, high: float, digits: int = 3) -> str:
    """An interval as text, ``[0.401, 0.466]`` ("—" when there is none).

    >>> with_interval(0.4, 0.6)
    '[0.400, 0.600]'
    """
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return "—"
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def _merge_intervals(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns ``x_low``, ``x_high`` → one text column ``x 95% interval`` right after the number ``x``."""
    out = frame.copy()
    for column in [c for c in frame.columns if f"{c}_low" in frame and f"{c}_high" in frame]:
        text = [with_interval(lo, hi) for lo, hi in zip(frame[f"{column}_low"], frame[f"{column}_high"])]
        out = out.drop(columns=[f"{column}_low", f"{column}_high"])
        out.insert(out.columns.get_loc(column) + 1, f"{column} 95% interval", text)
    return out


def default_system_index(alphas: list[float]) -> int:
    """Where a system picker opens: the deterministic system (α = ∞) that the tour discusses, else the first."""
    return next((i for i, a in enumerate(alphas) if np.isinf(a)), 0)


def display_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """The per-system table for readers: no raw α column (∞ reads badly), metric names as in the paper."""
    return _rename(_merge_intervals(summary.drop(columns=["alpha"])))


def _rename(frame: pd.DataFrame) -> pd.DataFrame:
    """Readable headers, interval columns included (``ee_d 95% interval`` → ``EE-D 95% interval``)."""
    def name(column: str) -> str:
        base, _, rest = column.partition(" 95% interval")
        return DISPLAY_NAMES.get(base, base) + (" 95% interval" if _ or rest else "")
    return frame.rename(columns={c: name(c) for c in frame.columns})


def display_ledger(ledger: pd.DataFrame, *, compact: bool = False) -> pd.DataFrame:
    """The ledger for readers: the gap attributed − target beside retrieval − target, columns without values (no
    answers, no labels) dropped, intervals in brackets beside their share, readable headers. ``compact`` (the
    report) leaves out the summed exposures, whose shares are beside them, so the table fits a page."""
    out = ledger.copy()
    if "attributed_gap" not in out and {"attributed_share", "target_share"} <= set(out.columns):
        gap = out["attributed_share"] - out["target_share"]  # ledgers stored before the core computed it
        out.insert(out.columns.get_loc("share_gap") + 1 if "share_gap" in out else len(out.columns),
                   "attributed_gap", gap)
    if compact:
        out = out.drop(columns=[c for c in out.columns if c.endswith("_exposure")])
    empty = [c for c in out.columns if out[c].isna().all()]
    return _rename(_merge_intervals(out.drop(columns=empty)))


def groupings(collection: Collection) -> list[str]:
    return ["provider", *collection.categories()]


def ledger_for(documents: pd.DataFrame, collection: Collection, alpha: float, by: str, *,
               intervals: bool = False, seed: int = 0) -> pd.DataFrame:
    """The exposure ledger of one system (α) of an audit; ``intervals`` adds a percentile bootstrap interval over
    queries to each share and to the gap (``<column>_low``, ``<column>_high``)."""
    rows = documents[np.isclose(documents["alpha"].astype(float), alpha)]  # isclose(∞, ∞) holds
    ledger = exposure_ledger(rows, collection, by=by)
    if intervals and "query_id" in rows and not rows.empty:
        ledger = ledger.merge(ledger_intervals(rows, collection, by=by, seed=seed), on="group", how="left")
        ledger.attrs["by"] = by  # lost in the merge; the chart names its "all others" row with it
    return ledger


def compare_runs(first: pd.DataFrame, second: pd.DataFrame, names: tuple[str, str]) -> pd.DataFrame:
    """Side-by-side means per system of two stored runs, with the difference (second − first)."""
    a, b = summary_by_system(first), summary_by_system(second)
    merged = a.merge(b, on=["system", "alpha"], how="outer", suffixes=(f" [{names[0]}]", f" [{names[1]}]"))
    for metric in METRIC_COLUMNS:
        left, right = f"{metric} [{names[0]}]", f"{metric} [{names[1]}]"
        if left in merged and right in merged:
            merged[f"{metric} Δ"] = merged[right] - merged[left]
    return merged.sort_values("alpha").reset_index(drop=True)


def per_query(table: pd.DataFrame, query_id: str) -> pd.DataFrame:
    """One query's metrics under every system (the drill-down), readable headers."""
    present = [c for c in METRIC_COLUMNS if c in table and table[c].notna().any()]
    extra = [c for c in ("m", "providers_reached") if c in table]
    rows = table[table["query_id"] == query_id].sort_values("alpha")
    shown = rows.assign(system=rows["alpha"].map(system_label))
    return shown[["system", *extra, *present]].rename(columns=DISPLAY_NAMES).reset_index(drop=True)


def _per_query_details(table: pd.DataFrame) -> tuple[ReportSection, ...]:
    """One collapsible table per query: its metrics under every system."""
    parts = []
    for qid, rows in table.groupby("query_id", sort=True):
        note = "" if rows["fairness_question"].any() else "Fewer than two useful documents: left out of the means."
        parts.append(ReportSection(f"{qid}", note, table=per_query(table, qid)))
    return tuple(parts)


def build_report(run: SweepRun, collection: Collection, *, title: str = "Fairness audit", figures: str = "static",
                 renderer=None) -> str:
    """A self-contained HTML report: what was run, metrics per system with intervals, the ledgers with charts
    (deterministic system first), the methodology, per-query drill-down, the reproduce command and the caveats.

    ``figures``: ``"static"`` (SVG images, a few hundred kB in all) or ``"interactive"`` (plotly.js inlined,
    ~4.9 MB); ``renderer`` replaces the SVG renderer (tests).
    """
    table, documents, record = run.table, run.documents, run.record
    alphas = sorted((float(a) for a in table["alpha"].unique()), key=lambda a: (not np.isinf(a), a))
    generated = "eu" in table and table["eu"].notna().any()

    def shown(metrics) -> list[str]:  # the labels of the metrics this audit measured (those of answers if generated)
        return [METRICS[key].label for key in metrics if generated or not METRICS[key].on_answers]

    inputs = record_inputs(record)
    by_role = {i.role: i for i in inputs}
    summary = {
        "collection": by_role["collection"].full_text if "collection" in by_role else (record.collection
                                                                                       or collection.name),
        "qrels": by_role["qrels"].full_text if "qrels" in by_role else "none (no relevance labels)",
        "queries": table["query_id"].nunique(),
        "systems": ", ".join(system_label(a) for a in alphas),
        "retriever": record.retriever,
        "generator": record.generator or "— (exposure only)",
        "NLI attributor": record.attributor or "—",
        "rankings per query and system (N)": record.config.n_samples,
        "k": record.config.k,
        "seed": record.seed,
        "run id": run.run_id or "not saved",
        "reproduce": reproduce_command(record, inputs)[0],
    }
    findings = [f for f in sweep_findings(run, collection) if not f.detail]
    sections = [
        ReportSection("Findings", "What this audit found, most severe first (each α against the deterministic "
                      "retriever, paired over queries; then each system's providers against their fair share; "
                      "Holm-adjusted):\n\n" + "\n\n".join(f"{f.severity.value.capitalize()}: {f.text}"
                                                            for f in findings)),
        ReportSection("How to read this report", explain.REPORT_INTRO, metrics=tuple(shown(METRIC_COLUMNS))),
        ReportSection("Metrics per system", "Means over the queries with at least two useful documents. "
                      + INTERVAL_NOTE, table=display_summary(summary_with_intervals(table, seed=record.seed))),
    ]
    sections.append(ReportSection("EE-D by α", figure=charts.ee_d_by_alpha(table)))
    if generated:
        sections.append(ReportSection("Answer utility against exposure disparity",
                                      figure=charts.metric_vs_disparity(table, "eu_normalised",
                                                                        label="EU, normalised")))
    for alpha in alphas:
        for by in groupings(collection):
            ledger = ledger_for(documents, collection, alpha, by, intervals=True, seed=record.seed)
            top = ledger_top(ledger, by)  # the top TOP_PROVIDERS and one row for all others
            sections.append(ReportSection(
                f"Exposure ledger by {by} — {system_label(alpha)}",
                "Shares of retrieval exposure, of attributed exposure (citations) and under the fair target, each "
                "with its 95% percentile bootstrap interval over queries."
                + (f" Showing {top.rule} (the Audit page's ledger lists and downloads every one)."
                   if top.truncated else ""),
                table=display_ledger(top.with_others("group"), compact=True),
                figure=charts.exposure_ledger_chart(ledger)))
    names = shown((*METRIC_COLUMNS, *keys(LEDGER)))
    sections += methodology_sections(record, collection, metrics=names, inputs=inputs,
                                     attribution=(f"An answer is attributed to a shown document when the NLI judge "
                                                  f"({record.attributor}) finds that the document entails it."
                                                  if generated else None))
    sections.append(ReportSection("Per query", "Each query's metrics under every system (open one).",
                                  details=_per_query_details(table)))
    caveats = ("Limits: results hold for this query set, these models and these settings. With few queries or "
               "samples the differences are noisy: read the intervals. Attribution is judged by an NLI model, "
               "which makes mistakes.")
    if not record.complete:
        caveats = "This audit was stopped before all runs finished. " + caveats
    sections.append(ReportSection("Caveats", caveats))
    sections.append(ReportSection("All runs", table=table))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return audit_report_html(title=title, summary=summary, sections=sections, generated_at=stamp, figures=figures,
                             renderer=renderer)
