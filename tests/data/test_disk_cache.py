"""The shared on-disk cache: round trip, keys, location and opt-out, stats, errors by message, several processes."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fairrag_core.data import disk_cache
from fairrag_core.data.disk_cache import CACHE_ENV, DiskCache, cache_key, default_cache_path, default_disk_cache
from fairrag_core.errors import FairRAGError, StoreBusyError, StoreError

ROOT = Path(__file__).resolve().parents[2]


def test_round_trip_first_value_wins_and_stats(tmp_path):
    cache = DiskCache(tmp_path / "c.sqlite")
    assert cache.get_many("answer", ["a", "b"]) == {}
    assert cache.put_many("answer", {"a": {"text": "x"}, "b": [0.5, float("inf")]}, model="m1") == 2
    assert cache.put_many("answer", {"a": {"text": "changed"}, "c": 3}, model="m2") == 1  # "a" keeps its value
    assert cache.get_many("answer", ["a", "b", "c", "zzz", "a"]) == {"a": {"text": "x"}, "b": [0.5, float("inf")],
                                                                    "c": 3}
    assert cache.get_many("nli", ["a"]) == {}  # kinds are separate
    assert cache.model_of("answer", "a") == "m1" and cache.model_of("answer", "zzz") is None
    cache.put_many("nli", [("a", [0.1, 0.8, 0.1])], model="judge")
    stats = cache.stats()
    assert stats.entries == {"answer": 3, "nli": 1} and stats.total == 4
    assert stats.by_model == {("answer", "m1"): 2, ("answer", "m2"): 1, ("nli", "judge"): 1}
    assert stats.bytes > 0 and "3 answer, 1 nli" in stats.describe()
    assert re.search(r"; \d+(\.\d)? kB on disk$", stats.describe())  # a few kB, never "0.0 MB"
    assert cache.clear("nli") == 1 and cache.stats().entries == {"answer": 3}
    assert cache.clear() == 3 and cache.stats().total == 0


def test_many_keys_are_read_in_chunks(tmp_path):
    cache = DiskCache(tmp_path / "c.sqlite")
    items = {f"k{i}": i for i in range(1234)}
    assert cache.put_many("x", items, model="m") == 1234
    assert cache.get_many("x", list(items)) == items


def test_keys_are_canonical_and_sensitive():
    assert cache_key("a", {"x": 1, "y": [1, 2]}) == cache_key("a", {"y": (1, 2), "x": 1})
    assert cache_key("a", "b") != cache_key("a", "b ") != cache_key("ab")
    assert cache_key("a", None) != cache_key("a", "None")


def test_location_and_opt_out(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("FAIRRAG_CACHE", str(tmp_path / "root"))
    assert default_cache_path() == tmp_path / "root" / "cache.sqlite"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine.sqlite"))
    assert default_cache_path() == tmp_path / "mine.sqlite"
    assert default_disk_cache() is default_disk_cache()  # one object per file and process
    assert default_disk_cache().path == tmp_path / "mine.sqlite"
    for word in ("off", "0", "OFF", "none", "false"):
        monkeypatch.setenv(CACHE_ENV, word)
        assert default_cache_path() is None and default_disk_cache() is None


def test_a_damaged_file_is_a_store_error_naming_the_fix(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"definitely not sqlite " * 200)
    with pytest.raises(StoreError, match=r"holds only cached answers.*delete it.*FAIRRAG_CACHE_DB=off"):
        DiskCache(path).get_many("answer", ["a"])


def test_an_unwritable_location_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open the answer cache .*FAIRRAG_CACHE_DB=off"):
        DiskCache(blocker / "sub" / "c.sqlite").get_many("answer", ["a"])


def test_readers_go_on_during_a_write_and_a_long_write_is_a_clear_wait(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = DiskCache(path, timeout=0.3)
    cache.put_many("answer", {"a": 1}, model="m")
    other = sqlite3.connect(path, isolation_level=None)  # another writer, mid-transaction
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO entries VALUES ('answer', 'b', 'm', '2', 0)")
    try:
        assert cache.get_many("answer", ["a", "b"]) == {"a": 1}  # WAL: the committed view, no wait
        start = time.monotonic()
        with pytest.raises(StoreBusyError, match=r"stayed locked by another process's write for more than 0.3 s"):
            cache.put_many("answer", {"c": 3}, model="m")
        assert time.monotonic() - start >= 0.25
    finally:
        other.execute("COMMIT")
        other.close()
    assert cache.get_many("answer", ["a", "b"]) == {"a": 1, "b": 2}


def test_errors_are_in_the_family():
    assert issubclass(StoreBusyError, StoreError) and issubclass(StoreError, FairRAGError)
    assert disk_cache.__all__  # the module's front door


# -- real processes ---------------------------------------------------------------------------------------------
_WRITER = """
import json, sys
from fairrag_core.data.disk_cache import DiskCache
path, tag = sys.argv[1:3]
cache = DiskCache(path)
new = 0
for batch in range(40):
    new += cache.put_many("answer", {f"k{batch}-{i}": [tag, batch, i] for i in range(10)}, model=tag)
    seen = cache.get_many("answer", [f"k{batch}-{i}" for i in range(10)])
    assert len(seen) == 10
print(json.dumps({"new": new}))
"""


def _python(code: str, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kwargs)


@pytest.mark.slow
def test_two_processes_write_the_same_keys_at_once(tmp_path):
    path = tmp_path / "c.sqlite"
    DiskCache(path).stats()  # create the file (WAL mode) first
    procs = [_python(_WRITER, str(path), tag) for tag in ("a", "b")]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (_out, err) in zip(procs, outs):
        assert proc.returncode == 0, err
    news = [json.loads(out)["new"] for out, _ in outs]
    assert sum(news) == 400  # every key written once, by whichever process came first
    assert DiskCache(path).stats().entries == {"answer": 400}


def test_a_writer_killed_mid_transaction_leaves_the_cache_as_it_was(tmp_path):
    path = tmp_path / "c.sqlite"
    DiskCache(path).put_many("answer", {"kept": 1}, model="m")
    killed = """
    import sqlite3, sys, time
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    con.executemany("INSERT INTO entries VALUES ('answer', ?, 'm', '0', 0)", [(f"x{i}",) for i in range(5000)])
    print("WRITING", flush=True)
    time.sleep(120)
    """
    proc = _python(killed, str(path))
    try:
        assert proc.stdout.readline().strip() == "WRITING"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
    cache = DiskCache(path, timeout=5)
    assert cache.stats().entries == {"answer": 1}
    assert cache.put_many("answer", {"after": 2}, model="m") == 1  # the dead writer's lock is gone
