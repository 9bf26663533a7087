"""RAG log loader: typed entries, and every bad line refused with the file, the line and the fix."""

import json

import pytest

from fairrag_core import DataFormatError, InvalidParameterError, load_collection
from fairrag_core.checks import DEFAULT_MAX_LOG_LINES
from fairrag_core.data import load_rag_log


def _log(tmp_path, rows, name="log.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


GOOD = {"query_id": "q1", "ranking": ["a", "b"], "answer": "yes", "citations": ["a"], "session": "s1",
        "timestamp": "2026-01-01T10:00:00Z", "query": " hello ", "metadata": {"latency_ms": 120}}


def test_entries_are_typed_and_keep_metadata(tmp_path):
    log = load_rag_log(_log(tmp_path, [GOOD, {"query_id": 7, "ranking": ["c"]}, "", {"query_id": "q1",
                                                                                    "ranking": ["b"],
                                                                                    "citations": []}]))
    first, second, third = log.entries
    assert (first.line, first.query_id, first.ranking, first.citations) == (1, "q1", ("a", "b"), ("a",))
    assert first.query == "hello" and first.session == "s1" and first.metadata == {"latency_ms": 120}
    assert second.query_id == "7" and second.citations is None and second.answer is None  # not logged
    assert third.line == 4 and third.citations == ()  # logged, none shown
    assert log.query_ids == ("q1", "7") and len(log) == 3 and log.ranking_lengths == (1, 2)
    assert log.has_answers and log.has_citations and len(log.sha256) == 64


@pytest.mark.parametrize(("row", "message"), [
    ("{not json", r"line 2: invalid JSON .*each line must be one JSON object"),
    ("[1, 2]", r"line 2: expected a JSON object on each line"),
    ({"ranking": ["a"]}, r'line 2: missing field "query_id"; every line needs the id of the query'),
    ({"query_id": "q"}, r'line 2: missing field "ranking"; list the doc ids the generator was given'),
    ({"query_id": "q", "ranking": []}, r'line 2: field "ranking" is empty; list the doc ids'),
    ({"query_id": "q", "ranking": "a b"}, r'line 2: field "ranking" must be a list of doc ids, e\.g\.'),
    ({"query_id": "q", "ranking": ["a", "a"]}, r"line 2: field \"ranking\" lists 'a' twice; each doc id may appear"),
    ({"query_id": "q", "ranking": ["a", 3.5]}, r'line 2: a doc id in "ranking" must be a string .*use the doc ids'),
    ({"query_id": "", "ranking": ["a"]}, r'line 2: "query_id" is empty'),
    ({"query_id": True, "ranking": ["a"]}, r'line 2: "query_id" must be a string \(or an integer\), got bool'),
    ({"query_id": "q", "ranking": ["a"], "citations": "a"}, r'line 2: field "citations" must be a list of doc ids'),
    ({"query_id": "q", "ranking": ["a"], "answer": 3}, r'line 2: field "answer" must be a string \(or null\)'),
    ({"query_id": "q", "ranking": ["a"], "session": ["s"]}, r'line 2: field "session" must be a string or a number'),
    ({"query_id": "q", "ranking": ["a"], "latency": 3},
     r"line 2: unknown field\(s\) \['latency'\]; allowed: .* \(put other fields inside \"metadata\""),
    ({"query_id": "q", "ranking": ["a"], "metadata": [1]}, r'line 2: field "metadata" must be a JSON object'),
])
def test_bad_lines_name_the_file_the_line_and_the_fix(tmp_path, row, message):
    path = _log(tmp_path, [GOOD, row])
    with pytest.raises(DataFormatError, match=message) as info:
        load_rag_log(path)
    assert str(info.value).startswith(str(path)) and info.value.line == 2


def test_empty_missing_and_wrong_files(tmp_path):
    with pytest.raises(DataFormatError, match="no log lines found; the file is empty"):
        load_rag_log(_log(tmp_path, [""]))
    with pytest.raises(DataFormatError, match="file not found; check the path"):
        load_rag_log(tmp_path / "nope.jsonl")
    csv = tmp_path / "log.csv"
    csv.write_text("query_id,ranking\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"a RAG log must be JSONL"):
        load_rag_log(csv)
    bad = tmp_path / "latin.jsonl"
    bad.write_bytes(json.dumps(GOOD).encode() + b"\n" + '{"query_id": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"line 2: not valid UTF-8 .*re-save the file as UTF-8"):
        load_rag_log(bad)


def test_unknown_doc_ids_against_a_collection_are_reported_with_the_fix(tmp_path):
    shoes = load_collection("running-shoes")
    ok = shoes.doc_ids[:3]
    rows = [{"query_id": "rs-q01", "ranking": ok},
            {"query_id": "rs-q01", "ranking": ok, "citations": ["rs-999"]},
            {"query_id": "rs-q02", "ranking": [ok[0], "nike-1"]}]
    path = _log(tmp_path, rows)
    message = (r"line 2: 2 doc id\(s\) are not in collection 'running-shoes' \(first: 'rs-999' in citations; all: "
               r"'rs-999', 'nike-1'\); audit the log with the collection the system retrieved from \(--collection\)")
    with pytest.raises(DataFormatError, match=message):
        load_rag_log(path, collection=shoes)
    assert len(load_rag_log(path)) == 3  # without a collection the ids are not checked


# -- issue 19: line separators, lone surrogates, a bound on the lines held ---------------------------------------
def test_line_separators_inside_strings_stay_and_line_numbers_stay_right(tmp_path):
    rows = [{"query_id": "q1", "ranking": ["a"], "answer": "one\u2028two\u2029three\u0085four"},
            {"query_id": "q\u2028x", "ranking": ["b"], "query": "why\u2029?", "metadata": {"note": "\u0085"}}]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows) + '{"query_id": "q3"}\n',
                    encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"log.jsonl, line 3: missing field \"ranking\""):
        load_rag_log(path)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows), encoding="utf-8")
    first, second = load_rag_log(path).entries
    assert first.answer == "one\u2028two\u2029three\u0085four" and first.line == 1
    assert (second.query_id, second.query, second.metadata["note"], second.line) == ("q\u2028x", "why\u2029?",
                                                                                     "\u0085", 2)


@pytest.mark.parametrize("field, row", [
    ('"query_id"', '{"query_id": "q\\ud800", "ranking": ["a"]}'),
    ('"answer"', '{"query_id": "q1", "ranking": ["a"], "answer": "yes \\udc00"}'),
    ('"ranking"[1]', '{"query_id": "q1", "ranking": ["a", "\\uDBFF"]}'),
    ('"metadata"."why"[1]."y"', '{"query_id": "q1", "ranking": ["a"], "metadata": {"why": ["x", {"y": "\\ud800"}]}}'),
])
def test_a_lone_surrogate_is_refused_with_line_field_and_fix(tmp_path, field, row):
    """It loaded, then failed much later (pyarrow's UnicodeEncodeError when the audit was stored)."""
    path = _log(tmp_path, [GOOD, row])
    with pytest.raises(DataFormatError) as err:
        load_rag_log(path)
    assert str(err.value) == (f"{path}, line 2: {field} holds a lone surrogate escape (\\ud800-\\udfff without its "
                              "pair) is not text; fix the program that wrote the file to write valid UTF-8, or remove "
                              "the escape")


def test_a_lone_surrogate_ends_audit_log_with_exit_2(tmp_path, capsys):
    from fairrag_core.cli import main

    path = _log(tmp_path, ['{"query_id": "q\\ud800", "ranking": ["rs-001"]}'])
    assert main(["audit-log", str(path), "--no-store"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f'error: {path}, line 1: "query_id" holds a lone surrogate') and "\n" not in err


def test_a_log_holds_at_most_max_log_lines(tmp_path, monkeypatch):
    from fairrag_core.checks import DEFAULT_MAX_LOG_LINES, max_log_lines

    assert max_log_lines() == DEFAULT_MAX_LOG_LINES == 2_000_000
    path = _log(tmp_path, [GOOD, "", GOOD, GOOD, GOOD])
    monkeypatch.setenv("FAIRRAG_MAX_LOG_LINES", "4")
    assert len(load_rag_log(path)) == 4
    monkeypatch.setenv("FAIRRAG_MAX_LOG_LINES", "3")
    with pytest.raises(DataFormatError, match=r"log.jsonl, line 5: more than 3 log lines, more than one load holds in "
                                              r"memory; for exposure only, audit-log --attribution none reads a log "
                                              r"of any size column-wise; otherwise split the log \(e.g. by day\) and "
                                              r"audit the parts, or raise the limit with FAIRRAG_MAX_LOG_LINES"):
        load_rag_log(path)
    for bad in ("0", "1_000", "many", "\u0663"):
        monkeypatch.setenv("FAIRRAG_MAX_LOG_LINES", bad)
        with pytest.raises(InvalidParameterError, match=r"\$FAIRRAG_MAX_LOG_LINES=.* is not a positive whole number"):
            load_rag_log(path)


def test_bytes_held_per_log_line_keep_the_default_bound_under_half_a_gigabyte(tmp_path):
    """What sets FAIRRAG_MAX_LOG_LINES: a line whose values repeat earlier lines (the gzip bomb of one line) costs
    its LogEntry and little else; measured with tracemalloc (about 145 bytes in CPython 3.11)."""
    import gc
    import tracemalloc

    line = json.dumps({"query_id": "q1", "query": "marathon shoe?", "ranking": ["d1", "d2", "d3"], "answer": "yes",
                       "citations": ["d1"], "session": "s1", "timestamp": "2026-03-02T10:15:00Z"})
    path = _log(tmp_path, [line] * 20_000)
    gc.collect()
    tracemalloc.start()
    try:
        log = load_rag_log(path)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    per_line = held / len(log)
    assert len({id(e.ranking) for e in log.entries}) == 1 and len({id(e.metadata) for e in log.entries}) == 1
    assert per_line < 250, per_line
    assert per_line * DEFAULT_MAX_LOG_LINES < 500_000_000


def test_the_sha256_is_of_the_file_read_once(tmp_path):
    import hashlib

    path = _log(tmp_path, [GOOD, GOOD])
    assert load_rag_log(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
