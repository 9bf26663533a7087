import json
import re

import numpy as np
import pytest

from fairrag_core import (
    DEMO_COLLECTIONS,
    Collection,
    DataFormatError,
    Document,
    InvalidParameterError,
    MissingGroupLabelError,
    UnknownCollectionError,
    load_collection,
    load_corpus,
    load_qrels,
    load_queries,
)


def _write(path, text, encoding="utf-8"):
    path.write_text(text, encoding=encoding)
    return path


def _jsonl(path, rows):
    return _write(path, "\n".join(json.dumps(r) for r in rows) + "\n")


# -- happy paths -------------------------------------------------------------------------------------
def test_jsonl_corpus(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", [
        {"doc_id": "a", "text": "Alpha text", "title": "A", "provider": "P1", "groups": {"region": "Asia"}},
        {"doc_id": "b", "text": "Beta text"},
    ])
    docs = load_corpus(path)
    assert docs[0].groups == {"region": "Asia"} and docs[0].provider == "P1"
    assert docs[1].provider == "b"  # a document is its own provider by default
    assert docs[0].full_text == "A. Alpha text"


def test_csv_corpus_with_group_columns(tmp_path):
    path = _write(tmp_path / "c.csv", 'doc_id,text,title,provider,group:region,group:gender\n'
                                      'd1,"Hello, world",T,Pub,Africa,female\nd2,Second,,,Europe,\n')
    d1, d2 = load_corpus(path)
    assert d1.text == "Hello, world" and d1.groups == {"region": "Africa", "gender": "female"}
    assert d2.groups == {"region": "Europe"} and d2.provider == "d2"


def test_queries_and_qrels(tmp_path):
    q = _jsonl(tmp_path / "q.jsonl", [
        {"query_id": "q1", "text": "what?", "answer": "this"},
        {"query_id": "q2", "text": "broad", "aspects": [{"aspect": "x", "answer": "y"}]},
    ])
    queries = load_queries(q)
    assert queries[0].answer == "this" and queries[1].aspects[0].answer == "y"
    qrels = load_qrels(_write(tmp_path / "qrels.txt", "q1 0 a 2\nq1 0 b 0\n# comment\n\nq2 0 a 1\n"))
    assert qrels == {"q1": {"a": 2, "b": 0}, "q2": {"a": 1}}


def test_collection_folder(tmp_path):
    _jsonl(tmp_path / "corpus.jsonl", [{"doc_id": "a", "text": "x"}, {"doc_id": "b", "text": "y"}])
    _jsonl(tmp_path / "queries.jsonl", [{"query_id": "q1", "text": "Find X"}])
    _write(tmp_path / "qrels.txt", "q1 0 b 1\n")
    c = load_collection(tmp_path)
    assert c.useful("q1").tolist() == [False, True]
    assert c.relevance("q1").tolist() == [0, 1]
    assert c.find_query("  find   x ").query_id == "q1"
    assert c.subset([1]).doc_ids == ["b"]


# -- bad input: each error names file, line and fix --------------------------------------------------
@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"doc_id": "a", "text": "x"}\n{"doc_id": "a", "text": "y"}\n',
         r"line 2: duplicate doc_id 'a' \(first seen on line 1\)"),
        ('{"doc_id": "a", "text": "   "}\n', "line 1: field 'text' is empty"),
        ('{"doc_id": "a"}\n', "line 1: missing field 'text'"),
        ('{"doc_id": "a", "text": "x"\n', "line 1: invalid JSON"),
        ('["a", "x"]\n', "expected a JSON object"),
        ('{"doc_id": "a", "text": "x", "region": "Asia"}\n', "unknown field.*groups"),
        ('{"doc_id": "a", "text": "x", "groups": {"region": ""}}\n', "non-empty label"),
        ('{"doc_id": 3, "text": "x"}\n', "must be a string"),
        ("", "no documents found"),
    ],
)
def test_jsonl_corpus_errors(tmp_path, content, message):
    with pytest.raises(DataFormatError, match=message):
        load_corpus(_write(tmp_path / "c.jsonl", content))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("doc_id,title\na,b\n", r"missing column\(s\) \['text'\]"),
        ("doc_id,text,region\na,b,Asia\n", "group:region"),
        ("doc_id,text\na,b,c\n", "line 2: expected 2 cells, found 3"),
        ("doc_id,text\na,x\na,y\n", "line 3: duplicate doc_id"),
        ("", "empty file"),
    ],
)
def test_csv_corpus_errors(tmp_path, content, message):
    with pytest.raises(DataFormatError, match=message):
        load_corpus(_write(tmp_path / "c.csv", content))


def test_bad_encoding_names_the_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"doc_id": "a", "text": "ok"}\n{"doc_id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(DataFormatError, match="line 2: not valid UTF-8.*re-save the file as UTF-8"):
        load_corpus(path)


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes('{"doc_id": "a", "text": "café"}\n'.encode("utf-8-sig"))
    assert load_corpus(path)[0].text == "café"


def test_unsupported_format_and_missing_file(tmp_path):
    with pytest.raises(DataFormatError, match="use .jsonl or .csv"):
        load_corpus(_write(tmp_path / "c.xlsx", "x"))
    with pytest.raises(DataFormatError, match="file not found"):
        load_corpus(tmp_path / "nope.jsonl")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("q1 0 a\n", "expected 4 fields"),
        ("q1 0 a high\n", "relevance .high. is not a whole number from -1,000,000 to 1,000,000 in the digits 0-9"),
        ("q1 0 a 1\nq1 0 a 2\n", "line 2: duplicate judgement"),
    ],
)
def test_qrels_errors(tmp_path, content, message):
    with pytest.raises(DataFormatError, match=message):
        load_qrels(_write(tmp_path / "qrels.txt", content))


def test_qrels_unknown_ids_in_a_collection(tmp_path):
    _jsonl(tmp_path / "corpus.jsonl", [{"doc_id": "a", "text": "x"}])
    _jsonl(tmp_path / "queries.jsonl", [{"query_id": "q1", "text": "x"}])
    _write(tmp_path / "qrels.txt", "q1 0 a 1\nq1 0 zz 1\n")
    with pytest.raises(DataFormatError, match="qrels.txt, line 2: unknown doc_id 'zz'"):
        load_collection(tmp_path)
    _write(tmp_path / "qrels.txt", "q9 0 a 1\n")
    with pytest.raises(DataFormatError, match="line 1: unknown query_id 'q9'"):
        load_collection(tmp_path)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"query_id": "q", "text": "a"}, {"query_id": "q", "text": "b"}], "duplicate query_id"),
        ([{"query_id": "q", "text": ""}], "field 'text' is empty"),
        ([{"query_id": "q", "text": "a", "aspects": "x"}], "must be a list"),
        ([{"query_id": "q", "text": "a", "aspects": [{"answer": "y"}]}], "non-empty \"aspect\""),
    ],
)
def test_query_errors(tmp_path, rows, message):
    with pytest.raises(DataFormatError, match=message):
        load_queries(_jsonl(tmp_path / "q.jsonl", rows))


def test_unknown_collection():
    with pytest.raises(UnknownCollectionError, match="running-shoes"):
        load_collection("no-such-collection")


def test_missing_group_labels_name_the_fix():
    c = Collection("t", (Document("a", "x", groups={"region": "Asia"}), Document("b", "y")))
    with pytest.raises(MissingGroupLabelError, match=r"1 document\(s\).*'b'.*fill='Unknown'"):
        c.group_of("region")
    assert c.group_of("region", fill="Unknown").tolist() == ["Asia", "Unknown"]
    with pytest.raises(MissingGroupLabelError, match="known categories"):
        c.group_of("gender")


def test_collection_invariants():
    with pytest.raises(InvalidParameterError, match="duplicate doc_id"):
        Collection("t", (Document("a", "x"), Document("a", "y")))
    with pytest.raises(InvalidParameterError, match="no documents"):
        Collection("t", ())
    with pytest.raises(InvalidParameterError, match="unknown doc ids"):
        Collection("t", (Document("a", "x"),), qrels={"q": {"b": 1}})


# -- the bundled demo collections --------------------------------------------------------------------
@pytest.fixture(scope="module")
def demos():
    return {name: load_collection(name) for name in DEMO_COLLECTIONS}


def test_demo_collections_size_and_text(demos):
    assert sum(len(c) for c in demos.values()) >= 300
    for c in demos.values():
        words = np.array([len(d.text.split()) for d in c.documents])
        assert words.min() >= 40 and words.max() <= 200, c.name
        assert len({d.text for d in c.documents}) == len(c), f"{c.name} has duplicated texts"


def test_every_demo_query_has_a_fairness_question(demos):
    for c in demos.values():
        for q in c.queries:
            assert c.useful(q.query_id).sum() >= 2, (c.name, q.query_id)


def test_running_shoes_is_the_classroom_scenario(demos):
    c = demos["running-shoes"]
    assert np.unique(c.providers).size >= 12
    assert len(c.queries) >= 15 and all(q.answer for q in c.queries)
    marathon = c.find_query("best shoes for a first marathon")
    useful_brands = set(c.providers[c.useful(marathon.query_id, min_rel=2)])
    assert len(useful_brands) >= 6  # many brands are equally useful: the point of fair exposure


def test_news_has_outlets_and_regions(demos):
    c = demos["news"]
    assert len(c.queries) >= 25 and all(q.answer for q in c.queries)
    assert len(set(c.group_of("region"))) >= 5


def test_people_has_gender_region_and_unknown(demos):
    c = demos["people"]
    assert len(c.queries) >= 20
    gender, region = c.group_of("gender"), c.group_of("region")
    assert "Unknown" in set(gender) and "Unknown" in set(region)
    assert len(set(region)) >= 5


def test_multi_faceted_queries_have_aspects(demos):
    c = demos["multi-faceted"]
    assert len(c.queries) >= 60 and all(3 <= len(q.aspects) <= 5 for q in c.queries)
    assert all(a.answer for q in c.queries for a in q.aspects)


# -- issue 19: line separators, grades, surrogates -------------------------------------------------------------
SEPARATORS = "\u2028\u2029\u0085"


def test_line_separators_inside_json_strings_are_text(tmp_path):
    """``str.splitlines`` cut these lines at U+2028/U+2029/U+0085 and refused them as "Unterminated string"."""
    rows = [{"doc_id": "d1", "text": f"one{SEPARATORS}two", "title": "a\u2028b"},
            {"doc_id": "d2", "text": "plain", "groups": {"region": "E\u2029U"}}]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert "\u2028" in path.read_text(encoding="utf-8")  # written raw, not as \u2028
    docs = load_corpus(path)
    assert [d.text for d in docs] == [f"one{SEPARATORS}two", "plain"]
    assert docs[0].title == "a\u2028b" and docs[1].groups == {"region": "E\u2029U"}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"doc_id": "d3", "text": "x\u0085y"}, ensure_ascii=False) + "\n{broken\n")
    with pytest.raises(DataFormatError, match=r"corpus.jsonl, line 4: invalid JSON"):
        load_corpus(path)
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query_id": "q\u2028x", "text": "a\u0085b"}, ensure_ascii=False) + "\n",
                       encoding="utf-8")
    assert [(q.query_id, q.text) for q in load_queries(queries)] == [("q\u2028x", "a\u0085b")]


@pytest.mark.parametrize("ends", ["\n", "\r\n"])
def test_lf_and_crlf_files_read_alike(tmp_path, ends):
    corpus = _write(tmp_path / "corpus.csv", ends.join(["doc_id,text", 'd1,"two', 'lines"', "d2,b", ""]))
    assert [(d.doc_id, d.text) for d in load_corpus(corpus)] == [("d1", "two\nlines"), ("d2", "b")]
    qrels = _write(tmp_path / "qrels.txt", ends.join(["q1 0 d1 1", "", "q1 0 d2 0", "q1 0 d3 x", ""]))
    with pytest.raises(DataFormatError, match=r"qrels.txt, line 4: relevance 'x'"):
        load_qrels(qrels)


def test_a_file_with_carriage_returns_alone_is_one_line_and_says_so(tmp_path):
    path = _write(tmp_path / "corpus.jsonl", '{"doc_id": "d1", "text": "a"}\r{"doc_id": "d2", "text": "b"}\r')
    with pytest.raises(DataFormatError, match=r"line 1: invalid JSON \(Extra data.*save the file with LF or CRLF "
                                              r"line ends, not CR alone"):
        load_corpus(path)


def test_blank_lines_in_a_csv_keep_line_numbers_and_quoted_paragraphs(tmp_path):
    path = _write(tmp_path / "corpus.csv", 'doc_id,text\n\n\nd1,"para one\n\npara two"\n\nd2,\n')
    with pytest.raises(DataFormatError, match=r"corpus.csv, line 8: field 'text' is empty"):
        load_corpus(path)
    path = _write(tmp_path / "corpus.csv", 'doc_id,text\n\n\nd1,"para one\n\npara two"\n' + "\n" * 200_000 + "d2,b\n")
    assert [d.text for d in load_corpus(path)] == ["para one\n\npara two", "b"]


@pytest.mark.parametrize("grade", ["99999999999999999999", "1_0", "\u0663", "+1", "1000001", "-1000001", "1.0",
                                   "0x1", " 1"])
def test_a_grade_in_collection_qrels_is_ascii_digits_and_bounded(tmp_path, grade):
    path = _write(tmp_path / "qrels.txt", f"q1 0 d1 1\nq1 0 d2\t{grade}\n")
    if grade.strip() != grade:
        path = _write(tmp_path / "qrels.txt", f"q1 0 d1 1\nq1 0 d2 \u2003{grade}\n")  # an em space is a separator
        assert load_qrels(path) == {"q1": {"d1": 1, "d2": 1}}
        return
    with pytest.raises(DataFormatError, match=rf"qrels.txt, line 2: relevance '{re.escape(grade)}' is not a whole "
                                              r"number from -1,000,000 to 1,000,000 in the digits 0-9; write grades "
                                              r"like 0, 1, 2"):
        load_qrels(path)


def test_grades_at_the_bounds_and_negative_grades_are_kept(tmp_path):
    path = _write(tmp_path / "qrels.txt", "q1 0 d1 1000000\nq1 0 d2 -1000000\nq1 0 d3 -2\nq1 0 d4 007\n")
    assert load_qrels(path) == {"q1": {"d1": 1_000_000, "d2": -1_000_000, "d3": -2, "d4": 7}}


def test_a_huge_grade_in_a_collection_ends_the_rank_command_with_exit_2(tmp_path, capsys):
    """It was read, then overflowed the int64 relevance array inside ``rank`` (an OverflowError traceback)."""
    from fairrag_core.cli import main

    _jsonl(tmp_path / "corpus.jsonl", [{"doc_id": "d1", "text": "a cushioned shoe"},
                                       {"doc_id": "d2", "text": "a racing shoe"}])
    _jsonl(tmp_path / "queries.jsonl", [{"query_id": "q1", "text": "shoe"}])
    _write(tmp_path / "qrels.txt", "q1 0 d1 99999999999999999999\n")
    code = main(["rank", "--collection", str(tmp_path), "--query", "shoe", "--alpha", "1", "--samples", "5", "-k",
                 "2"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0
    assert err == (f"error: {tmp_path / 'qrels.txt'}, line 1: relevance '99999999999999999999' is not a whole number "
                   "from -1,000,000 to 1,000,000 in the digits 0-9; write grades like 0, 1, 2")


@pytest.mark.parametrize("field, row", [
    ('"doc_id"', '{"doc_id": "d\\ud800", "text": "t"}'),
    ('"text"', '{"doc_id": "d2", "text": "t\\udfff"}'),
    ('"groups"."region"', '{"doc_id": "d2", "text": "t", "groups": {"region": "\\uDC00"}}'),
    ("a key of \"groups\"", '{"doc_id": "d2", "text": "t", "groups": {"r\\ud800": "x"}}'),
])
def test_a_lone_surrogate_in_a_corpus_names_line_and_field(tmp_path, field, row):
    path = _write(tmp_path / "corpus.jsonl", '{"doc_id": "d1", "text": "\\ud83d\\ude00 fine"}\n\n' + row + "\n")
    with pytest.raises(DataFormatError) as err:
        load_corpus(path)
    assert str(err.value) == (f"{path}, line 3: {field} holds a lone surrogate escape (\\ud800-\\udfff without its "
                              "pair) is not text; fix the program that wrote the file to write valid UTF-8, or remove "
                              "the escape")
    assert load_corpus(_write(tmp_path / "ok.jsonl", '{"doc_id": "d1", "text": "\\ud83d\\ude00 \\\\ud800"}\n')
                       )[0].text == "\U0001f600 \\ud800"  # a pair, and an escaped backslash, are text


def test_a_lone_surrogate_in_queries(tmp_path):
    path = _write(tmp_path / "queries.jsonl", '{"query_id": "q1", "text": "t", "aspects": [{"aspect": "a", '
                                               '"answer": "\\ud800"}]}\n')
    with pytest.raises(DataFormatError, match=r'line 1: "aspects"\[0\]."answer" holds a lone surrogate'):
        load_queries(path)


def test_a_csv_of_empty_rows_is_cut_short(tmp_path, monkeypatch):
    from fairrag_core.data import loaders

    monkeypatch.setattr(loaders, "_MOST_EMPTY_ROWS", 1000)
    path = _write(tmp_path / "corpus.csv", "doc_id,text\nd1,a\n" + ",\n\n \u3000,\t\n" * 333 + "d2,b\n")
    assert [d.doc_id for d in load_corpus(path)] == ["d1", "d2"]  # 999 empty rows, blank lines included
    path = _write(tmp_path / "corpus.csv", "doc_id,text\nd1,a\n" + ",\n" * 1001 + "d2,b\n")
    with pytest.raises(DataFormatError, match=r"corpus.csv, line 1003: more than 1,000 empty rows in a row; delete "
                                              r"them"):
        load_corpus(path)


@pytest.mark.parametrize("loader, name", [(load_corpus, "corpus.jsonl"), (load_qrels, "qrels.txt")])
def test_a_line_of_non_ascii_spaces_is_a_malformed_record_not_a_blank_line(tmp_path, loader, name):
    """JSON's whitespace is ASCII (RFC 8259 §2): a line holding U+00A0 or U+3000 alone is not a blank line."""
    body = '{"doc_id": "d1", "text": "a"}\n' if name.endswith("jsonl") else "q1 0 d1 1\n"
    path = _write(tmp_path / name, body + "\n \t\n\u00a0\u3000\n")
    with pytest.raises(DataFormatError, match=rf"{name}, line 4: (invalid JSON|expected 4 fields .*found 0)"):
        loader(path)


def test_comment_lines_in_qrels_cost_nothing(tmp_path):
    import time

    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q1 0 d1 2\n" + b"#\n  # a note\n\n" * 2_000_000 + b"q1 0 d2 1\n")  # 6 M lines
    start = time.perf_counter()
    assert load_qrels(path) == {"q1": {"d1": 2, "d2": 1}}
    assert time.perf_counter() - start < 3  # a Python step per line took 3 s
