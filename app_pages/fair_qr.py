"""FAIR-QR: watch a query being refined, iteration by iteration, toward the most under-represented group."""

import html

import pandas as pd
import streamlit as st

from fairrag_core import FairRAGError
from fairrag_core.fairqr import FairQRConfig, fair_qr
from fairrag_core.fairqr.evaluate import FairQREvalConfig, compare_systems
from fairrag_core.metrics.group_targets import TargetKind, groups_for
from fairrag_core.models.catalog import REFINER, role_models
from fairrag_core.models.queue import activity
from fairrag_core.rag.prepared import FAIRQR_SHOWCASE as SHOWCASE
from fairrag_core.rag.prepared import prepared_note
from fairrag_studio import charts
from fairrag_studio.panels.jobs import model_busy_note, show_queue
from fairrag_studio.panels.widgets import chart_with_downloads, explainer, glossary_note
from fairrag_studio.services import resources
from fairrag_studio.views import explain

settings = st.session_state["settings"]
collection = resources.collection(settings.collection)

st.title("FAIR-QR")
st.caption("Query refinement for group fairness (Chen & Fang): an LLM appends keywords about the group the top K "
           "lacks most, until the group distribution stops getting closer to the target; BM25 then re-ranks with "
           "the original query.")
explainer(explain.FAIRQR)

categories = collection.categories()
if not categories:
    st.warning(f"{collection.name} has no group labels (a `groups` field per document). Pick the **people** "
               "collection, or upload a corpus whose documents carry groups such as gender or region.")
    st.stop()

examples = [q.text for q in collection.queries]
# Start where the lever shows: on `people`, BM25's top 20 for this query over-represents two regions, and two
# refinements bring Δ from 0.57 to 0.18 (corpus-keyword refiner, which then refuses a third); elsewhere, the
# collection's first query.
showcase = SHOWCASE.get(collection.name, examples[0] if examples else "")
top = st.columns([3, 2])
# keys per collection: switching collections starts from that collection's showcase query and category
query = top[0].text_input("Query", value=showcase, key=f"fqr_query:{collection.name}", max_chars=2000)
default_category = ["region"] if "region" in categories else categories[:1]
chosen_categories = top[1].multiselect("Fairness category (two or more = intersectional groups)", categories,
                                       default=default_category, key=f"fqr_categories:{collection.name}",
                                       help="One category, or several for intersectional groups such as "
                                            "'female × Europe'.")
if len(chosen_categories) > 1:
    st.caption("Intersectional: " + " × ".join(chosen_categories) + " — every combination is a group.")
row = st.columns(4)
target_kind = TargetKind(row[0].selectbox("Target", [k.value for k in TargetKind], key="fqr_target",
                                          format_func={"relevant": "Relevant documents' groups",
                                                       "uniform": "Uniform over groups",
                                                       "custom": "Custom shares"}.get))
mix = row[0].toggle("Mix with corpus", key="fqr_mix",  # short: a narrow column cut the longer label
                    disabled=target_kind is not TargetKind.RELEVANT,
                    help="Target = 50/50 mix of the relevant documents' groups and the corpus's (TREC Fair 2022).")
refiner_name = row[1].selectbox("Refiner", [*role_models(REFINER), "corpus keywords"], key="fqr_refiner",
                                help="An LLM with the paper's prompt, or the transparent corpus-keyword refiner "
                                     "(no model: words that mark the group's documents on this topic).")
top_k = row[2].slider("K (documents per retrieval)", 5, min(50, len(collection)), min(20, len(collection)),
                      key="fqr_k")
max_iterations = row[3].slider("Max refinements", 0, 10, 5, key="fqr_max")

if not chosen_categories:
    st.info("Pick at least one fairness category.")
    st.stop()
custom = None
if target_kind is TargetKind.CUSTOM:
    groups = sorted(set(groups_for(collection, chosen_categories)))
    edited = st.data_editor(pd.DataFrame({"group": groups, "share": [1.0 / len(groups)] * len(groups)}),
                            disabled=["group"], hide_index=True, key="fqr_custom")
    custom = dict(zip(edited["group"], edited["share"]))

bm25 = resources.retriever(settings.collection, "bm25", None, settings.device)
runs = st.session_state["fqr_runs"]
config = FairQRConfig(categories=tuple(chosen_categories), top_k=top_k, max_iterations=max_iterations,
                      target=target_kind, background_weight=0.5 if mix else 0.0,
                      custom_target=tuple(sorted(custom.items())) if custom else None)
key = (settings.collection, query, config, refiner_name, settings.device)
if st.button("Run FAIR-QR", type="primary", key="fqr_run"):
    try:
        refiner = resources.refiner(settings.collection, tuple(chosen_categories), refiner_name, settings.device)
        busy = model_busy_note(refiner_name)
        queue_note = st.empty()  # "waiting for qwen2.5-1.5b: … ahead of it" while a call queues
        with activity(f"FAIR-QR run · {query[:40]}"), show_queue(queue_note), \
                st.spinner("Refining the query…" + (f" {busy}" if busy else "")):
            runs[key] = fair_qr(collection, bm25, refiner, query,
                                FairQRConfig(**{**config.__dict__, "custom_target": custom}))
    except FairRAGError as err:
        st.error(str(err))
        st.stop()
result = runs.get(key)
if result is None:
    st.info("Press **Run FAIR-QR**. With an LLM refiner each iteration takes a few seconds on a CPU; the corpus "
            "keyword refiner is instant.")
    if note := prepared_note():  # make class: which tour steps replay from the cache
        st.caption(note)
    st.stop()

st.subheader("Iterations")
st.caption(f"Stopped because {result.stop_reason}. Kept iteration {result.chosen} (lowest Δ), re-ranked by BM25 "
           f"with the original query. Refiner: {result.refiner}.")
for it in result.iterations:
    added = (f" <mark style='background:#ffe08a'>{html.escape(it.added_keywords)}</mark>"
             if it.added_keywords else "")
    shown = html.escape(it.query[: len(it.query) - len(it.added_keywords)].rstrip()) if it.added_keywords \
        else html.escape(it.query)
    kept = " &nbsp;:material/star: **kept**" if it.index == result.chosen else ""  # no emoji font needed
    st.markdown(f"**{it.index}.** {shown}{added} &nbsp;·&nbsp; Δ = {it.delta:.4f} &nbsp;·&nbsp; most "
                f"under-represented: **{html.escape(it.under_represented)}**{kept}", unsafe_allow_html=True)
    if it.note:
        st.caption(f"Note: {it.note}")
cols = st.columns([3, 2])
with cols[0]:
    figure = charts.fairqr_distributions([it.distribution for it in result.iterations], result.target)
    data = pd.DataFrame([{"iteration": it.index, "group": g, "share": s} for it in result.iterations
                         for g, s in it.distribution.items()])
    chart_with_downloads(figure, data, "fairqr_distributions", key="fqr_dist")
with cols[1]:
    deltas = [it.delta for it in result.iterations]
    chart_with_downloads(charts.fairqr_delta(deltas, chosen=result.chosen),
                         pd.DataFrame({"iteration": range(len(deltas)), "delta": deltas}), "fairqr_delta",
                         key="fqr_delta")

st.subheader("Final ranking, coloured by group")
labels = dict(zip(collection.doc_ids, groups_for(collection, result.categories)))
relevance = collection.qrels.get(result.query_id or "", {})
final = pd.DataFrame({"rank": range(1, len(result.reranked) + 1), "doc_id": result.reranked,
                      "title": [collection.documents[collection.index_of(d)].title for d in result.reranked],
                      "group": [labels[d] for d in result.reranked],
                      "relevance": [relevance.get(d, 0) for d in result.reranked]})
colours = charts.provider_colours(sorted(set(labels.values())))
st.dataframe(final.style.map(lambda g: f"background-color: {colours[g]}; color: {charts.text_colour_on(colours[g])}",
                             subset=["group"]),
             hide_index=True)

st.subheader("Against the baselines (this query)")
try:
    scores = compare_systems(collection, bm25, result, FairQREvalConfig(cutoff=min(20, top_k), top_k=top_k))
    st.dataframe(scores.drop(columns=["refinements"]), hide_index=True)
    st.caption("nDCG@20 here is TF22-nDCG@20 (the TREC Fair 2022 discount 1/log2(max(r, 2)), not ir_measures' "
               "nDCG@20) and AWRF@20; AWRF against this run's target. MMR and FA*IR "
               "re-rank BM25's top 60. For the whole query set with paired t-tests run "
               "`python -m fairrag_core fair-qr-eval`.")
    glossary_note(scores.columns)
except FairRAGError as err:
    st.caption(str(err))
st.download_button("Trace (JSON)", result.to_json(), file_name="fair_qr_trace.json", mime="application/json",
                   key="fqr_json")
