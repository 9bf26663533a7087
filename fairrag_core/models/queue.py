"""Who holds a shared model and who waits for it, first come first served.

One model object serves every page and job of a process (:mod:`.catalog`), and one call at a time uses it: a
llama.cpp context is not thread-safe, and two calls at once would only share two cores. So a Generate job started
while a FAIR-QR run holds the same weights *waits*. A plain ``threading.Lock`` lets it wait invisibly, in no
particular order. :class:`ModelLock` serves callers in arrival order and says who holds the model and who queues
behind it, each named by its *activity* (:func:`activity`: "FAIR-QR run", a job's title), so that the app can
write "waiting for qwen2.5-1.5b: FAIR-QR run ahead of it (place 1 in the queue)" instead of a frozen bar.

A background job's wait is read from outside (:func:`waiting_for`, polled by the jobs panel). A page that calls a
model in its own script thread is blocked while it waits, so nothing outside can draw for it: :func:`on_wait`
registers a callback that the waiting thread itself calls when it starts waiting, about once a second while it
waits, and once more (with ``None``) when its turn comes.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["ModelLock", "QueueState", "activity", "current_activity", "model_queues", "on_wait", "register_queue",
           "wait_reporter", "waiting_for"]

_local = threading.local()


def current_activity() -> str:
    """What this thread is doing, as the queue shows it (the innermost :func:`activity`, else the thread's name)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else threading.current_thread().name


@contextmanager
def activity(label: str) -> Iterator[None]:
    """Name what this thread does while inside the block (``with activity("FAIR-QR run"): …``)."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(str(label))
    try:
        yield
    finally:
        stack.pop()


@contextmanager
def on_wait(callback: Callable[[QueueState | None, int], None]) -> Iterator[None]:
    """While inside the block, a model call of this thread that has to queue calls ``callback(state, place)`` when
    it starts waiting and about every :data:`WAIT_REPORT_SECONDS` while it waits, then ``callback(None, 0)`` when
    its turn comes. The callback runs in this thread without the queue's lock held; an exception from it (a page
    that is being left) takes the caller out of the queue and propagates."""
    previous = getattr(_local, "on_wait", None)
    _local.on_wait = callback
    try:
        yield
    finally:
        _local.on_wait = previous


def wait_reporter() -> Callable[[QueueState | None, int], None] | None:
    """The :func:`on_wait` callback of this thread, or None (for queues other than :class:`ModelLock`'s)."""
    return getattr(_local, "on_wait", None)


#: How often a waiting thread with an :func:`on_wait` callback reports its place.
WAIT_REPORT_SECONDS = 1.0


@dataclass(frozen=True)
class QueueState:
    """One model's queue: the holder's activity and thread name (None when free), then the waiters in order."""

    model: str
    holder: str | None
    holder_thread: str | None
    waiting: tuple[tuple[str, str], ...]  # (thread name, activity), first in line first
    #: answers decoded together (a batching engine's slots, :mod:`.batching`; 0: one call at a time, a ModelLock),
    #: and then (thread name, activity) of each prompt in a slot now: who is answered together
    batched: int = 0
    answering: tuple[tuple[str, str], ...] = ()

    def place_of(self, thread_name: str) -> int | None:
        """1 for the first waiter, … ; None when ``thread_name`` does not wait here."""
        for place, (name, _) in enumerate(self.waiting, start=1):
            if name == thread_name:
                return place
        return None


_all_locks: weakref.WeakSet = weakref.WeakSet()  # locks and other queues (a dropped model drops its own)
_all_locks_guard = threading.Lock()


def register_queue(queue) -> None:
    """Show ``queue`` (anything with a ``state() -> QueueState``, e.g. a batching engine) in :func:`model_queues`."""
    with _all_locks_guard:
        _all_locks.add(queue)


class ModelLock:
    """A first-come-first-served, non-reentrant lock that knows its holder and its queue (module docstring).

    Used like ``threading.Lock``: ``with model._lock: …``. ``locked()`` is True while a caller holds it.
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self._cond = threading.Condition(threading.Lock())
        self._holder: tuple[int, str, str] | None = None  # (thread id, thread name, activity)
        self._queue: deque[tuple[int, str, str]] = deque()
        register_queue(self)

    def acquire(self) -> bool:
        me = (threading.get_ident(), threading.current_thread().name, current_activity())
        report = getattr(_local, "on_wait", None)
        waited = False
        with self._cond:
            self._queue.append(me)
            try:
                while self._waits(me):
                    waited = True
                    if report is None:
                        self._cond.wait()
                        continue
                    state, place = self._state(), self._queue.index(me) + 1
                    self._cond.release()  # the callback may read the queues (which takes this lock)
                    try:
                        report(state, place)
                    finally:
                        self._cond.acquire()
                    if self._waits(me):
                        self._cond.wait(timeout=WAIT_REPORT_SECONDS)
            except BaseException:
                self._queue.remove(me)
                self._cond.notify_all()  # the next in line may be free to go now
                raise
            self._queue.popleft()
            self._holder = me
        if waited and report is not None:
            try:
                report(None, 0)
            except BaseException:
                self.release()
                raise
        return True

    def _waits(self, me: tuple[int, str, str]) -> bool:  # with self._cond held
        return self._holder is not None or self._queue[0] is not me

    def release(self) -> None:
        with self._cond:
            if self._holder is None:
                raise RuntimeError(f"release of the unlocked model lock of {self.model}")
            self._holder = None
            self._cond.notify_all()

    def locked(self) -> bool:
        with self._cond:
            return self._holder is not None

    def __enter__(self) -> ModelLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def state(self) -> QueueState:
        with self._cond:
            return self._state()

    def _state(self) -> QueueState:  # with self._cond held
        holder = self._holder
        waiting = tuple((name, label) for _, name, label in self._queue)
        return QueueState(self.model, holder[2] if holder else None, holder[1] if holder else None, waiting)


def model_queues() -> list[QueueState]:
    """The state of every model lock of the process that is held or has waiters."""
    with _all_locks_guard:
        locks = list(_all_locks)
    states = [lock.state() for lock in locks]
    return [s for s in states if s.holder is not None or s.waiting]


def waiting_for(thread_name: str) -> tuple[QueueState, int] | None:
    """The queue ``thread_name`` waits in and its place there (None when it waits for no model)."""
    for state in model_queues():
        place = state.place_of(thread_name)
        if place is not None:
            return state, place
    return None
