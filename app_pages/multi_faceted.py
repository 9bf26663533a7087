"""Multi-faceted (RichRAG): a broad query → its aspects → per-aspect candidates → the pool → ranked lists side by
side with their coverage → a rich answer cited per sentence. Logic lives in fairrag_core.richrag."""

import html

import pandas as pd
import streamlit as st

from fairrag_core import FairRAGError
from fairrag_core.glossary import help_text
from fairrag_core.models.catalog import EXPLORER, load_language_model, role_models
from fairrag_core.models.queue import activity
from fairrag_core.richrag.answer import write_rich_answer
from fairrag_core.richrag.aspects import AspectExplorer, AspectSet, AspectSource, user_aspects
from fairrag_core.richrag.coverage import com_rouge
from fairrag_core.richrag.flow import rich_rank
from fairrag_core.richrag.pool import PoolSettings
from fairrag_studio import charts
from fairrag_studio.panels.jobs import model_busy_note, show_queue
from fairrag_studio.panels.widgets import chart_with_downloads, explainer, glossary_note
from fairrag_studio.services import resources
from fairrag_studio.views import explain

settings = st.session_state["settings"]
collection = resources.collection(settings.collection)

st.title("Multi-faceted (RichRAG)")
st.caption("Broad questions have several sub-intents. RichRAG (Wang et al.) finds the query's aspects, retrieves "
           "the top N documents for every 'query + aspect', merges them into a pool, ranks the pool for coverage "
           "of all the aspects, and writes a long answer with one paragraph per aspect.")
explainer(explain.RICHRAG)

with_aspects = [q for q in collection.queries if q.aspects]
if not with_aspects:
    st.info(f"{collection.name} has no queries with aspects: type your own query and aspects below, or pick the "
            "**multi-faceted** collection in the sidebar (60 broad queries with aspects and sub-answers).")
examples = [q.text for q in with_aspects] or [q.text for q in collection.queries]
top = st.columns([3, 1])
query = top[0].selectbox("Query (or type your own)", examples, key=f"rr_query:{collection.name}",
                         accept_new_options=True) or ""
explorer_name = top[1].selectbox("Explorer LLM", role_models(EXPLORER), key="rr_explorer",
                                 help="The model asked to list the aspects (greedy decoding).")
if not query.strip():
    st.info("Pick or type a query.")
    st.stop()

known = collection.find_query(query)
text_key = f"rr_aspects_text:{collection.name}:{query}"
if text_key not in st.session_state:
    st.session_state[text_key] = "\n".join(a.aspect for a in known.aspects) if known is not None else ""
explored: dict = st.session_state["rr_explored"]
if st.button("Explore aspects with the LLM", key="rr_explore",
             help="Takes a few seconds with Qwen on a CPU (the first time also loads the model)."):
    try:
        busy = model_busy_note(explorer_name)
        queue_note = st.empty()  # "waiting for …: … ahead of it" while a call queues
        with activity(f"RichRAG aspects · {query[:40]}"), show_queue(queue_note), \
                st.spinner(f"Asking {explorer_name} for the aspects…" + (f" {busy}" if busy else "")):
            explorer = AspectExplorer(load_language_model(explorer_name), collection=collection,
                                      retriever=resources.retriever(settings.collection, "bm25", None,
                                                                    settings.device))
            found = explorer.explore(query)
    except FairRAGError as err:
        st.error(str(err))
        st.stop()
    explored[(collection.name, query)] = found
    st.session_state[text_key] = "\n".join(found.aspects)
found = explored.get((collection.name, query))
edited = st.text_area("Aspects (one per line; edit freely)", key=text_key, height=130)
aspects = user_aspects(edited, query=query)
if found is not None and tuple(aspects) == found.aspects:
    aspect_set = found
elif known is not None and tuple(aspects) == tuple(a.aspect for a in known.aspects):
    aspect_set = AspectSet(query, aspects, AspectSource.COLLECTION, note=f"the collection's aspects ({known.query_id})")
else:
    aspect_set = AspectSet(query, aspects, AspectSource.USER, note="aspects edited by you")
if found is not None:
    st.caption(f"Explorer ({found.model or 'no model'}): source **{found.source.value}**"
               + (f" — {found.note}" if found.note else ""))
    with st.expander("The model's raw reply"):
        st.code(found.raw or "(empty)", language=None)

row = st.columns(4)
per_aspect = row[0].slider("N (documents per aspect)", 1, 30, 10, key="rr_n")
capacity = row[1].slider("M (pool capacity)", 5, 80, 40, key="rr_m")
k = row[2].slider("k (list length)", 1, 10, 5, key="rr_k")
stage = row[3].selectbox("Trained ranker", ["dpo", "sft", "none"], key="rr_stage",
                         help="The list-wise ranker trained here (SFT, then DPO), when its weights are installed.")
try:
    result = rich_rank(collection, resources.retriever_for(settings), aspect_set, k=k,
                       settings=PoolSettings(per_aspect=per_aspect, capacity=capacity),
                       ranker_stages=() if stage == "none" else (stage,))
except FairRAGError as err:
    st.error(str(err))
    st.stop()
for note in result.notes:
    st.caption(f":material/info: {note}")

pool = result.pool
st.subheader("Per-aspect candidates")
if aspect_set.aspects:
    tabs = st.tabs([f"s{i + 1}: {a[:30]}" for i, a in enumerate(aspect_set.aspects)])
    for i, tab in enumerate(tabs):
        cands = pool.per_aspect[i]
        tab.dataframe(pd.DataFrame({
            "rank": range(1, len(cands.indices) + 1),
            "doc_id": [collection.documents[j].doc_id for j in cands.indices],
            "title": [collection.documents[j].title for j in cands.indices],
            "score": cands.scores.round(3)}), hide_index=True)
else:
    st.caption("No aspects: the query alone was retrieved.")

st.subheader(f"The pool: {len(pool)} documents")
pool_table = pd.DataFrame({
    "doc_id": [d.doc_id for d in result.documents], "title": [d.title for d in result.documents],
    "retrieved by": [", ".join(f"s{i + 1}" for i in pool.aspects_of(j)) for j in range(len(pool))],
    "best rank": pool.best_rank() if aspect_set.aspects else [0] * len(pool)})
st.dataframe(pool_table, hide_index=True, height=min(400, 40 + 35 * len(pool)))
if result.phi is not None:
    labels = [f"{d.doc_id} {d.title[:30]}" for d in result.documents]
    chart_with_downloads(charts.coverage_heatmap(result.phi, labels, list(result.gold_aspects)),
                         pd.DataFrame(result.phi, index=[d.doc_id for d in result.documents],
                                      columns=list(result.gold_aspects)).reset_index(names="doc_id"),
                         "richrag_coverage", key="rr_heatmap")

st.subheader(f"Ranked lists (k = {result.k})")
names = list(result.lists)
columns = st.columns(len(names))
for column, name in zip(columns, names):
    ranking = result.lists[name]
    column.markdown(f"**{name}**")
    if name in result.ncom:
        column.metric(f"NCOM@{result.k}", f"{result.ncom[name]:.3f}", help=help_text("NCOM"))
    column.dataframe(pd.DataFrame({"doc_id": [result.documents[j].doc_id for j in ranking],
                                   "title": [result.documents[j].title for j in ranking]}),
                     hide_index=True, key=f"rr_list_{name}")
    if result.phi is not None:
        column.plotly_chart(charts.coverage_heatmap(result.phi[ranking], [result.documents[j].doc_id for j in ranking],
                                                    [f"a{i + 1}" for i in range(len(result.gold_aspects))],
                                                    title=name, height=90 + 30 * len(ranking), compact=True),
                            key=f"rr_list_heat_{name}", config={"displaylogo": False})
if result.ncom:
    chart_with_downloads(charts.ncom_bars(result.ncom, k=result.k),
                         pd.DataFrame({"list": list(result.ncom), "ncom": list(result.ncom.values())}),
                         "richrag_ncom", key="rr_ncom")
    glossary_note(["NCOM", "Com-ROUGE"])

st.subheader("Rich answer")
answer_row = st.columns([2, 3])
chosen = answer_row[0].selectbox("From the list", names, index=len(names) - 1, key="rr_answer_list")
answer_row[1].caption(f"Generator **{settings.generator}**, NLI **{settings.attributor}** (sidebar). On a 2-core CPU "
                      "a long answer takes from seconds (SmolLM2) to a minute or two (Qwen), plus the NLI checks.")
answers: dict = st.session_state["rr_answers"]
answer_key = (collection.name, query, aspect_set.aspects, tuple(result.lists[chosen]), settings.generator,
              settings.attributor)
if st.button("Write the rich answer", type="primary", key="rr_write"):
    busy = model_busy_note(settings.generator)
    bar = st.progress(0.0, text=f"Starting… {busy}" if busy else "Starting…")
    try:
        with activity(f"RichRAG answer · {query[:40]}"), show_queue(st.empty()):
            answers[answer_key] = write_rich_answer(
                resources.generator(settings.generator, settings.device), query, aspect_set.aspects,
                result.ranked_documents(chosen), attributor=resources.attributor(settings.attributor, settings.device),
                progress=lambda fraction, message: bar.progress(min(max(fraction, 0.0), 1.0), text=message))
    except FairRAGError as err:
        st.error(str(err))
    bar.empty()
answer = answers.get(answer_key)
if answer is None:
    st.info("Press **Write the rich answer** to generate a multi-paragraph answer from the chosen list and check "
            "every sentence against every document with the NLI model.")
    st.stop()

ranked = result.ranked_documents(chosen)
one_each = len(answer.paragraphs) == len(aspect_set.aspects)  # paragraphs match aspects: label them
for p in range(len(answer.paragraphs)):
    parts = []
    for sentence in (s for s in answer.sentences if s.paragraph == p):
        chips = "".join(f' <span title="{html.escape(ranked[i].title)}" style="background:#009E73;color:white;'
                        f'border-radius:4px;padding:0 4px;font-size:0.8em">✓ [{i + 1}]</span>' for i in sentence.cited)
        parts.append(html.escape(sentence.text) + chips)
    heading = f"<b>s{p + 1}. {html.escape(aspect_set.aspects[p])}</b><br>" if one_each else ""
    st.html(f"<p>{heading}{' '.join(parts)}</p>")
cols = st.columns(3)
cols[0].metric("Sentences cited", f"{answer.cited_share:.0%}")
cols[1].metric("Seconds", f"{answer.seconds:.1f}")
if answer.finish_reason == "length":
    st.caption("The answer hit its length limit and may end mid-sentence.")
if result.sub_answers:  # the yardstick is the collection's sub-answers, whatever aspects drove the answer
    scored = com_rouge(answer.text, list(result.sub_answers))
    cols[2].metric("Com-ROUGE-L", f"{scored.rougeL:.3f}", help=help_text("Com-ROUGE", "Here: ROUGE-L."))
    chart_with_downloads(charts.aspect_coverage_bars(result.gold_aspects, scored.per_aspect, scored.weights),
                         pd.DataFrame(scored.per_aspect, columns=["rouge1", "rouge2", "rougeL"],
                                      index=list(result.gold_aspects)).reset_index(names="aspect"),
                         "richrag_com_rouge", key="rr_com_rouge")
else:
    cols[2].caption("Com-ROUGE needs the collection's sub-answers for this query.")
with st.expander("Documents of the list"):
    for i, doc in enumerate(ranked, 1):
        st.markdown(f"**[{i}] {doc.title}** ({doc.doc_id}) — {doc.text}")
