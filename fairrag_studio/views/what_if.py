"""What if the served system had sampled? The what-if replay (:mod:`fairrag_core.audit.what_if`) on the Audit page's
served tab and in the log report: its findings, the EE-D and EE-R curve per α against the system as served, the
recommendation, and what is and is not estimated.

The replay needs the retrieval scores the system logged (a trace export's ``document.score``, a TREC run's score
column): the logged candidates of each query are re-ranked by the fair Plackett-Luce retriever (Kim & Diaz 2025,
Eq. 2) at each α. One representation serves the page, the report and the CLI: ``WhatIf.to_dict(details=False)``,
kept in the run record's ``extra["what_if"]`` (``audit-log --what-if-alphas`` stores it there too).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from fairrag_core import FairRAGError
from fairrag_core.audit.what_if import AS_SERVED, p_text, value_text
from fairrag_core.checks import parse_alphas

from .. import charts
from ..panels.widgets import markdown_text
from ..services.run_scope import browser_runs
from .report import ReportSection
from .served import read_served

__all__ = ["curve_table", "what_if_section", "render_what_if", "DEFAULT_ALPHAS"]

DEFAULT_ALPHAS = "0, 1, 2, 4, 8"
_ESTIMATE_NOTE = ("Each value is the mean over the replayed queries of the per-query estimate (EE-D bias-corrected); "
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

    rows = [{"system": r["label"], "EE-D": value_text(r["ee_d"], r["ee_d_low"], r["ee_d_high"]),
             "EE-D change": changed(r, "ee_d"), "EE-R": value_text(r["ee_r"], r["ee_r_low"], r["ee_r_high"]),
             "EE-R change": changed(r, "ee_r"), "queries": r["queries"]} for r in data["curve"]]
    return pd.DataFrame(rows)


def _figure(data: dict):
    return charts.what_if_curve(pd.DataFrame(data["curve"]).astype({"ee_d": float, "ee_d_low": float,
                                                                     "ee_d_high": float}))


def _summary_text(data: dict) -> str:
    findings = [f for f in data["findings"] if not f.get("detail")]
    parts = [f"{f['severity'].capitalize()}: {f['text']}" for f in findings]
    parts.append(f"Recommendation: {data['recommendation']}" if data.get("recommendation") else "")
    grid = ", ".join("∞" if a == "inf" else f"{a:g}" for a in data["alphas"])
    parts.append(f"Replayed at α ∈ {{{grid}}} with N = {data['n_samples']} sampled rankings per query and α, "
                 f"k = {data['k']}, seed {data['seed']}. {_ESTIMATE_NOTE}")
    parts.append(f"Estimated: {data['estimated']}. Not estimated: {data['not_estimated']}.")
    parts += [f"Note: {n}" for n in data.get("notes", [])]
    return "\n\n".join(p for p in parts if p)


def what_if_section(data: dict) -> ReportSection:
    """The report's section for a replay (``WhatIf.to_dict(details=False)``)."""
    return ReportSection("What if it had sampled?", _summary_text(data), table=curve_table(data),
                         figure=_figure(data), metrics=("EE-D", "EE-R"))


def _replay(run, coll, alphas: list[float], n_samples: int, seed: int | None) -> dict:
    from fairrag_core.audit.what_if import WhatIfSettings, what_if_sampling

    log, _ = read_served(Path(run.record.config.log), coll)
    settings = WhatIfSettings(alphas=tuple(alphas), n_samples=n_samples, seed=seed)
    return what_if_sampling(log, coll, settings, audit=run).to_dict(details=False)


def render_what_if(run, coll, key: str) -> None:
    """The served tab's what-if: the stored replay when the audit has one, else a form that runs it; the result is
    kept with the run (and so goes into its HTML report)."""
    st.subheader("What if it had sampled?")
    st.caption("Replays the logged candidates of each query under the fair Plackett-Luce retriever at each α, from "
               "the retrieval scores the system logged, and sets the exposure it would have delivered beside what it "
               "served. Answers are not regenerated.")
    data = run.record.extra.get("what_if")
    if data is None:
        cols = st.columns([2, 1, 1])
        alphas_text = cols[0].text_input("α grid", DEFAULT_ALPHAS, key=f"{key}_wi_alphas",
                                         help="Comma-separated; 'inf' is the deterministic ranking by logged score.")
        n_samples = int(cols[1].number_input("Rankings per α", 10, 1000, 100, 10, key=f"{key}_wi_n"))
        if not cols[2].button("Replay", key=f"{key}_wi_run"):
            return
        try:
            alphas = list(parse_alphas(alphas_text))
            with st.spinner("Replaying the log at each α…"):
                data = _replay(run, coll, alphas, n_samples, run.record.seed)
        except (FairRAGError, OSError) as err:
            st.error(f"No replay: {err}")
            return
        run.record.extra["what_if"] = data  # kept with the run: the report below includes it
        if run.run_id:  # and in the run store, so the replay is there when the run is reopened
            try:
                browser_runs().add_extra(run.run_id, "what_if", data)
            except FairRAGError as err:
                st.warning(f"The replay was not saved with the stored run: {err}")
    findings = [f for f in data["findings"] if not f.get("detail")]
    st.markdown("\n".join(f"- **{f['severity']}** · {markdown_text(f['text'])}" for f in findings))
    if data.get("recommendation"):
        st.info(data["recommendation"])
    st.plotly_chart(_figure(data), key=f"{key}_wi_chart")
    st.dataframe(curve_table(data), hide_index=True)
    st.caption(_ESTIMATE_NOTE + f" Not estimated: {data['not_estimated']}.")
