"""The answer cache's and the job table's errors name the real fix (issue 19, item 7): a read-only file or folder
and a full disk get StoreReadOnlyError / StoreFullError, never the "delete it" advice meant for a damaged file.
Read-only and full are made for real, as in tests/audit/test_store_errors.py (chattr +i as root, chmod otherwise;
the write-ahead log linked to /dev/full)."""

import contextlib
import importlib.util
import os
from pathlib import Path

import pytest

from fairrag_core.audit.jobs import JobTable
from fairrag_core.data.disk_cache import DiskCache
from fairrag_core.errors import StoreFullError, StoreReadOnlyError

_spec = importlib.util.spec_from_file_location("store_errors", Path(__file__).parents[1] / "audit" /
                                               "test_store_errors.py")
_store_errors = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_store_errors)
read_only = _store_errors.read_only


def _stores(tmp_path):
    return [(DiskCache(tmp_path / "cache.sqlite"), lambda s: s.put_many("answer", {"k": "v"}, model="m"),
             "FAIRRAG_CACHE_DB"),
            (JobTable(tmp_path / "jobs.sqlite"), lambda s: s.create("owner", "generate", "t"), "FAIRRAG_JOBS")]


def test_a_read_only_folder_says_make_it_writable(tmp_path):
    for store, write, knob in _stores(tmp_path):
        write(store)  # the file exists and works
        fresh = type(store)(store.path)
        with read_only(store.path), pytest.raises(StoreReadOnlyError) as caught:
            write(fresh)
        text = str(caught.value)
        assert "make it and its folder writable" in text and knob in text and "delete it" not in text


@pytest.fixture()
def full_disk(tmp_path):
    """A tiny tmpfs filled to the last byte (root only; skipped where mounting is not allowed): a real ENOSPC."""
    import subprocess

    mount = tmp_path / "fs"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and permission to mount a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_says_free_space(full_disk):
    for store, write, knob in _stores(full_disk):
        write(store)
        filler = full_disk / f"filler-{knob}"
        with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as handle:  # fill it to the last byte
            while True:
                handle.write(b"x" * 4096)
        with pytest.raises(StoreFullError) as caught:
            for i in range(50):
                write(type(store)(store.path)) if i == 0 else write(store)
        text = str(caught.value)
        assert "is full" in text and "free space there" in text and knob in text and "delete it" not in text
        filler.unlink()
