"""Backends: where the long commands' tasks run — in this process, or on Ray actors (issue 14, item 1).

* :mod:`.executor` — the interface: :class:`Backend` maps ``fn(state, task)`` over tasks and returns results in
  task order; :class:`LocalBackend` runs them here; a :class:`WorkerSpec` is the picklable recipe of a worker's
  state (catalog names and paths, never a loaded model);
* :mod:`.ray_backend` — :class:`RayBackend`: a local Ray runtime or a cluster (``auto``, ``ray://host:10001``),
  one actor per CPU (for model work on a cluster with GPUs: one per GPU plus CPU actors for the other CPUs),
  models loaded once per actor (Moritz et al., "Ray", OSDI 2018). ``ray`` is imported only when a Ray backend is made;
* :mod:`.workloads` — ``exposure-sweep``, ``sweep``, ``label-utility``, ``fair-qr-eval`` and the judge of
  ``audit-log`` as tasks with their own seeds, giving the local backend's tables for the same seed.

This layer sits between the analyses (ranking, rag, fairqr, audit), whose task functions it maps, and the command
line, which picks the backend (``--backend local|ray``, ``--ray-address``). docs/ray.md: running on a cluster.
"""

from .executor import BACKENDS, Backend, LocalBackend, WorkerSpec
from .factory import make_backend

__all__ = ["BACKENDS", "Backend", "LocalBackend", "WorkerSpec", "make_backend"]
