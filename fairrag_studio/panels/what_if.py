"""The Audit page's served tab: the what-if replay's form and result (:mod:`fairrag_core.audit.what_if`). The stored
replay is shown when the audit has one; else a form runs it, keeps it with the run (so its HTML report includes it)
and adds it to the run store. The table, figure and report section are :mod:`fairrag_studio.views.what_if`'s."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from fairrag_core import FairRAGError
from fairrag_core.checks import parse_alphas

from ..services.run_scope import browser_runs
from ..views.served import read_served
from ..views.what_if import DEFAULT_ALPHAS, DEFAULT_SAMPLES, ESTIMATE_NOTE, curve_table, what_if_figure, with_what_if
from .widgets import markdown_text

__all__ = ["render_what_if"]


def _replay(run, coll, alphas: list[float], n_samples: int, seed: int | None) -> dict:
    """Replay the audited log (read again from the run's file) at each α; the stored form of the result."""
    from fairrag_core.audit.what_if import WhatIfSettings, what_if_sampling

    log, _ = read_served(Path(run.record.config.log), coll)
    settings = WhatIfSettings(alphas=tuple(alphas), n_samples=n_samples, seed=seed)
    return what_if_sampling(log, coll, settings, audit=run).to_dict(details=False)


def render_what_if(run, coll, key: str):
    """The served tab's what-if: the stored replay when the audit has one, else a form that runs it. Returns the
    run as shown: with a replay just run, the replay and its grid and N are kept in its record (so its HTML report
    includes the replay and its reproduce command the ``--what-if-*`` options) and in the run store."""
    st.subheader("What if it had sampled?")
    st.caption("Replays the logged candidates of each query under the fair Plackett-Luce retriever at each α, from "
               "the retrieval scores the system logged, and sets the exposure it would have delivered beside what it "
               "served. Answers are not regenerated.")
    data = run.record.extra.get("what_if")
    if data is None:
        cols = st.columns([2, 1, 1])
        alphas_text = cols[0].text_input("α grid", DEFAULT_ALPHAS, key=f"{key}_wi_alphas",
                                         help="Comma-separated; 'inf' is the deterministic ranking by logged score.")
        n_samples = int(cols[1].number_input("Rankings per α", 10, 1000, DEFAULT_SAMPLES, 10, key=f"{key}_wi_n"))
        if not cols[2].button("Replay", key=f"{key}_wi_run"):
            return run
        try:
            alphas = list(parse_alphas(alphas_text))
            with st.spinner("Replaying the log at each α…"):
                data = _replay(run, coll, alphas, n_samples, run.record.seed)
        except (FairRAGError, OSError) as err:
            st.error(f"No replay: {err}")
            return run
        run = with_what_if(run, data)  # kept with the run: the report and the reproduce command below include it
        if run.run_id:  # and in the run store, so the replay is there when the run is reopened
            try:
                browser_runs().add_extra(run.run_id, "what_if", data, config=run.record.config)
            except FairRAGError as err:
                st.warning(f"The replay was not saved with the stored run: {err}")
    findings = [f for f in data["findings"] if not f.get("detail")]
    st.markdown("\n".join(f"- **{f['severity']}** · {markdown_text(f['text'])}" for f in findings))
    if data.get("recommendation"):
        st.info(data["recommendation"])
    st.plotly_chart(what_if_figure(data), key=f"{key}_wi_chart")
    st.dataframe(curve_table(data), hide_index=True)
    st.caption(ESTIMATE_NOTE + f" Not estimated: {data['not_estimated']}.")
    return run
