"""Haystack: :class:`FairSampler`, a pipeline component (``@component``, Haystack's extension point) between a
retriever and the prompt builder that passes on ``k`` of the retrieved top K documents sampled by the fair
Plackett-Luce sampler at ``alpha`` (:class:`~.sampler.RequestSampler`)::

    pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=100))
    pipe.add_component("fair", FairSampler(alpha=2.0, k=5, seed=7))
    pipe.connect("retriever.documents", "fair.documents")

Haystack documents carry their id and the retriever's score (``Document.id``, ``Document.score``);
``metadata_keys`` names the ``Document.meta`` keys logged with each document (e.g. its provider's key).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import missing_extra
from .sampler import RequestSampler

try:
    from haystack import Document, component, default_to_dict
except ImportError as err:
    raise missing_extra("haystack") from err

__all__ = ["FairSampler"]


@component
class FairSampler:
    """The top ``k`` of the retrieved documents, sampled at ``alpha`` with a logged per-request seed (module
    docstring); ``seed`` is the base seed (None: one is drawn and kept as :attr:`seed`), ``tracer_provider`` where
    the spans go (None: OpenTelemetry's global provider)."""

    def __init__(self, alpha: float, k: int, seed: int | None = None, metadata_keys: Sequence[str] = (),
                 tracer_provider: Any = None) -> None:
        self._sampler = RequestSampler(alpha, k, seed, metadata_keys=metadata_keys, name=type(self).__name__,
                                       tracer_provider=tracer_provider)
        self.alpha, self.k, self.seed = self._sampler.alpha, self._sampler.k, self._sampler.seed
        self.metadata_keys = self._sampler.metadata_keys

    def to_dict(self) -> dict[str, Any]:
        """Serialised with its base seed, so a saved pipeline samples as this one does."""
        return default_to_dict(self, alpha=self.alpha, k=self.k, seed=self.seed,
                               metadata_keys=list(self.metadata_keys))

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], query: str | None = None, query_id: str | None = None,
            request_id: str | None = None) -> dict[str, list[Document]]:
        """The sampled documents, best first; ``query_id`` is logged when given, ``request_id`` seeds the request
        by a hash of the query and it (else the component's counter does)."""
        if not documents:
            return {"documents": []}
        draw = self._sampler.draw([d.id for d in documents], [d.score for d in documents], query=query,
                                  query_id=query_id, request_id=request_id, metadata=[d.meta for d in documents])
        return {"documents": [documents[p] for p in draw.positions]}
