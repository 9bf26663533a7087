"""What the app and the HTML report show of a comparison of audited systems (:mod:`fairrag_core.audit.compare`):
its findings first, the per-query metric differences with intervals and tests, and the per-provider share
differences as a chart of gaps with intervals. The CLI's ``compare-runs --report`` writes the same report. Pure: no
Streamlit."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from fairrag_core import Collection
from fairrag_core.audit.compare import Comparison

from ..charts.style import label
from .report import ReportSection, audit_report_html

__all__ = ["metrics_table", "shares_table", "share_difference_chart", "comparison_sections",
           "comparison_report_html"]


def _interval(low: float, high: float, *, scale: float = 1.0, digits: int = 3) -> str:
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "—"
    return f"[{low * scale:+.{digits}f}, {high * scale:+.{digits}f}]"


def _p(p: float) -> str:
    return "—" if p is None or math.isnan(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def metrics_table(result: Comparison) -> pd.DataFrame:
    """One row per (system, metric): both means, the difference with its interval, p and Holm's p, direction."""
    t = result.table
    if t.empty:
        return pd.DataFrame()
    return pd.DataFrame({
        "system": t["system"], "metric": t["label"], "system mean": t["mean_system"].round(3),
        "baseline mean": t["mean_baseline"].round(3), "difference": t["difference"].round(3),
        "95% interval": [_interval(lo, hi) for lo, hi in zip(t["low"], t["high"])],
        "p": [_p(p) for p in t["p_value"]], "p (Holm)": [_p(p) for p in t["p_holm"]],
        "queries": t["n_queries"], "direction": t["direction"]})


def shares_table(result: Comparison) -> pd.DataFrame:
    """One row per (system, share kind, group), in percentage points: both shares, the difference, its interval,
    p (Holm-adjusted across groups)."""
    d = result.documents
    if d.empty:
        return pd.DataFrame()
    return pd.DataFrame({
        "system": d["system"], "share of": d["kind"], "group": d["group"],
        "system share": (d["share_system"] * 100).round(1), "baseline share": (d["share_baseline"] * 100).round(1),
        "difference (points)": (d["difference"] * 100).round(1),
        "95% interval": [_interval(lo, hi, scale=100, digits=1) for lo, hi in zip(d["low"], d["high"])],
        "p (Holm)": [_p(p) for p in d["p_holm"]]})


def share_difference_chart(result: Comparison, *, kind: str = "retrieval") -> go.Figure:
    """Each group's share difference (system − baseline, points) with its interval, around a zero line."""
    d = result.documents
    fig = go.Figure()
    if not d.empty:
        for system, part in d[d["kind"] == kind].groupby("system", sort=False):
            part = part.sort_values("difference")
            fig.add_trace(go.Scatter(
                x=part["difference"] * 100, y=[label(g) for g in part["group"]], mode="markers",
                name=label(system), error_x={"type": "data", "symmetric": False,
                                             "array": (part["high"] - part["difference"]) * 100,
                                             "arrayminus": (part["difference"] - part["low"]) * 100}))
    fig.add_vline(x=0, line_dash="dash", line_color="#52606d")
    fig.update_layout(title=f"{kind.capitalize()} share: system − baseline (percentage points, 95% interval)",
                      xaxis_title="difference in share (points)", height=max(320, 26 * d["group"].nunique() + 120)
                      if not d.empty else 320, margin={"l": 180})
    return fig


def comparison_sections(result: Comparison) -> list[ReportSection]:
    """The report's sections: findings (the executive summary), metrics, shares with their chart, reproduce."""
    record = result.record
    base = record.extra["baseline"]
    sections = []
    headline = [f for f in result.findings if not f.detail]
    if headline:
        sections.append(ReportSection("Findings", "\n\n".join(f.text for f in headline)))
    sections.append(ReportSection(
        "Metrics per query", f"Each system minus {base}, over the queries both audited: the mean difference with its "
        "95% percentile bootstrap interval over queries, and the two-sided p-value of a paired randomization "
        "(sign-flip) test, Holm-adjusted across the metrics of the pair.", table=metrics_table(result),
        metrics=tuple(result.table["label"]) if not result.table.empty else ()))
    if not result.documents.empty:
        sections.extend(ReportSection(
            f"{kind.capitalize()} share per {record.config.by}",
            f"Each {record.config.by}'s share of {kind} exposure in the system minus in {base}, pooled over the "
            "shared queries; 95% paired bootstrap interval over queries; p from a permutation test that swaps "
            "the two systems within queries, Holm-adjusted across the groups.",
            table=shares_table(result)[lambda t, k=kind: t["share of"] == k],
            figure=share_difference_chart(result, kind=kind)) for kind in dict.fromkeys(result.documents["kind"]))
    sections.append(ReportSection("Reproduce", "Run this command in the FairRAG Studio checkout, with the same files, "
                                  "to recompute every number of this report.", code=record.command()))
    return sections


def comparison_report_html(result: Comparison, collection: Collection, *, figures: str = "static",
                           renderer=None) -> str:
    """The comparison as one self-contained HTML file."""
    record = result.record
    inputs = "; ".join(f"{i['label']}" + (f" ({i['name']}, sha256 {i['sha256']})" if i.get("sha256") else "")
                       for i in record.extra.get("inputs", []))
    summary = {"systems": ", ".join(record.extra["systems"]), "baseline": record.extra["baseline"],
               "collection": f"{collection.name} (sha256 {collection.sha256 or 'not recorded'})",
               "inputs": inputs, "queries": str(len(record.query_ids)), "seed": str(record.seed)}
    return audit_report_html(title="Comparison of audited systems", summary=summary,
                             sections=comparison_sections(result), figures=figures, renderer=renderer)
