"""Two sessions' Generate jobs on one model (issue 31): the waiting is always said, without the other's query; the
ETA counts the job's own work, not its waits; a Stop keeps the finished answers and counts them as answers."""

from __future__ import annotations

import contextlib
import re
import threading
import time

import pytest
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core import Collection, Document, Query
from fairrag_core.audit.jobs import Job, JobStatus, JobTable
from fairrag_core.models.queue import ModelLock, activity
from fairrag_core.rag.generation import AnswerCache, Generator
from fairrag_core.rag.pipeline import RagConfig
from fairrag_core.retrieval import BM25Retriever
from fairrag_studio.panels import answers as answers_panel
from fairrag_studio.panels.jobs import eta_text, queue_text, waiting_text
from fairrag_studio.services import jobs

OWNER_A, OWNER_B = "a" * 40, "b" * 40


class LockedModel(FirstDocumentModel):
    """The fake generator behind one :class:`ModelLock`, ``seconds`` per call: a llama.cpp model as the queue sees
    it (one call at a time, first come first served). With ``meet=n`` the first calls wait until ``n`` threads
    call it, so that jobs started together meet at the model even on a loaded machine."""

    def __init__(self, seconds: float, *, meet: int = 0) -> None:
        super().__init__("stub-llm")
        self._lock = ModelLock(self.name)
        self.seconds = seconds
        self._meet = threading.Barrier(meet) if meet else None

    def complete(self, prompts, decoding=None):
        if self._meet is not None and not self._meet.broken:
            with contextlib.suppress(threading.BrokenBarrierError):
                self._meet.wait(10)
            self._meet.abort()  # later calls go straight on
        with self._lock:
            time.sleep(self.seconds)
            return super().complete(prompts, decoding)


def _toy(words: str):
    docs = tuple(Document(f"d{i}", f"shoe review {'marathon ' * (8 - i)} {words}", title=f"Brand{i}",
                          provider=f"B{i % 3}") for i in range(8))
    collection = Collection("toy", docs, (Query("q1", "marathon shoe", answer="Brand0"),), {"q1": {"d0": 1}})
    return collection, BM25Retriever(collection.texts)


@pytest.fixture()
def runner(tmp_path, monkeypatch):
    made = jobs.JobRunner(JobTable(tmp_path / "j.sqlite"))
    monkeypatch.setattr(jobs, "runner", lambda path=None: made)
    return made


def _generate(runner, owner: str, model, query: str, *, lists: int = 12) -> Job:
    """A Generate job on the real job path (``answers_work``), answering ``lists`` distinct lists of ``query``."""
    collection, retriever = _toy(query)
    config = RagConfig(alpha=0.5, n_samples=lists, k=3, seed=3, oracle=False)
    generator = Generator(model, cache=AnswerCache(disk=None))
    work = answers_panel.answers_work(collection=collection, retriever=retriever, generator=generator,
                                      attributor=SubstringAttributor(), query=query, config=config, scores=None,
                                      total=lists)
    return runner.submit(owner, "generate", f"Answers · {query}", work, total=lists * 4, partial={"answers": []})


def test_two_sessions_generating_on_one_model_always_say_what_they_wait_for(runner):
    model = LockedModel(0.04, meet=2)
    first = _generate(runner, OWNER_A, model, "secret alpha query")
    second = _generate(runner, OWNER_B, model, "secret beta query")
    said: dict[str, list[str | None]] = {first.job_id: [], second.job_id: []}
    while all(runner.get(o, j.job_id).active for o, j in ((OWNER_A, first), (OWNER_B, second))):
        for owner, job in ((OWNER_A, first), (OWNER_B, second)):
            now = runner.get(owner, job.job_id)
            if now.active:  # (one may end between the loop's check and this poll: an ended job waits for nothing)
                said[job.job_id].append(waiting_text(now))
        time.sleep(0.01)
    assert runner.wait(first.job_id, 30) and runner.wait(second.job_id, 30)
    pattern = re.compile(r"(waiting for stub-llm: [12] answers? ahead of yours \(another session's Generate\)"
                         r"|waiting for stub-llm: yours is next"  # the holder has just let go
                         r"|sharing stub-llm with another session's Generate: one answer at a time, in turns "
                         r"\(waited \d+ s for it so far\))")
    for texts in said.values():
        told = [t for t in texts if t is not None]
        assert len(told) >= 5
        # once the jobs have met at the model, every poll says so (it used to come and go with each answer)
        assert None not in texts[texts.index(told[0]):]
        assert all(pattern.fullmatch(t) for t in told), told
        assert not any("secret" in t for t in told)  # never the other session's query
    assert any(t.startswith("waiting for") for texts in said.values() for t in texts if t)
    # both finished every answer
    for owner, job in ((OWNER_A, first), (OWNER_B, second)):
        assert runner.get(owner, job.job_id).status is JobStatus.DONE
        assert len(runner.live(owner, job.job_id).partial["answers"]) == len(runner.live(owner, job.job_id)
                                                                             .partial["rag"].answers)


def test_the_eta_counts_the_jobs_own_work_not_its_waits(runner):
    lock = ModelLock("stub-llm")
    held, etas = threading.Event(), []

    def page_call():  # another page's long call holds the model while the job waits at its second step
        with activity("FAIR-QR run · secret"), lock:
            held.set()
            time.sleep(0.6)

    def work(ctx):
        ctx.progress(0, 10)
        for step in range(1, 5):
            time.sleep(0.05)  # the job's own work: 0.05 s per step
            if step == 2:
                threading.Thread(target=page_call, name="page").start()
                held.wait(5)
            with lock:
                pass
            ctx.progress(step, 10)
            etas.append(runner.get(OWNER_A, ctx.job_id).eta)

    job = runner.submit(OWNER_A, "fake", "Steps", work, total=10)
    assert runner.wait(job.job_id, 10)
    assert runner.live(OWNER_A, job.job_id).waited() > 0.4
    # the ETA per step left is the work measured per step (0.05 s asleep plus the job table's writes) before and
    # after the 0.6 s wait at step 2; elapsed over steps made (the table's own formula) would give ≥ 0.35 s per step
    # after it. A page's one call is not a job taking turns: no factor 2.
    per_step = [eta / (10 - step) for step, eta in enumerate(etas, start=1)]
    assert 0.04 < per_step[0] < 0.25 and max(per_step[1:]) < 1.5 * per_step[0], per_step


def test_a_stopped_generate_keeps_its_answers_and_counts_them_as_answers(runner):
    model = LockedModel(0.05)
    job = _generate(runner, OWNER_A, model, "marathon", lists=16)
    partial = runner.live(OWNER_A, job.job_id).partial
    deadline = time.monotonic() + 20
    while len(partial["answers"]) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    runner.cancel(OWNER_A, job.job_id)
    assert runner.wait(job.job_id, 20)
    stopped = runner.get(OWNER_A, job.job_id)
    made = len(answers_panel.kept_answers(partial))
    assert stopped.status is JobStatus.CANCELLED and 3 <= made < 16
    assert answers_panel.stopped_text(partial, 16).startswith(f"Stopped after {made} of 16 answers;")
    assert stopped.total == 16 * 4  # the job's steps count document checks: they are not the answers
    assert eta_text(stopped) == f"cancelled after {made} of 16 answers (finished parts kept)"
    assert answers_panel.stopped_text(None, 16).startswith("Stopped after some answers;")


def test_a_queue_names_the_viewers_own_job_by_title_and_others_without_their_query(runner):
    model = LockedModel(0.0)
    gate, inside = threading.Event(), threading.Event()

    def hold(ctx):
        with model._lock:
            inside.set()
            gate.wait(10)

    mine = runner.submit(OWNER_A, "generate", "Answers · my query", hold)
    inside.wait(5)
    try:
        state = model._lock.state()
        assert queue_text(state, 1, viewer=OWNER_A) == ("waiting for stub-llm: 1 answer ahead of yours "
                                                        "(your job “Answers · my query”)")
        assert queue_text(state, 1, viewer=OWNER_B) == ("waiting for stub-llm: 1 answer ahead of yours "
                                                        "(another session's Generate)")
    finally:
        gate.set()
    assert runner.wait(mine.job_id, 5)


# -- on the Playground (AppTest) --------------------------------------------------------------------------------------
class StopsAtThirdModel(FirstDocumentModel):
    """The fake generator: two answers at once, the third waits until ``gate`` is open."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def complete(self, prompts, decoding=None):
        if self.calls >= 2:
            assert self.gate.wait(60), "the test never opened the gate"
        return super().complete(prompts, decoding)


def test_stop_on_the_playground_keeps_the_finished_answers_and_counts_answers(monkeypatch, tmp_path):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from fairrag_studio.services import owners, resources

    secret = bytes(range(32))
    signed_a = owners.sign("a" * 32, secret)  # a key the server issued (a hand-picked one is replaced)

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.setenv("FAIRRAG_JOBS", str(tmp_path / "jobs.sqlite"))
    owners.secret_path().write_bytes(secret)
    model, attributor = StopsAtThirdModel(), SubstringAttributor()
    generator = Generator(model, cache=AnswerCache(disk=None))
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.query_params["owner"] = signed_a
    at.run().switch_page("app_pages/playground.py").run()
    at.sidebar.slider(key="k").set_value(3).run()
    at.select_slider(key="alpha").set_value(0.0).run()
    at.button(key="generate").click().run()
    job = jobs.runner().jobs(signed_a)[0]
    partial = jobs.runner().live(signed_a, job.job_id).partial
    try:
        deadline = time.monotonic() + 30
        while len(partial["answers"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        at.run()
        at.button(key="stop_generation").click().run()
    finally:
        model.gate.set()
    assert jobs.runner().wait(job.job_id, 30)
    at.run()
    assert not at.exception
    total = job.total // 4  # 1 step per answer and 3 per answer's checks (k = 3)
    made = len(partial["answers"])
    assert made >= 2 and total > made
    assert [i.value for i in at.info if i.value.startswith(f"Stopped after {made} of {total} answers;")]
    assert len([m.value for m in at.markdown if re.search(r"uses \d of 3 documents", m.value)]) == made
