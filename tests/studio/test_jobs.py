"""Background jobs: the runner with a fake job, and sweeps in the app that outlive their page (AppTest)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fakes import FirstDocumentModel, SubstringAttributor
from streamlit.testing.v1 import AppTest

from fairrag_core.audit.jobs import JobStatus, JobTable
from fairrag_core.errors import StoreError
from fairrag_core.rag.generation import Generator
from fairrag_studio.services import jobs, owners

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PLAYGROUND, CURVES, AUDIT = "app_pages/playground.py", "app_pages/disparity_curves.py", "app_pages/audit.py"
#: The server secret of these tests, and two browsers' keys issued under it (a hand-picked key is refused).
SECRET = bytes(range(32))
OWNER_A, OWNER_B = owners.sign("a" * 32, SECRET), owners.sign("b" * 32, SECRET)


@pytest.fixture(autouse=True)
def _stores(tmp_path, monkeypatch):
    """A fresh run store and job table per test, with the server secret that issued OWNER_A and OWNER_B."""
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_JOBS", raising=False)
    owners.secret_path().write_bytes(SECRET)
    resources.run_store.clear()
    yield
    resources.run_store.clear()


# -- the runner -------------------------------------------------------------------------------------------------------
def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_fake_job_reports_progress_and_keeps_its_result(tmp_path):
    runner = jobs.JobRunner(JobTable(tmp_path / "jobs.sqlite"))

    def work(ctx):
        for step in range(3):
            ctx.tick()
            ctx.partial.setdefault("steps", []).append(step)
            ctx.progress(step + 1, 3, f"step {step + 1}")
        return "run-42"

    job = runner.submit(OWNER_A, "fake", "Three steps", work, total=3)
    assert runner.wait(job.job_id, 10)
    done = runner.get(OWNER_A, job.job_id)
    assert done.status is JobStatus.DONE and (done.done, done.total) == (3, 3) and done.run_id == "run-42"
    assert runner.live(OWNER_A, job.job_id).partial["steps"] == [0, 1, 2]
    assert runner.live(OWNER_B, job.job_id) is None and runner.jobs(OWNER_B) == []


def test_cancel_stops_a_job_within_one_task_and_keeps_the_finished_parts(tmp_path):
    runner = jobs.JobRunner(JobTable(tmp_path / "jobs.sqlite"))
    in_task, answers_made = threading.Event(), []

    def work(ctx):
        results = ctx.partial.setdefault("results", {})
        for task in range(3):
            for answer in range(1000):  # one task = many answers; tick before each, as AnswerStream does
                ctx.tick()
                answers_made.append((task, answer))
                if task == 1:
                    in_task.set()
                time.sleep(0.001)
            results[task] = f"task {task}"
            ctx.progress(task + 1, 3)
        return None

    job = runner.submit(OWNER_A, "fake", "Long", work, total=3)
    assert in_task.wait(30)
    assert runner.cancel(OWNER_A, job.job_id) is True
    assert runner.wait(job.job_id, 5)
    cancelled = runner.get(OWNER_A, job.job_id)
    assert cancelled.status is JobStatus.CANCELLED and cancelled.done == 1
    assert runner.live(OWNER_A, job.job_id).partial["results"] == {0: "task 0"}  # the finished task is kept
    assert answers_made[-1][0] == 1 and answers_made[-1][1] < 999  # stopped inside task 1, not at its end
    with pytest.raises(Exception, match="no job"):
        runner.cancel(OWNER_B, job.job_id)


def test_a_failing_job_records_its_message(tmp_path):
    runner = jobs.JobRunner(JobTable(tmp_path / "jobs.sqlite"))

    def store_error(ctx):
        raise StoreError("the run store is damaged; move it aside")

    def bug(ctx):
        raise KeyError("oops")

    first = runner.submit(OWNER_A, "fake", "Store", store_error)
    second = runner.submit(OWNER_A, "fake", "Bug", bug)
    assert runner.wait(first.job_id, 5) and runner.wait(second.job_id, 5)
    assert runner.get(OWNER_A, first.job_id).error == "the run store is damaged; move it aside"
    failed = runner.get(OWNER_A, second.job_id)
    assert failed.status is JobStatus.FAILED and failed.error == "KeyError: 'oops'"


def test_only_the_newest_finished_jobs_keep_their_results_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "KEEP_FINISHED", 2)
    runner = jobs.JobRunner(JobTable(tmp_path / "jobs.sqlite"))
    ids = []
    for _ in range(4):
        ids.append(runner.submit(OWNER_A, "fake", "Quick", lambda ctx: None).job_id)
        assert runner.wait(ids[-1], 5)
    assert [runner.live(OWNER_A, i) is not None for i in ids] == [False, True, True, True]
    assert all(runner.get(OWNER_A, i).status is JobStatus.DONE for i in ids)  # the rows stay


def test_shutdown_marks_running_jobs_interrupted_at_once_and_stops_them_at_their_next_tick(tmp_path):
    """What the server does when it is asked to stop (SIGTERM): see test_shutdown.py for the real process."""
    from fairrag_core.audit.jobs import INTERRUPTED

    runner = jobs.JobRunner(JobTable(tmp_path / "jobs.sqlite"))
    in_call, release, ticking = threading.Event(), threading.Event(), threading.Event()

    def long_call(ctx):  # one model call that cannot be interrupted, then the next tick
        ctx.tick()
        in_call.set()
        release.wait(30)
        ctx.tick()
        return "never saved"

    def many_calls(ctx):
        while True:
            ctx.tick()
            ticking.set()
            time.sleep(0.005)

    stuck = runner.submit(OWNER_A, "generate", "Stuck", long_call)
    quick = runner.submit(OWNER_B, "sweep", "Ticking", many_calls)
    assert in_call.wait(10) and ticking.wait(10)
    start = time.monotonic()
    assert runner.shutdown(grace=0.3) == [stuck.job_id]  # still inside its call after the grace
    assert time.monotonic() - start < 2
    for owner, job in ((OWNER_A, stuck), (OWNER_B, quick)):
        row = runner.get(owner, job.job_id)
        assert (row.status, row.error) == (JobStatus.FAILED, INTERRUPTED)
    release.set()  # the call returns; the next tick stops the job, which stays failed, not cancelled
    assert runner.wait(stuck.job_id, 10)
    row = runner.get(OWNER_A, stuck.job_id)
    assert (row.status, row.error, row.run_id) == (JobStatus.FAILED, INTERRUPTED, None)
    assert not jobs._served_by_streamlit()  # under pytest the exit handler never ends the process early


# -- in the app -------------------------------------------------------------------------------------------------------
class GatedModel(FirstDocumentModel):
    """The fake generator, waiting at every call until ``gate`` is open (a job that is still running on demand)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def complete(self, prompts, decoding=None):
        assert self.gate.wait(60), "the test never opened the gate"
        return super().complete(prompts, decoding)


@pytest.fixture()
def gated_models(monkeypatch):
    from fairrag_studio.services import resources

    model, attributor = GatedModel(), SubstringAttributor()
    generator = Generator(model)
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)
    yield model
    model.gate.set()  # never leave a worker thread waiting


def start(owner: str, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["owner"] = owner
    at.run()
    assert not at.exception
    if page is not None:
        at.switch_page(page).run()
        assert not at.exception
    return at


def the_job(owner: str):
    listed = jobs.runner().jobs(owner)
    assert len(listed) == 1, listed
    return listed[0]


def start_curves_sweep(at: AppTest) -> None:
    at.radio(key="curves_mode").set_value("Exposure + answers").run()
    at.radio(key="curves_labels").set_value("relevance").run()
    at.text_input(key="curves_alphas").set_value("0, 4").run()
    at.button(key="curves_run").click().run()
    assert not at.exception


def test_a_sweep_keeps_running_on_another_page_and_its_result_shows(gated_models):
    at = start(OWNER_A, CURVES)
    start_curves_sweep(at)
    job = the_job(OWNER_A)
    assert job.kind == "sweep" and job.active and job.total == 3 * 1000 and job.page == CURVES  # 1000 units a run
    assert any("runs in the background" in i.value for i in at.info)
    assert at.sidebar.button(key=f"jobs_panel_cancel_{job.job_id}")  # listed in the sidebar from the click on
    at.switch_page(PLAYGROUND).run()  # the user leaves the page; the job does not stop
    assert not at.exception and at.title[0].value == "Playground"
    assert any(m.value.endswith("Sweep · running-shoes · 1 query × 3 systems**") for m in at.sidebar.markdown)
    assert at.sidebar.button(key=f"jobs_panel_cancel_{job.job_id}")  # Cancel on every page
    gated_models.gate.set()
    assert jobs.runner().wait(job.job_id, 60)
    done = the_job(OWNER_A)
    assert done.status is JobStatus.DONE and (done.done, done.total) == (3000, 3000) and done.run_id
    at.run()  # the next redraw of any page shows it finished, with a link to its page
    assert any(c.value.startswith("done · run ") for c in at.sidebar.caption)
    assert at.sidebar.button(key=f"jobs_panel_open_{job.job_id}").label == "Show the result"
    at.switch_page(CURVES).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 5  # Fig. 3, EE-R, EU, EAR and EAE-D against EE-D
    assert f"Saved as run {done.run_id}" in at.success[-1].value
    names = [d.value.columns.tolist() for d in at.dataframe]
    assert ["ee_d_interval", "runs", "mean", "difference", "p_value", "significant"] in names


def test_a_reload_finds_the_job_and_another_browser_does_not(gated_models):
    at = start(OWNER_A, CURVES)
    start_curves_sweep(at)
    job = the_job(OWNER_A)
    reloaded = start(OWNER_A)  # a new session (a reload) with the same address
    assert any(m.value.endswith("1 query × 3 systems**") for m in reloaded.sidebar.markdown)
    other = start(OWNER_B)
    assert not [m for m in other.sidebar.markdown if "Sweep ·" in m.value]
    assert jobs.runner().jobs(OWNER_B) == []
    other.switch_page(CURVES).run()
    other.radio(key="curves_mode").set_value("Exposure + answers").run()
    other.radio(key="curves_labels").set_value("relevance").run()
    other.text_input(key="curves_alphas").set_value("0, 4").run()
    assert "3 runs to do" in other.info[0].value  # the same request, but A's job is not B's
    reloaded.sidebar.button(key=f"jobs_panel_cancel_{job.job_id}").click().run()  # cancel from the reloaded page
    gated_models.gate.set()
    assert jobs.runner().wait(job.job_id, 60)
    assert the_job(OWNER_A).status is JobStatus.CANCELLED


def test_an_owner_key_is_made_once_and_kept_in_the_address():
    at = start("not a key!")
    owner = at.query_params["owner"]
    assert owner != "not a key!" and len(owner) == owners.KEY_LENGTH == 48 and owners.is_issued(owner)
    at.switch_page(CURVES).run()
    assert at.query_params["owner"] == owner


def test_an_audit_with_answers_runs_as_a_job_and_saves_itself(gated_models):
    gated_models.gate.set()
    at = start(OWNER_A, AUDIT)
    at.multiselect(key="audit_queries").set_value(["rs-q01"]).run()
    at.text_input(key="audit_alphas").set_value("2").run()
    at.radio(key="audit_mode").set_value("Exposure + answers").run()
    at.button(key="audit_run").click().run()
    job = the_job(OWNER_A)
    assert job.kind == "audit" and jobs.runner().wait(job.job_id, 60)
    at.run()
    assert not at.exception
    saved = [c.value for c in at.caption if c.value.startswith("Saved in the run store")]
    assert saved and the_job(OWNER_A).run_id in saved[0]
    ledger = at.dataframe[1].value
    assert ledger["attributed share"].sum() == pytest.approx(1.0)


class SlowModel(FirstDocumentModel):
    """The fake generator at 20 ms a call: a sweep job that is still running when the test cancels it."""

    def complete(self, prompts, decoding=None):
        time.sleep(0.02)
        return super().complete(prompts, decoding)


def test_run_again_after_cancel_starts_from_the_finished_tasks(monkeypatch):
    from fairrag_studio.services import resources

    generator, attributor = Generator(SlowModel()), SubstringAttributor()
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)
    at = start(OWNER_A, CURVES)
    start_curves_sweep(at)
    first = the_job(OWNER_A)
    _wait_for(lambda: jobs.runner().get(OWNER_A, first.job_id).done >= 1000, timeout=60)
    jobs.runner().cancel(OWNER_A, first.job_id)
    assert jobs.runner().wait(first.job_id, 60)
    cancelled = jobs.runner().get(OWNER_A, first.job_id)
    assert cancelled.status is JobStatus.CANCELLED and 1000 <= cancelled.done < 3000
    at.run()
    assert any(w.value.startswith(f"Showing {cancelled.done // 1000} of 3 runs") for w in at.warning)  # kept, and shown
    at.button(key="curves_run").click().run()
    second = jobs.runner().jobs(OWNER_A)[0]
    assert second.job_id != first.job_id
    seeded = jobs.runner().live(OWNER_A, second.job_id).partial["results"]
    assert len(seeded) >= cancelled.done // 1000  # the new job starts from what the cancelled one finished
    assert jobs.runner().wait(second.job_id, 60)
    assert jobs.runner().get(OWNER_A, second.job_id).status is JobStatus.DONE
    at.run()
    assert len(at.get("plotly_chart")) == 5 and "Saved as run" in at.success[-1].value


def test_after_a_reload_show_the_result_puts_the_jobs_settings_back(fake_generator_models):
    at = start(OWNER_A, CURVES)
    at.sidebar.number_input(key="seed").set_value(7).run()  # not the default: the reloaded session has 42
    start_curves_sweep(at)
    job = the_job(OWNER_A)
    assert jobs.runner().wait(job.job_id, 60)
    reloaded = start(OWNER_A)  # a reload: every widget back at its default, on the Playground
    assert reloaded.sidebar.number_input(key="seed").value == 42
    reloaded.sidebar.button(key=f"jobs_panel_open_{job.job_id}").click().run()
    assert not reloaded.exception
    assert reloaded.title[0].value == "Disparity curves" and reloaded.sidebar.number_input(key="seed").value == 7
    assert reloaded.radio(key="curves_mode").value == "Exposure + answers"
    assert len(reloaded.get("plotly_chart")) == 5
    assert f"Saved as run {jobs.runner().get(OWNER_A, job.job_id).run_id}" in reloaded.success[-1].value


@pytest.fixture()
def fake_generator_models(monkeypatch):
    from fairrag_studio.services import resources

    generator, attributor = Generator(FirstDocumentModel()), SubstringAttributor()
    monkeypatch.setattr(resources, "generator", lambda name, device, style="short": generator)
    monkeypatch.setattr(resources, "attributor", lambda name, device: attributor)


def test_generate_runs_as_a_job_that_outlives_the_playground(gated_models):
    at = start(OWNER_A)
    at.sidebar.slider(key="k").set_value(3).run()
    at.select_slider(key="alpha").set_value(0.0).run()
    at.button(key="generate").click().run()
    job = the_job(OWNER_A)
    assert job.kind == "generate" and job.active and job.title.endswith("· α = 0")
    assert at.button(key="stop_generation") and at.get("progress")  # the page follows its job
    # and the sidebar lists it at once, with Cancel (it was drawn before the click: the page reruns the app once)
    assert at.sidebar.button(key=f"jobs_panel_cancel_{job.job_id}")
    at.switch_page(CURVES).run()  # leave while the first answer is still being made
    assert not at.exception and jobs.runner().get(OWNER_A, job.job_id).active
    gated_models.gate.set()
    assert jobs.runner().wait(job.job_id, 60)
    assert jobs.runner().get(OWNER_A, job.job_id).status is JobStatus.DONE
    at.switch_page(PLAYGROUND).run()  # back: same query and α, so the answers are there
    assert not at.exception and at.select_slider(key="alpha").value == 0.0
    assert 0 < float(next(m.value for m in at.metric if m.label == "EAR")) <= 1
    assert [m.value for m in at.markdown if "uses 1 of 3 documents" in m.value]


def test_a_page_s_model_call_does_not_hold_the_server_at_exit(monkeypatch):
    """SIGTERM while FAIR-QR's or RichRAG's own model call (not a job) runs: the server still ends within the grace
    period instead of waiting for llama.cpp to return (the catalog's exit handler waits for the call's lock)."""
    import threading
    import time

    from fairrag_core.models import catalog
    from fairrag_studio.services import jobs as jobs_module

    class Busy:
        name = "busy-model"

        def __init__(self):
            self._lock = threading.Lock()

    model = Busy()
    monkeypatch.setitem(catalog._loaded, ("busy-model", None), model)
    monkeypatch.setattr(jobs_module, "_served_by_streamlit", lambda: True)
    exits = []
    monkeypatch.setattr(jobs_module.os, "_exit", exits.append)
    model._lock.acquire()  # a call in progress
    try:
        assert catalog.busy_models() == ["busy-model"]
        started = time.monotonic()
        jobs_module._stop_jobs_at_exit(grace=0.3)
        assert exits == [0] and time.monotonic() - started < 1.5
    finally:
        model._lock.release()
    exits.clear()
    jobs_module._stop_jobs_at_exit(grace=0.3)  # nothing busy: a normal exit, the handlers run
    assert exits == [] and catalog.busy_models() == []
