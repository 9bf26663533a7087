"""The data model: documents, queries with aspects, relevance judgements, and the collection holding them.

Conventions (written down once, used everywhere):

* A document is addressed by its ``doc_id`` in files and by its **0-based position** in
  ``Collection.documents`` inside arrays (scores, rankings, exposure vectors).
* ``provider`` is who receives credit/exposure (a brand, an outlet, a person). When a file omits it,
  the document is its own provider (``provider = doc_id``).
* ``groups`` maps a fairness *category* to the document's *group* in it, e.g.
  ``{"region": "Africa", "gender": "female"}``. ``"Unknown"`` is an ordinary group; a *missing* group is an
  error only where a group metric needs it (:meth:`Collection.group_of`).
* Relevance judgements come from TREC qrels (``qid 0 doc_id rel``); unjudged documents count as ``rel = 0``.
  A document is *useful* for a query when its grade reaches a threshold (``min_rel``); these boolean
  usefulness **labels** are what EE-R and the oracle need (utility labels of Algorithm 1 are the other source).
* Aspect judgements (RichRAG) say which documents cover which aspect of a query:
  ``aspect_qrels[query_id][aspect_index] = (doc_id, ...)``, ``aspect_index`` 0-based into ``Query.aspects``
  (file format: :func:`~fairrag_core.data.loaders.load_aspect_qrels`); :meth:`Collection.aspect_coverage`
  returns a query's aspects with their covering documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

import numpy as np

from ..errors import InvalidParameterError, MissingGroupLabelError

__all__ = ["Aspect", "AspectCoverage", "Document", "Query", "Collection", "UNKNOWN_GROUP"]

UNKNOWN_GROUP = "Unknown"


@dataclass(frozen=True)
class Document:
    """One retrievable item. ``provider`` is who gets exposure; ``groups`` maps category → label."""

    doc_id: str
    text: str
    title: str = ""
    provider: str = ""
    groups: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.provider:
            object.__setattr__(self, "provider", self.doc_id)
        object.__setattr__(self, "groups", MappingProxyType(dict(self.groups)))

    @classmethod
    def checked(cls, doc_id: str, text: str, title: str, provider: str, groups: MappingProxyType) -> Document:
        """The document a loader already checked and filled in (``provider`` given, ``groups`` a read-only
        mapping, which documents may share): what ``Document(...)`` makes, without ``__post_init__``'s copies, for
        the parsed-corpus cache (:mod:`fairrag_core.data.collection_cache`)."""
        doc = object.__new__(cls)
        doc.__dict__.update(doc_id=doc_id, text=text, title=title, provider=provider, groups=groups)
        return doc

    @property
    def full_text(self) -> str:
        """Title and text joined: what retrievers index and prompts show."""
        return f"{self.title}. {self.text}" if self.title else self.text


@dataclass(frozen=True)
class Aspect:
    """A sub-intent of a multi-faceted query (RichRAG) and its sub-answer."""

    aspect: str
    answer: str


@dataclass(frozen=True)
class AspectCoverage:
    """One aspect of a query with the documents judged to cover it (``index`` is 0-based in ``Query.aspects``)."""

    index: int
    aspect: str
    answer: str
    doc_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Query:
    """A user request with optional gold answers and optional aspects.

    ``answer`` is the descriptive gold answer (ROUGE-L); ``short_answers`` are the acceptable short answers in the
    form the generator is asked for (the entity, number or name; the first is the canonical one), scored by
    :func:`fairrag_core.metrics.utility.short_answer_match`.
    """

    query_id: str
    text: str
    answer: str | None = None
    aspects: tuple[Aspect, ...] = ()
    short_answers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Collection:
    """A corpus with its queries and relevance labels (``qrels[query_id][doc_id] = rel``).

    ``source`` says where it was loaded from, as a command line names it: a demo collection's name, or the absolute
    path of its folder ("" when built in memory). Reproduce commands print it (see
    :func:`fairrag_core.record.command_path`), so that they work from any directory. ``sha256`` identifies its
    content (:func:`fairrag_core.data.identity.collection_sha256`: its files' bytes, whatever their folder; "" when
    built in memory).
    """

    name: str
    documents: tuple[Document, ...]
    queries: tuple[Query, ...] = ()
    qrels: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    aspect_qrels: Mapping[str, Mapping[int, tuple[str, ...]]] = field(default_factory=dict)
    source: str = field(default="", compare=False)
    sha256: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.documents:
            raise InvalidParameterError(f"collection {self.name!r} has no documents; add at least one")
        query_ids = [q.query_id for q in self.queries]
        for ids, what, item in ((self.doc_ids, "doc_id", "document"), (query_ids, "query_id", "query")):
            if len(set(ids)) == len(ids):  # the usual case, at C speed; else find the first repeat
                continue
            seen: set[str] = set()
            for i in ids:
                if i in seen:
                    raise InvalidParameterError(f"duplicate {what} {i!r}; every {item} needs a unique id")
                seen.add(i)
        for qid, judged in self.qrels.items():
            self._check_doc_ids(judged, f"qrels for query {qid!r} name")
        for qid, per_aspect in self.aspect_qrels.items():
            if qid not in self._queries_by_id:
                raise InvalidParameterError(f"aspect judgements name unknown query {qid!r}; add the query or drop them")
            n_aspects = len(self._queries_by_id[qid].aspects)
            for index, doc_ids in per_aspect.items():
                if not 0 <= index < n_aspects:
                    raise InvalidParameterError(f"aspect judgements of query {qid!r} name aspect {index}, but it has "
                                                f"{n_aspects} aspect(s); aspect indices start at 0")
                self._check_doc_ids(doc_ids, f"aspect judgements of query {qid!r} name")

    def _check_doc_ids(self, doc_ids: Iterable[str], who: str) -> None:
        unknown = [d for d in doc_ids if d not in self._index]
        if unknown:
            raise InvalidParameterError(f"{who} unknown doc ids {unknown[:5]}; fix the ids or add the documents")

    # -- lookups -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.documents)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {doc.doc_id: i for i, doc in enumerate(self.documents)}

    @cached_property
    def _queries_by_id(self) -> dict[str, Query]:
        return {q.query_id: q for q in self.queries}

    @property
    def doc_ids(self) -> list[str]:
        return [d.doc_id for d in self.documents]

    @property
    def texts(self) -> list[str]:
        """Indexed text of each document (title + text), in collection order."""
        return [d.full_text for d in self.documents]

    @cached_property
    def providers(self) -> np.ndarray:
        """Provider of each document, as an object array aligned with ``documents``."""
        return np.array([d.provider for d in self.documents], dtype=object)

    def index_of(self, doc_id: str) -> int:
        try:
            return self._index[doc_id]
        except KeyError:
            raise InvalidParameterError(f"unknown doc_id {doc_id!r} in collection {self.name!r}") from None

    def query(self, query_id: str) -> Query:
        try:
            return self._queries_by_id[query_id]
        except KeyError:
            known = ", ".join(list(self._queries_by_id)[:5])
            raise InvalidParameterError(
                f"unknown query_id {query_id!r} in collection {self.name!r}; known ids start with: {known}"
            ) from None

    def find_query(self, text: str) -> Query | None:
        """The collection's query whose text equals ``text`` (case- and space-insensitive), if any."""
        wanted = " ".join(text.lower().split())
        return next((q for q in self.queries if " ".join(q.text.lower().split()) == wanted), None)

    def relevance(self, query_id: str) -> np.ndarray:
        """Graded relevance of every document for ``query_id`` (unjudged → 0), aligned with ``documents``."""
        rel = np.zeros(len(self.documents), dtype=np.int64)
        for doc_id, grade in self.qrels.get(query_id, {}).items():
            rel[self._index[doc_id]] = grade
        return rel

    def useful(self, query_id: str, *, min_rel: int = 1) -> np.ndarray:
        """Boolean usefulness labels for ``query_id``: ``relevance >= min_rel``."""
        return self.relevance(query_id) >= min_rel

    def aspect_coverage(self, query_id: str) -> tuple[AspectCoverage, ...]:
        """The aspects of ``query_id`` with the documents judged to cover each (none judged → empty ``doc_ids``).

        >>> q = Query("q", "?", aspects=(Aspect("a", "x"), Aspect("b", "y")))
        >>> c = Collection("c", (Document("d1", "x"), Document("d2", "y")), (q,), aspect_qrels={"q": {1: ("d2",)}})
        >>> [(a.aspect, a.doc_ids) for a in c.aspect_coverage("q")]
        [('a', ()), ('b', ('d2',))]
        """
        query = self.query(query_id)
        judged = self.aspect_qrels.get(query_id, {})
        return tuple(AspectCoverage(i, a.aspect, a.answer, tuple(judged.get(i, ())))
                     for i, a in enumerate(query.aspects))

    def aspect_labels(self, query_id: str, indices: Iterable[int] | None = None) -> np.ndarray:
        """Booleans ``(n_documents, n_aspects)``: document j covers aspect i (rows: ``indices``, default all)."""
        rows = list(range(len(self.documents))) if indices is None else [int(i) for i in indices]
        coverage = self.aspect_coverage(query_id)
        out = np.zeros((len(rows), len(coverage)), dtype=bool)
        position = {doc_index: r for r, doc_index in enumerate(rows)}
        for a in coverage:
            for doc_id in a.doc_ids:
                r = position.get(self._index[doc_id])
                if r is not None:
                    out[r, a.index] = True
        return out

    def categories(self) -> list[str]:
        """Fairness categories that appear on at least one document, sorted."""
        return sorted({c for d in self.documents for c in d.groups})

    def group_of(self, category: str, *, fill: str | None = None) -> np.ndarray:
        """The group of every document in fairness ``category`` (an object array aligned with ``documents``).

        Raises:
            MissingGroupLabelError: some documents have no group in ``category`` and ``fill`` is None. Pass
                ``fill="Unknown"`` to put them in a group of their own, or add the group in the corpus file.
        """
        found = [d.groups.get(category) for d in self.documents]
        missing = [d.doc_id for d, group in zip(self.documents, found) if group is None]
        if missing and fill is None:
            if len(missing) == len(found):
                raise MissingGroupLabelError(
                    f"no document in {self.name!r} has a group for category {category!r}; "
                    f"known categories: {self.categories() or 'none'}"
                )
            raise MissingGroupLabelError(
                f"{len(missing)} document(s) in {self.name!r} have no {category!r} group "
                f"(first: {missing[:5]}); add it in the corpus file or pass fill={UNKNOWN_GROUP!r}"
            )
        return np.array([fill if group is None else group for group in found], dtype=object)

    def owners(self, by: str = "provider") -> np.ndarray:
        """Who each document belongs to when exposure is grouped ``by`` ``"provider"`` or a fairness category
        (documents without a group in that category are ``Unknown``), aligned with ``documents``.

        Raises:
            InvalidParameterError: ``by`` is neither ``"provider"`` nor one of :meth:`categories`.
        """
        if by == "provider":
            return self.providers
        if by in self.categories():
            return self.group_of(by, fill=UNKNOWN_GROUP)
        raise InvalidParameterError(f"unknown grouping {by!r}; use 'provider' or one of the collection's categories "
                                    f"({', '.join(self.categories()) or 'none'})")

    def subset(self, indices: Iterable[int]) -> Collection:
        """A collection over some of the documents (e.g. first-stage candidates), keeping their qrels."""
        docs = tuple(self.documents[int(i)] for i in indices)
        keep = {d.doc_id for d in docs}
        qrels = {q: {d: r for d, r in j.items() if d in keep} for q, j in self.qrels.items()}
        aspect_qrels = {q: {i: tuple(d for d in ds if d in keep) for i, ds in per.items()}
                        for q, per in self.aspect_qrels.items()}
        return Collection(self.name, docs, self.queries, qrels, aspect_qrels, source=self.source, sha256=self.sha256)
