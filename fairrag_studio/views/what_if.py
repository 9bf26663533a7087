"""What if the served system had sampled? The what-if replay (:mod:`fairrag_core.audit.what_if`) on the Audit page's
served tab and in the log report: its findings, the EE-D and EE-R curve per α against the system as served, the
recommendation, and what is and is not estimated.

The replay needs the retrieval scores the system logged (a trace export's ``document.score``, a TREC run's score
column): the logged candidates of each query are re-ranked by the fair Plackett-Luce retriever (Kim & Diaz 2025,
Eq. 2) at each α. One representation serves the page, the report and the CLI: ``WhatIf.to_dict(details=False)``,
kept in the run record's ``extra["what_if"]`` (``audit-log --what-if-alphas`` stores it there too).

This module builds the table, figure and report section without Streamlit (the log report imports it); the
served tab's form and result are :mod:`fairrag_studio.panels.what_if`.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from fairrag_core.audit.what_if import AS_SERVED, WhatIfSettings, p_text, value_text
from fairrag_core.metrics.registry import METRICS

from .. import charts
from .report import ReportSection

__all__ = ["curve_table", "what_if_figure", "what_if_section", "with_what_if", "DEFAULT_ALPHAS", "DEFAULT_SAMPLES",
           "ESTIMATE_NOTE", "REPLAYED"]

#: The form's α grid and N: ``audit-log``'s (:class:`~fairrag_core.audit.what_if.WhatIfSettings`), ``0, 1, 2, 4, 8``.
DEFAULT_ALPHAS = ", ".join(f"{alpha:g}" for alpha in WhatIfSettings().alphas)
DEFAULT_SAMPLES = WhatIfSettings().n_samples
#: The metrics the replay estimates per α (the registry's keys; :attr:`~fairrag_core.audit.what_if.WhatIf.curve`).
REPLAYED = ("ee_d", "ee_r")
ESTIMATE_NOTE = ("Each value is the mean over the replayed queries of the per-query estimate (EE-D bias-corrected); "
                 "the interval is a 95% percentile bootstrap over queries and contains the value; a change is "
                 "paired over queries, with a sign-flip test.")


def curve_table(data: dict) -> pd.DataFrame:
    """The replay's curve as a reader's table: per system (as served, then each α) EE-D and EE-R with their
    intervals, and the change against the system as served with its interval and p-value."""
    def changed(r: dict, metric: str) -> str:
        if r["system"] == AS_SERVED:
            return ""
        if r[f"{metric}_change"] is None:
            return "—"
        return (value_text(r[f"{metric}_change"], r[f"{metric}_change_low"], r[f"{metric}_change_high"], signed=True)
                + f" ({p_text(r[f'{metric}_p'])})")

    def row(r: dict) -> dict:
        cells = {"system": r["label"]}
        for key in REPLAYED:
            label = METRICS[key].label
            cells[label] = value_text(r[key], r[f"{key}_low"], r[f"{key}_high"])
            cells[f"{label} change"] = changed(r, key)
        return cells | {"queries": r["queries"]}

    return pd.DataFrame([row(r) for r in data["curve"]])


def what_if_figure(data: dict):
    """The EE-D curve per α against the system as served (the page's chart and the report's figure)."""
    return charts.what_if_curve(pd.DataFrame(data["curve"]).astype({"ee_d": float, "ee_d_low": float,
                                                                     "ee_d_high": float}))


def _summary_text(data: dict) -> str:
    findings = [f for f in data["findings"] if not f.get("detail")]
    parts = [f"{f['severity'].capitalize()}: {f['text']}" for f in findings]
    parts.append(f"Recommendation: {data['recommendation']}" if data.get("recommendation") else "")
    grid = ", ".join("∞" if a == "inf" else f"{a:g}" for a in data["alphas"])
    parts.append(f"Replayed at α ∈ {{{grid}}} with N = {data['n_samples']} sampled rankings per query and α, "
                 f"k = {data['k']}, seed {data['seed']}. {ESTIMATE_NOTE}")
    parts.append(f"Estimated: {data['estimated']}. Not estimated: {data['not_estimated']}.")
    parts += [f"Note: {n}" for n in data.get("notes", [])]
    return "\n\n".join(p for p in parts if p)


def what_if_section(data: dict) -> ReportSection:
    """The report's section for a replay (``WhatIf.to_dict(details=False)``)."""
    return ReportSection("What if it had sampled?", _summary_text(data), table=curve_table(data),
                         figure=what_if_figure(data), metrics=tuple(METRICS[key].label for key in REPLAYED))


def with_what_if(run, data: dict):
    """``run`` (a log audit) with the replay ``data`` (``WhatIf.to_dict(details=False)``) kept in its record: under
    ``extra["what_if"]``, and its grid and N in the audit's settings (``what_if_alphas``, ``what_if_samples``), so
    the run's reproduce command replays it as ``audit-log --what-if-alphas … --what-if-samples …`` does."""
    config = replace(run.record.config, what_if_alphas=tuple(float(a) for a in data["alphas"]),
                     what_if_samples=int(data["n_samples"]))
    return replace(run, record=replace(run.record, config=config, extra={**run.record.extra, "what_if": data}))
