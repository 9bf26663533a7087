"""A large RAG log read column-wise audits exactly as the same log read line by line (exposure only), and anything
the column reader cannot vouch for goes back to the line reader, which names the line."""

from __future__ import annotations

import io
import json
import random

import numpy as np
import pandas as pd
import pytest

from fairrag_core import load_collection
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.data import assets_dir, blocks, load_rag_log
from fairrag_core.data.log_columns import first_problem, read_log_columns
from fairrag_core.errors import DataFormatError, InvalidParameterError
from fairrag_core.metrics.bootstrap import exposure_intervals

SHOES = load_collection("running-shoes")
DEMO = assets_dir() / "logs" / "running-shoes.jsonl"


def _write(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _random_log(path, lines: int, seed: int) -> None:
    rng = random.Random(seed)
    ids = SHOES.doc_ids
    queries = [q.query_id for q in SHOES.queries][:6] + ["walk-in", "other"]
    rows = []
    for n in range(lines):
        qid = rng.choice(queries)
        ranking = rng.sample(ids[:30], rng.choice([3, 5, 5, 5]))
        row = {"query_id": qid, "ranking": ranking}
        if rng.random() < 0.7:
            row["query"] = rng.choice(["", "  ", f"text of {qid}", None])
        if rng.random() < 0.6:
            row["answer"] = rng.choice(["yes", " ", "", None])
        if rng.random() < 0.5:
            row["citations"] = ranking[: rng.randrange(0, 3)]
        if rng.random() < 0.3:
            row["session"] = f"s{n // 3}"
        rows.append(row)
    _write(path, rows)


@pytest.mark.parametrize("seed", range(4))
def test_the_columns_audit_as_the_lines_do(tmp_path, seed, monkeypatch):
    path = tmp_path / "log.jsonl"
    _random_log(path, 400, seed)
    if seed % 2:
        monkeypatch.setattr(blocks, "BLOCK_BYTES", 2048)  # many blocks: codes and texts carried across them
    columns, log = read_log_columns(path, SHOES), load_rag_log(path, collection=SHOES)
    assert columns is not None and len(columns) == len(log) and columns.sha256 == log.sha256
    config = LogAuditConfig(attribution="none", seed=seed, n_boot=200)
    by_lines, by_columns = audit_rag_log(log, SHOES, config), audit_rag_log(columns, SHOES, config)
    pd.testing.assert_frame_equal(by_lines.table, by_columns.table)
    pd.testing.assert_frame_equal(by_lines.documents, by_columns.documents)
    assert by_lines.record.extra["inputs"] == by_columns.record.extra["inputs"]
    assert by_columns.lines is None  # the lines stay in the file


def test_the_demo_log_reads_the_same_both_ways():
    columns, log = read_log_columns(DEMO, SHOES), load_rag_log(DEMO, collection=SHOES)
    index = {d: i for i, d in enumerate(SHOES.doc_ids)}
    assert columns.slots.tolist() == [[index[d] for d in e.ranking] for e in log.entries]
    assert [columns.query_ids[c] for c in columns.query_of_line] == [e.query_id for e in log.entries]
    assert columns.answered.tolist() == [bool(e.answer) for e in log.entries]
    assert columns.with_citations.tolist() == [e.citations is not None for e in log.entries]


@pytest.mark.parametrize("row", [
    {"query_id": 7, "ranking": ["rs-001"]},                        # an integer id (the format allows it)
    {"query_id": "q", "ranking": ["rs-001"], "session": 3},         # a number as session
    {"query_id": "q", "ranking": ["rs-001"], "metadata": {"a": 1}},
    {"query_id": "q", "ranking": ["rs-001"], "extra": 1},           # a field outside the format
    {"query_id": "q", "ranking": ["nope"]},                         # a doc id the collection lacks
    {"query_id": "q", "ranking": ["rs-001", "rs-001"]},             # twice in a ranking
    {"query_id": "q", "ranking": []},
    {"query_id": "q", "ranking": [" rs-001"]},                       # blanks around an id
    {"query_id": "q", "ranking": ["rs-001"], "citations": ["rs-002", "rs-002"]},
    {"query_id": "q", "ranking": ["rs-001"], "citations": ["nope"]},
    {"query_id": " ", "ranking": ["rs-001"]},
    {"ranking": ["rs-001"]},
])
def test_what_the_column_reader_does_not_take_goes_to_the_line_reader(tmp_path, row):
    path = tmp_path / "odd.jsonl"
    _write(path, [{"query_id": "a", "ranking": ["rs-001", "rs-002"]}, row])
    assert read_log_columns(path, SHOES) is None
    try:
        load_rag_log(path, collection=SHOES)
    except DataFormatError as err:  # the line reader names the line; so does the keep-nothing pass
        with pytest.raises(DataFormatError) as caught:
            first_problem(path, SHOES)
        assert caught.value.line == 2 and err.line in (2, None)


@pytest.mark.parametrize("text", [
    '{"query_id": "a", "ranking": ["rs-001"]}\n\n{"query_id": "b", "ranking": ["rs-002"]}\n',  # a blank line
    '\ufeff{"query_id": "a", "ranking": ["rs-001"]}\n',
    '{"query_id": "a\\ud800", "ranking": ["rs-001"]}\n',
    '{"query_id": "a", "ranking": ["rs-001"]}\r{"query_id": "b", "ranking": ["rs-002"]}\n',
])
def test_odd_bytes_go_to_the_line_reader(tmp_path, text):
    path = tmp_path / "odd.jsonl"
    path.write_text(text, encoding="utf-8", newline="")
    assert read_log_columns(path, SHOES) is None


def test_a_columns_log_audits_exposure_only(tmp_path):
    path = tmp_path / "log.jsonl"
    _random_log(path, 50, 1)
    columns = read_log_columns(path, SHOES)
    with pytest.raises(InvalidParameterError, match="exposure only"):
        audit_rag_log(columns, SHOES, LogAuditConfig(attribution="logged"))
    with pytest.raises(InvalidParameterError, match="second user model"):
        audit_rag_log(columns, SHOES, LogAuditConfig(attribution="none", user_model="gerr"))


def test_collapsed_rows_bootstrap_as_the_lines_do():
    """Lines resampled one by one, or their distinct rankings drawn with their multiplicity: the same plug-in, and
    intervals that agree to the bootstrap's own noise."""
    rng = np.random.default_rng(0)
    patterns = np.eye(6)[[0, 1, 2, 3]] + np.eye(6)[[1, 2, 3, 4]]  # 4 distinct top-2 sets over 6 documents
    multiplicity = np.array([4000, 2500, 1000, 500])
    lines = np.repeat(patterns, multiplicity, axis=0)[rng.permutation(8000)]
    weights = np.linspace(0.05, 0.3, 6)
    by_lines = exposure_intervals(lines, 2, relevance_weights=weights, n_boot=2000, seed=1)
    by_rows = exposure_intervals(patterns, 2, relevance_weights=weights, n_boot=2000, seed=1,
                                 multiplicity=multiplicity)
    for a, b in zip(by_lines, by_rows):
        assert a.plug_in == pytest.approx(b.plug_in, abs=1e-12)
        assert a.low == pytest.approx(b.low, abs=2e-3) and a.high == pytest.approx(b.high, abs=2e-3)
        assert b.low <= b.estimate <= b.high


def test_audit_log_reads_a_log_column_wise_with_the_line_readers_numbers(tmp_path, monkeypatch):
    """The CLI takes the column road for an exposure-only audit, and prints the numbers the line road prints."""
    from fairrag_core.cli import main
    from fairrag_core.data import log_columns

    path = tmp_path / "log.jsonl"
    _random_log(path, 300, 2)
    argv = ["audit-log", str(path), "--collection", "running-shoes", "--attribution", "none", "--seed", "4",
            "--json", "--no-store"]
    lines_out, columns_out = io.StringIO(), io.StringIO()
    monkeypatch.setattr(log_columns, "COLUMNS_FROM_BYTES", 1 << 40)  # line by line
    assert main(argv, out=lines_out) == 0
    monkeypatch.setattr(log_columns, "COLUMNS_FROM_BYTES", 0)  # the default: column-wise
    read = []
    real = log_columns.read_log_columns
    monkeypatch.setattr(log_columns, "read_log_columns", lambda *a: read.append(1) or real(*a))
    assert main(argv, out=columns_out) == 0 and read
    by_lines, by_columns = json.loads(lines_out.getvalue()), json.loads(columns_out.getvalue())
    assert by_lines["queries"] == by_columns["queries"] and by_lines["summary"] == by_columns["summary"]
    assert by_lines["findings"] == by_columns["findings"]


def _split(path, folder, parts: int) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    folder.mkdir()
    size = -(-len(lines) // parts)
    for i in range(parts):
        (folder / f"part-{i:02d}.jsonl").write_text("".join(lines[i * size:(i + 1) * size]), encoding="utf-8")


@pytest.mark.parametrize("lines, parts, k", [(500, 3, None), (2600, 4, None), (2600, 3, 3), (150, 2, 6)])
def test_a_folder_of_shards_audits_as_the_whole_log(tmp_path, lines, parts, k):
    """A log cut into shards (name order = line order), each aggregated per query by its reader, audits digit for
    digit as the log in one file: small queries (their lines kept in order), large ones (their distinct top-k sets
    with counts, merged over shards), ragged rankings (empty slots), and a k below or above the longest ranking."""
    from fairrag_core.audit.log_shards import log_shards
    from fairrag_core.backends.executor import LocalBackend
    from fairrag_core.backends.workloads import read_log_on

    whole = tmp_path / "log.jsonl"
    _random_log(whole, lines, 7)
    _split(whole, tmp_path / "shards", parts)
    assert [p.name for p in log_shards(tmp_path / "shards")] == [f"part-{i:02d}.jsonl" for i in range(parts)]
    merged = read_log_on(LocalBackend(), tmp_path / "shards", SHOES, "running-shoes", k=k)
    single = read_log_columns(whole, SHOES)
    assert merged.query_ids == single.query_ids and merged.query_texts == single.query_texts
    assert len(merged) == len(single) and merged.ranking_lengths == single.ranking_lengths
    config = LogAuditConfig(attribution="none", seed=2, n_boot=200, k=k)
    a, b = audit_rag_log(single, SHOES, config), audit_rag_log(merged, SHOES, config)
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.documents, b.documents)
    if lines > 2000:  # the driver holds sets and counts, not lines
        assert all(q.ordered is None for q in merged.queries)
        assert sum(q.rows.shape[0] for q in merged.queries) < lines


def test_audit_log_takes_a_folder_of_shards(tmp_path):
    from fairrag_core.cli import main

    whole = tmp_path / "log.jsonl"
    _random_log(whole, 300, 8)
    _split(whole, tmp_path / "shards", 4)
    outs = []
    for log in (whole, tmp_path / "shards"):
        out = io.StringIO()
        assert main(["audit-log", str(log), "--collection", "running-shoes", "--attribution", "none", "--seed", "3",
                     "--json", "--no-store"], out=out) == 0
        outs.append(json.loads(out.getvalue()))
    assert outs[0]["queries"] == outs[1]["queries"] and outs[0]["findings"] == outs[1]["findings"]
    err = io.StringIO()
    assert main(["audit-log", str(tmp_path / "shards"), "--collection", "running-shoes", "--attribution", "logged",
                 "--json"], out=err) == 2
    assert "audited for exposure only" in json.loads(err.getvalue())["error"]


# -- the longest line (issue 28): the column reader applies the line reader's limit, and reads linearly ---------------
def _one_long_line(path, size: int) -> None:
    """A gzipped log whose second line is ``size`` bytes without a line feed (a broken export, or a bomb)."""
    import gzip

    first = json.dumps({"query_id": "q1", "ranking": SHOES.doc_ids[:3]}).encode() + b"\n"
    path.write_bytes(gzip.compress(first + b'{"query_id": "q2", "query": "' + b"x" * size, compresslevel=1))


def test_a_line_past_the_limit_is_refused_as_the_line_reader_refuses_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRRAG_MAX_LINE_MB", "1")
    path = tmp_path / "log.jsonl.gz"
    _one_long_line(path, 5_000_000)  # 5 MB in one line: five times the limit
    with pytest.raises(DataFormatError) as by_lines:
        first_problem(path, SHOES)
    with pytest.raises(DataFormatError) as by_columns:
        read_log_columns(path, SHOES)
    assert str(by_columns.value) == str(by_lines.value) == (
        f"{path}, line 2: the line is longer than the 1 MB a loader holds as one line; put one record per line (a "
        "file without line breaks is not JSONL or TSV), or raise the limit with FAIRRAG_MAX_LINE_MB")
    # a line under the limit that spans many chunks is still read (and handed to the line reader: not a log line)
    monkeypatch.setenv("FAIRRAG_MAX_LINE_MB", "6")
    assert read_log_columns(path, SHOES) is None


@pytest.mark.parametrize("limit_mb, long_line", [("0.01", 10_001), ("0.01", 10_000), ("3", 3_000_001)])
def test_every_line_is_held_to_the_limit_wherever_it_falls_in_a_chunk(tmp_path, monkeypatch, limit_mb, long_line):
    """A long line inside one chunk (a limit under the 1 MiB chunk), across chunks, or at the end: refused at the
    limit and at the line the line reader names, else read."""
    monkeypatch.setenv("FAIRRAG_MAX_LINE_MB", limit_mb)
    rows = [json.dumps({"query_id": f"q{i}", "ranking": SHOES.doc_ids[:3]}) for i in range(3)]
    text = "\n".join([rows[0], rows[1], "x" * long_line, rows[2]]) + "\n"
    path = tmp_path / "log.jsonl"
    path.write_text(text, encoding="utf-8")
    limit = float(limit_mb) * 1_000_000
    if long_line > limit:
        with pytest.raises(DataFormatError, match=r"log.jsonl, line 3: the line is longer than the"):
            first_problem(path, SHOES)
        with pytest.raises(DataFormatError, match=r"log.jsonl, line 3: the line is longer than the"):
            read_log_columns(path, SHOES)
    else:
        assert read_log_columns(path, SHOES) is None  # "xxx" is not JSON: the line reader names it
        with pytest.raises(DataFormatError, match=r"line 3: "):
            first_problem(path, SHOES)


def test_a_long_line_is_joined_once_not_once_per_chunk(tmp_path, monkeypatch):
    """The bytes of a line that goes on are joined when its end arrives, not again with every chunk (quadratic: a 2 GB
    line ran for minutes). A 12 MB line in 4 kB chunks: joined with every chunk past the 8 MiB block, that is about
    900 joins of 10 MB (3 s here); once, 12 MB (0.08 s)."""
    import time

    data = json.dumps({"query_id": "q1", "ranking": SHOES.doc_ids[:3]}).encode() + b"\n" + b"x" * 12_000_000 + b"\n"
    monkeypatch.setattr(blocks, "read_chunks", lambda *a, **k: (data[i:i + 4096] for i in range(0, len(data), 4096)))
    start = time.perf_counter()
    read = list(blocks.text_blocks(b"", "<data>", None))
    assert time.perf_counter() - start < 1.0
    assert b"".join(map(bytes, read)) == data and len(read) == 2  # cut at the first line end past the block size
