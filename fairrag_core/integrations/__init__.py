"""The fair retriever as a drop-in component of the RAG frameworks teams deploy (issue 32, Must have 1).

Each component takes the retriever's top K with their scores and passes on k of them sampled by the studio's own
Plackett-Luce sampler (:func:`~fairrag_core.ranking.sampling.sample_rankings`, Kim & Diaz 2025, Eq. 2) at a given
α, with a per-request seed that is logged, and records on an OpenTelemetry span what the audit reads with no
options (:data:`~fairrag_core.data.traces.SAMPLER_SPAN`): the candidates with their scores, the sampled ranking, α,
the seed and k. :mod:`.sampler` holds the framework-free part; each framework's module imports its framework and
is imported only when one of its names is read, so ``fairrag_core`` needs none of them (the extras of
pyproject.toml install them). docs/integrations.md shows each in use.

:data:`INTEGRATIONS` declares each component once: its framework, its extra, its module, its class and the
framework's extension point it implements; :func:`configuration_line` writes the what-if's deployment advice from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FairRAGError
from ..lazy import lazy_exports

__all__ = ["Integration", "INTEGRATIONS", "MissingExtraError", "configuration_line", "missing_extra",
           "RequestSampler", "Draw", "replay", "FairNodePostprocessor", "FairDocumentCompressor", "FairRetriever",
           "FairSampler"]


@dataclass(frozen=True)
class Integration:
    """One framework's component: ``extra`` installs ``packages`` (pyproject.toml), ``module`` (relative to this
    package) defines ``component``, a subclass of (or, in Haystack, a component like) the framework's
    ``extension_point``; ``imports`` is the module whose absence means the extra is not installed."""

    framework: str
    extra: str
    packages: tuple[str, ...]
    module: str
    component: str
    extension_point: str
    imports: str


#: What records the spans (the API only: the application chooses the SDK and the exporter); in every extra.
_TRACING = "opentelemetry-api>=1.20"

#: The components, one per framework (the order of the configuration line and of docs/integrations.md).
INTEGRATIONS = (
    Integration("LlamaIndex", "llamaindex", ("llama-index-core>=0.14", _TRACING), ".llamaindex",
                "FairNodePostprocessor", "llama_index.core.postprocessor.types.BaseNodePostprocessor",
                "llama_index.core"),
    Integration("LangChain", "langchain", ("langchain-core>=1.0", _TRACING), ".langchain", "FairDocumentCompressor",
                "langchain_core.documents.BaseDocumentCompressor", "langchain_core"),
    Integration("Haystack", "haystack", ("haystack-ai>=3.0", _TRACING), ".haystack", "FairSampler",
                "haystack.component", "haystack"),
)


class MissingExtraError(FairRAGError, ImportError):
    """A framework component was asked for without its framework installed; the message names the extra."""


def missing_extra(extra: str) -> MissingExtraError:
    """The error a component's module raises when its framework cannot be imported: it names the pip command."""
    found = next(i for i in INTEGRATIONS if i.extra == extra)
    return MissingExtraError(f"{found.component} needs {found.framework} ({found.imports}), which is not installed; "
                             f"pip install 'fairrag-core[{found.extra}]'")


def configuration_line(alpha: float) -> str:
    """The sentence that ends a what-if recommendation: where to set the recommended α in each framework.

    >>> configuration_line(2)  # doctest: +NORMALIZE_WHITESPACE
    'To deploy it, set `alpha=2.0` in `FairNodePostprocessor(...)` (LlamaIndex), `FairDocumentCompressor(...)`
    (LangChain) or `FairSampler(...)` (Haystack), from fairrag_core.integrations (docs/integrations.md).'
    """
    named = [f"`{i.component}(...)` ({i.framework})" for i in INTEGRATIONS]
    return (f"To deploy it, set `alpha={float(alpha)!r}` in {', '.join(named[:-1])} or {named[-1]}, from "
            "fairrag_core.integrations (docs/integrations.md).")


__getattr__, __dir__ = lazy_exports(globals(), {
    "RequestSampler": ".sampler", "Draw": ".sampler", "replay": ".sampler",
    **{i.component: i.module for i in INTEGRATIONS}, "FairRetriever": ".langchain",
})
