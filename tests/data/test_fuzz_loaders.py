"""Malformed input to every loader raises only the FairRAGError family (a bounded run of
``benchmarks/fuzz_loaders.py``, hypothesis on the text parsers), and each bug the fuzzer found stays fixed."""

import contextlib
import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairrag_core.data import load_corpus, load_queries, load_rag_log, load_run
from fairrag_core.data.judgments import parse_judgments
from fairrag_core.data.served import parse_run
from fairrag_core.errors import DataFormatError, FairRAGError

ROOT = Path(__file__).resolve().parents[2]


def _fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_loaders", ROOT / "benchmarks" / "fuzz_loaders.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_bounded_fuzz_run_finds_nothing_outside_the_family():
    reports = _fuzzer().fuzz(per_target=40, seed=2026)
    assert len(reports) == 17 and all(r.inputs == 40 for r in reports)
    outside = [f for r in reports for f in r.failures]
    assert not outside, outside[:3]
    assert all(r.outcomes["DataFormatError"] > 0 for r in reports)  # the mutations do reach the checks


_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=400) | st.sampled_from(
    ["q1 s1 d1 1 2.0 sys\n", "id\tseq_no\tpage_id\nq\t1\td\n", "q1 1|2 d1 2\n", '{"query_id": "q", "ranking": ["d"]}'])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | _TEXT.map(str.encode) | _TEXT.map(lambda t: gzip.compress(t.encode())[:40]))
def test_run_and_judgment_parsers_take_any_bytes(raw):
    for parse in (parse_run, parse_judgments):
        with contextlib.suppress(FairRAGError):
            parse(raw)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(_TEXT)
def test_jsonl_loaders_take_any_text(tmp_path, text):
    path = tmp_path / "x.jsonl"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    for load in (load_corpus, load_queries, load_rag_log):
        with contextlib.suppress(FairRAGError):
            load(path)


# -- regressions: what the fuzzer found --------------------------------------------------------------------------
@pytest.mark.parametrize("value, message", [
    ("[" * 5000 + "]" * 5000, "JSON nested too deeply"),
    ("9" * 5000, "unreadable JSON value .*write long numbers as strings"),
])
def test_json_lines_that_python_cannot_read(tmp_path, value, message):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"doc_id": "d1", "text": "ok"}\n{"doc_id": "d2", "text": ' + value + "}\n")
    with pytest.raises(DataFormatError, match=rf"corpus.jsonl, line 2: {message}"):
        load_corpus(path)


def test_a_csv_cell_over_the_field_limit(tmp_path):
    path = tmp_path / "corpus.csv"
    path.write_text("doc_id,text\nd1,short\nd2," + "x" * 200_000 + "\n")
    with pytest.raises(DataFormatError, match=r"corpus.csv, line 3: unreadable CSV \(field larger than field limit.*"
                                              r"use corpus.jsonl for long documents"):
        load_corpus(path)


def test_broken_quoting_in_a_csv_header(tmp_path):
    path = tmp_path / "corpus.csv"
    path.write_bytes(b'doc_id,"te\x00xt\n')
    with pytest.raises(DataFormatError, match="corpus.csv"):
        load_corpus(path)


@pytest.mark.parametrize("parse", [parse_run, parse_judgments])
def test_broken_gzip_bytes_are_a_data_format_error(parse):
    raw = gzip.compress(b"q1 s1 d1 1 2.0 sys\n")[:25]
    with pytest.raises(DataFormatError, match="looks gzipped but cannot be decompressed"):
        parse(raw)


def test_a_gzip_bomb_is_refused_without_filling_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRRAG_MAX_FILE_MB", "1")
    bomb = gzip.compress(b"q1 s1 d1 1 2.0 sys\n" * 200_000)  # 3.8 MB from 10 kB
    assert len(bomb) < 50_000
    with pytest.raises(DataFormatError, match="decompresses to more than 1 MB.*FAIRRAG_MAX_FILE_MB"):
        parse_run(bomb)
    path = tmp_path / "run.txt.gz"
    path.write_bytes(bomb)
    with pytest.raises(DataFormatError, match="run.txt.gz: the file decompresses to more than 1 MB"):
        load_run(path)


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRRAG_MAX_FILE_MB", "0.001")
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"doc_id": "d", "text": "x" * 5000}) + "\n")
    with pytest.raises(DataFormatError, match=r"corpus.jsonl: the file is 0 MB, more than the 0 MB a loader reads into "
                                              r"memory; split it, or raise the limit with FAIRRAG_MAX_FILE_MB"):
        load_corpus(path)


def test_a_served_run_too_big_to_tabulate(monkeypatch):
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "0.008")  # 1,000 cells of 8 bytes
    lines = [f"q1 s{i} d{i} 1 1 sys" for i in range(100)] + [f"q1 deep e{r} {r} 1 sys" for r in range(1, 101)]
    with pytest.raises(DataFormatError, match=r"query 'q1' has 101 samples and one of them is 100 documents deep: a "
                                              r"table of 10,100 cells is more than the 1,000 of the memory budget "
                                              r"\(FAIRRAG_MAX_MEMORY_MB\); cut the rankings to the depth you evaluate"):
        parse_run("\n".join(lines) + "\n")


def test_an_aspect_index_of_five_thousand_digits(tmp_path):
    from fairrag_core.data.loaders import load_aspect_qrels

    path = tmp_path / "aspect_qrels.tsv"
    path.write_text("query_id\taspect_index\tdoc_id\nq1\t" + "9" * 5000 + "\td1\n")
    with pytest.raises(DataFormatError, match=r"line 2: aspect_index '9{20}' is not a whole number ≥ 0 \(at most 6 "):
        load_aspect_qrels(path)


@pytest.mark.parametrize("name", ["..", ".", "", "../../escape.jsonl", "nul\x00.jsonl", "x" * 300 + ".jsonl",
                                  "a/b\\c.txt"])
def test_a_served_upload_with_an_odd_file_name_is_read_or_refused_cleanly(tmp_path, name):
    from fairrag_core.data.collection import Collection, Document, Query
    from fairrag_studio.views.served import read_served, save_served_upload

    small = Collection("fuzz", tuple(Document(f"d{i}", f"text {i}", provider="P") for i in (1, 2)),
                       (Query("q1", "x"),), {"q1": {"d1": 1}})
    root = tmp_path / "uploads"
    path = save_served_upload(name, b'{"query_id": "q1", "ranking": ["d1", "d2"]}\n', root)
    assert path.parent.parent == root and path.is_file() and len(path.name) <= 120  # never outside, never too long
    with contextlib.suppress(FairRAGError):  # a name without a log suffix is read as a run and refused
        read_served(path, small)
