"""The audit's tables and its stakeholder report, built from a sweep table and its per-document exposure.

Pure functions (no Streamlit), so the report a page offers is the report the tests check.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd

from fairrag_core import Collection, exposure_ledger
from fairrag_core.record import SweepRun

from . import charts, explain
from .report import ReportSection, audit_report_html

__all__ = ["system_label", "summary_by_system", "ledger_for", "groupings", "build_report", "compare_runs",
           "display_summary", "display_ledger"]

#: Column headers for readers (tables shown in the app and the report).
DISPLAY_NAMES = {"ee_d": "EE-D", "ee_r": "EE-R", "eu": "EU", "eu_normalised": "EU (normalised)", "ear": "EAR",
                 "eae_d": "EAE-D", "queries": "queries", "system": "system", "group": "group",
                 "documents": "documents", "retrieval_exposure": "retrieval exposure",
                 "retrieval_share": "retrieval share", "attributed_exposure": "attributed exposure",
                 "attributed_share": "attributed share", "target_exposure": "target exposure",
                 "target_share": "target share", "share_gap": "gap (retrieval − target)"}

METRIC_COLUMNS = ("ee_d", "ee_r", "eu", "eu_normalised", "ear", "eae_d")


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


def display_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """The per-system table for readers: no raw α column (∞ reads badly), metric names as in the paper."""
    return summary.drop(columns=["alpha"]).rename(columns=DISPLAY_NAMES)


def display_ledger(ledger: pd.DataFrame) -> pd.DataFrame:
    """The ledger for readers: columns without values (no answers, no labels) dropped, readable headers."""
    empty = [c for c in ledger.columns if ledger[c].isna().all()]
    return ledger.drop(columns=empty).rename(columns=DISPLAY_NAMES)


def groupings(collection: Collection) -> list[str]:
    return ["provider", *collection.categories()]


def ledger_for(documents: pd.DataFrame, collection: Collection, alpha: float, by: str) -> pd.DataFrame:
    """The exposure ledger of one system (α) of an audit."""
    rows = documents[np.isclose(documents["alpha"].astype(float), alpha)]  # isclose(∞, ∞) holds
    return exposure_ledger(rows, collection, by=by)


def compare_runs(first: pd.DataFrame, second: pd.DataFrame, names: tuple[str, str]) -> pd.DataFrame:
    """Side-by-side means per system of two stored runs, with the difference (second − first)."""
    a, b = summary_by_system(first), summary_by_system(second)
    merged = a.merge(b, on=["system", "alpha"], how="outer", suffixes=(f" [{names[0]}]", f" [{names[1]}]"))
    for metric in METRIC_COLUMNS:
        left, right = f"{metric} [{names[0]}]", f"{metric} [{names[1]}]"
        if left in merged and right in merged:
            merged[f"{metric} Δ"] = merged[right] - merged[left]
    return merged.sort_values("alpha").reset_index(drop=True)


def build_report(run: SweepRun, collection: Collection, *, title: str = "Fairness audit") -> str:
    """A self-contained HTML report: what was run, metrics per system, the ledgers with charts, the caveats."""
    table, documents, record = run.table, run.documents, run.record
    alphas = sorted(float(a) for a in table["alpha"].unique())
    generated = "eu" in table and table["eu"].notna().any()
    summary = {
        "collection": record.collection or collection.name,
        "queries": table["query_id"].nunique(),
        "systems": ", ".join(system_label(a) for a in alphas),
        "retriever": record.retriever,
        "generator": record.generator or "— (exposure only)",
        "NLI attributor": record.attributor or "—",
        "rankings per query and system (N)": record.config.n_samples,
        "k": record.config.k,
        "seed": record.seed,
        "run id": run.run_id or "not saved",
        "reproduce": record.command(),
    }
    sections = [
        ReportSection("How to read this report",
                      "A deterministic retriever always shows the generator the same top-k documents; a stochastic "
                      "retriever with fairness knob α spreads that exposure over equally useful sources. EE-D is the "
                      "exposure disparity (1 = always the same documents; lower is fairer). EE-R is how much exposure "
                      "goes to useful documents (higher is better). EU is answer utility against gold answers, EAR the "
                      "share of shown documents the answers rest on (checked by an NLI model), and EAE-D the "
                      "disparity of those citations. Metrics follow Kim & Diaz (2025).\n\n" + explain.LEDGER),
        ReportSection("Metrics per system", "Means over the queries with at least two useful documents.",
                      table=display_summary(summary_by_system(table))),
    ]
    sections.append(ReportSection("EE-D by α", figure=charts.ee_d_by_alpha(table)))
    if generated:
        sections.append(ReportSection("Answer utility against exposure disparity",
                                      figure=charts.metric_vs_disparity(table, "eu_normalised",
                                                                        label="EU, normalised")))
    for alpha in alphas:
        for by in groupings(collection):
            ledger = ledger_for(documents, collection, alpha, by)
            sections.append(ReportSection(
                f"Exposure ledger by {by} — {system_label(alpha)}",
                "Shares of retrieval exposure, of attributed exposure (citations) and under the fair target.",
                table=display_ledger(ledger), figure=charts.exposure_ledger_chart(ledger)))
    caveats = ("Limits: results hold for this query set, these models and these settings. With few queries or "
               "samples the differences are noisy; bootstrap intervals and Table 2 p-values are in the app. "
               "Attribution is judged by an NLI model, which makes mistakes.")
    if not record.complete:
        caveats = "This audit was stopped before all runs finished. " + caveats
    sections.append(ReportSection("Caveats", caveats))
    sections.append(ReportSection("All runs", table=table))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return audit_report_html(title=title, summary=summary, sections=sections, generated_at=stamp)
