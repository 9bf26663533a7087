"""The shared reader (:mod:`fairrag_core.data.files`): only regular files, a byte budget kept while reading, gzip
inflated as a stream, lines split on ``\\n`` only, bounded lines, and every loader reading through it (issue 19)."""

import gzip
import hashlib
import itertools
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core.data import files, load_corpus, load_judgments, load_qrels, load_queries, load_rag_log, load_run
from fairrag_core.data.files import CHUNK_BYTES, check_upload, read_lines
from fairrag_core.data.judgments import parse_judgments
from fairrag_core.data.loaders import load_aspect_qrels
from fairrag_core.data.served import parse_run
from fairrag_core.errors import DataFormatError

ROOT = Path(__file__).resolve().parents[2]
LOADERS = {"corpus": (load_corpus, "corpus.jsonl"), "queries": (load_queries, "queries.jsonl"),
           "qrels": (load_qrels, "qrels.txt"), "aspect_qrels": (load_aspect_qrels, "aspect_qrels.tsv"),
           "run": (load_run, "run.txt"), "judgments": (load_judgments, "qrels.txt"),
           "rag_log": (load_rag_log, "log.jsonl")}


def _at_once(call, fifo: Path | None = None, seconds: float = 10.0):
    """``call()``'s exception (or None); fails if it has not returned within ``seconds`` (a FIFO opened for
    reading blocks until a writer comes: the test then plays the writer so that the thread ends)."""
    box: dict = {}

    def target():
        try:
            call()
        except BaseException as err:  # handed back to the test
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if fifo is not None:
            with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
                pass
        pytest.fail(f"did not return within {seconds} s (it is blocked reading)")
    return box.get("error")


def _lines(data: bytes, **kwargs) -> list[tuple[int, str]]:
    return list(read_lines(data, **kwargs))


# -- what a path may be ---------------------------------------------------------------------------------------------
@pytest.fixture
def short_dir():
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="frs") as folder:  # a socket path has ≤ 107 bytes
        yield Path(folder)


@pytest.fixture(params=["fifo", "dev-zero", "link-to-dev-zero", "socket", "folder"])
def not_a_file(request, short_dir):
    kind = request.param
    path = short_dir / "data.jsonl"
    held = None
    if kind == "fifo":
        os.mkfifo(path)
        words = "is a FIFO (named pipe), not a regular file"
    elif kind == "dev-zero":
        path, words = Path("/dev/zero"), "is a character device, not a regular file"
    elif kind == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
        words = "is a character device, not a regular file"
    elif kind == "socket":
        held = socket.socket(socket.AF_UNIX)
        held.bind(str(path))
        words = "is a socket, not a regular file"
    else:
        path.mkdir()
        words = "is a folder, not a regular file"
    yield path, words
    if held is not None:
        held.close()


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_anything_but_a_regular_file_is_refused_at_once(not_a_file, loader):
    path, words = not_a_file
    error = _at_once(lambda: LOADERS[loader][0](path), fifo=path if path.is_fifo() else None)
    assert isinstance(error, DataFormatError), error
    if loader == "corpus" and path.suffix != ".jsonl":  # /dev/zero: the corpus loader asks for its format first
        words = "unsupported corpus format; use .jsonl or .csv"
    else:
        words += "; give the path of a data file (.jsonl, .csv, .txt, .gz)"
    assert str(error) == f"{path}: {words}"


def _stat_says(monkeypatch, path: Path, **fields):
    """Make ``os.stat`` (what the reader asks before opening) tell a different story about ``path``."""
    real = os.stat
    names = ["st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime", "st_mtime",
             "st_ctime"]

    def stat(p, *args, **kwargs):
        result = real(p, *args, **kwargs)
        if Path(p) != path:
            return result
        values = [fields.get(name, getattr(result, name)) for name in names]
        return os.stat_result([int(v) if i < 7 else v for i, v in enumerate(values)])

    monkeypatch.setattr(files.os, "stat", stat)


def test_the_kind_is_checked_again_after_opening(tmp_path, monkeypatch):
    """A path swapped for a FIFO between stat and open: it is opened without blocking, and fstat refuses it."""
    fifo = tmp_path / "run.txt"
    os.mkfifo(fifo)
    _stat_says(monkeypatch, fifo, st_mode=0o100644)  # what stat said before the swap: a regular file
    error = _at_once(lambda: load_run(fifo), fifo=fifo)
    assert isinstance(error, DataFormatError) and "is a FIFO (named pipe), not a regular file" in str(error)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(DataFormatError, match=r"nope.jsonl: file not found; check the path"):
        load_corpus(tmp_path / "nope.jsonl")
    with pytest.raises(DataFormatError, match=r"file not found; check the path"):
        load_qrels(tmp_path / "not-a-folder.txt" / "qrels.txt")
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.txt"
        locked.write_text("q 0 d 1\n")
        locked.chmod(0)
        with pytest.raises(DataFormatError, match=r"cannot be read \(Permission denied\); check its permissions"):
            load_qrels(locked)
    with pytest.raises(TypeError, match="reads a path"):
        read_lines("q 0 d 1")  # a str is neither: a path is a Path, a text its bytes


# -- the byte budget --------------------------------------------------------------------------------------------
def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRRAG_MAX_FILE_MB", "1")
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q 0 d 1\n" * 250_000)  # 2 MB
    with pytest.raises(DataFormatError, match=r"qrels.txt: the file is 2 MB, more than the 1 MB a loader reads into "
                                              r"memory; split it, or raise the limit with FAIRRAG_MAX_FILE_MB"):
        load_qrels(path)


def test_the_limit_is_kept_while_reading_whatever_st_size_says(tmp_path, monkeypatch):
    """A file whose size is not known in advance (``/proc`` files say 0, a file may grow): the bytes are counted."""
    monkeypatch.setenv("FAIRRAG_MAX_FILE_MB", "1")
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q 0 d 1\n" * 250_000)
    _stat_says(monkeypatch, path, st_size=0)
    monkeypatch.setattr(files, "CHUNK_BYTES", 64 * 1024)

    class Sizes(list):
        def update(self, data):
            self.append(len(data))

    seen = Sizes()
    with pytest.raises(DataFormatError, match=r"qrels.txt: the file is more than the 1 MB a loader reads into memory"):
        list(read_lines(path, digest=seen))
    assert 1_000_000 - 64 * 1024 < sum(seen) <= 1_000_000  # stopped at the limit, not at the end (2 MB)
    assert len(list(read_lines(Path("/proc/self/status")))) > 5  # st_size 0, and read all the same


@pytest.mark.parametrize("members", [1, 3])
def test_a_gzip_past_the_limit_is_refused_as_it_inflates(tmp_path, monkeypatch, members):
    monkeypatch.setenv("FAIRRAG_MAX_FILE_MB", "1")
    n = 120_000 // members
    for parse, line in ((parse_run, b"q1 s%d d%d %d 2.0 sys\n"), (parse_judgments, b"q1 0 d%d-%d %d\n")):
        bomb = b"".join(gzip.compress(b"".join(line % (m, i, i + 1) for i in range(n))) for m in range(members))
        assert len(bomb) < 1_000_000 < len(gzip.decompress(bomb))
        with pytest.raises(DataFormatError, match=r"<\w+>: the file decompresses to more than 1 MB, more than a loader "
                                                  r"reads into memory; split it, or raise the limit"):
            parse(bomb)
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(gzip.compress(b'{"query_id": "q1", "ranking": ["d1"]}\n' * (60_000 // members))
                              for _ in range(members)))
    with pytest.raises(DataFormatError, match=r"log.jsonl: the file decompresses to more than 1 MB"):
        load_rag_log(path)


def test_gzip_members_padding_and_broken_streams():
    text = b"q1 0 d1 1\nq1 0 d2 0\n"
    assert _lines(gzip.compress(text[:7]) + gzip.compress(text[7:]) + b"\0\0") == [(1, "q1 0 d1 1"), (2, "q1 0 d2 0")]
    with pytest.raises(DataFormatError, match=r"<data>: looks gzipped but cannot be decompressed \(the data ends in "
                                              r"the middle of the stream\); re-compress it or save it as plain text"):
        _lines(gzip.compress(text)[:-5])
    broken = bytearray(gzip.compress(text * 50))
    broken[20:30] = b"\xff" * 10
    with pytest.raises(DataFormatError, match=r"cannot be decompressed \(the data is corrupt\)"):
        _lines(bytes(broken))
    with pytest.raises(DataFormatError, match=r"cannot be decompressed \(the data is corrupt\)"):
        _lines(gzip.compress(text) + b"garbage after the member")


def test_a_stream_that_inflates_past_a_chunk_is_read_whole():
    text = b"".join(b"q%d 0 d%d 1\n" % (i % 97, i) for i in range(300_000))  # 4 MB: many full outputs of zlib
    packed = zlib.compress(text, 9, wbits=31)
    lines = _lines(packed)
    assert len(lines) == 300_000 and lines[-1] == (300_000, "q75 0 d299999 1")


# -- lines ------------------------------------------------------------------------------------------------------
def test_lines_split_on_line_feed_only():
    data = "a\u2028b\r\nc\u2029d\u0085e\x0bf\x0cg\x1ch\n\r\n  \ni\rj\n".encode()
    assert _lines(data) == [(1, "a\u2028b"), (2, "c\u2029d\u0085e\x0bf\x0cg\x1ch"), (5, "i\rj")]


def test_a_byte_order_mark_only_at_the_very_start():
    bom = "\ufeff".encode()
    assert _lines(bom + b"a\n" + bom + b"b\n") == [(1, "a"), (2, "\ufeffb")]
    assert _lines(bom + b"\nb\n") == [(2, "b")]


def test_bad_utf8_names_the_line_and_the_byte_offset():
    with pytest.raises(DataFormatError, match=r"<data>, line 3: not valid UTF-8 \(byte 0xe9 at offset 7\); re-save the "
                                              r"file as UTF-8"):
        _lines(b"ok\n\ncaf\xe9\n")
    with pytest.raises(DataFormatError, match=r"x.txt, line 1: not valid UTF-8 \(byte 0xed at offset 4\)"):
        _lines("\ufeffa".encode() + b"\xed\xa0\x80", where="x.txt")  # a UTF-8-encoded surrogate is not UTF-8


def test_a_line_longer_than_the_limit_is_refused_before_it_is_held(monkeypatch):
    monkeypatch.setenv("FAIRRAG_MAX_LINE_MB", "0.01")
    assert _lines(b"ok\n" + b"x" * 10_000 + b"\n")[1] == (2, "x" * 10_000)
    for tail in (b"x" * 10_001 + b"\nok\n", b"x" * 3 * CHUNK_BYTES, b" " * 3 * CHUNK_BYTES, b"\0" * 20_000):
        with pytest.raises(DataFormatError, match=r"<data>, line 2: the line is longer than the 0.01 MB a loader holds "
                                                  r"as one line; put one record per line .*FAIRRAG_MAX_LINE_MB"):
            _lines(b"ok\n" + tail)


def test_the_default_line_limit_keeps_long_lines_working():
    assert files.max_line_bytes() == 64_000_000
    line = "y" * 11_000_000
    assert _lines(f"a\n{line}\nb".encode()) == [(1, "a"), (2, line), (3, "b")]


def test_a_file_of_whitespace_is_counted_not_split(tmp_path):
    path = tmp_path / "run.txt"
    with path.open("wb") as out:
        out.write(b"q1 s1 d1 1 1 sys\n")
        for _ in range(40):
            out.write(b"\n" * (CHUNK_BYTES - 3) + b" \t\n")
        out.write(b"q1 s1 d2 2 1 sys")
    start = time.perf_counter()
    lines = list(read_lines(path))
    assert time.perf_counter() - start < 5  # 42 M lines: a split would take a minute
    assert lines == [(1, "q1 s1 d1 1 1 sys"), (40 * (CHUNK_BYTES - 2) + 2, "q1 s1 d2 2 1 sys")]
    with pytest.raises(DataFormatError, match=r"run.txt, line 2: blank line; delete it"):
        load_run(path)


def test_the_digest_is_of_the_raw_bytes(tmp_path):
    path = tmp_path / "qrels.txt.gz"
    path.write_bytes(gzip.compress(b"q 0 d 1\n"))
    digest = hashlib.sha256()
    assert list(read_lines(path, digest=digest)) == [(1, "q 0 d 1")]
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()


_PIECES = st.sampled_from([b"a", b"b c", b" ", b"\t", b"\n", b"\n", b"\r", b"\r\n", "\u2028".encode(), "é".encode(),
                           "\xa0".encode(), "\ufeff".encode(), b"\0", b"#", b"\x0b"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40), st.lists(st.integers(0, 200), max_size=6), st.booleans())
def test_lines_do_not_depend_on_where_the_chunks_end(pieces, cuts, comments):
    data = b"".join(pieces)
    expected = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        line = line[3:] if number == 1 and line.startswith(b"\xef\xbb\xbf") else line
        line = line.removesuffix(b"\r")
        if line.strip(b" \t\r\x0b\x0c") and not (comments and line.lstrip(b" \t\r\x0b\x0c").startswith(b"#")):
            expected.append((number, line.decode()))
    ends = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(ends)]
    assert list(files._lines(chunks, "x", 1_000_000, comments)) == expected


# -- uploads ----------------------------------------------------------------------------------------------------
def test_an_upload_is_measured_after_inflating(tmp_path, monkeypatch):
    from fairrag_studio.views.served import save_served_upload

    monkeypatch.setenv("FAIRRAG_MAX_UPLOAD_MB", "1")
    small = gzip.compress(b'{"query_id": "q1", "ranking": ["d1"]}\n' * 1000)
    check_upload("log.jsonl", small)
    bomb = gzip.compress(b'{"query_id": "q1", "ranking": ["d1"]}\n' * 60_000)  # 2.3 MB from 10 kB
    assert len(bomb) < 20_000
    with pytest.raises(DataFormatError, match=r"log.jsonl.gz: the upload decompresses to more than 1 MB, more than "
                                              r"the app accepts; .*FAIRRAG_MAX_UPLOAD_MB"):
        save_served_upload("log.jsonl.gz", bomb, tmp_path / "uploads")
    assert not (tmp_path / "uploads").exists()
    with pytest.raises(DataFormatError, match=r"corpus.jsonl: the upload is 2 MB, more than the 1 MB the app accepts"):
        check_upload("corpus.jsonl", b" " * 2_000_000)


# -- decompression bombs ----------------------------------------------------------------------------------------
_VALID = {
    "rag_log": (load_rag_log, "log.jsonl", b'{"query_id": "q1", "ranking": ["d1", "d2"], "answer": "yes"}\n'),
    "corpus": (load_corpus, "corpus.jsonl", b'{"doc_id": "d1", "text": "A trainer."}\n'),
    "corpus.csv": (load_corpus, "corpus.csv", b"d1,A trainer.\n"),
    "queries": (load_queries, "queries.jsonl", b'{"query_id": "q1", "text": "shoes"}\n'),
    "qrels": (load_qrels, "qrels.txt", b"q1 0 d1 2\n"),
    "aspect_qrels": (load_aspect_qrels, "aspect_qrels.tsv", b"q1\t0\td1\n"),
    "run": (load_run, "run.txt", b"q1 s1 d1 1 2.0 sys\n"),
    "run.fair": (load_run, "run.tsv", b"q1\t1\td1\n"),
    "judgments": (load_judgments, "judgments.txt", b"q1 1|2 d1 2\n"),
}
_HEADERS = {"corpus.csv": b"doc_id,text\n", "aspect_qrels": b"query_id\taspect_index\tdoc_id\n"}


def _bomb(path: Path, unit: bytes, size: int, head: bytes = b"") -> Path:
    """A gzip file of ``size`` inflated bytes: ``head``, then ``unit`` repeated, as members of 1 MiB each (each
    member is compressed once, so the file is written in a moment; the reader must handle many members)."""
    block = unit * (CHUNK_BYTES // len(unit))
    member = zlib.compress(block, 9, wbits=31)
    with path.open("wb") as out:
        if head:
            out.write(gzip.compress(head))
        for _ in range(size // len(block)):
            out.write(member)
    return path


@pytest.mark.parametrize("content", ["nul", "newlines", "spaces", *_VALID])
def test_a_small_bomb_of_each_content_is_refused_or_read(tmp_path, monkeypatch, content):
    monkeypatch.setenv("FAIRRAG_MAX_FILE_MB", "4")
    monkeypatch.setenv("FAIRRAG_MAX_LINE_MB", "1")
    monkeypatch.setenv("FAIRRAG_MAX_LOG_LINES", "10000")
    if content in _VALID:
        load, name, unit = _VALID[content]
        path = _bomb(tmp_path / name, unit, 3 * CHUNK_BYTES, _HEADERS.get(content, b""))
        error = _at_once(lambda: load(path))
        expected = {"rag_log": r"line 10001: more than 10,000 log lines, more than one load holds in memory; for "
                               r"exposure only, audit-log --attribution none .*split the log .*FAIRRAG_MAX_LOG_LINES",
                    "corpus": "line 2: duplicate doc_id 'd1'", "corpus.csv": "line 3: duplicate doc_id 'd1'",
                    "queries": "line 2: duplicate query_id 'q1'",
                    "qrels": r"line 2: duplicate judgement for \(q1, d1\)",
                    "aspect_qrels": r"line 3: duplicate judgement \(q1, 0, d1\)",
                    "run": "line 2: rank 1 appears twice", "run.fair": "line 2: page 'd1' appears twice",
                    "judgments": r"line 2: duplicate judgment for \(q1, d1\)"}[content]
        assert isinstance(error, DataFormatError), error
        assert re.search(expected, str(error)), error
        return
    unit = {"nul": b"\0", "newlines": b"\n", "spaces": b" "}[content]
    long_line = "line 1: the line is longer than the 1 MB"
    for size, words in ((3 * CHUNK_BYTES, long_line if unit != b"\n" else None),
                        (5 * CHUNK_BYTES, long_line if unit != b"\n" else "the file decompresses to more than 4 MB")):
        for load, name, _ in _VALID.values():
            path = _bomb(tmp_path / name, unit, size)
            error = _at_once(lambda: load(path))  # noqa: B023 - called at once
            if words is None:  # 3 MB of newlines: an empty file
                assert error is None or "the file is empty" in str(error) or "empty file" in str(error), error
            else:
                assert isinstance(error, DataFormatError) and words in str(error), (name, error)


_PEAK_SCRIPT = """
import resource, sys
from pathlib import Path
from fairrag_core.data import load_corpus, load_judgments, load_qrels, load_rag_log, load_run
from fairrag_core.errors import DataFormatError
results = []
for loader, path in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        {"log": load_rag_log, "run": load_run, "judgments": load_judgments, "qrels": load_qrels,
         "corpus": load_corpus}[loader](Path(path))
        results.append("ok")
    except DataFormatError as err:
        results.append(str(err).split(": ", 1)[1])
peak = int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1]) * 1024
print(peak)
print("\\n".join(results))
"""


@pytest.mark.slow
def test_a_900_megabyte_bomb_stays_under_one_and_a_half_gigabytes(tmp_path):
    """The tester's case at full size: a ~2 MB .gz that inflates to 900 MB, under the default 1,000 MB limit, read
    by loaders in a fresh process whose peak resident memory (VmHWM) must stay under 1.5 GB."""
    size = 900 * 1_000_000
    cases = {
        "nul": [("corpus", _bomb(tmp_path / "nul.jsonl", b"\0", size)), ("run", tmp_path / "nul.jsonl")],
        "newlines": [("log", _bomb(tmp_path / "nl.jsonl", b"\n", size)), ("run", tmp_path / "nl.jsonl")],
        "spaces": [("judgments", _bomb(tmp_path / "sp.txt", b" ", size))],
        "valid lines": [
            ("log", _bomb(tmp_path / "log.jsonl", b'{"query_id": "q1", "ranking": ["d1", "d2"], "answer": "y"}\n',
                          size)),
            ("run", _bomb(tmp_path / "run.txt", b"q1 s1 d1 1 2.0 sys\n", size)),
            ("qrels", _bomb(tmp_path / "qrels.txt", b"q1 0 d1 2\n", size))],
    }
    assert all(path.stat().st_size < 3_000_000 for runs in cases.values() for _, path in runs)
    expected = {"nul": ["the line is longer than the 64 MB"] * 2, "newlines": ["no log lines found", "no rankings"],
                "spaces": ["the line is longer than the 64 MB"],
                "valid lines": ["more than 2,000,000 log lines", "rank 1 appears twice", "duplicate judgement"]}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for env_name in ("FAIRRAG_MAX_FILE_MB", "FAIRRAG_MAX_LINE_MB", "FAIRRAG_MAX_LOG_LINES"):
        env.pop(env_name, None)
    peaks = {}
    for content, runs in cases.items():
        argv = [part for loader, path in runs for part in (loader, str(path))]
        done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, *argv], capture_output=True, text=True,
                              timeout=120, env=env, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        peak, *results = done.stdout.strip().splitlines()
        peaks[content] = int(peak)
        for got, words in zip(results, expected[content], strict=True):
            assert words in got, (content, got)
    print("peak resident memory:", {k: f"{v / 1e6:,.0f} MB" for k, v in peaks.items()})
    assert max(peaks.values()) < 1_500_000_000, peaks


def test_a_collection_folder_names_what_its_odd_part_is(tmp_path):
    from fairrag_core.data import load_collection

    (tmp_path / "corpus.jsonl").write_text('{"doc_id": "d1", "text": "a"}\n')
    os.mkfifo(tmp_path / "queries.jsonl")
    error = _at_once(lambda: load_collection(tmp_path), fifo=tmp_path / "queries.jsonl")
    assert str(error) == (f"{tmp_path / 'queries.jsonl'}: is a FIFO (named pipe), not a regular file; give the path of "
                          "a data file (.jsonl, .csv, .txt, .gz)")
    (tmp_path / "queries.jsonl").unlink()
    (tmp_path / "qrels.txt").symlink_to(tmp_path / "gone.txt")
    with pytest.raises(DataFormatError, match=r"qrels.txt: file not found; check the path"):
        load_collection(tmp_path)
