"""The app's settings (what the sidebar chose), every session-state key, initialised in one place, and this browser's
owner key (the session's ``jobs_owner``, kept in the URL)."""

from __future__ import annotations

from dataclasses import dataclass

from fairrag_core import FairRAGError
from fairrag_core.models.catalog import DEFAULTS
from fairrag_core.rag.citations import CitationPolicy
from fairrag_core.rag.presets import DEFAULT_PRESET, PRESETS
from fairrag_core.retrieval import RetrieverKind
from fairrag_core.settings import PLAYGROUND_SAMPLING

__all__ = ["Settings", "DEFAULT_COLLECTION", "SESSION_DEFAULTS", "PAGE_WIDGETS", "init_session", "keep_page_widgets",
           "drop_stale", "RESTORE_KEYS", "controls_snapshot", "query_after_collection_change", "owner_key"]

DEFAULT_COLLECTION = "running-shoes"


@dataclass(frozen=True)
class Settings:
    """Everything the shared sidebar decides; pages read it and never the widgets themselves."""

    collection: str  # a demo collection's name, or the folder of an uploaded one
    retriever: RetrieverKind = RetrieverKind.BM25
    embedder: str = DEFAULTS["embedder"]
    k: int = PLAYGROUND_SAMPLING.k
    n_samples: int = PLAYGROUND_SAMPLING.n_samples
    seed: int = PLAYGROUND_SAMPLING.seed
    candidates: int | None = PLAYGROUND_SAMPLING.candidates  # first-stage cut-off K (None: every document)
    answers: str = DEFAULT_PRESET  # an answer preset's name (fairrag_core.rag.presets), or "custom"
    generator: str = PRESETS[DEFAULT_PRESET].generator
    prompt_style: str = PRESETS[DEFAULT_PRESET].style
    attributor: str = PRESETS[DEFAULT_PRESET].attributor
    citation: CitationPolicy = PRESETS[DEFAULT_PRESET].citation
    device: str = "auto"

    @property
    def retriever_key(self) -> tuple:
        """What identifies a built retriever (and therefore its cached scores)."""
        model = self.embedder if self.retriever is RetrieverKind.DENSE else None
        return (self.collection, self.retriever.value, model, self.device)


#: Session-state keys and their initial values. Pages only use these keys.
SESSION_DEFAULTS: dict[str, object] = {
    "collection_choice": DEFAULT_COLLECTION,
    "uploaded_collection": None,  # folder of the last valid upload (services.uploads; kept per owner key)
    "uploads_restored": False,  # whether this session has read back its owner's uploads (after a reload)
    "upload_selected_saved": None,  # whether the owner's index says the uploaded collection is selected
    "query_collection": None,  # the collection whose example queries the Playground's query was taken from
    "query": "",
    "query_seeded": False,
    "alpha": 2.0,
    "deterministic": False,
    "alpha_animation": [],  # the Playground's Animate α: the stops still to show, next first
    "presenter": False,  # projector mode: large type, high contrast, titles instead of ids
    "jobs_owner": None,  # this browser's job owner key (owner_key below; also in the URL)
    "exposure_sweeps": {},  # sweep key → (table, documents)
    "rag_runs": {},  # playground ranking key → RagRun
    "audit_saved": {},  # audit request → run id in the store
    "audit_reopened": set(),  # audit requests whose run was reopened from the store (same inputs and settings)
    "served_runs": {},  # (log or run sha256, collection, fingerprint) → the audit of the Audit page's served tab
    "served_saved": {},  # the same key → run id in the store
    "served_reopened": set(),  # keys whose run was reopened from the store (the same input and settings before)
    "served_remembered": set(),  # uploaded logs and runs already written to this browser's upload index
    "fqr_runs": {},  # FAIR-QR run key → FairQRResult
    "rr_explored": {},  # (collection, query) → AspectSet from the explorer LLM (Multi-faceted page)
    "rr_answers": {},  # (collection, query, aspects, list, generator, attributor) → RichAnswer
    "tolerance": 5.0,
}


def init_session(state) -> None:
    """Put every key of :data:`SESSION_DEFAULTS` into ``state`` (st.session_state) once."""
    for key, value in SESSION_DEFAULTS.items():
        if key not in state:
            state[key] = value.copy() if isinstance(value, (dict, set, list)) else value


#: Widgets of the pages that start background jobs: what a job was asked for (the Playground's query and α too).
#: Streamlit forgets a widget's value once a run of another page does not draw it, so coming back to the page would
#: show other controls than those of the job still running or just finished; :func:`keep_page_widgets` keeps them.
PAGE_WIDGETS = ("query", "alpha", "deterministic", "curves_scope", "curves_alphas", "curves_mode", "curves_query",
                "curves_queries", "curves_labels", "audit_queries", "audit_alphas", "audit_mode", "presenter_step")


def keep_page_widgets(state) -> None:
    """Re-commit the values of :data:`PAGE_WIDGETS` at the start of every run (the documented way to keep a
    widget's value across pages), so a page shows its job's request again after a visit elsewhere."""
    for key in PAGE_WIDGETS:
        if key in state:
            state[key] = state[key]


def drop_stale(state, key: str, options) -> None:
    """Before a kept selection widget is drawn: forget the choices that are no longer ``options`` (the collection
    changed on another page), so the widget falls back to its default instead of failing on them."""
    if key not in state:
        return
    value, allowed = state[key], set(options)
    if isinstance(value, list):
        if any(v not in allowed for v in value):
            state[key] = [v for v in value if v in allowed]
    elif value not in allowed:
        del state[key]


#: What a job's request is made of: the sidebar's widgets, the upload in use and the pages' controls. A job keeps
#: their values, so that after a reload (a new session, with every widget back at its default) the jobs panel can
#: put them back and open the job's page on its result.
RESTORE_KEYS = ("collection_choice", "uploaded_collection", "retriever", "embedder", "k", "candidates", "n_samples",
                "seed", "answers", "generator", "prompt_style", "attributor", "device", *PAGE_WIDGETS)


def controls_snapshot(state) -> dict:
    """The current values of :data:`RESTORE_KEYS` (those that are set)."""
    return {key: state[key] for key in RESTORE_KEYS if key in state}


def query_after_collection_change(query: str, previous: str | None, collection, *, load) -> str:
    """What the Playground's query becomes when the sidebar's collection changes from ``previous`` (its source) to
    ``collection``: a query taken from the old collection's example queries (found by ``load(previous)``) is
    replaced by the new collection's first example, since its relevance labels and gold answer do not exist there;
    a query the user typed is kept (the page says it is not one of this collection's queries)."""
    first = collection.queries[0].text if collection.queries else ""
    if not query.strip():
        return first
    if previous is None or collection.find_query(query) is not None:
        return query
    try:
        old = load(previous)
    except FairRAGError:  # an upload whose folder is gone: the query cannot be told apart, keep it
        return query
    return first if old.find_query(query) is not None else query


def owner_key() -> str:
    """This browser's owner key (from the session, else the URL, else a new one), written back to the URL. Only
    keys this server issued are kept (:func:`fairrag_studio.services.owners.is_issued`); the jobs panel
    (:mod:`fairrag_studio.panels.jobs`) says why the key lives in the URL."""
    import streamlit as st

    from . import owners

    owner = st.session_state.get("jobs_owner")
    if not owners.is_issued(owner):
        owner = st.query_params.get("owner")
    if not owners.is_issued(owner):
        owner = owners.new_key()
    st.session_state["jobs_owner"] = owner
    if st.query_params.get("owner") != owner:
        st.query_params["owner"] = owner
    return owner
