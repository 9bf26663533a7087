"""The queue words when a model answers prompts together (issue 31, a room on one server): a batching engine's
queue is not a lock's, so nothing is "ahead", jobs are counted rather than prompts, no other session's query shows,
and the ETA is not multiplied by the jobs sharing the model. The lock's words stay as they were."""

from __future__ import annotations

import gc
import re
import threading
import time

import pytest

from fairrag_core.audit.jobs import JobTable
from fairrag_core.models.queue import ModelLock, QueueState, activity, register_queue
from fairrag_studio.panels.jobs import model_busy_note, queue_text, waiting_text
from fairrag_studio.services import jobs

OWNER_A, OWNER_B, OWNER_C = "a" * 40, "b" * 40, "c" * 40
MODEL, WORKER = "qwen2.5-0.5b", "fairrag-batch-qwen2.5-0.5b"


@pytest.fixture()
def runner(tmp_path, monkeypatch):
    made = jobs.JobRunner(JobTable(tmp_path / "j.sqlite"))
    monkeypatch.setattr(jobs, "runner", lambda path=None: made)
    return made


@pytest.fixture()
def room(runner):
    """Running Generate jobs: the viewer A's, two of session B (queries it must not see) and one of session C."""
    gate = threading.Event()

    def hold(ctx):
        gate.wait(30)

    made = {name: runner.submit(owner, "generate", title, hold) for name, owner, title in (
        ("a", OWNER_A, "Answers · my query"), ("b1", OWNER_B, "Answers · secret one"),
        ("b2", OWNER_B, "Answers · secret two"), ("c", OWNER_C, "Answers · secret three"))}
    threads = {name: jobs.job_thread_name(job.job_id) for name, job in made.items()}
    yield made, threads
    gate.set()
    for job in made.values():
        assert runner.wait(job.job_id, 5)


class Engine:
    """A batching engine as the queues see it: a ``state()`` set by hand."""

    def __init__(self, state: QueueState) -> None:
        self.now = state
        register_queue(self)

    def state(self) -> QueueState:
        return self.now


@pytest.fixture()
def engine():
    made: list[Engine] = []
    yield lambda state: made.append(Engine(state)) or made[-1]
    made.clear()
    gc.collect()  # the queues are held weakly: a dropped engine leaves model_queues()


def _batched(answering, waiting=(), slots=8) -> QueueState:
    n = len(answering)
    return QueueState(MODEL, f"{n} answers at once for …" if n else None, WORKER if n else None, tuple(waiting),
                      slots, tuple(answering))


def test_a_job_with_prompts_waiting_for_a_slot_counts_them_and_names_each_other_job_once(runner, room):
    _, t = room
    a, b1, b2, c = (t[k] for k in ("a", "b1", "b2", "c"))
    state = _batched([(b1, "Answers · secret one")] * 5 + [(a, "Answers · my query")] * 3,
                     [(b1, "Answers · secret one"), (a, "Answers · my query"), (b2, "Answers · secret two"),
                      (a, "Answers · my query"), (a, "Answers · my query")])
    assert queue_text(state, 2, viewer=OWNER_A) == (
        "3 of its answers wait for a free slot (place 2; 8 answers at once on qwen2.5-0.5b, with another session's "
        "2 Generate jobs)")
    # as session B sees it: its own job by title, A's anonymous; its place is its first prompt's
    assert queue_text(state, 1, viewer=OWNER_B) == (
        "1 of its answers waits for a free slot (place 1; 8 answers at once on qwen2.5-0.5b, with another "
        "session's Generate and your job “Answers · secret two”)")
    # a place a moment older than the state: the thread's own first place is said
    assert queue_text(state, 1, viewer=OWNER_A, me=a).startswith("3 of its answers wait for a free slot (place 2;")
    mixed = _batched([(b1, "x"), (c, "y"), ("page-7", "FAIR-QR run · secret four")], [(a, "Answers · my query")])
    text = queue_text(mixed, 1, viewer=OWNER_A)
    assert text == ("1 of its answers waits for a free slot (place 1; 3 answers at once on qwen2.5-0.5b, with "
                    "2 Generate jobs of 2 other sessions and FAIR-QR run)")
    assert "secret" not in text
    # a page's own call (show_queue) waits for a slot too, before the engine has anything in a slot
    page = _batched([], [("page-7", "FAIR-QR run · q")])
    assert queue_text(page, 1, viewer=OWNER_A, me="page-7") == (
        "1 of this page's answers waits for a free slot (place 1; up to 8 answers at once on qwen2.5-0.5b)")


def test_a_job_answered_in_slots_says_with_whom_also_between_its_prompts(runner, room, engine):
    made, t = room
    job_a = runner.get(OWNER_A, made["a"].job_id)
    queue = engine(_batched([(t["a"], "Answers · my query"), (t["b1"], "Answers · secret one"),
                             (t["b1"], "Answers · secret one")]))
    together = "answered together with another session's Generate (up to 8 answers at once on qwen2.5-0.5b)"
    assert waiting_text(job_a) == together
    # A judges between its prompts: in no slot, still sharing the model with B
    queue.now = _batched([(t["b1"], "Answers · secret one")])
    assert waiting_text(job_a) == together
    # B's prompts wait for a slot while A's fill them: B's page and sidebar give B's place
    queue.now = _batched([(t["a"], "Answers · my query")] * 8, [(t["b1"], "Answers · secret one")] * 2)
    assert waiting_text(runner.get(OWNER_B, made["b1"].job_id)) == (
        "2 of its answers wait for a free slot (place 1; 8 answers at once on qwen2.5-0.5b, with another "
        "session's Generate)")
    assert waiting_text(job_a) is None  # A waits for nothing and nobody is answered with it
    queue.now = _batched([])  # the engine has nothing to do: it leaves the queues
    assert waiting_text(job_a) is None


def test_the_busy_note_of_a_batched_model_says_this_run_joins_them(runner, room, engine):
    _, t = room
    assert model_busy_note(MODEL, viewer=OWNER_A) is None
    queue = engine(_batched([(t["b1"], "Answers · secret one")] * 6 + [(t["a"], "Answers · my query")] * 2,
                            [(t["c"], "Answers · secret three")] * 3))
    note = model_busy_note(MODEL, viewer=OWNER_A)
    assert note == ("qwen2.5-0.5b is answering 8 prompts at once for another session's Generate and your job "
                    "“Answers · my query” (3 more wait for a free slot): this run joins them.")
    queue.now = _batched([(t["b1"], "Answers · secret one")])
    assert model_busy_note(MODEL, viewer=OWNER_A) == ("qwen2.5-0.5b is answering 1 prompt at once for another "
                                                      "session's Generate: this run joins them.")
    assert "first come" not in note


def test_the_lock_words_stay_and_a_lock_held_by_the_engine_is_named_by_what_it_does(runner, engine):
    lock, held, release = ModelLock("qwen2.5-1.5b"), threading.Event(), threading.Event()

    def fair_qr():
        with activity("FAIR-QR run · fashion"), lock:
            held.set()
            release.wait(5)

    thread = threading.Thread(target=fair_qr, name="page-thread")
    thread.start()
    held.wait(5)
    try:
        assert model_busy_note("qwen2.5-1.5b", viewer=OWNER_A) == (
            "qwen2.5-1.5b is busy with “FAIR-QR run · fashion”: this run queues behind them, one model call at a "
            "time, first come first served.")
    finally:
        release.set()
        thread.join(5)
    # the engine's worker holds its model's lock for one step; a call on the model's other context waits for it
    engine(_batched([("fairrag-job-x", "Answers · q")]))
    step = QueueState(MODEL, WORKER, WORKER, (("page-thread", "Judge · q"),))
    assert queue_text(step, 1) == (
        "waiting for qwen2.5-0.5b: 1 model call ahead of yours (a step of the answers decoded together)")


def test_the_eta_is_not_multiplied_by_the_jobs_sharing_a_batched_model(runner, room, engine):
    _, t = room
    other = (t["b1"], "Answers · secret one")  # a running job of another session on the same model
    lock = QueueState(MODEL, "Answers · secret one", t["b1"], ())
    etas = {}

    def eta(shared):
        job = runner.table.create(OWNER_A, "generate", "Answers · my query", total=10)
        live = jobs.LiveJob(job.job_id, OWNER_A, kind="generate", shared=(shared, time.monotonic()))
        jobs.JobContext(runner.table, live, {"generate": 2.0}, runner).progress(3, 10)
        return runner.get(OWNER_A, job.job_id).eta, live

    etas["lock"], _ = eta(lock)
    etas["batched"], _ = eta(_batched([other, (t["a"], "Answers · my query")]))
    # the job last waited at the model's lock (B tokenised its prompts), and the model's engine works now
    engine(_batched([other]))
    etas["lock of a batching model"], live = eta(lock)
    # 2 s per step measured, 7 steps left: two jobs taking turns behind a lock double it; answered together they
    # do not (the measured seconds already include the sharing)
    assert etas == {"lock": pytest.approx(28.0), "batched": pytest.approx(14.0),
                    "lock of a batching model": pytest.approx(14.0)}
    # and its words are the batched ones, not "one answer at a time, in turns"
    runner._live[live.job_id] = live
    assert waiting_text(runner.get(OWNER_A, live.job_id)) == (
        "answered together with another session's Generate (up to 8 answers at once on qwen2.5-0.5b)")


def test_waiting_for_a_slot_is_not_a_wait_the_eta_takes_out():
    live = jobs.LiveJob("j", OWNER_A)
    live.report_wait(_batched([("x", "y")] * 8, [("fairrag-job-j", "Answers")]), 1)
    time.sleep(0.05)
    live.report_wait(None, 0)
    assert live.waited() == 0.0 and live.sharing() is not None and live.sharing().batched == 8
    live.report_wait(QueueState("m", "FAIR-QR run", "page", (("fairrag-job-j", "Answers"),)), 1)
    time.sleep(0.05)
    live.report_wait(None, 0)
    assert 0.04 < live.waited() < 1.0


def test_two_sessions_on_the_real_batching_engine_are_told_the_batched_words(runner):
    """Two sessions' jobs on SmolLM2-135M with 2 slots and 3 prompts each: every poll while they share the engine
    says the batched words (never the lock's "ahead of yours" or "in turns"), each job is one job however many of
    its prompts queue, and no poll shows the other session's query."""
    from fairrag_core.models.catalog import model_for
    from fairrag_core.models.gguf import resolve_gguf
    from fairrag_core.models.llama_cpp import LlamaCppModel
    from fairrag_core.models.llm import ChatPrompt, Decoding

    model = LlamaCppModel(resolve_gguf(model_for("smollm2-135m").weights), name="smollm2-135m", slots=2)
    model.complete([ChatPrompt("", "Hi")], Decoding(max_new_tokens=1))  # loaded, as the app preloads its models
    meet, states = threading.Barrier(2), []

    def work(query):
        def run(ctx):
            meet.wait(30)  # both submit together: 6 prompts for 2 slots
            prompts = [ChatPrompt("Answer in one sentence.", f"{query}: what is running shoe number {i}?")
                       for i in range(3)]
            return model.complete(prompts, Decoding(max_new_tokens=24, stop=()))[0].text and None
        return run

    try:
        first = runner.submit(OWNER_A, "generate", "Answers · secret alpha", work("secret alpha"))
        second = runner.submit(OWNER_B, "generate", "Answers · secret beta", work("secret beta"))
        said = []
        while any(runner.get(o, j.job_id).active for o, j in ((OWNER_A, first), (OWNER_B, second))):
            for owner, job in ((OWNER_A, first), (OWNER_B, second)):
                now = runner.get(owner, job.job_id)
                if now.active and (text := waiting_text(now)) is not None:
                    said.append(text)
            if model._engine is not None:
                states.append(model._engine.state())
            time.sleep(0.02)
        assert runner.get(OWNER_A, first.job_id).error is None and runner.get(OWNER_B, second.job_id).error is None
    finally:
        model.close()
    assert said, "the two jobs never shared the engine"
    batched = re.compile(r"[123] of its answers waits? for a free slot \(place [1-5]; [12] answers? at once on "
                         r"smollm2-135m(, with another session's Generate)?\)"  # (its own answers fill the slots)
                         r"|answered together with another session's Generate \(up to 2 answers at once on "
                         r"smollm2-135m\)"
                         # a prompt tokenised while the engine steps or the other job tokenises (a moment)
                         r"|waiting for smollm2-135m: 1 (model call|answer) ahead of yours \((a step of the answers "
                         r"decoded together|another session's Generate)\)")
    assert all(batched.fullmatch(text) for text in said), "\n".join(sorted(set(said)))
    assert any("wait" in text for text in said)  # 6 prompts, 2 slots: some waited and said their place
    threads = {jobs.job_thread_name(first.job_id), jobs.job_thread_name(second.job_id)}
    seen = [s for s in states if s.answering]
    assert seen and all(s.batched == 2 and {name for name, _ in s.answering} <= threads for s in seen)
