"""The Ray backend: tasks on a local Ray runtime or a Ray cluster, models loaded once per actor (issue 14, item 1).

(Long because reaching a cluster safely — address probing, token auth, shipping the package — and the fault-tolerant
scheduler are one backend; the probing could move to a module of its own if it grows.)

Ray (Moritz et al., "Ray: A Distributed Framework for Emerging AI Applications", OSDI 2018) runs Python functions
as *tasks* and stateful classes as *actors* on a cluster. Here every worker is an actor that builds its state from
a picklable :class:`~fairrag_core.backends.executor.WorkerSpec` once (loading its models once) and then runs task
after task; the driver hands the next task to whichever actor is free and returns results in task order. With
``W`` actors and ``T`` tasks of similar cost the wall time is about ``⌈T / W⌉`` task times plus one model load per
actor. ``W`` is one actor per CPU of the cluster; for model work on a cluster with GPUs, ``G`` of them also hold a
GPU each (:func:`actor_plan`).

**Addresses** (``--ray-address``): none starts a local Ray runtime; ``host:port`` (a GCS, as ``ray start --head``
prints it) and ``auto`` (what Ray itself would join: ``$RAY_ADDRESS``, else the address ``ray start`` wrote to
``<temp>/ray/ray_current_cluster``) join a cluster this machine belongs to; ``ray://host:10001`` joins one through
Ray Client. Every address is probed before Ray is asked (:func:`probe_address`: a TCP connection, then for a GCS
the cluster-id handshake that also reveals a missing token), so an address that does not answer is a
:class:`~fairrag_core.errors.BackendError` within seconds instead of Ray's endless GCS retries.

**Code on the workers**: for every address but the local runtime the package and its assets are shipped with the
job (``runtime_env`` ``py_modules``, :func:`package_runtime_env`), so the nodes need only the requirements.

**Node loss**: actors restart (``max_restarts``) and their calls are retried (``max_task_retries``); a task whose
actor died for good goes back to the queue for a live actor, and once the queue is empty an idle actor runs a
*backup copy* of a task that has been out much longer than a typical task, the first copy to finish winning
(MapReduce's backup tasks: Dean & Ghemawat, "MapReduce: Simplified Data Processing on Large Clusters", OSDI 2004).
Tasks are deterministic functions of their inputs (they carry their seeds), so which copy wins does not change
the table. Every Ray failure reaches the caller as a :class:`~fairrag_core.errors.BackendError` that says what
happened and what to do; an error raised by a task itself (a project error, a bug) is raised as it is.

``ray`` is imported here only, and only when a :class:`RayBackend` is made: ``import fairrag_core`` stays free of it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BackendError, FairRAGError, InvalidParameterError
from .executor import Backend, WorkerSpec

__all__ = ["RayBackend", "RunStats", "RAY_PIN", "worker_env", "resolve_auto_address", "probe_address", "actor_plan",
           "package_runtime_env"]

#: The version pinned in requirements.txt (what the error message tells a user to install).
RAY_PIN = "ray[client]==2.60.0"

#: Environment variables a worker takes over from the driver (offline switches, caches, thread caps), so that a
#: worker on another node behaves like the process that started the work.
_PASSED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM")

#: Folders of the node itself (joined GGUF weights, weight-only packages, retrieval indexes): where a node sets one
#: (an image's ``ENV``), it keeps it; the driver's value, a path on another machine, only fills in where the node has
#: none.
_NODE_LOCAL = ("FAIRRAG_CACHE", "FAIRRAG_WEIGHTS", "FAIRRAG_INDEX")

#: Seconds to wait for a TCP connection to an address, and then for a GCS to answer the cluster-id handshake:
#: together below 15 s, the longest an address that does not work may take to fail.
CONNECT_TIMEOUT_S = 5.0
HANDSHAKE_TIMEOUT_S = 8.0

#: Fault tolerance: restarts per actor, retries per call on a restarted actor, and how often one task may lose
#: its actor before the run gives up.
MAX_RESTARTS = 3
MAX_TASK_RETRIES = 3
MAX_LOSSES = 4

#: A task is given a backup copy once it has been out this many times the median task time (and at least
#: ``_BACKUP_MIN_S``), and only while an actor has nothing else to do.
_BACKUP_FACTOR = 2.0
_BACKUP_MIN_S = 1.0
_POLL_S = 1.0
#: An actor that Ray calls unavailable (its node is gone, or it is restarting) gets no task for this long.
_REST_S = 10.0

#: A spec up to this size (pickled) travels inside each actor's creation task (Ray inlines arguments up to
#: 100 KiB); a bigger one is put in the object store once and shared.
_INLINE_BYTES = 90_000

#: The name the assets folder travels under (a ``py_modules`` entry), found again on the workers' ``sys.path``.
SHIPPED_ASSETS = "fairrag_assets"

_START_CLUSTER = ("Start a cluster with `ray start --head` (then pass --ray-address auto on its machines, or "
                  "ray://<head>:10001 from elsewhere), leave out --ray-address to start a local Ray runtime, or use "
                  "--backend local")

_AUTH_HELP = ("The cluster uses Ray token authentication: set RAY_AUTH_MODE=token here and give this machine the "
              "cluster's token: copy the head's ~/.ray/auth_token to ~/.ray/auth_token here, or set "
              "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH); `ray get-auth-token` on the head prints it. Every node "
              "started with `ray start --address` needs the same (docs/ray.md, 'Token authentication')")


def worker_env() -> dict[str, str]:
    """The driver's settings a worker takes over: ``FAIRRAG_*`` and the offline switches (a node keeps its own
    ``FAIRRAG_CACHE`` and ``FAIRRAG_WEIGHTS`` where it sets them; ``RAY_*`` stay with each node)."""
    return {k: v for k, v in os.environ.items() if k.startswith("FAIRRAG_") or k in _PASSED_ENV}


def _import_ray():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import ray
    except ImportError:
        raise BackendError(f"--backend ray needs Ray, which is not installed here: run `.venv/bin/pip install '"
                           f"{RAY_PIN}'` (or `make install`), or use --backend local") from None
    return ray


# -- addresses -----------------------------------------------------------------------------------------------------
def _check_address(address: str | None) -> str | None:
    if address is None or address == "auto":
        return address
    if _split(address) is not None:
        return address  # host:port of a cluster's GCS, as `ray start --head` prints it, or ray://host:port
    raise InvalidParameterError(f"--ray-address {address!r} is not a Ray address: give 'auto' (the cluster this "
                                "machine joined with `ray start`), <head>:6379, ray://<head>:10001, or leave it out "
                                "to start a local Ray runtime")


def _split(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``host:port`` or ``ray://host:port`` (``[v6]:port`` too), else ``None``."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")
    return (host, int(port)) if host and port.isdigit() and "/" not in host else None


def _ray_temp_dir() -> Path:
    """Ray's default temp folder, as ``ray._common.utils.get_default_ray_temp_dir`` computes it (Ray 2.60)."""
    if "RAY_TMPDIR" in os.environ:
        root = os.environ["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and "TMPDIR" in os.environ:
        root = os.environ["TMPDIR"]
    else:
        root = "/tmp" if sys.platform.startswith(("linux", "darwin")) else tempfile.gettempdir()
    return Path(root) / "ray"


def resolve_auto_address() -> tuple[str, str]:
    """The cluster ``auto`` means, and where that was read: ``(address, source)``.

    As ``ray.init(address="auto")`` resolves it in Ray 2.60 (``ray/_private/services.py``,
    ``get_ray_address_from_environment``): ``$RAY_ADDRESS`` when set, else the GCS address the last ``ray start`` on
    this machine wrote to ``<temp>/ray/ray_current_cluster`` (temp: ``$RAY_TMPDIR``, ``$TMPDIR`` or ``/tmp``). Ray's
    legacy last resort, any ``gcs_server`` process found with ``ps``, is left out on purpose: it may be another
    user's throwaway local runtime.

    Raises:
        BackendError: neither is there (no cluster was started on this machine); the message names ``ray start``.
    """
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env != "auto":
        return env, "RAY_ADDRESS"
    path = _ray_temp_dir() / "ray_current_cluster"
    try:
        found = path.read_text().strip()
    except OSError:
        found = ""
    if found:
        return found, str(path)
    raise BackendError(f"--ray-address auto found no Ray cluster on this machine: RAY_ADDRESS is not set and {path} "
                       f"does not exist (`ray start` writes it). {_START_CLUSTER}")


def probe_address(address: str, *, source: str | None = None, connect_timeout: float = CONNECT_TIMEOUT_S,
                  handshake_timeout: float = HANDSHAKE_TIMEOUT_S) -> None:
    """Fail fast unless a Ray cluster answers at ``address`` (``host:port`` of a GCS, or ``ray://host:port``).

    A TCP connection within ``connect_timeout``; then, for a GCS address, the handshake a Ray node makes (ask the
    GCS for the cluster id) within ``handshake_timeout``, which also fails at once when the cluster wants a token
    this machine lacks. Ray itself would retry a dead GCS for ever (deaf to SIGTERM meanwhile) and a Ray Client
    server for 30 s. ``source`` says where the address came from (``RAY_ADDRESS``, a file), for the message.

    Raises:
        BackendError: nothing answers, something that is not a Ray GCS answers, or the token is missing or wrong.
    """
    parts = _split(address)
    origin = f" (from {source})" if source else ""
    if parts is None:
        raise BackendError(f"{address!r}{origin} is not a Ray address (host:port or ray://host:port). "
                           f"{_START_CLUSTER}")
    try:
        socket.create_connection(parts, timeout=connect_timeout).close()
    except OSError as err:
        stale = (" The file is left over from a cluster that has stopped: `ray stop` removes it."
                 if source and source.endswith("ray_current_cluster") else "")
        port = "its Ray Client listens on port 10001" if address.startswith("ray://") else "its GCS on port 6379"
        raise BackendError(f"no Ray cluster answers at {address!r}{origin} ({err}).{stale} Check the host and port "
                           f"(`ray start --head` prints them; {port}). {_START_CLUSTER}") from None
    if address.startswith("ray://"):
        _client_handshake(address, origin, handshake_timeout)
    else:
        _gcs_handshake(address, origin, handshake_timeout)


def _client_handshake(address: str, origin: str, timeout: float) -> None:
    """The ping a Ray Client makes first (``ClusterInfo(PING)``), once, with Ray's own channel (token, TLS)."""
    import grpc
    from ray._private.grpc_utils import init_grpc_channel
    from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

    channel = init_grpc_channel(address.removeprefix("ray://"))
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        request = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
        ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(request, timeout=timeout)
    except grpc.FutureTimeoutError:
        raise BackendError(f"{address!r}{origin} accepts connections but does not answer as a Ray Client server "
                           f"within {timeout:.0f} s: check the port (the head's --ray-client-server-port, 10001 by "
                           f"default). {_START_CLUSTER}") from None
    except grpc.RpcError as err:
        if err.code() == grpc.StatusCode.UNAUTHENTICATED or _is_auth_error(err):
            raise BackendError(_auth_message(address, err)) from None
        raise BackendError(f"{address!r}{origin} answers but not as a Ray Client server ({err.code().name}: "
                           f"{err.details()}): check the port (the head's --ray-client-server-port, 10001 by "
                           f"default; without ray:// give the GCS port, 6379). {_START_CLUSTER}") from None
    finally:
        channel.close()


def _gcs_handshake(address: str, origin: str, timeout: float) -> None:
    from ray._raylet import GcsClient  # a bare client: no driver, no node, nothing to shut down

    outcome: dict[str, BaseException] = {}

    def connect() -> None:
        try:
            GcsClient(address=address)
        except BaseException as err:  # handed to the caller's thread
            outcome["error"] = err

    thread = threading.Thread(target=connect, name="fairrag-ray-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise BackendError(f"{address!r}{origin} accepts connections but does not answer as a Ray cluster's GCS "
                           f"within {timeout:.0f} s: check the port (the head's --port, 6379 by default; Ray Client "
                           f"addresses start with ray://). {_START_CLUSTER}")
    if "error" in outcome:
        err = outcome["error"]
        if _is_auth_error(err):
            raise BackendError(_auth_message(address, err)) from None
        raise BackendError(f"{address!r}{origin} answers but not as a Ray cluster's GCS ({_first_line(err)}): check "
                           f"the port (the head's --port, 6379 by default; ray://<head>:10001 for Ray Client). "
                           f"{_START_CLUSTER}") from None


# -- errors ----------------------------------------------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _first_line(err: BaseException) -> str:
    if callable(getattr(err, "code", None)) and callable(getattr(err, "details", None)):  # a gRPC error
        return f"{err.code().name}: {err.details()}"
    text = _ANSI.sub("", str(err)).strip()
    return f"{type(err).__name__}: {text.splitlines()[0][:240]}" if text else type(err).__name__


_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit): .+")


def _root_cause(err: BaseException) -> str:
    """The last ``SomeError: message`` line of a Ray error's text (the remote traceback's end), or its first line."""
    lines = [line.strip() for line in _ANSI.sub("", str(err)).splitlines()]
    found = [line for line in lines if _RAISED.match(line)]
    return found[-1][:240] if found else _first_line(err)


def _chain(err: BaseException):
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def _is_auth_error(err: BaseException) -> bool:
    """Ray's token errors: ``ray.exceptions.AuthenticationError``, or the gRPC ``UNAUTHENTICATED`` text."""
    for e in _chain(err):
        if type(e).__name__ == "AuthenticationError":
            return True
        text = str(e)
        if "InvalidAuthToken" in text or "Unauthenticated" in text or "authentication token" in text.lower():
            return True
    return False


def _token_here() -> bool:
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    return bool(os.environ.get("RAY_AUTH_TOKEN")) or Path(path or Path.home() / ".ray" / "auth_token").is_file()


def _auth_message(address: str, err: BaseException) -> str:
    mode = os.environ.get("RAY_AUTH_MODE", "").lower()
    if mode == "token" and _token_here():
        what = ("the Ray cluster at {a!r} rejected this machine's authentication token (the tokens differ). "
                "Give this machine the head's token: `ray get-auth-token` on the head prints it; put it in "
                "~/.ray/auth_token here or in RAY_AUTH_TOKEN (docs/ray.md, 'Token authentication')")
    elif mode == "token":
        what = "RAY_AUTH_MODE=token is set but this machine has no authentication token for {a!r}. " + _AUTH_HELP
    else:
        what = "the Ray cluster at {a!r} requires an authentication token and this driver sends none. " + _AUTH_HELP
    return what.format(a=address) + f" [{_first_line(err)}]"


def _backend_error(ray, err: BaseException, *, address: str | None, done: int = 0, total: int = 0) -> BackendError:
    """A Ray failure as a :class:`BackendError` that names what happened and what to do."""
    ex = ray.exceptions
    where = f"the Ray cluster at {address!r}" if address else "the local Ray runtime"
    progress = f" ({done} of {total} tasks were done)" if total else ""
    rerun = "; the tasks are deterministic, so running the command again gives the same table"
    if _is_auth_error(err):
        return BackendError(_auth_message(address or "local", err))
    if isinstance(err, ex.RayActorError) and err.actor_init_failed:
        return BackendError(
            f"a Ray worker could not start on {where} ({_root_cause(err)}). Every node needs the project's "
            "requirements (`make install`, or the image of deploy/Dockerfile) and the same Python and Ray versions; "
            "the package itself is shipped with the job")
    if isinstance(err, ex.RuntimeEnvSetupError):
        return BackendError(
            f"Ray could not set up the workers' environment on {where} ({_first_line(err)}): the package and "
            "its assets travel as runtime_env py_modules (a few MB); check the nodes' disk space and that the "
            f"driver may upload to the cluster{rerun}")
    if isinstance(err, ex.OutOfMemoryError | ex.ObjectStoreFullError | ex.OutOfDiskError):
        return BackendError(
            f"a node of {where} ran out of memory or disk{progress} ({_first_line(err)}): each actor holds its own "
            "models, so use fewer actors per node (--num-cpus on `ray start`) or bigger nodes")
    if isinstance(err, ex.RayActorError | ex.NodeDiedError | ex.WorkerCrashedError | ex.ObjectLostError
                  | ex.LocalRayletDiedError):
        return BackendError(
            f"lost Ray workers on {where} (a node died or a worker process was killed) and could not recover"
            f"{progress}: {_first_line(err)}. Check the nodes with `ray status`, bring the lost ones back, "
            f"and run the command again{rerun}")
    if isinstance(err, ConnectionError):
        return BackendError(
            f"lost the connection to {where}{progress} ({_first_line(err)}): check that the head node is up "
            f"(`ray status` on it){rerun}")
    return BackendError(f"Ray failed on {where}{progress} ({_first_line(err)}): see `ray status` and the logs under "
                        f"<temp>/ray/session_latest/logs on the nodes{rerun}")


def _cause(err: BaseException) -> BaseException:
    """The project error inside a Ray task error (Ray wraps what a worker raised)."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, FairRAGError) else err


# -- actors and shipping ---------------------------------------------------------------------------------------------
def actor_plan(*, cpus: int, gpus: int, uses_models: bool, n_tasks: int, num_workers: int | None = None,
               cpu_actors: bool = True) -> list[float]:
    """The GPUs of each actor to start: ``1.0`` for a GPU actor, ``0.0`` for a CPU actor; GPU actors first.

    Every actor holds one CPU, so the cluster's ``cpus`` bound the actors. For model work (``uses_models``) on a
    cluster with ``gpus``, ``min(gpus, cpus)`` actors also hold a GPU each and the remaining CPUs get CPU actors
    (``cpu_actors=False``: GPU actors only). Without model work GPUs are not asked for. Capped by ``num_workers``
    and by ``n_tasks`` (never more actors than tasks), keeping the GPU actors; at least one actor.

    >>> actor_plan(cpus=8, gpus=2, uses_models=True, n_tasks=50)
    [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    >>> actor_plan(cpus=8, gpus=2, uses_models=True, n_tasks=3)
    [1.0, 1.0, 0.0]
    >>> actor_plan(cpus=8, gpus=2, uses_models=False, n_tasks=50, num_workers=3)
    [0.0, 0.0, 0.0]
    """
    cpus = max(1, cpus)
    gpu_actors = min(gpus, cpus) if uses_models else 0
    cpu_only = cpus - gpu_actors if (cpu_actors or gpu_actors == 0) else 0
    plan = [1.0] * gpu_actors + [0.0] * cpu_only
    cap = min(len(plan), n_tasks, num_workers if num_workers is not None else len(plan))
    return plan[:max(1, cap)]


def package_runtime_env(staging: Path) -> dict[str, Any]:
    """The ``runtime_env`` that ships this package and its assets to the workers of a cluster.

    ``py_modules``: the ``fairrag_core`` folder, and the assets folder (demo collections, presets, the ranker's
    weights; :func:`~fairrag_core.data.demo.assets_dir`) under the name :data:`SHIPPED_ASSETS` through a symbolic
    link made in ``staging``; Python caches are left out. Ray zips each folder, uploads it once per cluster (by
    content hash) and puts it on the workers' ``PYTHONPATH``.
    """
    from ..data.demo import assets_dir

    modules = [str(Path(__file__).resolve().parents[1])]
    assets = assets_dir()
    if assets.is_dir():
        link = staging / SHIPPED_ASSETS
        link.symlink_to(assets.resolve(), target_is_directory=True)
        modules.append(str(link))
    return {"py_modules": modules, "excludes": ["__pycache__", "*.pyc", "*.pyo", ".pytest_cache"]}


class _Worker:
    """One actor: builds its state from the spec at its first task (so that an error while loading reaches the
    driver as that task's error), then runs ``fn(state, task)`` for each task."""

    def __init__(self, spec: WorkerSpec | None, env: dict[str, str], shipped_assets: str | None = None) -> None:
        for key, value in env.items():
            if key not in _NODE_LOCAL or not os.environ.get(key):  # a node's own folders win over the driver's
                os.environ[key] = value
        if shipped_assets:  # the assets travelled as a py_module: use them, whatever path the driver had
            found = next((Path(p) / shipped_assets for p in sys.path if (Path(p) / shipped_assets).is_dir()), None)
            if found is not None:
                os.environ["FAIRRAG_ASSETS"] = str(found)
        self.spec, self.state, self.built = spec, None, spec is None

    def run(self, fn, task):
        if not self.built:
            self.state, self.built = self.spec.build(), True
        return fn(self.state, task)


@dataclass(frozen=True)
class RunStats:
    """What the last :meth:`RayBackend.map` went through: actors started (of them with a GPU), task copies lost
    with their actor or node, actors that died for good, backup copies started."""

    actors: int
    gpu_actors: int
    lost: int
    dead_actors: int
    backups: int


@dataclass
class _Copy:
    task: int
    actor: int
    start: float


class _Scheduler:
    """Tasks to actors, one at a time each, results in task order; re-queues the task of a lost actor and gives a
    straggling task a backup copy on an idle actor (module docstring)."""

    def __init__(self, ray, actors: list, fn, tasks: list, progress) -> None:
        self.ray, self.actors, self.fn, self.tasks, self.progress = ray, actors, fn, tasks, progress
        self.results: dict[int, Any] = {}
        self.pending = deque(range(len(tasks)))
        self.running: dict[Any, _Copy] = {}
        self.idle = deque(range(len(actors)))
        self.dead: set[int] = set()
        self.resting: dict[int, float] = {}
        self.losses = [0] * len(tasks)
        self.durations: list[float] = []
        self.backups = 0
        self.last_loss: BaseException | None = None

    def _straggler(self, now: float) -> int | None:
        if not self.durations:
            return None
        after = max(_BACKUP_MIN_S, _BACKUP_FACTOR * statistics.median(self.durations))
        latest: dict[int, float] = {}
        copies: dict[int, int] = {}
        for c in self.running.values():
            latest[c.task] = max(latest.get(c.task, 0.0), c.start)
            copies[c.task] = copies.get(c.task, 0) + 1
        late = [t for t, s in latest.items() if now - s > after and copies[t] < 3 and t not in self.results]
        return min(late, key=lambda t: latest[t]) if late else None

    def _submit(self, now: float) -> None:
        for actor, until in list(self.resting.items()):
            if until <= now:
                del self.resting[actor]
                self.idle.append(actor)
        while self.idle:
            task = self.pending.popleft() if self.pending else self._straggler(now)
            if task is None:
                return
            self.backups += any(c.task == task for c in self.running.values())
            actor = self.idle.popleft()
            ref = self.actors[actor].run.remote(self.fn, self.tasks[task])
            self.running[ref] = _Copy(task, actor, now)

    def _lost(self, copy: _Copy, err: BaseException, now: float) -> None:
        self.last_loss = err
        self.losses[copy.task] += 1
        if isinstance(err, self.ray.exceptions.ActorUnavailableError):
            self.resting[copy.actor] = now + _REST_S  # unreachable for now (restarting?): try it again later
        else:
            self.dead.add(copy.actor)  # died for good (its restarts are used up)
        if self.losses[copy.task] >= MAX_LOSSES:
            raise err
        if copy.task not in self.results and not any(c.task == copy.task for c in self.running.values()):
            self.pending.appendleft(copy.task)

    def run(self) -> list:
        ex = self.ray.exceptions
        lost_types = (ex.RayActorError, ex.NodeDiedError, ex.WorkerCrashedError, ex.ObjectLostError)
        while len(self.results) < len(self.tasks):
            self._submit(time.monotonic())
            if not self.running:
                if not self.resting:
                    raise self.last_loss or ex.RayError("no Ray actor is left to run the tasks")
                time.sleep(_POLL_S)
                continue
            ready, _ = self.ray.wait(list(self.running), num_returns=1, timeout=_POLL_S)
            for ref in ready:
                copy = self.running.pop(ref)
                try:
                    value = self.ray.get(ref)
                except ex.RayTaskError as err:
                    raise _cause(err) from None
                except lost_types as err:
                    if isinstance(err, ex.RayActorError) and err.actor_init_failed:
                        raise
                    self._lost(copy, err, time.monotonic())
                    continue
                self.idle.append(copy.actor)
                if copy.task not in self.results:
                    self.results[copy.task] = value
                    self.durations.append(time.monotonic() - copy.start)
                    if self.progress is not None:
                        self.progress(len(self.results), len(self.tasks))
        return [self.results[i] for i in range(len(self.tasks))]


# -- the backend -----------------------------------------------------------------------------------------------------
class RayBackend(Backend):
    """Tasks on Ray actors: one per CPU, some with a GPU each for model work where the cluster has GPUs.

    ``address``: ``None`` starts a local Ray runtime (``num_cpus`` CPUs, default all; shut down by :meth:`close`);
    ``"auto"`` joins the cluster this machine is part of (``$RAY_ADDRESS`` or the last ``ray start``);
    ``"host:port"`` joins the cluster whose GCS listens there (this machine must be one of its nodes);
    ``"ray://host:10001"`` joins a cluster through Ray Client from anywhere. A Ray runtime that is already up in
    this process (``ray.init`` called by the caller) is used as it is and left running. ``num_workers`` caps the
    actors; ``cpu_actors=False`` keeps model work on GPU actors only; ``max_restarts`` and ``max_task_retries`` are
    given to every actor (Ray's actor fault tolerance).

    Raises:
        BackendError: Ray is missing, the address does not answer within ~13 s, or the cluster wants a token.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None,
                 num_workers: int | None = None, cpu_actors: bool = True, max_restarts: int = MAX_RESTARTS,
                 max_task_retries: int = MAX_TASK_RETRIES) -> None:
        self.address = _check_address(address)
        self.num_workers, self.cpu_actors = num_workers, cpu_actors
        self.max_restarts, self.max_task_retries = max_restarts, max_task_retries
        self._ray = _import_ray()
        self._started = False
        self._shipped: str | None = None
        self.target: str | None = None  # the address joined (``auto`` resolved)
        self.last_stats: RunStats | None = None
        if self._ray.is_initialized():
            return
        source = None
        if self.address == "auto":
            self.target, source = resolve_auto_address()
            _enable_token_auth_like_ray()
        else:
            self.target = self.address
        if self.target is not None:
            probe_address(self.target, source=source)
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        staging = None
        if self.target is None:
            kwargs.update(num_cpus=num_cpus, include_dashboard=False)
        elif not _job_ships_code():
            staging = Path(tempfile.mkdtemp(prefix="fairrag-ray-"))
            kwargs["runtime_env"] = package_runtime_env(staging)
            self._shipped = SHIPPED_ASSETS if len(kwargs["runtime_env"]["py_modules"]) > 1 else None
        try:
            # "local": a new runtime even where RAY_ADDRESS is set (a Ray job's environment); auto was resolved above
            self._ray.init(address=self.target or "local", **kwargs)
        except Exception as err:  # Ray raises ConnectionError, TimeoutError, RuntimeError or its own types
            if _is_auth_error(err):
                raise BackendError(_auth_message(self.target or "local", err)) from None
            where = f"the Ray cluster at {self.target!r}" if self.target else "a local Ray runtime"
            raise BackendError(f"cannot start or reach {where} ({_first_line(err)}). {_START_CLUSTER}") from None
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)  # uploaded by ray.init; removes the link, not the assets
        self._started = True

    def cluster_cpus(self) -> int:
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def _actors(self, spec: WorkerSpec | None, n_tasks: int) -> tuple[list, list[float], Any]:
        """The actors, their GPUs, and the spec as they got it (kept referenced while they may restart)."""
        ray = self._ray
        resources = ray.cluster_resources()
        plan = actor_plan(cpus=int(resources.get("CPU", 1)), gpus=int(resources.get("GPU", 0)),
                          uses_models=bool(spec is not None and getattr(spec, "uses_models", False)),
                          n_tasks=n_tasks, num_workers=self.num_workers, cpu_actors=self.cpu_actors)
        env = worker_env()
        env.setdefault("FAIRRAG_THREADS", "1")  # one CPU per actor: llama-cpp would otherwise take every core
        cpu_env = {**env, "CUDA_VISIBLE_DEVICES": ""} if any(plan) else env  # CPU actors keep off the GPUs
        spec_arg = spec if len(ray.cloudpickle.dumps(spec)) <= _INLINE_BYTES else ray.put(spec)
        worker = ray.remote(_Worker)
        actors = [worker.options(num_cpus=1, num_gpus=gpus, max_restarts=self.max_restarts,
                                 max_task_retries=self.max_task_retries).remote(spec_arg, env if gpus else cpu_env,
                                                                                self._shipped)
                  for gpus in plan]
        return actors, plan, spec_arg

    def map(self, fn, tasks, *, spec=None, state=None, progress=None):
        tasks = list(tasks)
        if not tasks:
            return []
        ray = self._ray
        actors: list = []
        plan: list[float] = []
        scheduler = None
        try:
            actors, plan, _spec_arg = self._actors(spec, len(tasks))
            scheduler = _Scheduler(ray, actors, fn, tasks, progress)
            return scheduler.run()
        except ray.exceptions.RayTaskError:
            raise  # a task's own error (its class too: Ray's error derives from it), not a Ray failure
        except ray.exceptions.RayError as err:
            done = len(scheduler.results) if scheduler else 0
            raise _backend_error(ray, err, address=self.target, done=done, total=len(tasks)) from None
        except ConnectionError as err:  # Ray Client lost its server
            raise _backend_error(ray, err, address=self.target, total=len(tasks)) from None
        finally:
            if scheduler is not None:
                self.last_stats = RunStats(actors=len(actors), gpu_actors=sum(g > 0 for g in plan),
                                           lost=sum(scheduler.losses), dead_actors=len(scheduler.dead),
                                           backups=scheduler.backups)
            for actor in actors:
                with contextlib.suppress(Exception):  # already gone with its node, or the connection is lost
                    ray.kill(actor)

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False


def _job_ships_code() -> bool:
    """Inside ``ray job submit`` with a ``working_dir`` or ``py_modules``: the job's ``runtime_env`` (which Ray merges
    into the driver's, refusing a second ``py_modules``) already brings the code to every worker."""
    try:
        job = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}"))
    except ValueError:
        return False
    runtime_env = job.get("runtime_env") if isinstance(job, dict) else None
    return bool(isinstance(runtime_env, dict) and (runtime_env.get("working_dir") or runtime_env.get("py_modules")))


def _enable_token_auth_like_ray() -> None:
    """What ``ray.init(address="auto")`` does first in Ray 2.60: with ``RAY_AUTH_MODE`` unset and a token on this
    machine (``~/.ray/auth_token``, ``RAY_AUTH_TOKEN``), switch this process to token mode. The backend joins the
    resolved address instead of ``"auto"``, for which Ray would skip this."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # another Ray version: leave authentication to the user's settings
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
