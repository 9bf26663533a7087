"""Disparity curves: the α sweep for one query or the query set — Figures 3–5, Tables 1–2, an α recommender."""

import streamlit as st

from fairrag_core import FairRAGError, disparity_quality_table, recommend_alpha, utility_by_disparity_table
from fairrag_core.glossary import GLOSSARY
from fairrag_core.metrics.registry import METRICS
from fairrag_core.rag.labels import has_utility_labels
from fairrag_core.rag.sweep import Usefulness
from fairrag_studio import charts
from fairrag_studio.panels.sweeps import SweepRequest, parse_alphas, rag_job, run_exposure_request
from fairrag_studio.panels.widgets import chart_with_downloads, explainer, glossary_note
from fairrag_studio.services import resources
from fairrag_studio.services.run_scope import browser_runs
from fairrag_studio.services.state import drop_stale
from fairrag_studio.views import explain
from fairrag_studio.views.explain import recommendation_context
from fairrag_studio.views.report import table_csv

settings = st.session_state["settings"]
collection = resources.collection(settings.collection)

st.title("Disparity curves")
st.caption("Sweep α and watch the fairness–quality trade-off of Kim & Diaz (2025): EE-D by α (Fig. 3), "
           "quality against disparity (Figs. 4–5), and the Table 1 / Table 2 summaries.")

labelled = [q for q in collection.queries if q.query_id in collection.qrels]
if not labelled:
    st.warning(f"{collection.name} has no queries with relevance labels (qrels.txt), so there is nothing to "
               "sweep. Pick a demo collection or upload queries.jsonl and qrels.txt.")
    st.stop()
text_of = {q.query_id: q.text for q in labelled}

controls = st.columns([2, 3])
with controls[0]:
    scope = st.radio("Queries", ["One query", "Query set"], horizontal=True, key="curves_scope")
    alphas_text = st.text_input("α values", "0, 1, 2, 4, 8", key="curves_alphas",
                                help="Comma-separated; the deterministic retriever is added as the baseline.")
    mode = st.radio("Measure", ["Exposure only", "Exposure + answers"], key="curves_mode", horizontal=True,
                    help="Answers add EU, EAR and EAE-D: a generation per distinct ranking and an NLI check "
                         "per cited document — minutes per query on a CPU.")
with controls[1]:
    drop_stale(st.session_state, "curves_query", text_of)
    drop_stale(st.session_state, "curves_queries", text_of)
    if scope == "One query":
        chosen = [st.selectbox("Query", list(text_of), format_func=lambda q: f"{q} — {text_of[q]}",
                               key="curves_query")]
    else:
        chosen = st.multiselect("Query set", list(text_of), default=list(text_of), key="curves_queries",
                                format_func=lambda q: f"{q} — {text_of[q][:60]}")
    usefulness = Usefulness.UTILITY
    if mode == "Exposure + answers":
        # Algorithm 1's labels belong to one generator; the shipped ones are SmolLM2's
        labelled_for_generator = has_utility_labels(settings.collection, settings.generator)
        options = list(Usefulness) if labelled_for_generator else [Usefulness.RELEVANCE]
        usefulness = st.radio("Useful documents for EE-R and the oracle", options, horizontal=True,
                              key="curves_labels",
                              format_func=lambda v: {Usefulness.UTILITY: "Utility labels (Algorithm 1)",
                                                     Usefulness.RELEVANCE: "Relevance qrels"}[v])
        if not labelled_for_generator:
            st.caption(f"Relevance qrels: no Algorithm 1 utility labels for {settings.generator} on this collection "
                       f"(make them with `python -m fairrag_core label-utility --collection {collection.name} "
                       f"--generator {settings.generator}`; the shipped ones are SmolLM2-135M's).")
try:
    alphas = parse_alphas(alphas_text)
except FairRAGError as err:
    st.error(str(err))
    st.stop()
if not chosen:
    st.info("Pick at least one query.")
    st.stop()

generate = mode == "Exposure + answers"
request = SweepRequest(settings=settings, query_ids=tuple(chosen), alphas=alphas, generate=generate,
                       usefulness=usefulness)
pressed = st.button("Run the sweep", type="primary", key="curves_run")
try:
    if generate:
        sweep, job, result = rag_job(
            request, run=pressed, kind="sweep", page="app_pages/disparity_curves.py",
            title=f"Sweep · {collection.name} · {len(chosen)} quer{'y' if len(chosen) == 1 else 'ies'} × "
                  f"{len(alphas) + 1} systems",
            label=f"{collection.name} · {len(chosen)} quer{'y' if len(chosen) == 1 else 'ies'} · answers")
        if result is None:
            if job is None or not job.active:
                if job is not None and job.error:
                    st.error(job.error)
                st.info(f"{len(sweep.tasks)} runs to do ({len(chosen)} queries × {len(alphas) + 1} systems, N = "
                        f"{settings.n_samples}). Press **Run the sweep**: it runs in the background, so you can use "
                        "other pages meanwhile, cancel at any time and keep what is finished.")
            st.stop()
        if not result.record.complete:
            finished = len(result.table)
            if job.error:
                st.error(job.error)
            st.warning(f"Showing {finished} of {len(sweep.tasks)} runs; "
                       + ("the rest are on their way." if job.active else "press **Run the sweep** to finish."))
    else:
        if not pressed and request not in st.session_state["exposure_sweeps"]:
            st.info("Press **Run the sweep** (exposure only takes a moment).")
            st.stop()
        result = run_exposure_request(request)
    table = result.table
except FairRAGError as err:
    st.error(str(err))
    st.stop()

explainer(explain.CURVES)
st.subheader("EE-D by α (Figure 3)")
chart_with_downloads(charts.ee_d_by_alpha(table), table, "ee_d_by_alpha", key="fig3")
st.subheader("Quality against disparity (Figures 4–5)")
figures = [("ee_r", GLOSSARY["EE-R"].axis_title, "ee_r_vs_ee_d")]
if generate:
    figures += [("eu_normalised", GLOSSARY["EU (normalised)"].axis_title, "eu_vs_ee_d"),
                ("ear", GLOSSARY["EAR"].axis_title, "ear_vs_ee_d")]
for metric, label, name in figures:
    if metric in table and table[metric].notna().any():
        chart_with_downloads(charts.metric_vs_disparity(table, metric, label=label), table, name, key=name)
if generate:
    chart_with_downloads(charts.attributed_vs_retrieval_disparity(table), table, "eae_d_vs_ee_d", key="eae")
glossary_note(["EE-D", "EE-R", *(["EU (normalised)", "EAR", "EAE-D"] if generate else [])])  # the charts' metrics

st.subheader("Tables")
cols = st.columns(2)
with cols[0]:
    st.markdown("**Table 1** — slope and AUC of EE-R against EE-D")
    try:
        table1 = disparity_quality_table(table)
        st.dataframe(table1.rename(columns={"runs": "stochastic runs fitted"}), hide_index=True)
        st.caption(f"Fitted on the {int(table1['runs'].iloc[0])} stochastic (query, α) runs of queries with at "
                   f"least two useful documents, out of {len(table)} runs in the sweep (the deterministic "
                   "baseline and queries without a fairness question are left out, as in the paper).")
    except FairRAGError as err:
        st.caption(str(err))
with cols[1]:
    if generate:
        st.markdown("**Table 2** — EU per EE-D interval minus the deterministic baseline (Welch t-test)")
        try:
            st.dataframe(utility_by_disparity_table(table), hide_index=True)
        except FairRAGError as err:
            st.caption(str(err))
    else:
        st.markdown("**Table 2** needs answers: switch *Measure* to *Exposure + answers*.")

st.subheader("α recommender")
metric = "eu" if generate else "ee_r"
quality = METRICS[metric].label  # the recommender's quality measure
tolerance = st.slider(f"Tolerance: how much mean {quality} (%) may drop below the "
                      "deterministic baseline", 0.0, 50.0, step=1.0, key="tolerance")
try:
    rec = recommend_alpha(table, tolerance=tolerance / 100, metric=metric, metric_label=quality)
except FairRAGError as err:
    st.caption(str(err))
else:
    if rec.alpha is None:
        st.warning(rec.reason)
    else:
        st.success(f"Recommended **α = {rec.alpha:g}**: {rec.reason}.")
    # the Playground offers it: a stop on its α slider and an Apply button
    st.session_state["recommended_alpha"] = None if rec.alpha is None else (settings.collection, rec.alpha)
    st.caption(recommendation_context(table, settings.k, metric))
    if not generate:
        st.caption("Without answers the recommender uses EE-R as the quality measure; run with answers to use EU.")
    st.dataframe(rec.per_alpha.rename(columns={"ee_d": METRICS["ee_d"].label, "utility": f"mean {quality}",
                                               "eligible": "within tolerance"}), hide_index=True)
explainer(explain.RECOMMENDER)

st.subheader("Keep this sweep")
left, right = st.columns(2)
left.download_button("Sweep table (CSV)", table_csv(table), file_name="sweep.csv", mime="text/csv",
                     key="sweep_csv")
if result.run_id is not None:  # a finished sweep with answers saves itself
    right.success(f"Saved as run {result.run_id}; reopen it on the Audit page.")
else:
    label = right.text_input("Label", key="sweep_label",
                             value=f"{collection.name} · {len(chosen)} quer{'y' if len(chosen) == 1 else 'ies'}")
    if right.button("Save to the run store", key="sweep_save"):
        run_id = browser_runs().save(result, label=label)
        right.success(f"Saved as run {run_id}; reopen it on the Audit page.")
