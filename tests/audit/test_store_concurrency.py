"""The run store under several processes: concurrent saves, a reader during a save, SIGKILL mid-save, lock waits.

The subprocess tests start real Python processes (a few seconds each on 2 cores), so they are marked slow; the
wait-and-refuse logic is also checked in-process with a stand-in for DuckDB's lock error.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from fairrag_core import FairRAGError, SweepConfig
from fairrag_core.audit import store as store_module
from fairrag_core.audit.store import RunStore
from fairrag_core.errors import StoreBusyError, StoreError
from fairrag_core.record import RunKind, RunRecord, SweepRun

ROOT = Path(__file__).resolve().parents[2]

_MAKE_RUN = """
import sys, time
import pandas as pd
from fairrag_core import SweepConfig
from fairrag_core.audit import store as store_module
from fairrag_core.audit.store import RunStore
from fairrag_core.record import RunKind, RunRecord, SweepRun

def make_run(tag, rows):
    record = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection=tag, retriever="bm25",
                       config=SweepConfig(alphas=(0.0, 2.0), seed=1), seed=1)
    table = pd.DataFrame({"query_id": [f"q{i}" for i in range(rows)], "alpha": [2.0] * rows,
                          "ee_d": [i / rows for i in range(rows)]})
    return SweepRun(record=record, table=table, documents=table.assign(doc_id="d"))
"""


def _run(tag: str, rows: int = 3) -> SweepRun:
    record = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection=tag, retriever="bm25",
                       config=SweepConfig(alphas=(0.0, 2.0), seed=1), seed=1)
    table = pd.DataFrame({"query_id": [f"q{i}" for i in range(rows)], "alpha": [2.0] * rows,
                          "ee_d": [i / rows for i in range(rows)]})
    return SweepRun(record=record, table=table, documents=table.assign(doc_id="d"))


def _spawn(code: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(_MAKE_RUN) + textwrap.dedent(code), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    """Kill ``proc`` if it still runs, reap it and close its pipes; its remaining output."""
    if proc.poll() is None:
        proc.kill()
    return proc.communicate(timeout=60)


def _wait_for_line(proc: subprocess.Popen, expected: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.strip() == expected:
            return
        if not line and proc.poll() is not None:
            raise AssertionError(f"subprocess ended before {expected!r}: {proc.stderr.read()}")
    raise AssertionError(f"no {expected!r} from the subprocess within {timeout} s")


# -- in-process: the wait, the refusal and its message ----------------------------------------------------------
class _FakeLock:
    """``duckdb.connect`` that raises DuckDB's lock error ``fails`` times, then connects for real."""

    def __init__(self, fails: int) -> None:
        self.fails, self.calls, self.real = fails, 0, duckdb.connect

    def __call__(self, path, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.fails:
            raise duckdb.IOException(f'IO Error: Could not set lock on file "{path}": Conflicting lock is held in '
                                     "/usr/bin/python3.11 (PID 4242). See also https://duckdb.org/docs")
        return self.real(path, *args, **kwargs)


def test_a_held_store_is_waited_for_then_used(tmp_path, monkeypatch):
    fake = _FakeLock(fails=3)
    monkeypatch.setattr(duckdb, "connect", fake)
    store = RunStore(tmp_path / "runs.duckdb", timeout=10)
    run_id = store.save(_run("waited"))
    assert fake.calls == 4 and store.list()["run_id"].tolist() == [run_id]


def test_a_store_held_too_long_names_the_process_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(duckdb, "connect", _FakeLock(fails=10**6))
    store = RunStore(tmp_path / "runs.duckdb", timeout=0.3)
    start = time.monotonic()
    with pytest.raises(StoreBusyError, match=r"in use by process 4242 \(/usr/bin/python3.11\) for more than 0.3 s"
                                             r".*--store PATH or \$FAIRRAG_RUNS") as caught:
        store.list()
    assert 0.25 < time.monotonic() - start < 3
    assert isinstance(caught.value, FairRAGError) and not isinstance(caught.value, duckdb.Error)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_damaged_store_file_is_a_store_error_with_the_fix(tmp_path):
    path = tmp_path / "runs.duckdb"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="move it aside"):
        RunStore(path).list()


def test_the_store_holds_no_connection_between_operations(tmp_path):
    path = tmp_path / "runs.duckdb"
    store = RunStore(path)
    run_id = store.save(_run("a"))
    con = duckdb.connect(str(path))  # would fail across processes if the store kept its file open; here: no error
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    con.close()
    assert store.load(run_id).table["ee_d"].tolist() == [0.0, 1 / 3, 2 / 3]


def test_a_failed_save_leaves_nothing(tmp_path, monkeypatch):
    store = RunStore(tmp_path / "runs.duckdb")
    kept = store.save(_run("kept"))
    calls = []

    def broken(con, table, run_id, records):
        calls.append(table)
        if table == "run_details":
            raise RuntimeError("disk full")
        original(con, table, run_id, records)

    original = store_module._insert_rows
    monkeypatch.setattr(store_module, "_insert_rows", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        store.save(_run("lost"))
    monkeypatch.undo()
    assert calls == ["run_rows", "run_details"]
    assert store.list()["run_id"].tolist() == [kept]
    con = duckdb.connect(str(store.path))
    assert con.execute("SELECT count(DISTINCT run_id) FROM run_rows").fetchone() == (1,)
    con.close()


def test_threads_of_one_process_save_and_list_at_once(tmp_path):
    """The app's sessions and background jobs share one process: without the per-file lock, DuckDB's shared
    in-process database failed 7 of 8 threads here (catalog write-write conflict, missing pandas scan)."""
    import threading

    store, errors = RunStore(tmp_path / "runs.duckdb"), []

    def work(t):
        try:
            for i in range(3):
                RunStore(store.path).save(_run(f"t{t}-{i}"))  # a new object each time, like the CLI
                store.list()
        except Exception as err:  # collected: a thread's exception would otherwise only be printed
            errors.append(f"{type(err).__name__}: {err}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(store.list()["collection"]) == sorted(f"t{t}-{i}" for t in range(6) for i in range(3))


def test_a_store_held_by_another_thread_too_long_is_busy(tmp_path):
    store = RunStore(tmp_path / "runs.duckdb", timeout=0.2)
    lock = store_module._process_lock(store.path)
    with lock, pytest.raises(StoreBusyError, match="in use by another thread of this process for more than 0.2 s"):
        store.list()
    assert store.list().empty


# -- real processes ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_processes_save_to_one_store_at_once(tmp_path):
    path, go = tmp_path / "runs.duckdb", tmp_path / "go"
    writer = """
    import os, time
    path, go, tag = sys.argv[1:4]
    while not os.path.exists(go):
        time.sleep(0.01)
    store = RunStore(path, timeout=60)
    for i in range(8):
        store.save(make_run(f"{tag}-{i}", 500), label=tag)
        store.list()
    print("DONE", flush=True)
    """
    procs = [_spawn(writer, str(path), str(go), tag) for tag in ("a", "b")]
    time.sleep(0.5)
    go.touch()
    results = [p.communicate(timeout=180) for p in procs]
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0, err
        assert out.strip() == "DONE" and "IOException" not in err
    listed = RunStore(path).list()
    assert sorted(listed["collection"]) == sorted(f"{t}-{i}" for t in "ab" for i in range(8))
    assert set(listed["rows"]) == {500}
    for run_id in listed["run_id"]:
        assert len(RunStore(path).load(run_id).documents) == 500


@pytest.mark.slow
def test_sigkill_mid_save_leaves_no_partial_run(tmp_path):
    path = tmp_path / "runs.duckdb"
    kept = RunStore(path).save(_run("before"))
    killed = """
    original = store_module._insert_rows
    def slow(con, table, run_id, records):
        original(con, table, run_id, records)
        if table == "run_details":  # every row is in, the runs line is not: die here
            print("ROWS IN", flush=True)
            time.sleep(120)
    store_module._insert_rows = slow
    RunStore(sys.argv[1]).save(make_run("killed", 2000))
    """
    proc = _spawn(killed, str(path))
    try:
        _wait_for_line(proc, "ROWS IN")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        _finish(proc)
    assert proc.returncode == -signal.SIGKILL
    store = RunStore(path, timeout=30)
    assert store.list()["run_id"].tolist() == [kept]
    con = duckdb.connect(str(path))
    assert con.execute("SELECT count(*) FROM run_rows WHERE run_id <> ?", [kept]).fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM run_details WHERE run_id <> ?", [kept]).fetchone() == (0,)
    con.close()
    again = store.save(_run("after"))  # the store works after the crash
    assert set(store.list()["run_id"]) == {kept, again}


@pytest.mark.slow
def test_a_reader_during_a_save_waits_and_sees_the_whole_run(tmp_path, caplog):
    path = tmp_path / "runs.duckdb"
    RunStore(path).save(_run("before"))
    writer = """
    original = store_module._insert_rows
    def slow(con, table, run_id, records):
        original(con, table, run_id, records)
        if table == "run_details":
            print("ROWS IN", flush=True)
            time.sleep(3)
    store_module._insert_rows = slow
    RunStore(sys.argv[1]).save(make_run("during", 1000))
    print("SAVED", flush=True)
    """
    proc = _spawn(writer, str(path))
    try:
        _wait_for_line(proc, "ROWS IN")
        start = time.monotonic()
        listed = RunStore(path, timeout=60).list()  # waits for the writer's transaction to end
        waited = time.monotonic() - start
        out, err = proc.communicate(timeout=60)
        assert out.strip().endswith("SAVED")
    finally:
        _finish(proc)
    assert proc.returncode == 0, err
    assert sorted(listed["collection"]) == ["before", "during"] and waited > 1.0
    assert "waiting for the run store" in caplog.text
    during = listed.loc[listed["collection"] == "during", "run_id"].item()
    loaded = RunStore(path).load(during)
    assert len(loaded.table) == 1000 and len(loaded.documents) == 1000


@pytest.mark.slow
def test_an_old_style_process_holding_the_file_gets_a_clear_refusal(tmp_path):
    path = tmp_path / "runs.duckdb"
    RunStore(path).save(_run("before"))
    holder = """
    import duckdb
    con = duckdb.connect(sys.argv[1])  # like the app before: the file held open for the life of the process
    print("HOLDING", flush=True)
    time.sleep(120)
    """
    proc = _spawn(holder, str(path))
    try:
        _wait_for_line(proc, "HOLDING")
        with pytest.raises(StoreBusyError, match=rf"in use by process {proc.pid} .* or save to another store"):
            RunStore(path, timeout=1.5).save(_run("blocked"))
    finally:
        _finish(proc)
    assert RunStore(path, timeout=30).list()["collection"].tolist() == ["before"]
