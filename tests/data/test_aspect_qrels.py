"""RichRAG aspect judgements: the TSV loader (errors name file, line and fix) and Collection.aspect_coverage."""

import json

import numpy as np
import pytest

import fairrag_core as fr
from fairrag_core import Aspect, Collection, DataFormatError, Document, InvalidParameterError, Query
from fairrag_core.data.loaders import load_aspect_qrels

HEADER = "query_id\taspect_index\tdoc_id\n"
QUERIES = [Query("q1", "compost?", aspects=(Aspect("greens", "g"), Aspect("smells", "s")))]


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_judgements_in_file_order_and_skips_blank_and_comment_lines(tmp_path):
    path = _write(tmp_path / "a.tsv", HEADER + "q1\t0\tb\n# note\n\nq1\t0\ta\nq1\t1\ta\n")
    assert load_aspect_qrels(path, queries=QUERIES, doc_ids=["a", "b"]) == {"q1": {0: ("b", "a"), 1: ("a",)}}


@pytest.mark.parametrize("body, line, message", [
    ("query_id,aspect_index,doc_id\n", 1, "header"),
    (HEADER + "q1\t0\n", 2, "3 tab-separated cells"),
    (HEADER + "q1\tfirst\ta\n", 2, "not a whole number"),
    (HEADER + "q1\t-1\ta\n", 2, "not a whole number"),
    (HEADER + "q9\t0\ta\n", 2, "unknown query_id 'q9'"),
    (HEADER + "q1\t0\ta\nq1\t2\ta\n", 3, r"has 2 aspect\(s\) \(indices 0–1\), not 2"),
    (HEADER + "q1\t0\tzz\n", 2, "unknown doc_id 'zz'"),
    (HEADER + "q1\t0\ta\nq1\t0\ta\n", 3, "duplicate judgement"),
])
def test_bad_lines_name_the_file_the_line_and_the_fix(tmp_path, body, line, message):
    path = _write(tmp_path / "aspect_qrels.tsv", body)
    with pytest.raises(DataFormatError, match=message) as err:
        load_aspect_qrels(path, queries=QUERIES, doc_ids=["a", "b"])
    assert f"aspect_qrels.tsv:{line}" in str(err.value) or f"line {line}" in str(err.value)


def test_an_empty_file_asks_for_the_header(tmp_path):
    with pytest.raises(DataFormatError, match="empty file"):
        load_aspect_qrels(_write(tmp_path / "a.tsv", "\n"))


def test_collection_folder_loads_aspect_judgements_and_checks_them(tmp_path):
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps({"doc_id": d, "text": d}) for d in "ab"))
    (tmp_path / "queries.jsonl").write_text(json.dumps(
        {"query_id": "q1", "text": "compost?", "aspects": [{"aspect": "greens", "answer": "g"},
                                                            {"aspect": "smells", "answer": "s"}]}))
    _write(tmp_path / "aspect_qrels.tsv", HEADER + "q1\t1\tb\n")
    collection = fr.load_collection(tmp_path)
    assert [(a.aspect, a.doc_ids) for a in collection.aspect_coverage("q1")] == [("greens", ()), ("smells", ("b",))]
    assert collection.aspect_labels("q1").tolist() == [[False, False], [False, True]]
    assert collection.aspect_labels("q1", [1]).tolist() == [[False, True]]
    assert collection.subset([0]).aspect_coverage("q1")[1].doc_ids == ()
    _write(tmp_path / "aspect_qrels.tsv", HEADER + "q1\t5\tb\n")
    with pytest.raises(DataFormatError, match="aspect_qrels.tsv"):
        fr.load_collection(tmp_path)


def test_the_multi_faceted_collection_judges_every_aspect_of_every_query():
    collection = fr.load_collection("multi-faceted")
    assert len(collection.queries) == 60
    for query in collection.queries:
        coverage = collection.aspect_coverage(query.query_id)
        assert 3 <= len(coverage) <= 5
        assert all(a.doc_ids for a in coverage), query.query_id
    labels = collection.aspect_labels("mf-q01")
    assert labels.shape == (len(collection), 4) and np.all(labels.sum(axis=0) >= 1)


def test_collection_refuses_judgements_that_do_not_fit():
    docs = (Document("a", "x"),)
    with pytest.raises(InvalidParameterError, match="unknown query"):
        Collection("c", docs, tuple(QUERIES), aspect_qrels={"q2": {0: ("a",)}})
    with pytest.raises(InvalidParameterError, match="aspect indices start at 0"):
        Collection("c", docs, tuple(QUERIES), aspect_qrels={"q1": {2: ("a",)}})
    with pytest.raises(InvalidParameterError, match="unknown doc ids"):
        Collection("c", docs, tuple(QUERIES), aspect_qrels={"q1": {0: ("b",)}})


@pytest.mark.parametrize("index", ["1_0", "\u0663", "+1", "-0", "0x1", "99999999999999999999"])
def test_an_aspect_index_is_ascii_digits(tmp_path, index):
    path = _write(tmp_path / "a.tsv", HEADER + f"q1\t0\ta\nq1\t{index}\tb\n")
    with pytest.raises(DataFormatError, match=r"a.tsv, line 3: aspect_index .* is not a whole number ≥ 0 \(at most 6 "
                                              r"digits 0-9\); aspect indices start at 0"):
        load_aspect_qrels(path)
