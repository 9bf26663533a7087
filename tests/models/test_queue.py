"""The shared models' lock: first come, first served, and it says who holds it and who waits."""

import threading
import time

import pytest

from fairrag_core.models import queue
from fairrag_core.models.queue import ModelLock, activity, current_activity, model_queues, on_wait, waiting_for


def _wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.005)


def test_waiters_are_served_in_arrival_order_and_named_by_their_activity():
    lock = ModelLock("judge-model")
    order: list[str] = []
    lock.acquire()  # the test thread holds it first
    threads = []
    for n, label in enumerate(["FAIR-QR run", "Answers · marathon", "RichRAG ranking"]):
        def take(label=label):
            with activity(label), lock:
                order.append(label)
        thread = threading.Thread(target=take, name=f"t{n}")
        thread.start()
        _wait_until(lambda n=n: len(lock.state().waiting) == n + 1)  # queued before the next one starts
        threads.append(thread)
    state = lock.state()
    assert state.holder == current_activity() and state.holder_thread == threading.current_thread().name
    assert state.waiting == (("t0", "FAIR-QR run"), ("t1", "Answers · marathon"), ("t2", "RichRAG ranking"))
    assert state.place_of("t1") == 2 and state.place_of("nobody") is None
    assert waiting_for("t2") == (state, 3)
    assert any(s.model == "judge-model" for s in model_queues())
    lock.release()
    for thread in threads:
        thread.join(5)
    assert order == ["FAIR-QR run", "Answers · marathon", "RichRAG ranking"]
    assert not lock.locked() and lock.state().waiting == () and waiting_for("t2") is None


def test_a_job_that_releases_and_asks_again_goes_behind_the_one_waiting():
    """The 791-second wait: a Generate job took the model back after every answer, ahead of a FAIR-QR run that
    had waited since the first. First come, first served lets the run in after the current call."""
    lock = ModelLock("m")
    events: list[str] = []
    stop = threading.Event()
    holding = threading.Event()

    def job():
        while not stop.is_set():
            with lock:
                holding.set()
                events.append("answer")
                time.sleep(0.01)

    worker = threading.Thread(target=job, name="job")
    worker.start()
    holding.wait(5)
    with lock:
        events.append("fair-qr")
    stop.set()
    worker.join(5)
    assert events.index("fair-qr") <= 2  # in after at most the call in progress and the one already queued


def test_activity_nests_and_restores():
    base = current_activity()
    with activity("outer"):
        with activity("inner"):
            assert current_activity() == "inner"
        assert current_activity() == "outer"
    assert current_activity() == base


def test_releasing_a_free_lock_is_an_error():
    with pytest.raises(RuntimeError, match="unlocked model lock of m"):
        ModelLock("m").release()


def test_a_waiting_page_thread_reports_its_place_while_it_waits(monkeypatch):
    """A page's own thread is blocked while it queues: the callback it registered is how it shows the wait."""
    monkeypatch.setattr(queue, "WAIT_REPORT_SECONDS", 0.05)
    lock = ModelLock("judge-model")
    reports = []
    with activity("Answers · marathon"):
        lock.acquire()  # a Generate job holds the model

    def page():
        with activity("FAIR-QR run"), on_wait(lambda state, place: reports.append(
                (state.holder, state.waiting, place) if state else None)), lock:
            reports.append("called")

    thread = threading.Thread(target=page, name="page")
    thread.start()
    _wait_until(lambda: len(reports) >= 3)  # the first report, then more while it waits
    assert reports[0] == ("Answers · marathon", (("page", "FAIR-QR run"),), 1)
    lock.release()
    thread.join(5)
    assert reports[-2:] == [None, "called"]  # its turn: the notice is cleared, then the call runs
    assert all(r == reports[0] for r in reports[:-2])


def test_a_report_that_raises_takes_the_caller_out_of_the_queue():
    lock = ModelLock("judge-model")
    lock.acquire()
    errors = []

    def leaving_page():
        def report(state, place):
            raise KeyboardInterrupt("the user left the page")
        try:
            with on_wait(report), lock:
                pass
        except KeyboardInterrupt as err:
            errors.append(err)

    thread = threading.Thread(target=leaving_page, name="leaving")
    thread.start()
    thread.join(5)
    assert errors and lock.state().waiting == ()  # not left behind in the queue
    lock.release()
    assert lock.acquire() and lock.locked()  # the lock still works
    lock.release()
