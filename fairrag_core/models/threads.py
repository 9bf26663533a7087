"""How many threads a CPU model may use: the cores that are free now, not every core of the machine.

llama.cpp splits each matrix product over its threads and waits for all of them at a barrier (``ggml_barrier``)
that spins. When other processes hold some of the cores, a descheduled thread keeps the others spinning until the
scheduler brings it back: on a 2-core machine at load 6–11, ``make class`` with two threads ran 10× slower than idle
(issue 31). With one thread per *free* core there is nobody to wait for. The choice is made once, when a model is
built (:func:`model_threads`), from the cores this process may run on (``os.sched_getaffinity``) and the
1-minute load average (``os.getloadavg``), which counts the other processes' runnable threads: this process has not
started computing yet. ``$FAIRRAG_THREADS`` overrides it (Ray actors set 1).
"""

from __future__ import annotations

import os

__all__ = ["THREADS_ENV", "MAX_THREADS", "free_threads", "model_threads"]

#: Environment variable that fixes the threads of every CPU model (a positive integer; empty or 0: choose).
THREADS_ENV = "FAIRRAG_THREADS"
#: More threads than this gain nothing for the small models shipped here (memory bandwidth bounds them).
MAX_THREADS = 8


def free_threads(cores: int, load: float, *, cap: int = MAX_THREADS) -> int:
    """Threads for one model: ``max(1, min(cap, cores − round(load)))``, the cores not already busy.

    ``cores``: the cores this process may use; ``load``: the load average of everything else.

    >>> free_threads(2, 0.1), free_threads(2, 0.6), free_threads(2, 6.0), free_threads(16, 3.2)
    (2, 1, 1, 8)
    """
    return max(1, min(cap, cores - round(max(0.0, load))))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform: assume the cores are free
        return 0.0


def model_threads() -> int:
    """The threads for a model built now: ``$FAIRRAG_THREADS`` when set, else :func:`free_threads` of this
    process's cores and the current 1-minute load."""
    env = os.environ.get(THREADS_ENV, "").strip()
    if env and int(env) > 0:
        return int(env)
    return free_threads(_cores(), _load())
