"""The sidebar every page shares: this browser's jobs, collection (demo, server data folder or upload), retriever, k,
N, seed, models panel."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fairrag_core import DEMO_COLLECTIONS, FairRAGError
from fairrag_core.models.catalog import ATTRIBUTORS, DEFAULTS, EMBEDDERS, GENERATORS, display_name
from fairrag_core.rag.generation import PROMPT_STYLES
from fairrag_core.rag.prepared import prepared_class
from fairrag_core.rag.presets import DEFAULT_PRESET, PRESETS, preset_costs
from fairrag_core.retrieval import RetrieverKind
from fairrag_core.settings import PLAYGROUND_SAMPLING

from ..services import resources, uploads
from ..services.data_dir import DATA_DIR_ENV, checked_data_collection, data_dir
from ..services.identity import collection_identity
from ..services.state import DEFAULT_COLLECTION, Settings, drop_stale, owner_key
from .jobs import render_jobs_panel
from .widgets import markdown_text

__all__ = ["render_sidebar"]

UPLOAD = "Upload your own…"
UPLOADED = " (your upload)"  # the collection box's entry for this browser's upload ends so
ON_SERVER = " (data folder)"  # ... and a collection folder of $FAIRRAG_DATA_DIR


def _upload_panel() -> None:
    """Three uploaders validated by the core loaders (the corpus may be the collection's folder as a .zip); a bad
    file shows the loader's message and changes nothing. The name field starts on the name the upload suggests (the
    zip's folder, else the corpus file's stem) and asks for one when that is the generic ``corpus``
    (:func:`~fairrag_studio.services.uploads.suggested_name`). A loaded upload is kept for this browser's owner key,
    so a reload finds it again (:mod:`fairrag_studio.services.uploads`)."""
    with st.sidebar.expander("Upload a collection", expanded=st.session_state["collection_choice"] == UPLOAD):
        st.caption("corpus.jsonl or corpus.csv (doc_id, text, title, provider, groups), optional queries.jsonl "
                   "(query_id, text, answer) and qrels.txt (TREC: query_id 0 doc_id rel); or the collection's "
                   "folder zipped, as the corpus.")
        corpus = st.file_uploader("Corpus (or the folder as a .zip)", type=["jsonl", "csv", "zip"],
                                  key="upload_corpus")
        queries = st.file_uploader("Queries (optional)", type=["jsonl"], key="upload_queries")
        qrels = st.file_uploader("Qrels (optional)", type=["txt", "qrels"], key="upload_qrels")
        zipped = corpus is not None and corpus.name.lower().endswith(".zip")
        if corpus is not None and st.session_state.get("upload_named_for") != corpus.file_id:
            st.session_state["upload_named_for"] = corpus.file_id  # a new file: its own name in the field, once
            try:
                suggested = (uploads.unzip_collection(corpus.name, corpus.getvalue())[0] if zipped
                             else uploads.suggested_name(corpus.name))
            except FairRAGError:
                suggested = ""  # Load says what is wrong with the zip
            st.session_state["upload_name"] = suggested
        name = st.text_input("Name", key="upload_name", max_chars=60,
                             placeholder="name this collection" if corpus else "the corpus file's name",
                             help="How pages, stored runs and reports name this collection (with its sha256).")
        if corpus is not None and not name.strip():
            st.caption(f"{markdown_text(corpus.name)} does not say which collection this is: name it above, or it "
                       "is called after its content (corpus-<sha256>).")
        if st.button("Load this collection", disabled=corpus is None, key="upload_load"):
            try:
                if zipped:
                    parts = uploads.unzip_collection(corpus.name, corpus.getvalue())[1]
                else:
                    parts = {"corpus": (corpus.name, corpus.getvalue())}
                for part, given in (("queries", queries), ("qrels", qrels)):  # uploaded apart: replaces the zip's
                    if given is not None:
                        parts[part] = (given.name, given.getvalue())
                folder = resources.save_upload(parts["corpus"], parts.get("queries"), parts.get("qrels"), name=name)
                loaded = resources.collection(str(folder))
            except FairRAGError as err:
                st.error(f"That upload was not loaded: {err}")
                return
            st.session_state["uploaded_collection"] = str(folder)
            uploads.remember_collection(resources.UPLOAD_ROOT, owner_key(), folder, selected=True)
            st.session_state["upload_selected_saved"] = True
            st.success(f"Loaded {len(loaded)} documents and {len(loaded.queries)} queries as "
                       f"{markdown_text(collection_identity(str(folder)).text)}.")


def upload_option(folder: str) -> str:
    """The collection box's entry for an uploaded collection: ``my-news (your upload)``."""
    return f"{collection_identity(folder).name}{UPLOADED}"


def restore_uploads(state) -> None:
    """Once per session, before the collection box is drawn: put back this browser's uploaded collection (kept
    under its owner key, :mod:`fairrag_studio.services.uploads`), selected again if it was selected before the
    reload."""
    if state.get("uploads_restored"):
        return
    state["uploads_restored"] = True
    if state.get("uploaded_collection") is not None:
        return
    kept = uploads.kept_uploads(resources.UPLOAD_ROOT, owner_key())
    if kept.collection is None:
        return
    state["uploaded_collection"] = kept.collection
    if kept.collection_selected and state.get("collection_choice") in (None, DEFAULT_COLLECTION):
        state["collection_choice"] = upload_option(kept.collection)
    state["upload_selected_saved"] = kept.collection_selected


def server_options() -> dict[str, str]:
    """The collection box's entries for the collection folders of ``$FAIRRAG_DATA_DIR``
    (:func:`fairrag_studio.services.data_dir.data_collections`): ``debian (data folder)`` → its path relative to
    the data folder (the folder's own name when the data folder itself is one). A data folder setting that names
    no folder shows its error and offers none."""
    try:
        listed = resources.server_collections()
    except FairRAGError as err:
        st.sidebar.error(str(err))
        return {}
    folder = data_dir()
    return {f"{folder.name if rel == '.' else rel}{ON_SERVER}": rel for rel in listed}


def _server_source(relative: str) -> str:
    """The folder of the data folder's collection ``relative``, checked again as it is opened (path safety and the
    memory budget, :func:`~fairrag_studio.services.data_dir.checked_data_collection`)."""
    folder = data_dir()
    if folder is None:
        raise FairRAGError(f"${DATA_DIR_ENV} is no longer set; pick another collection")
    return str(checked_data_collection(relative, folder))


def _keep_selection(choice: str) -> None:
    """Write down (for a reload) whether the uploaded collection is the one selected, when that changes."""
    uploaded = st.session_state["uploaded_collection"]
    selected = uploaded is not None and choice in (upload_option(uploaded), UPLOAD)
    saved = st.session_state["upload_selected_saved"]
    if st.session_state["uploaded_collection"] is not None and saved != selected:
        uploads.select_collection(resources.UPLOAD_ROOT, owner_key(), selected)
        st.session_state["upload_selected_saved"] = selected


CUSTOM = "custom"


def cost_text(cost: dict | None) -> str:
    """What a preset costs, as measured (``assets/answer_presets.json``), in one sentence."""
    if not cost:
        return "Its cost has not been measured on this machine yet."
    return (f"Measured on {cost['machine']}: about {cost['seconds_per_answer']:.0f} s per answer and "
            f"{cost['seconds_per_document']:.1f} s per citation check; first answer with citations after "
            f"{cost['first_answer_seconds']:.0f} s at the Playground's defaults.")


def render_sidebar() -> Settings:
    """Draw the shared sidebar (this browser's jobs first, when it has any) and return what it selects."""
    render_jobs_panel()
    restore_uploads(st.session_state)
    side = st.sidebar
    side.toggle("Presenter mode", key="presenter",
                help="For a projector: large type, high-contrast answers, document titles instead of ids.")
    side.header("Collection")
    uploaded = st.session_state["uploaded_collection"]
    on_server = server_options()
    options = [*DEMO_COLLECTIONS, *on_server, *([upload_option(uploaded)] if uploaded else []), UPLOAD]
    drop_stale(st.session_state, "collection_choice", options)
    choice = side.selectbox("Collection", options, key="collection_choice",
                            help="Demo collections ship with the app (fictional, CC BY 4.0; see assets/README.md). "
                                 f"Collections in the server's data folder (${DATA_DIR_ENV}) go by their folder's "
                                 "name. Your upload keeps its name and stays with this page's address (its owner "
                                 "key) across reloads.")
    _keep_selection(choice)
    try:
        if choice in DEMO_COLLECTIONS:
            source = choice
        elif choice in on_server:
            source = _server_source(on_server[choice])
        else:  # this browser's upload (and, for "Upload your own…", the upload panel)
            if choice == UPLOAD:
                _upload_panel()
            source = st.session_state["uploaded_collection"]
            if source is None:
                side.info("No upload loaded yet: showing running-shoes.")
                source = "running-shoes"
        coll = resources.collection(source)
    except FairRAGError as err:
        side.error(str(err))
        source, coll = "running-shoes", resources.collection("running-shoes")
    if source not in DEMO_COLLECTIONS:
        side.caption(f"**{markdown_text(collection_identity(source).text)}**")
    facts = resources.collection_facts(source)
    side.caption(f"{facts.documents} documents · {facts.queries} queries · "
                 f"{facts.providers} providers · categories: {', '.join(facts.categories) or 'none'}")

    side.header("Retrieval")
    kind = RetrieverKind(side.radio("Retriever", [k.value for k in RetrieverKind], horizontal=True, key="retriever",
                                    format_func=lambda v: {"bm25": "BM25", "dense": "Dense"}[v]))
    embedder = DEFAULTS["embedder"]
    if kind is RetrieverKind.DENSE:
        embedder = side.selectbox("Embedder", list(EMBEDDERS), key="embedder",
                                  help=f"{DEFAULTS['embedder']} ships offline; others need the Hugging Face hub or a "
                                       "local copy.")
    max_k = max(1, min(20, len(coll)))
    if max_k > 1:
        k = side.slider("k (documents given to the generator)", 1, max_k, min(PLAYGROUND_SAMPLING.k, max_k), key="k")
    else:  # a slider from 1 to 1 is an error in Streamlit
        k = 1
        side.caption("k = 1: the collection holds one document.")
    candidates = side.select_slider("Candidates K (first-stage cut-off)", options=[10, 20, 50, 100, "all"],
                                    value=PLAYGROUND_SAMPLING.candidates, key="candidates",
                                    help="The stochastic ranker samples among the K best-scored documents.")
    n_cand = len(coll) if candidates == "all" else min(int(candidates), len(coll))
    if k > n_cand:
        side.warning(f"k={k} is larger than the {n_cand} candidates; using k={n_cand}.")
        k = n_cand
    n_samples = side.slider("N (sampled rankings)", 5, 200, PLAYGROUND_SAMPLING.n_samples, step=5, key="n_samples",
                            help="How many rankings the stochastic retriever draws. Generation runs once per "
                                 "distinct ranking, so larger N costs more only when rankings differ.")
    seed = int(side.number_input("Seed", min_value=0, max_value=2**31 - 1, value=PLAYGROUND_SAMPLING.seed, step=1,
                                 key="seed",
                                 help="Same seed, same settings → the same rankings and answers."))

    side.header("Answers")
    costs = preset_costs()
    prepared = prepared_class()  # `make class` warmed answers with a preset: start on that one
    choices = [*PRESETS, CUSTOM]
    answers = side.radio("Answer preset", choices, key="answers", horizontal=True,
                         index=choices.index(prepared.preset if prepared is not None else DEFAULT_PRESET),
                         format_func=lambda name: PRESETS[name].title if name in PRESETS else "Custom",
                         help="Fast and Quality were measured together (docs/answers.md); Custom picks each part.")
    if answers in PRESETS:
        preset = PRESETS[answers]
        generator, style, attributor, citation = preset.generator, preset.style, preset.attributor, preset.citation
        side.caption(f"{preset.summary}. {cost_text(costs.get(answers))}")
        if prepared is not None and prepared.preset == answers:
            side.caption(f"Prepared with `make class` on {prepared.when}: {prepared.collection} "
                         f"({', '.join(prepared.query_ids[:3])}{'…' if len(prepared.query_ids) > 3 else ''}) "
                         "replays from the cache.")
    else:
        generator = side.selectbox("Generator", list(GENERATORS), key="generator", format_func=display_name)
        style = side.selectbox("Prompt", list(PROMPT_STYLES), key="prompt_style",
                               help="short: a few words (the original); grounded: one or two sentences naming "
                                    "what the answer is about; cited: the same with [1], [2] citations")
        attributor = side.selectbox("NLI attributor", list(ATTRIBUTORS), key="attributor", format_func=display_name)
        citation = PRESETS[DEFAULT_PRESET].citation
    device = side.radio("Device", ["auto", "cpu", "cuda"], horizontal=True, key="device")
    settings = Settings(collection=source, retriever=kind, embedder=embedder, k=int(k), n_samples=int(n_samples),
                        seed=seed, candidates=None if candidates == "all" else int(candidates), answers=answers,
                        generator=generator, prompt_style=style, attributor=attributor, citation=citation,
                        device=device)
    rows = resources.models_panel_rows(settings)
    panel = pd.DataFrame([{"role": r.role, "model": r.model, "backend": r.backend, "device": r.device,
                           "offline": "yes" if r.offline else "no (needs hub or local copy)",
                           "in memory": "yes" if r.loaded else "loads on first use"} for r in rows])
    side.expander("Which model does what", expanded=False).dataframe(panel, hide_index=True)
    return settings
