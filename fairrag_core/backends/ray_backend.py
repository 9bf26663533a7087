"""The Ray backend: tasks on a local Ray runtime or a Ray cluster, models loaded once per actor (issue 14, item 1).

Ray (Moritz et al., "Ray: A Distributed Framework for Emerging AI Applications", OSDI 2018) runs Python functions
as *tasks* and stateful classes as *actors* on a cluster. Here every worker is an actor that builds its state from
a picklable :class:`~fairrag_core.backends.executor.WorkerSpec` once (loading its models once) and then runs task
after task; a :class:`ray.util.ActorPool` hands the next task to whichever actor is free and returns results in
task order. With ``W`` actors and ``T`` tasks of similar cost, the wall time is about ``⌈T / W⌉`` task times plus
one model load per actor; ``W`` is the cluster's CPUs (one actor per CPU) or, for model work on a cluster with
GPUs, its GPUs (``num_gpus=1`` per actor).

``ray`` is imported here only, and only when a :class:`RayBackend` is made: ``import fairrag_core`` stays free of
it. A cluster address that does not answer, or Ray missing, is a :class:`~fairrag_core.errors.BackendError` whose
message names the fix.
"""

from __future__ import annotations

import logging
import os
import socket
import warnings
from typing import Any

from ..errors import BackendError, FairRAGError, InvalidParameterError
from .executor import Backend, WorkerSpec

__all__ = ["RayBackend", "RAY_PIN", "worker_env"]

#: The version pinned in requirements.txt (what the error message tells a user to install).
RAY_PIN = "ray[client]==2.60.0"

#: Environment variables a worker takes over from the driver (offline switches, caches, thread caps), so that a
#: worker on another node behaves like the process that started the work.
_PASSED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM")


def worker_env() -> dict[str, str]:
    """The driver's settings a worker needs: ``FAIRRAG_*`` and the offline switches."""
    return {k: v for k, v in os.environ.items() if k.startswith("FAIRRAG_") or k in _PASSED_ENV}


def _import_ray():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import ray
            from ray.util import ActorPool
    except ImportError:
        raise BackendError(f"--backend ray needs Ray, which is not installed here: run `.venv/bin/pip install '"
                           f"{RAY_PIN}'` (or `make install`), or use --backend local") from None
    return ray, ActorPool


def _check_address(address: str | None) -> str | None:
    if address is None or address == "auto" or address.startswith("ray://"):
        return address
    host, _, port = address.rpartition(":")
    if host and port.isdigit():
        return address  # host:port of a cluster's GCS, as `ray start --head` prints it
    raise InvalidParameterError(f"--ray-address {address!r} is not a Ray address: give 'auto' (the cluster this "
                                "machine joined with `ray start`), ray://<head>:10001, or leave it out to start a "
                                "local Ray runtime")


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast when a ``ray://host:port`` address does not answer (Ray Client itself retries for 30 s)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except (OSError, ValueError) as err:
        raise BackendError(
            f"no Ray cluster answers at {address!r} ({err}). Start one with `ray start --head` (its Ray Client "
            "listens on port 10001) and check the host and port, pass --ray-address auto on a machine of the "
            "cluster, leave out --ray-address to start a local Ray runtime, or use --backend local") from None


class _Worker:
    """One actor: builds its state from the spec at its first task (so that an error while loading reaches the
    driver as that task's error), then runs ``fn(state, task)`` for each task."""

    def __init__(self, spec: WorkerSpec | None, env: dict[str, str]) -> None:
        os.environ.update(env)
        self.spec, self.state, self.built = spec, None, spec is None

    def run(self, fn, task):
        if not self.built:
            self.state, self.built = self.spec.build(), True
        return fn(self.state, task)


def _cause(err: BaseException) -> BaseException:
    """The project error inside a Ray task error (Ray wraps what a worker raised)."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, FairRAGError) else err


class RayBackend(Backend):
    """Tasks on Ray actors, one per CPU (or per GPU for model work where the cluster has GPUs).

    ``address``: ``None`` starts a local Ray runtime (``num_cpus`` CPUs, default all; shut down by :meth:`close`);
    ``"auto"`` joins the cluster this machine is part of (``ray start --head`` / ``ray start --address``);
    ``"ray://host:10001"`` joins a remote cluster through Ray Client. A Ray runtime that is already up in this
    process (``ray.init`` called by the caller) is used as it is and left running. ``num_workers`` caps the actors.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None,
                 num_workers: int | None = None) -> None:
        self.address = _check_address(address)
        self.num_workers = num_workers
        self._ray, self._pool = _import_ray()
        self._started = False
        if self.address is not None and self.address.startswith("ray://"):
            _reachable(self.address)
        if self._ray.is_initialized():
            return
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        if self.address is None:
            kwargs.update(num_cpus=num_cpus, include_dashboard=False)
        try:
            self._ray.init(address=self.address, **kwargs)
        except Exception as err:  # Ray raises ConnectionError, TimeoutError, RuntimeError or its own types
            first = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
            where = f"the Ray cluster at {self.address!r}" if self.address else "a local Ray runtime"
            raise BackendError(
                f"cannot start or reach {where} ({type(err).__name__}: {first}). Start a cluster with "
                "`ray start --head` and pass --ray-address auto on its machines (or ray://<head>:10001 from "
                "elsewhere), leave out --ray-address to start a local Ray runtime, or use --backend local"
            ) from None
        self._started = True

    def cluster_cpus(self) -> int:
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def _actor_shape(self, spec: WorkerSpec | None, n_tasks: int) -> tuple[int, float]:
        """How many actors, and GPUs per actor (1 for model work where the cluster has GPUs, else 0)."""
        gpus = int(self._ray.cluster_resources().get("GPU", 0))
        per_gpu = 1.0 if spec is not None and getattr(spec, "uses_models", False) and gpus >= 1 else 0.0
        workers = gpus if per_gpu else self.cluster_cpus()
        if self.num_workers is not None:
            workers = min(workers, self.num_workers)
        return max(1, min(workers, n_tasks)), per_gpu

    def map(self, fn, tasks, *, spec=None, state=None, progress=None):
        tasks = list(tasks)
        if not tasks:
            return []
        ray = self._ray
        n_actors, gpus = self._actor_shape(spec, len(tasks))
        env = worker_env()
        env.setdefault("FAIRRAG_THREADS", "1")  # one CPU per actor: llama-cpp would otherwise take every core
        worker = ray.remote(_Worker).options(num_cpus=1, num_gpus=gpus)
        spec_ref = ray.put(spec)
        actors = [worker.remote(spec_ref, env) for _ in range(n_actors)]
        results = []
        try:
            for result in self._pool(actors).map(lambda actor, task: actor.run.remote(fn, task), tasks):
                results.append(result)
                if progress is not None:
                    progress(len(results), len(tasks))
        except ray.exceptions.RayError as err:
            raise _cause(err) from None
        finally:
            for actor in actors:
                ray.kill(actor)
        return results

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False
