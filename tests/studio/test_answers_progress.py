"""Generate's progress moves after every answer and every judged document, and a queued job says what it waits for."""

import threading
import time

from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core import Collection, Document, Query
from fairrag_core.audit.jobs import Job, JobStatus
from fairrag_core.models.queue import ModelLock, activity
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.pipeline import AnswerStream, RagConfig, run_rag
from fairrag_core.retrieval import BM25Retriever
from fairrag_studio.panels.answers import answer_progress
from fairrag_studio.panels.jobs import eta_text, waiting_text
from fairrag_studio.services.jobs import job_thread_name


def _toy():
    docs = tuple(Document(f"d{i}", f"shoe review {'marathon ' * (6 - i)}", title=f"Brand{i}", provider=f"B{i % 3}")
                 for i in range(6))
    collection = Collection("toy", docs, (Query("q1", "marathon shoe", answer="Brand0"),), {"q1": {"d0": 1}})
    return collection, BM25Retriever(collection.texts)


def test_the_bar_moves_after_every_answer_and_judge_call_and_ends_full():
    collection, retriever = _toy()
    config = RagConfig(alpha=0.0, n_samples=40, k=3, seed=9, oracle=False)
    answers: list = []
    reports: list[tuple[int, int, str]] = []
    lists = len(run_rag(collection, retriever, Generator(FirstDocumentModel()), SubstringAttributor(),
                        "marathon shoe", config, n_boot=10).answers)
    report = answer_progress(config.k, lambda done, total, note: reports.append((done, total, note)),
                             ready=lambda: len(answers))  # the number of lists comes with the first report
    run_rag(collection, retriever, Generator(FirstDocumentModel()), SubstringAttributor(), "marathon shoe", config,
            n_boot=10, stream=AnswerStream(chunk=1, growing=True, progress=report, on_answer=answers.append))
    done = [d for d, _, _ in reports]
    assert all(total == lists * (1 + config.k) for _, total, _ in reports)
    assert done == sorted(done) and done[-1] == lists * (1 + config.k)  # never backwards, full at the end
    generated = [note for _, _, note in reports if "generated answer" in note]
    assert len(generated) == lists  # one report per answer, although the chunks grow 1, 1, 2, 4, …
    assert any("document checks" in note for _, _, note in reports)
    assert reports[-1][2] == f"{lists} of {lists} answers ready."
    assert len(set(done)) > lists  # judged documents move it too, not only answers


def _job(job_id: str, *, note: str = "", done: int = 3, total: int = 12) -> Job:
    now = time.time()
    return Job(job_id=job_id, owner="o", kind="generate", title="Answers", key="", page="", status=JobStatus.RUNNING,
               done=done, total=total, note=note, eta=125.0, created=now, started=now, updated=now, error=None,
               run_id=None, cancel=False, pid=0)


def test_a_job_waiting_for_a_model_says_who_is_ahead_and_its_place():
    lock = ModelLock("qwen2.5-1.5b")
    held, release = threading.Event(), threading.Event()

    def fair_qr():
        with activity("FAIR-QR run · sustainable fashion"), lock:
            held.set()
            release.wait(5)

    def job():
        with activity("Answers · marathon"), lock:
            pass

    first = threading.Thread(target=fair_qr, name="page-thread")
    first.start()
    held.wait(5)
    queued = threading.Thread(target=job, name=job_thread_name("j42"))
    queued.start()
    deadline = time.monotonic() + 5
    while not lock.state().waiting and time.monotonic() < deadline:
        time.sleep(0.005)
    try:
        # a page's call is named by what it does, without its query (the page may be another browser's)
        assert waiting_text(_job("j42")) == "waiting for qwen2.5-1.5b: 1 model call ahead of yours (FAIR-QR run)"
        assert waiting_text(_job("other")) is None
    finally:
        release.set()
        first.join(5)
        queued.join(5)
    assert waiting_text(_job("j42")) is None


def test_eta_text_gives_the_share_when_the_note_counts_the_units():
    assert eta_text(_job("a")) == "3 of 12 · about 2 min left"
    assert eta_text(_job("a", note="8 of 20 answers ready", done=30, total=120)) == "25% · about 2 min left"
