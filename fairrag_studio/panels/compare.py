"""The Audit page's comparison (Stored runs → Compare): two or more stored audits — served logs, runs, batch audits
and sweeps, one system per α — compared over the queries they share, findings first, saved like any run and
downloadable as the same HTML report as ``compare-runs --report``."""

from __future__ import annotations

import streamlit as st

from fairrag_core import Collection, FairRAGError
from fairrag_core.audit.compare import STORED, Comparison, ComparisonConfig, compare_systems, stored_systems
from fairrag_core.audit.comparison_findings import with_findings
from fairrag_core.record import RunKind, SweepRun

from ..views.compare import comparison_report_html, metrics_table, share_difference_chart, shares_table

__all__ = ["render_comparison", "show_comparison", "merit_rule"]


def merit_rule(systems) -> dict:
    """The merit rule (:class:`ComparisonConfig`'s ``merit_grades`` and ``merit_threshold``) of the log audits among
    ``systems``, so that the comparison finds each system's merit findings as its audit did: the first audit's rule
    when they differ (the page says so), the default when none is a log audit."""
    rules = list(dict.fromkeys((s.run.record.config.merit_grades, s.run.record.config.merit_threshold)
                               for s in systems if s.alpha is None and s.run.record.kind is RunKind.AUDIT_LOG))
    if len(rules) > 1:
        st.info("These audits used different merit rules; the comparison finds every system's merit findings by "
                "the first one's (compare-runs --merit-grades/--merit-threshold set one for all).")
    return {"merit_grades": rules[0][0], "merit_threshold": rules[0][1]} if rules else {}


def show_comparison(result: Comparison, collection: Collection, *, key: str) -> None:
    """Findings, the metric differences, the share differences (table and chart), the report download."""
    record = result.record
    st.markdown(f"**{' vs '.join(record.extra['systems'])}** — each against **{record.extra['baseline']}**, over "
                f"{len(record.query_ids)} shared queries")
    headline = [f for f in result.findings if not f.detail]
    if headline:
        st.markdown("\n".join(f"- {f.text}" for f in headline))
    st.dataframe(metrics_table(result), hide_index=True)
    st.caption("Mean difference system − baseline over the shared queries, 95% percentile bootstrap interval over "
               "queries, p of a paired sign-flip test, Holm-adjusted across the metrics of the pair.")
    if not result.documents.empty:
        kinds = list(dict.fromkeys(result.documents["kind"]))
        kind = st.radio("Share of", kinds, horizontal=True, key=f"{key}_kind") if len(kinds) > 1 else kinds[0]
        st.plotly_chart(share_difference_chart(result, kind=kind), key=f"{key}_chart")
        table = shares_table(result)
        st.dataframe(table[table["share of"] == kind], hide_index=True)
    st.code(record.command(), language="bash")
    st.download_button("Report (HTML)", lambda: comparison_report_html(result, collection),
                       file_name=f"comparison_{result.run_id or 'new'}.html", mime="text/html", key=f"{key}_report")


def render_comparison(runs: list[SweepRun], collection: Collection, store, *, key: str = "compare",
                      reading: dict | None = None) -> None:
    """Pick the systems of the chosen stored runs (each named by its run id and the file it audited) and a baseline,
    compare them, save the comparison. ``reading``:
    :class:`ComparisonConfig`'s provider source when the runs are log audits with providers from their logs
    (:func:`~fairrag_studio.views.served.audits_collection`), so that its command reruns without a collection."""
    systems = [s for run in runs for s in stored_systems(run)]  # run:ID · the file it audited
    labels = [s.label for s in systems]
    chosen = st.multiselect("Systems to compare", labels, default=labels[: min(len(labels), 4)],
                            key=f"{key}_systems")
    if len(chosen) < 2:
        st.info("Pick two or more systems (a sweep or batch audit holds one per α).")
        return
    baseline = st.selectbox("Baseline (the others are compared with it)", chosen, key=f"{key}_baseline")
    picked = [s for s in systems if s.label in chosen]
    cache = st.session_state.setdefault("comparisons", {})
    request = (tuple(chosen), baseline, collection.sha256)
    if request not in cache:
        try:
            config = ComparisonConfig(baseline=baseline, inputs=tuple(dict.fromkeys(f"{STORED}{s.run.run_id}"
                                                                                    for s in picked)),
                                      seed=picked[0].run.record.seed, **(reading or {}), **merit_rule(picked))
            # each served system's own findings too, as compare-runs and audit-log find them (label-free included)
            result = with_findings(compare_systems(picked, collection, config), picked, collection)
        except FairRAGError as err:
            st.error(str(err))
            return
        cache[request] = result.saved_as(store.save(result, label=f"comparison · {' vs '.join(chosen)}"))
    result = cache[request]
    st.caption(f"Saved in the run store as **{result.run_id}**.")
    show_comparison(result, collection, key=key)
