"""The framework-free part of every component: one request's seed, its sampled ranking, and the span that logs both.

Per request, :class:`RequestSampler` derives a seed from its base seed and either a counter (the n-th request this
component served) or, when the caller names the request, a hash of the query and the request id (the same request
always gets the same seed, whatever the order requests arrive in): ``derive_seed(base, path)``, numpy's
``SeedSequence``, so the streams are independent. It then draws one ranking of ``min(k, K)`` of the K candidates
with :func:`~fairrag_core.ranking.sampling.sample_rankings` (N = 1, that seed) and logs, on a span of its own
started under the active one (an OpenInference RERANKER span, :data:`~fairrag_core.data.traces.SAMPLER_SPAN`),
the candidates with their scores, the chosen ones, α, the seed and k. :func:`replay` draws the same ranking again
from what the span logged, so every served ranking can be checked and the what-if can replay other α on the same
candidates. Without ``opentelemetry-api`` installed, or with no tracer provider set, nothing is logged and nothing
else changes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..checks import check_alpha, check_k
from ..data.traces import SAMPLER_SPAN
from ..errors import InvalidParameterError
from ..ranking.sampling import sample_rankings
from ..seeds import check_seed, derive_seed, new_seed

__all__ = ["RequestSampler", "Draw", "replay"]

_TRACER_NAME = "fairrag_core.integrations"


class Draw(NamedTuple):
    """One request's sampled ranking: ``positions`` into the candidates, best first, and the seed that drew it."""

    positions: list[int]
    seed: int


def replay(scores: Sequence[float], *, alpha: float, k: int, seed: int) -> list[int]:
    """The positions (into ``scores``) of the ranking the component served with this request ``seed``: one draw of
    :func:`~fairrag_core.ranking.sampling.sample_rankings` at ``α`` of ``min(k, len(scores))`` documents.

    >>> replay([3.0, 1.0, 2.0], alpha=float("inf"), k=2, seed=7)
    [0, 2]
    """
    scores = np.asarray(scores, dtype=np.float64)
    return sample_rankings(scores, alpha=alpha, n_samples=1, k=min(k, scores.size), seed=seed)[0].tolist()


def _tracer(tracer_provider: Any) -> Any:
    """A tracer from ``tracer_provider`` (None: the global one), or None without ``opentelemetry-api``."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer(_TRACER_NAME, tracer_provider=tracer_provider)


class RequestSampler:
    """Samples each request's top ``k`` at ``alpha`` and logs it (module docstring).

    Args:
        alpha: the fairness knob α ≥ 0 (0 uniform, ``inf`` the deterministic ranking).
        k: how many documents to pass on (fewer when fewer candidates come).
        seed: the base seed; None draws one, kept as :attr:`seed` (log it with the deployment's configuration).
        metadata_keys: the keys of each candidate's metadata to log with it (its ``metadata``), e.g.
            the one naming its provider, which the audit then reads with ``--provider-from metadata.KEY``.
        name: the span's name (the component's class).
        tracer_provider: where spans go; None: OpenTelemetry's global provider.
    """

    def __init__(self, alpha: float, k: int, seed: int | None = None, *, metadata_keys: Sequence[str] = (),
                 name: str = "FairSampler", tracer_provider: Any = None) -> None:
        self.alpha, self.k = check_alpha(alpha), check_k(k)
        self.metadata_keys = tuple(metadata_keys)
        self.seed = new_seed() if seed is None else check_seed(seed)
        self.name = name
        self._tracer = _tracer(tracer_provider)
        self._counter = itertools.count()  # next() is atomic under the GIL: concurrent requests get distinct seeds

    def request_seed(self, query: str | None = None, request_id: str | None = None) -> int:
        """The seed of one request: from the counter, or from the query and ``request_id`` when one is given."""
        if request_id is None:
            return derive_seed(self.seed, next(self._counter))
        digest = hashlib.sha256(f"{query or ''}\0{request_id}".encode()).digest()
        return derive_seed(self.seed, *(int.from_bytes(digest[i:i + 4], "big") for i in range(0, 16, 4)))

    def draw(self, ids: Sequence[str], scores: Sequence[float | None], *, query: str | None = None,
             query_id: str | None = None, request_id: str | None = None,
             metadata: Sequence[Mapping[str, Any]] | None = None) -> Draw:
        """Sample this request's ranking of the candidates ``ids`` (with their retrieval ``scores`` and, to log
        their :attr:`metadata_keys`, their ``metadata``), logged on a span when a tracer provider is set."""
        if any(s is None or not math.isfinite(s) for s in scores):
            raise InvalidParameterError("a candidate has no finite score; the fair sampler samples by the retriever's "
                                        "scores: put it after a retriever that scores its documents")
        seed = self.request_seed(query, request_id)
        if self._tracer is None:
            return Draw(replay(scores, alpha=self.alpha, k=self.k, seed=seed), seed)
        with self._tracer.start_as_current_span(self.name) as span:
            positions = replay(scores, alpha=self.alpha, k=self.k, seed=seed)
            if span.is_recording():
                span.set_attributes(self.attributes(ids, scores, positions, seed, query=query, query_id=query_id,
                                                    metadata=metadata))
        return Draw(positions, seed)

    def attributes(self, ids: Sequence[str], scores: Sequence[float], positions: Sequence[int], seed: int, *,
                   query: str | None = None, query_id: str | None = None,
                   metadata: Sequence[Mapping[str, Any]] | None = None) -> dict[str, object]:
        """The span attributes of one request (:data:`~fairrag_core.data.traces.SAMPLER_SPAN`): the candidates and
        the chosen each one JSON list of ``{"id", "score", "metadata"}`` objects (the structured form the trace
        reader reads), not three attributes per document: OpenTelemetry SDKs keep 128 attributes per span by
        default, and K = 100 candidates would lose most of theirs."""
        a = SAMPLER_SPAN
        out: dict[str, object] = {a["kind"]: "RERANKER", a["alpha"]: self.alpha, a["seed"]: seed, a["k"]: self.k}
        if query is not None:
            out[a["query"]] = query
        if query_id is not None:
            out[a["query_id"]] = query_id
        documents = [{"id": str(d), "score": float(s)} for d, s in zip(ids, scores)]
        if self.metadata_keys and metadata is not None:
            for doc, m in zip(documents, metadata):
                doc["metadata"] = {key: m[key] for key in self.metadata_keys if key in m}
        out[a["candidates"]] = json.dumps(documents, default=str)
        out[a["chosen"]] = json.dumps([documents[p] for p in positions], default=str)
        return out
