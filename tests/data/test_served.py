import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from fairrag_core import DataFormatError, InvalidParameterError, Judgments, ServedRankings, load_collection
from fairrag_core.data.judgments import judgments_from_collection, load_judgments, parse_judgments
from fairrag_core.data.served import RunFormat, load_run, parse_run

EXPEVAL = Path(__file__).resolve().parent / "expeval"


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


# -- runs: happy paths -------------------------------------------------------------------------------
def test_trec_run_with_samples_in_any_line_order():
    run = parse_run("q1 s2 b 1 0 sys\nq1 s1 b 2 1.5 sys\nq2 Q0 x 1 3 sys\nq1 s1 a 1 1.5 sys\nq1 s2 c 2 -1e3 sys\n")
    assert run.run_id == "sys" and run.format is RunFormat.TREC and run.query_ids == ["q1", "q2"]
    assert run["q1"].sample_ids == ("s2", "s1") and run["q1"].samples() == [["b", "c"], ["a", "b"]]
    assert run["q2"].n_samples == 1 and run.n_lines == 5
    # equal scores do not matter: the rank column orders a sample, as in expeval
    assert parse_run("q1 s a 2 1 r\nq1 s b 1 1 r\n")["q1"].samples() == [["b", "a"]]


def test_samples_of_different_lengths_are_padded():
    q = parse_run("q s1 a 1 0 r\nq s1 b 2 0 r\nq s1 c 3 0 r\nq s2 c 1 0 r\n")["q"]
    assert q.positions.tolist() == [[0, 1, 2], [2, -1, -1]] and q.depth == 3


def test_plain_trec_run_and_reference_files_load():
    plain = load_run(EXPEVAL / "run_plain.txt")
    assert all(plain[q].n_samples == 1 for q in plain.query_ids) and plain.run_id == "plain"
    run = load_run(EXPEVAL / "run_a.txt")
    assert run.run_id == "sysA" and run["q1"].n_samples == 30 and set(run.query_ids) == {"q1", "q2", "q3", "q4",
                                                                                         "q6", "q7"}


def test_trec_fair_2022_task2_with_header_and_task1(tmp_path):
    text = "id\tseq_no\tpage_id\n84\t1\t27\n84\t1\t58\n84\t2\t58\n84\t2\t27\n85\t1\t9\n"
    run = load_run(_write(tmp_path / "my-run.tsv", text))
    assert run.format is RunFormat.TREC_FAIR_2022 and run.run_id == "my-run"
    assert run["84"].samples() == [["27", "58"], ["58", "27"]] and run["84"].sample_ids == ("1", "2")
    no_header = parse_run("84\t1\t27\n84\t1\t58\n", run_id="x")
    assert no_header["84"].samples() == [["27", "58"]] and no_header.run_id == "x"
    task1 = parse_run("id\tpage_id\n7\ta\n7\tb\n")
    assert task1["7"].samples() == [["a", "b"]]


def test_gzip_and_bytes(tmp_path):
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(b"q s a 1 0 r\n"))
    assert load_run(path).run_id == "r"
    assert parse_run(gzip.compress(b"q s a 1 0 r\n"))["q"].samples() == [["a"]]


def test_from_lists_and_to_trec_round_trip():
    run = ServedRankings.from_lists({"q1": [["a", "b"], ["c"]], "q2": [["x"]]}, run_id="mine")
    again = parse_run(run.to_trec())
    assert again.run_id == "mine" and again["q1"].samples() == [["a", "b"], ["c"]]
    with pytest.raises(InvalidParameterError, match="lists 'a' twice"):
        ServedRankings.from_lists({"q": [["a", "a"]]})
    with pytest.raises(InvalidParameterError, match="non-empty list of doc ids"):
        ServedRankings.from_lists({"q": [[]]})
    with pytest.raises(InvalidParameterError, match="non-empty list of rankings"):
        ServedRankings.from_lists({})


# -- runs: every bad input names the line and the fix ---------------------------------------------
@pytest.mark.parametrize("text, line, message", [
    ("q s a 1 0 r\nq s b 2 0\n", 2, r"expected 6 fields 'qid sample docno rank score run_id', found 5"),
    ("q s a 1 0\n", 1, r"cannot tell the run format from 5 field\(s\); use 6 whitespace-separated fields"),
    ("q s a 1 0 r\nq s b 2 0 r extra\n", 2, "found 7"),
    ("q s a one 0 r\n", 1, "rank 'one' is not a whole number"),
    ("q s a 1.5 0 r\n", 1, "rank '1.5' is not a whole number"),
    ("q s a 0 0 r\n", 1, "ranks start at 1"),
    ("q s a 1 high r\n", 1, "score 'high' is not a number"),
    ("q s a 1 0 r\nq s b 1 0 r\n", 2, r"rank 1 appears twice in sample 's' of query 'q' \(first on line 1\); break"),
    ("q s a 1 0 r\nq s a 2 0 r\n", 2, "document 'a' appears twice in sample 's' of query 'q' \\(first on line 1\\)"),
    ("q s a 1 0 r\nq s b 3 0 r\n", 2, "sample 's' of query 'q' skips rank 2 .*without gaps"),
    ("q s a 1 0 r\nq t b 1 0 other\n", 2, "run id 'other' differs from 'r' \\(line 1\\); put one run per file"),
    ("q s a 1 0 r\n\nq s b 2 0 r\n", 2, "blank line; delete it"),
    ("q 0 a 1\n", 1, "looks like qrels"),
    ("q a\n", 1, "cannot tell the run format"),
    ("q a 1\n", 1, "3 fields: this looks like qrels"),
    ("84\t1\t27\n84\t2\t5\n84\t1\t9\n", 3, "sequence '1' of query '84' resumes here .*started on line 1"),
    ("84\t1\t27\n84\t1\t27\n", 2, "page '27' appears twice in sequence '1'"),
    ("84\t1\t27\n84\t1\n", 2, "expected 3 tab-separated fields"),
    ("84\t1\t27\n84 1 28\n", 2, "fields are not tab-separated"),
    ("84\t\t27\n", 1, "empty field"),
])
def test_bad_runs(text, line, message):
    with pytest.raises(DataFormatError, match=message) as err:
        parse_run(text, source="run.txt")
    assert err.value.line == line and str(err.value).startswith(f"run.txt, line {line}: ")


def test_trailing_blank_lines_are_fine_and_empty_files_are_not(tmp_path):
    assert parse_run("q s a 1 0 r\n\n  \n")["q"].samples() == [["a"]]
    with pytest.raises(DataFormatError, match="no rankings found; the file is empty"):
        load_run(_write(tmp_path / "empty.txt", "\n"))
    with pytest.raises(DataFormatError, match="only a header"):
        parse_run("id\tseq_no\tpage_id\n")
    with pytest.raises(DataFormatError, match="file not found"):
        load_run(tmp_path / "missing.txt")
    (tmp_path / "latin.txt").write_bytes(b"q s caf\xe9 1 0 r\n")
    with pytest.raises(DataFormatError, match="not valid UTF-8"):
        load_run(tmp_path / "latin.txt")
    with pytest.raises(InvalidParameterError, match="run format 'csv' is not one of"):
        parse_run("q s a 1 0 r\n", format="csv")


def test_forcing_a_format():
    with pytest.raises(DataFormatError, match="expected 6 fields"):
        parse_run("84\t1\t27\n", format="trec")


# -- judgments -----------------------------------------------------------------------------------------
def test_expeval_qrels_with_groups_and_unjudged():
    j = load_judgments(EXPEVAL / "qrels_graded.txt")
    assert j.relevance["q1"]["d00"] == 3 and j.groups["q1"]["d00"] == ("-1",)  # 3-field line: no group
    assert j.groups["q1"]["d02"] == ("1", "2") and j.relevance["q1"]["d09"] == -1
    assert j.query_ids == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert j.group_of("q1", "nowhere") == ("Unknown",)
    assert parse_judgments(j.to_expeval()).relevance == j.relevance


@pytest.mark.parametrize("text, line, message", [
    ("q a\n", 1, "expected 4 fields 'qid group docno rel' \\(or 3: 'qid docno rel'\\), found 2"),
    ("q 0 a\n", 1, "relevance 'a' is not a whole number"),
    ("q 0 a 1 x\n", 1, "found 5"),
    ("q s a 1 0 r\n", 1, "this looks like a run"),
    ("q 0 a yes\n", 1, "relevance 'yes' is not a whole number"),
    ("q 0 a -2\n", 1, "relevance '-2' is not a whole number from -1 to 1,000,000"),
    ("q 1,2 a 1\n", 1, "uses ','; separate group ids with '\\|'"),
    ("q 1||2 a 1\n", 1, "empty group id"),
    ("q 0 a 1\nq 1 a 0\n", 2, "duplicate judgment for \\(q, a\\) \\(first on line 1\\)"),
    ("q 0 a 1\n\nq 0 b 1\n", 2, "blank line"),
])
def test_bad_judgments(text, line, message):
    with pytest.raises(DataFormatError, match=message) as err:
        parse_judgments(text, source="qrels.txt")
    assert err.value.line == line


def test_judgments_object_checks_itself():
    with pytest.raises(InvalidParameterError, match="at least one judged"):
        Judgments({}, {})
    with pytest.raises(InvalidParameterError, match=r"integer from -1 \(unjudged\) to 1,000,000"):
        Judgments({"q": {"a": -3}}, {"q": {"a": ("1",)}})
    with pytest.raises(InvalidParameterError, match="has no group ids"):
        Judgments({"q": {"a": 1}}, {"q": {}})


def test_judgments_from_a_collection():
    people = load_collection("people")
    by_provider = judgments_from_collection(people)
    qid = by_provider.query_ids[0]
    doc = next(iter(by_provider.relevance[qid]))
    assert by_provider.groups[qid][doc] == (people.documents[people.index_of(doc)].provider,)
    category = people.categories()[0]
    by_category = judgments_from_collection(people, groups_by=category)
    expected = people.group_of(category, fill="Unknown")[people.index_of(doc)]
    assert by_category.groups[qid][doc] == (expected,)
    assert len(by_category.doc_groups) == len(people)
    with pytest.raises(InvalidParameterError, match="unknown grouping 'height'"):
        judgments_from_collection(people, groups_by="height")


def test_positions_index_doc_ids():
    q = parse_run("q s1 b 1 0 r\nq s1 a 2 0 r\nq s2 a 1 0 r\n")["q"]
    assert np.array_equal(np.array(q.doc_ids)[q.positions[0]], ["b", "a"])


# -- issue 19: whole numbers in ASCII digits, bounded grades ---------------------------------------------------
@pytest.mark.parametrize("rank", ["1_0", "\u0663", "+1", "99999999999999999999", "1e1", "１"])
def test_a_rank_is_written_in_ascii_digits(rank):
    with pytest.raises(DataFormatError, match=rf"<run>, line 2: rank '{re.escape(rank)}' is not a whole number of at "
                                              r"most 18 digits 0-9; the 4th field is the rank \(1, 2, …\)"):
        parse_run(f"q s a 1 0 r\nq s b {rank} 0 r\n")


@pytest.mark.parametrize("grade", ["99999999999999999999", "1000001", "1_0", "\u0663", "+1", "-2", "1.0"])
def test_a_judgment_grade_is_ascii_digits_from_minus_one_to_a_million(grade):
    with pytest.raises(DataFormatError, match=rf"<qrels>, line 2: relevance '{re.escape(grade)}' is not a whole number "
                                              r"from -1 to 1,000,000 in the digits 0-9; use a grade ≥ 0"):
        parse_judgments(f"q 0 a 1\nq 0 b {grade}\n")
    assert parse_judgments("q 0 a -1\nq 0 b 1000000\nq c 007\n").relevance == {"q": {"a": -1, "b": 1_000_000, "c": 7}}


def test_a_huge_grade_ends_evaluate_run_with_exit_2(tmp_path, capsys):
    from fairrag_core.cli import main

    qrels = _write(tmp_path / "qrels.txt", "q1 0 d1 99999999999999999999\n")
    run = _write(tmp_path / "run.txt", "q1 s1 d1 1 1 sys\nq1 s1 d2 2 0.5 sys\n")
    assert main(["evaluate-run", str(qrels), str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {qrels}, line 1: relevance '99999999999999999999' is not a whole number from -1 to "
                          "1,000,000") and "\n" not in err


def test_runs_and_judgments_are_read_line_by_line(tmp_path):
    """A blank line is found without holding the file: the line numbers skip it (and trailing ones are fine)."""
    path = _write(tmp_path / "run.txt", "q s a 1 0 r\n\r\n\t\nq s b 2 0 r\n")
    with pytest.raises(DataFormatError, match=r"run.txt, line 2: blank line; delete it"):
        load_run(path)
    assert load_run(_write(tmp_path / "ok.txt", "q s a 1 0 r\r\nq s b 2 0 r\r\n\r\n\n"))["q"].samples() == [["a", "b"]]
    with pytest.raises(DataFormatError, match=r"<qrels>, line 1: blank line"):
        parse_judgments(b"\nq 0 a 1\n")
    assert parse_run(Path(path).read_bytes().replace(b"\n\r\n\t\n", b"\n")).n_lines == 2
