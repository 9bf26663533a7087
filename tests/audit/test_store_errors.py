"""The run store's errors name the real fix (issue 19, item 7): a read-only file, a read-only folder, a full disk and
a damaged file each get their own StoreError subclass and message.

Read-only places are made for real: ``chmod a-w`` for a normal user; root ignores permissions, so as root the file
or folder is made immutable (``chattr +i``), which root's writes respect too (the test is skipped where neither
works). The full disk is real too, without a mount: DuckDB's write-ahead log ``runs.duckdb.wal`` is made a link to
``/dev/full``, where every write fails with ENOSPC. The exact wording other systems give (``Permission denied``
for a normal user, a full quota) is checked with DuckDB's message put in its place.
"""

import contextlib
import errno
import os
import subprocess
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from fairrag_core import SweepConfig
from fairrag_core.audit import store as store_module
from fairrag_core.audit.store import RunStore, StoreDamagedError, StoreFullError, StoreReadOnlyError
from fairrag_core.errors import StoreBusyError, StoreError
from fairrag_core.record import RunKind, RunRecord, SweepRun

FIX = "--store PATH or $FAIRRAG_RUNS"


def _run(tag: str = "t") -> SweepRun:
    record = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection=tag, retriever="bm25",
                       config=SweepConfig(alphas=(0.0, 2.0), seed=1), seed=1)
    return SweepRun(record=record, table=pd.DataFrame({"query_id": ["q1"], "alpha": [2.0], "ee_d": [0.25]}),
                    documents=pd.DataFrame())


@contextlib.contextmanager
def read_only(path: Path):
    """``path`` (a file or a folder) read-only for this process while the block runs."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"as root, a read-only place needs chattr +i, which failed here: {made.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_store_file_says_make_it_writable_not_move_it_aside(tmp_path):
    path = tmp_path / "runs.duckdb"
    RunStore(path).save(_run())
    with read_only(path), pytest.raises(StoreReadOnlyError) as caught:
        RunStore(path, timeout=1).save(_run())
    message = str(caught.value)
    assert f"the file {path} is read-only here: make it writable (chmod u+w {path})" in message
    assert FIX in message and "move it aside" not in message and "damaged" not in message
    assert isinstance(caught.value, StoreError) and caught.value.__cause__ is None


def test_a_read_only_folder_for_a_new_store_names_the_folder(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    with read_only(folder), pytest.raises(StoreReadOnlyError) as caught:
        RunStore(folder / "runs.duckdb", timeout=1).list()
    message = str(caught.value)
    assert f"its folder {folder} is read-only here" in message and f"chmod u+w {folder}" in message
    assert FIX in message and "move it aside" not in message


def test_a_read_only_folder_holding_a_store_still_lists_but_refuses_a_save_with_the_fix(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "runs.duckdb"
    kept = RunStore(path).save(_run("kept"))
    with read_only(folder):
        store = RunStore(path, timeout=1)
        assert store.list()["run_id"].tolist() == [kept]  # reading needs no write-ahead log
        with pytest.raises(StoreReadOnlyError) as caught:
            store.save(_run("refused"))
    message = str(caught.value)
    assert f"its folder {folder} is read-only here (DuckDB writes runs.duckdb and runs.duckdb.wal in it)" in message
    assert FIX in message and "move it aside" not in message
    assert RunStore(path).list()["run_id"].tolist() == [kept]


def test_a_full_disk_says_free_space_on_that_disk_or_use_another_store(tmp_path):
    path = tmp_path / "runs.duckdb"
    kept = RunStore(path).save(_run("kept"))
    wal = Path(f"{path}.wal")
    assert not wal.exists()
    wal.symlink_to("/dev/full")  # the next write of the log fails with ENOSPC, as on a full disk
    try:
        with pytest.raises(StoreFullError) as caught:
            RunStore(path, timeout=1).save(_run("lost"))
    finally:
        wal.unlink()
    message = str(caught.value)
    assert message.startswith(f"the disk holding the run store {path} is full (")
    assert os.strerror(errno.ENOSPC) in message
    mount = Path(path)
    while not os.path.ismount(mount):
        mount = mount.parent
    assert "free space on " in message and f"(mounted on {mount})" in message and FIX in message
    assert "move it aside" not in message
    assert RunStore(path).list()["run_id"].tolist() == [kept]  # the failed save left nothing


def test_duckdbs_wording_for_a_normal_user_and_a_full_disk(tmp_path, monkeypatch):
    """What DuckDB says on other systems: ``Permission denied`` (a non-root user), ``Read-only file system``, and a
    full disk while the rows are written."""
    path = tmp_path / "runs.duckdb"
    RunStore(path).list()

    def refuse(text):
        def connect(where, *args, **kwargs):
            raise duckdb.IOException(text.format(where))
        return connect

    monkeypatch.setattr(duckdb, "connect", refuse('IO Error: Cannot open file "{}": Permission denied'))
    with pytest.raises(StoreReadOnlyError, match=r"the file .* is read-only here: make it writable"):
        RunStore(path, timeout=1).list()
    monkeypatch.setattr(duckdb, "connect", refuse('IO Error: Cannot open file "{}": Read-only file system'))
    with pytest.raises(StoreReadOnlyError, match=r"Read-only file system\): the file"):
        RunStore(path, timeout=1).list()
    monkeypatch.undo()

    def full(con, table, run_id, records):
        raise duckdb.IOException(f'IO Error: Could not write file "{path}.wal": No space left on device')

    monkeypatch.setattr(store_module, "_insert_rows", full)
    with pytest.raises(StoreFullError, match="is full .*: free space on .*--store PATH or"):
        RunStore(path, timeout=1).save(_run())


def test_a_folder_that_cannot_be_made_gets_the_same_diagnosis(tmp_path, monkeypatch):
    def no_room(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    monkeypatch.setattr(Path, "mkdir", no_room)
    with pytest.raises(StoreFullError, match="free space on"):
        RunStore(tmp_path / "new" / "runs.duckdb").list()

    def denied(self, *args, **kwargs):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    monkeypatch.setattr(Path, "mkdir", denied)
    with pytest.raises(StoreReadOnlyError, match=r"its folder .* is read-only here"):
        RunStore(tmp_path / "new" / "runs.duckdb").list()


def test_a_damaged_file_is_told_apart_from_the_others(tmp_path):
    path = tmp_path / "runs.duckdb"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreDamagedError, match="If the file is damaged, move it aside") as caught:
        RunStore(path).list()
    assert not isinstance(caught.value, (StoreReadOnlyError, StoreFullError, StoreBusyError))
