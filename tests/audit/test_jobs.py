"""The job table: rows per owner, progress and ETA, cancel, failures with their message, orphans of a dead process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fairrag_core import InvalidParameterError
from fairrag_core.audit.jobs import JobStatus, JobTable, default_jobs_path


@pytest.fixture()
def table(tmp_path):
    return JobTable(tmp_path / "jobs.sqlite")


def test_create_update_and_list_per_owner(table):
    a = table.create("aaaa0000", "sweep", "Sweep one", key="k1", page="app_pages/disparity_curves.py", total=4)
    b = table.create("bbbb0000", "audit", "Audit two", key="k2")
    assert a.status is JobStatus.QUEUED and a.total == 4 and a.active
    table.start(a.job_id)
    table.progress(a.job_id, 1, 4, "Run 2 of 4")
    got = table.get("aaaa0000", a.job_id)
    assert got.status is JobStatus.RUNNING and (got.done, got.total, got.note) == (1, 4, "Run 2 of 4")
    assert got.fraction == 0.25 and got.eta is not None and got.eta >= 0
    assert [j.job_id for j in table.list("aaaa0000")] == [a.job_id]
    assert [j.job_id for j in table.list("bbbb0000")] == [b.job_id]
    assert table.get("bbbb0000", a.job_id) is None  # another owner's id reveals nothing
    table.finish(a.job_id, JobStatus.DONE, run_id="run123")
    done = table.get("aaaa0000", a.job_id)
    assert done.status is JobStatus.DONE and done.run_id == "run123" and not done.active and done.eta is None
    newer = table.create("aaaa0000", "sweep", "Sweep again", key="k1")
    assert [j.job_id for j in table.list("aaaa0000", key="k1")] == [newer.job_id, a.job_id]
    assert table.list("aaaa0000", key="other") == []


def test_cancel_is_per_owner_and_only_for_unfinished_jobs(table):
    job = table.create("aaaa0000", "sweep", "S")
    table.start(job.job_id)
    with pytest.raises(InvalidParameterError, match="no job"):
        table.request_cancel("bbbb0000", job.job_id)
    assert not table.cancel_requested(job.job_id)
    assert table.request_cancel("aaaa0000", job.job_id) is True
    assert table.cancel_requested(job.job_id) and table.get("aaaa0000", job.job_id).cancel
    table.finish(job.job_id, JobStatus.CANCELLED)
    assert table.request_cancel("aaaa0000", job.job_id) is False  # over already


def test_failure_keeps_its_message(table):
    job = table.create("aaaa0000", "audit", "A")
    table.finish(job.job_id, JobStatus.FAILED, error="the run store is busy; try again")
    failed = table.get("aaaa0000", job.job_id)
    assert failed.status is JobStatus.FAILED and failed.error == "the run store is busy; try again"
    with pytest.raises(InvalidParameterError, match="done, failed or cancelled"):
        table.finish(job.job_id, JobStatus.RUNNING)
    assert table.delete_finished("aaaa0000") == 1 and table.list("aaaa0000") == []


def test_an_owner_is_required(table):
    with pytest.raises(InvalidParameterError, match="owner"):
        table.create("", "sweep", "S")


def test_jobs_of_a_process_that_died_are_marked_failed(table):
    code = ("import sys; from fairrag_core.audit.jobs import JobTable; t = JobTable(sys.argv[1]); "
            "j = t.create('aaaa0000', 'sweep', 'S'); t.start(j.job_id); print(j.job_id)")
    job_id = subprocess.run([sys.executable, "-c", code, str(table.path)], capture_output=True, text=True,
                            check=True).stdout.strip()
    mine = table.create("aaaa0000", "sweep", "mine")
    assert table.interrupt_orphans({mine.job_id}) == 1  # the subprocess has exited; this process's live job stays
    dead = table.get("aaaa0000", job_id)
    assert dead.status is JobStatus.FAILED and "app stopped" in dead.error
    assert table.get("aaaa0000", mine.job_id).active


def test_the_table_sits_beside_the_run_store(tmp_path, monkeypatch):
    monkeypatch.delenv("FAIRRAG_JOBS", raising=False)
    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "store" / "runs.duckdb"))
    assert default_jobs_path() == tmp_path / "store" / "jobs.sqlite"
    monkeypatch.setenv("FAIRRAG_JOBS", str(tmp_path / "elsewhere.sqlite"))
    assert default_jobs_path() == tmp_path / "elsewhere.sqlite"


def test_the_eta_counts_only_the_steps_this_job_made(table, monkeypatch):
    import fairrag_core.audit.jobs as module

    clock = [1000.0]
    monkeypatch.setattr(module.time, "time", lambda: clock[0])
    job = table.create("aaaa0000", "sweep", "S", total=10)
    table.start(job.job_id)
    clock[0] += 30  # 2 steps in 30 s after 4 found finished: 15 s a step, 4 steps left
    table.progress(job.job_id, 6, 10, base=4)
    assert table.get("aaaa0000", job.job_id).eta == pytest.approx(60.0)
    table.progress(job.job_id, 6, 10)  # without a base: 30 s for 6 steps
    assert table.get("aaaa0000", job.job_id).eta == pytest.approx(20.0)
