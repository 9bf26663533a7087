"""The block reader of expeval/TREC runs gives exactly what the line-by-line parser gives: the same rankings for
every file it accepts, and the same error (through the fallback) for every file it does not."""

from __future__ import annotations

import gzip
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core.data import blocks, columnar
from fairrag_core.data.served import _parse_trec, as_source, parse_run, record_lines
from fairrag_core.errors import DataFormatError


def _line_by_line(text: str | bytes):
    return _parse_trec(record_lines(as_source(text), "<run>"), "<run>")


def _same(fast, slow) -> None:
    assert fast.run_id == slow.run_id and fast.query_ids == slow.query_ids
    for qid in slow.query_ids:
        a, b = fast[qid], slow[qid]
        assert a.sample_ids == b.sample_ids and a.doc_ids == b.doc_ids, qid
        assert a.positions.dtype == b.positions.dtype
        np.testing.assert_array_equal(a.positions, b.positions)
        np.testing.assert_array_equal(a.scores, b.scores)


def _run_lines(rng: random.Random, *, queries: int, shared_docs: bool, ragged: bool) -> list[str]:
    lines = []
    for q in range(queries):
        pool = [f"d{rng.randrange(40)}" if shared_docs else f"q{q}-d{d}" for d in range(30)]
        pool = list(dict.fromkeys(pool))
        for s in range(rng.randrange(1, 6)):
            depth = rng.randrange(1, len(pool) + 1) if ragged else min(5, len(pool))
            for r, doc in enumerate(rng.sample(pool, depth), start=1):
                lines.append(f"q{q} s{rng.choice([s, s])} {doc} {r} {rng.uniform(-5, 5):.6g} sys")
    return lines


@pytest.mark.parametrize("seed", range(12))
def test_any_valid_run_reads_the_same_in_blocks_and_line_by_line(seed, monkeypatch):
    rng = random.Random(seed)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", rng.choice([64, 256, 1 << 20]))  # many blocks, or one
    lines = _run_lines(rng, queries=rng.randrange(1, 8), shared_docs=seed % 2 == 0, ragged=seed % 3 == 0)
    if seed % 4 == 1:
        rng.shuffle(lines)  # samples and ranks in any order
    text = "\n".join(lines) + ("\n" if seed % 5 else "")
    if seed % 6 == 2:
        text = text.replace(" ", "\t")
    if seed % 7 == 3:
        text = text.replace("\n", "\r\n")
    read = columnar.trec_columns(as_source(text), where="<run>", delimiter="\t" if seed % 6 == 2 else " ")
    assert read is not None, "a well-formed run takes the block reader"
    _same(parse_run(text), _line_by_line(text))


def test_a_gzipped_run_and_its_sha256(tmp_path):
    text = "\n".join(_run_lines(random.Random(5), queries=4, shared_docs=True, ragged=True)) + "\n"
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(text.encode()))
    from fairrag_core.data.files import file_sha256
    from fairrag_core.data.served import load_run

    run = load_run(path)
    _same(run, _line_by_line(text))
    assert run.sha256 == file_sha256(path)


@pytest.mark.parametrize("text", [
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 1 1.0 sys\n",            # rank 1 twice
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 3 1.0 sys\n",            # rank 2 skipped
    "q1 s1 d1 1 2.0 sys\nq1 s1 d1 2 1.0 sys\n",            # a document twice in a sample
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 2 1.0 other\n",          # two run ids
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 0x2 1.0 sys\n",          # a rank Arrow would read as hex
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 +2 1.0 sys\n",
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 2 abc sys\n",            # a score that is no number
    "q1 s1 d1 1 2.0 sys\n\nq1 s1 d2 2 1.0 sys\n",          # a blank line inside
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 2 1.0\n",                # five fields
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2\t2 1.0 sys\n",           # a tab inside a space-separated line: 6 fields still
    "q1 s1 d1 1 2.0 sys\nq1 s1  d2 2 1.0 sys\n",           # two spaces: 6 fields for str.split
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 2 1.0 sys \n",           # a trailing space
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2\r 2 1.0 sys\n",          # a carriage return inside a line
    "\ufeffq1 s1 d1 1 2.0 sys\nq1 s1 d2 2 1.0 sys\n",      # a byte-order mark
    "q1 s1 d1 1 2.0 sys\nq1 s1 d\u00a02 2 1.0 sys\n",      # a no-break space (str.split splits there)
    "q1 s1 d1 1 2.0 sys\nq1 s1 d2 1234567890 1.0 sys\n",   # a rank of ten digits
    "q1 s1 d1 1 1_0 sys\nq1 s1 d2 2 1.0 sys\n",            # float('1_0') is 10.0; Arrow refuses it
    "q1 s1 d1 1 nan sys\nq1 s1 d2 2 -inf sys\n",
])
def test_odd_runs_get_what_the_line_parser_says(text):
    try:
        expected = _line_by_line(text)
    except DataFormatError as err:
        with pytest.raises(DataFormatError) as caught:
            parse_run(text)
        assert str(caught.value) == str(err)
        return
    _same(parse_run(text), expected)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q 3", "q\t4"]), st.sampled_from(["s1", "s2", "1"]),
                          st.sampled_from(["d1", "d2", "d3", "é", "d\u20281"]), st.integers(-1, 4),
                          st.sampled_from(["1", "2.5", "x", "1e3", "inf"]), st.sampled_from(["sys", "sys", "b"])),
                min_size=1, max_size=12),
       st.sampled_from([" ", "\t"]))
def test_random_runs_agree_with_the_line_parser(rows, delimiter):
    text = "\n".join(delimiter.join(str(f) for f in row) for row in rows) + "\n"
    try:
        expected = _line_by_line(text)
    except DataFormatError as err:
        with pytest.raises(DataFormatError) as caught:
            parse_run(text, format="trec")
        assert str(caught.value) == str(err)
        return
    _same(parse_run(text, format="trec"), expected)


def test_a_repeated_line_stops_at_the_first_block_not_the_end(monkeypatch):
    """More lines than (query, sample, rank) slots means a repeat: the block reader hands over after one block, so
    a 900 MB file of one repeated line is refused at line 2 without being held in memory."""
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 1 << 10)
    parsed = []
    real = columnar.parse_block
    monkeypatch.setattr(columnar, "parse_block", lambda block, *rest: parsed.append(block) or real(block, *rest))
    with pytest.raises(DataFormatError, match="line 2: rank 1 appears twice"):
        parse_run("q1 s1 d1 1 2.0 sys\n" * 10_000)
    assert len(parsed) == 1


# -- judgments ----------------------------------------------------------------------------------------------------
def _judgments_both_ways(text: str, monkeypatch):
    """(block reader's result or error, line parser's result or error) for the same qrels text."""
    from fairrag_core.data import judgments

    def parse():
        try:
            return judgments.parse_judgments(text)
        except DataFormatError as err:
            return str(err)

    fast = parse()
    with monkeypatch.context() as patch:
        patch.setattr(judgments, "_four_fields", lambda source, where: None)
        slow = parse()
    return fast, slow


def _same_judgments(fast, slow) -> None:
    if isinstance(slow, str):
        assert fast == slow
        return
    assert list(fast.relevance) == list(slow.relevance)
    for qid in slow.relevance:
        assert list(fast.relevance[qid].items()) == list(slow.relevance[qid].items())
        assert fast.groups[qid] == slow.groups[qid]
    assert fast.sha256 == slow.sha256


@pytest.mark.parametrize("text", [
    "q1 0 d1 1\nq1 0 d2 0\nq2 1|2 d1 2\nq2 2|1|2 d3 -1\n",
    "q1\t0\td1\t1\nq1\t0\td2\t0\n",
    "q1 0 d1 1\nq1 0 d1 0\n",                    # a pair judged twice
    "q1 0 d1 1\nq1 d2 0\n",                      # 3 fields after 4
    "q1 0 d1 x\n",
    "q1 0 d1 1000001\n",
    "q1 0 d1 -2\n",
    "q1 1,2 d1 1\n",
    "q1 1||2 d1 1\n",
    "q1 0 d1 01\nq1 0 d2 -0\n",
    "q1 0 d1 1 \n",
    "q1 0 d\u00a01 1\n",
    "\ufeffq1 0 d1 1\n",
])
def test_odd_qrels_get_what_the_line_parser_says(text, monkeypatch):
    _same_judgments(*_judgments_both_ways(text, monkeypatch))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q 3"]), st.sampled_from(["0", "1|2", "a,b", "-1", "|"]),
                          st.sampled_from(["d1", "d2", "d3", "é"]),
                          st.sampled_from(["0", "1", "2", "-1", "x", "1e3", "99999999"])),
                min_size=1, max_size=10),
       st.sampled_from([" ", "\t"]))
def test_random_qrels_agree_with_the_line_parser(rows, delimiter):
    text = "\n".join(delimiter.join(row) for row in rows) + "\n"
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same_judgments(*_judgments_both_ways(text, monkeypatch))


# -- TREC Fair 2022 -----------------------------------------------------------------------------------------------
def _fair_line_by_line(text: str):
    from fairrag_core.data.served import _parse_fair

    return _parse_fair(record_lines(as_source(text), "<run>"), "<run>", "run")


def _same_or_same_error(text: str) -> None:
    try:
        expected = _fair_line_by_line(text)
    except DataFormatError as err:
        with pytest.raises(DataFormatError) as caught:
            parse_run(text, format="trec-fair-2022", run_id="run")
        assert str(caught.value) == str(err)
        return
    got = parse_run(text, format="trec-fair-2022", run_id="run")
    assert got.format is expected.format and got.run_id == expected.run_id
    assert got.query_ids == expected.query_ids
    for qid in expected.query_ids:
        a, b = got[qid], expected[qid]
        assert a.sample_ids == b.sample_ids and a.doc_ids == b.doc_ids and a.scores is None is b.scores
        np.testing.assert_array_equal(a.positions, b.positions)


@pytest.mark.parametrize("seed", range(8))
def test_any_valid_fair_run_reads_the_same_in_blocks_and_line_by_line(seed, monkeypatch):
    rng = random.Random(seed)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", rng.choice([64, 1 << 20]))
    width = 3 if seed % 4 else 2
    sequences = []
    for q in range(rng.randrange(1, 5)):
        for s in range(rng.randrange(1, 4) if width == 3 else 1):
            pool = [f"p{rng.randrange(25)}" for _ in range(12)]
            docs = list(dict.fromkeys(pool))[: rng.randrange(1, 8)]
            sequences.append([f"q{q}\t{s + 1}\t{d}" if width == 3 else f"q{q}\t{d}" for d in docs])
    if seed % 3 == 1:
        rng.shuffle(sequences)  # a query's sequences apart in the file (each still consecutive)
    lines = [line for seq in sequences for line in seq]
    header = ["id\tseq_no\tpage_id" if width == 3 else "id\tpage_id"] if seed % 2 else []
    text = "\n".join(header + lines) + "\n"
    fields = (header or lines)[0].split("\t")
    assert columnar.fair_columns(as_source(text), where="<run>", width=len(fields), header=bool(header)) is not None
    _same_or_same_error(text)


@pytest.mark.parametrize("text", [
    "q1\t1\ta\nq1\t1\tb\nq1\t2\ta\nq1\t1\tc\n",     # sequence 1 resumes after sequence 2
    "q1\t1\ta\nq1\t1\ta\n",                          # a page twice in a sequence
    "q1\t1\ta\nq1\t1\n",                             # two fields after three
    "q1\t1\ta\nq1 1 b\n",                            # spaces, not tabs
    "q1\t1\ta\nq1\t1\t b\n",                         # a blank around a field (the line parser strips it)
    "q1\t1\ta\nq1\t\tb\n",                           # an empty field
    "id\tseq_no\tpage_id\n",                         # only a header
    "q1\ta\nq2\tb\nq1\tc\n",                         # Task 1: a query's one sequence resumes
])
def test_odd_fair_runs_get_what_the_line_parser_says(text):
    _same_or_same_error(text)
