"""How many threads a CPU model may use: the cores that are free now, not every core of the machine.

llama.cpp splits each matrix product over its threads and waits for all of them at a barrier (``ggml_barrier``)
that spins. When other processes hold some of the cores, a descheduled thread keeps the others spinning until the
scheduler brings it back: on a 2-core machine at load 6–11, ``make class`` with two threads ran 10× slower than idle
(issue 31). With one thread per *free* core there is nobody to wait for.

"Free" is measured, not guessed from the 1-minute load average (which still counts work that ended a minute ago: a
benchmark that had just finished made an idle machine look busy): :func:`other_busy_cores` samples the machine's
busy time in ``/proc/stat`` over a short interval and subtracts this process's own CPU time, so a model that is
computing does not count itself. The choice is made when a model is built (:func:`model_threads`) and again while it
works (:class:`ThreadChoice`, at most every few seconds: llama.cpp can change a context's threads between two
batches). ``$FAIRRAG_THREADS`` overrides it (Ray actors set 1).
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["THREADS_ENV", "MAX_THREADS", "ThreadChoice", "free_threads", "model_threads", "other_busy_cores"]

#: Environment variable that fixes the threads of every CPU model (a positive integer; empty or 0: choose).
THREADS_ENV = "FAIRRAG_THREADS"
#: More threads than this gain nothing for the small models shipped here (memory bandwidth bounds them).
MAX_THREADS = 8
#: How long :func:`other_busy_cores` watches the machine.
SAMPLE_SECONDS = 0.2


def free_threads(cores: int, load: float, *, cap: int = MAX_THREADS) -> int:
    """Threads for one model: ``max(1, min(cap, cores − round(load)))``, the cores not already busy.

    ``cores``: the cores this process may use; ``load``: the cores other processes keep busy.

    >>> free_threads(2, 0.1), free_threads(2, 0.6), free_threads(2, 6.0), free_threads(16, 3.2)
    (2, 1, 1, 8)
    """
    return max(1, min(cap, cores - round(max(0.0, load))))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _machine_busy_seconds() -> float | None:
    """CPU seconds all cores have spent busy since boot (``/proc/stat``), or None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    times = os.times()
    return times.user + times.system


def other_busy_cores(interval: float = SAMPLE_SECONDS) -> float:
    """Cores that *other* processes keep busy now: the machine's busy time over ``interval`` seconds less this
    process's own. Off Linux, the 1-minute load average (which counts this process too)."""
    busy0, own0, wall0 = _machine_busy_seconds(), _own_seconds(), time.perf_counter()
    if busy0 is None:
        try:
            return os.getloadavg()[0]
        except (AttributeError, OSError):  # no load average on this platform: assume the cores are free
            return 0.0
    time.sleep(interval)
    busy1, own1, wall1 = _machine_busy_seconds(), _own_seconds(), time.perf_counter()
    return max(0.0, ((busy1 or busy0) - busy0 - (own1 - own0)) / max(wall1 - wall0, 1e-3))


def _fixed_threads() -> int | None:
    env = os.environ.get(THREADS_ENV, "").strip()
    return int(env) if env and int(env) > 0 else None


def model_threads() -> int:
    """The threads for a model built now: ``$FAIRRAG_THREADS`` when set, else :func:`free_threads` of this
    process's cores and the cores other processes keep busy now."""
    return _fixed_threads() or free_threads(_cores(), other_busy_cores())


class ThreadChoice:
    """The threads a long-running model should use, measured again at most every ``every`` seconds.

    :meth:`current` returns the last choice at once while it is recent; after ``every`` seconds it measures the
    other processes' busy cores over the time since the last measurement (no waiting: the readings of
    ``/proc/stat`` and of this process's CPU time are kept between calls). The first call samples for ``interval``
    seconds. ``$FAIRRAG_THREADS`` or an explicit ``fixed`` wins.
    """

    def __init__(self, fixed: int | None = None, *, every: float = 5.0, interval: float = SAMPLE_SECONDS) -> None:
        self.fixed = fixed
        self.every = every
        self.interval = interval
        self._value: int | None = None
        self._reading: tuple[float, float, float] | None = None  # (machine busy s, own CPU s, wall s)
        self._guard = threading.Lock()

    def current(self) -> int:
        fixed = self.fixed or _fixed_threads()
        if fixed:
            return fixed
        with self._guard:
            now = time.perf_counter()
            if self._value is None or self._reading is None:
                self._value = free_threads(_cores(), other_busy_cores(self.interval))
                busy = _machine_busy_seconds()
                self._reading = None if busy is None else (busy, _own_seconds(), time.perf_counter())
            elif now - self._reading[2] >= self.every:
                busy, own = _machine_busy_seconds(), _own_seconds()
                if busy is not None:
                    other = max(0.0, (busy - self._reading[0] - (own - self._reading[1])) / (now - self._reading[2]))
                    self._value = free_threads(_cores(), other)
                    self._reading = (busy, own, now)
            return self._value
