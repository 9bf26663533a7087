"""Where tasks run: the executor interface and the in-process :class:`LocalBackend`.

A long command (a RAG sweep, utility labelling, FAIR-QR over a query set) is planned as a list of *tasks* that
carry their own seeds (one (query, α) cell, one α of an exposure sweep, one query). A backend maps a task function
over them and returns the results **in task order**, so the caller collects the same table whichever backend ran
it (issue 14, item 1; :func:`~fairrag_core.backends.factory.make_backend` picks one by name)::

    results = backend.map(fn, tasks, spec=spec)        # == [fn(spec.build(), t) for t in tasks]

``spec`` is a :class:`WorkerSpec`: a small picklable description (catalog names, paths, settings; never a loaded
model) whose ``build()`` makes the worker's state — the models, the collection, the retriever. The local backend
builds it once in this process (or takes the state the caller already has); the Ray backend
(:mod:`.ray_backend`) builds it once per actor, so each worker loads its models once and keeps them for every task
it is handed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["WorkerSpec", "Backend", "LocalBackend", "BACKENDS"]

T = TypeVar("T")
R = TypeVar("R")

#: The backends a command can name (``--backend``).
BACKENDS: tuple[str, ...] = ("local", "ray")


@runtime_checkable
class WorkerSpec(Protocol):
    """What a worker needs, as data: ``build()`` returns its state (loaded models, collection, retriever…).

    A spec is pickled to every worker and must stay small and free of loaded models; ``uses_models`` says whether
    its state holds a model (the Ray backend then asks for a GPU per actor where the cluster has them).
    """

    uses_models: bool

    def build(self) -> Any: ...


class Backend(ABC):
    """Maps ``fn(state, task)`` over tasks and returns the results in task order. Use as a context manager."""

    name: str

    @abstractmethod
    def map(self, fn: Callable[[Any, T], R], tasks: Sequence[T], *, spec: WorkerSpec | None = None,
            state: Any = None, progress: Callable[[int, int], None] | None = None) -> list[R]:
        """``[fn(state, t) for t in tasks]``, where ``state`` is ``spec.build()`` on the worker that runs ``t``.

        ``state``: an already built state for the local backend (skips ``spec.build()``; remote backends ignore
        it). ``progress(done, total)`` is called as results come in.
        """

    def close(self) -> None:
        """Release what the backend started (a local Ray runtime); a no-op by default."""
        return None

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalBackend(Backend):
    """Every task in this process, one after the other (the default; what the commands did before issue 14)."""

    name = "local"

    def map(self, fn, tasks, *, spec=None, state=None, progress=None):
        tasks = list(tasks)
        if state is None and spec is not None:
            state = spec.build()
        results = []
        for task in tasks:
            results.append(fn(state, task))
            if progress is not None:
                progress(len(results), len(tasks))
        return results
