"""LangChain: :class:`FairDocumentCompressor`, a document compressor (``BaseDocumentCompressor``, what
``ContextualCompressionRetriever`` runs on a retriever's documents) that passes on ``k`` of the retrieved top K
sampled by the fair Plackett-Luce sampler at ``alpha`` (:class:`~.sampler.RequestSampler`); and
:class:`FairRetriever`, a retriever wrapping any retriever with it, for chains that use langchain-core alone::

    retriever = FairRetriever(base_retriever=store.as_retriever(search_kwargs={"k": 100}),
                              compressor=FairDocumentCompressor(alpha=2.0, k=5, seed=7))

A LangChain document carries no score of its own: the compressor reads it from ``metadata[score_key]`` (where
retrievers that score put it) and the id from ``Document.id``; ``metadata_keys`` names the metadata logged with
each document (e.g. its provider's key).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidParameterError
from . import missing_extra
from .sampler import RequestSampler

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun, Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, PrivateAttr
except ImportError as err:
    raise missing_extra("langchain") from err

__all__ = ["FairDocumentCompressor", "FairRetriever"]


class FairDocumentCompressor(BaseDocumentCompressor):
    """The top ``k`` of the retrieved documents, sampled at ``alpha`` with a logged per-request seed (module
    docstring); ``seed`` is the base seed (None: one is drawn and kept here), ``tracer_provider`` where the spans go
    (None: OpenTelemetry's global provider)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    alpha: float
    k: int
    seed: int | None = None
    score_key: str = "score"
    metadata_keys: tuple[str, ...] = ()
    tracer_provider: Any = None
    _sampler: RequestSampler = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._sampler = RequestSampler(self.alpha, self.k, self.seed, metadata_keys=self.metadata_keys,
                                       name=type(self).__name__,
                                       tracer_provider=self.tracer_provider)
        self.seed = self._sampler.seed

    def compress_documents(self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None,
                           *, query_id: str | None = None, request_id: str | None = None) -> Sequence[Document]:
        """The sampled documents, best first; ``query_id`` is logged when given, ``request_id`` seeds the request
        by a hash of the query and it (else the component's counter does)."""
        documents = list(documents)
        if not documents:
            return []
        if any(d.id is None for d in documents):
            raise InvalidParameterError("a retrieved Document has no id; the audit counts exposure per document: set "
                                        "Document.id (e.g. when adding the documents to the vector store)")
        scores = [d.metadata.get(self.score_key) for d in documents]
        if any(s is None for s in scores):
            raise InvalidParameterError(f"a retrieved Document has no metadata[{self.score_key!r}]; store the "
                                        "retriever's score there, or name its key with score_key=")
        draw = self._sampler.draw([d.id for d in documents], scores, query=query, query_id=query_id,
                                  request_id=request_id, metadata=[d.metadata for d in documents])
        return [documents[p] for p in draw.positions]


class FairRetriever(BaseRetriever):
    """``base_retriever``'s documents through ``compressor``: ContextualCompressionRetriever's job with
    langchain-core alone."""

    base_retriever: BaseRetriever
    compressor: FairDocumentCompressor

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        documents = self.base_retriever.invoke(query, config={"callbacks": run_manager.get_child()})
        return list(self.compressor.compress_documents(documents, query))
