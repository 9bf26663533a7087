"""LlamaIndex: :class:`FairNodePostprocessor`, a node postprocessor (``BaseNodePostprocessor``, LlamaIndex's
extension point between the retriever and the response synthesizer) that passes on ``k`` of the retriever's top K
nodes sampled by the fair Plackett-Luce sampler at ``alpha`` (:class:`~.sampler.RequestSampler`; ``metadata_keys``
names the node metadata logged with each node, e.g. its provider's key)::

    engine = RetrieverQueryEngine.from_args(index.as_retriever(similarity_top_k=100), llm=llm,
                                            node_postprocessors=[FairNodePostprocessor(alpha=2.0, k=5, seed=7)])

The nodes keep their retrieval scores; the query id is the application's to set on its request span
(``fairrag.query_id``, docs/traces.md), as a node postprocessor is not told it.
"""

from __future__ import annotations

from typing import Any

from . import missing_extra
from .sampler import RequestSampler

try:
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import NodeWithScore, QueryBundle
except ImportError as err:
    raise missing_extra("llamaindex") from err

__all__ = ["FairNodePostprocessor"]


class FairNodePostprocessor(BaseNodePostprocessor):
    """The top ``k`` of the retrieved nodes, sampled at ``alpha`` with a logged per-request seed (module docstring);
    ``seed`` is the base seed (None: one is drawn and kept here), ``tracer_provider`` where the spans go (None:
    OpenTelemetry's global provider)."""

    alpha: float = Field(description="the fairness knob α ≥ 0 (0 uniform, inf the deterministic ranking)")
    k: int = Field(description="how many nodes to pass on")
    seed: int | None = Field(default=None, description="the base seed of the per-request seeds")
    metadata_keys: tuple[str, ...] = Field(default=(), description="the node metadata keys logged with each node")
    tracer_provider: Any = Field(default=None, exclude=True)
    _sampler: RequestSampler = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self._sampler = RequestSampler(self.alpha, self.k, self.seed, metadata_keys=self.metadata_keys,
                                       name=type(self).__name__,
                                       tracer_provider=self.tracer_provider)
        self.seed = self._sampler.seed

    @classmethod
    def class_name(cls) -> str:
        return "FairNodePostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        if not nodes:
            return []
        draw = self._sampler.draw([n.node.node_id for n in nodes], [n.score for n in nodes],
                                  query=None if query_bundle is None else query_bundle.query_str,
                                  metadata=[n.node.metadata for n in nodes])
        return [nodes[p] for p in draw.positions]
