"""Huge inputs get a clear refusal naming the fix, quickly, instead of exhausting memory: N = 10⁹ samples, N ×
candidates, absurd k and K, a 1 MB query, bootstrap counts, a 200 MB upload, and CSV outputs that defuse formulas."""

import csv
import io
import time

import numpy as np
import pandas as pd
import pytest

from fairrag_core import InvalidParameterError, RankingConfig, load_collection, run_ranking, sample_rankings
from fairrag_core.checks import MAX_QUERY_CHARS, MAX_SAMPLES, check_at_most, check_work, max_upload_bytes
from fairrag_core.cli import main
from fairrag_core.data.export import csv_bytes, defuse, write_table
from fairrag_core.errors import DataFormatError
from fairrag_core.metrics.intervals import bootstrap_mean
from fairrag_core.ranking.sampling import sample_rankings_batch
from fairrag_core.retrieval import BM25Retriever


@pytest.fixture(scope="module")
def shoes_index():
    shoes = load_collection("running-shoes")
    return shoes, BM25Retriever(shoes.texts)


def _fast(call, *args, **kwargs):
    start = time.perf_counter()
    try:
        call(*args, **kwargs)
    finally:
        assert time.perf_counter() - start < 5, "a refusal must come before the work, not after"


def test_a_billion_samples_is_refused_before_any_allocation():
    with pytest.raises(InvalidParameterError, match=r"n_samples=1,000,000,000 is more than the 1,000,000 one call "
                                                    r"takes; lower N \(the paper uses 100\)"):
        _fast(sample_rankings, np.arange(50.0), alpha=2, n_samples=10**9, k=5)
    with pytest.raises(InvalidParameterError, match="n_samples=1,000,000,000"):
        _fast(sample_rankings_batch, np.ones((3, 50)), alpha=1, n_samples=10**9, k=5)


def test_n_times_candidates_is_bounded():
    # 100 candidates and k = 30: the head covers them all, so the work array is N × 100
    with pytest.raises(InvalidParameterError, match=r"N × candidates \(1,000,000 × 100\) = 100,000,000 cells needs 800 "
                                                    r"MB, more than the 400 MB one step may allocate; .*--candidates"
                                                    r"\) \(or raise the budget with FAIRRAG_MAX_MEMORY_MB\)$"):
        _fast(sample_rankings, np.arange(100.0), alpha=2, n_samples=MAX_SAMPLES, k=30)
    assert sample_rankings(np.arange(100.0), alpha=2, n_samples=1000, k=5, seed=0).shape == (1000, 5)


def test_a_run_with_absurd_n_k_and_k_candidates(shoes_index):
    shoes, bm25 = shoes_index
    query = shoes.queries[0].text
    with pytest.raises(InvalidParameterError, match="n_samples=1,000,000,000"):
        _fast(run_ranking, shoes, bm25, query, RankingConfig(alpha=2, n_samples=10**9, k=5, seed=1))
    with pytest.raises(InvalidParameterError, match=r"k=1000000000000 is larger than the \d+ candidate"):
        _fast(run_ranking, shoes, bm25, query, RankingConfig(alpha=2, n_samples=10, k=10**12, seed=1))
    huge_k = run_ranking(shoes, bm25, query, RankingConfig(alpha=2, n_samples=10, k=5, seed=1, candidates=10**12))
    assert huge_k.candidate_indices.size == len(shoes)  # K beyond the corpus means every document


def test_a_one_megabyte_query_is_refused_before_scoring(shoes_index):
    shoes, bm25 = shoes_index
    query = "shoe " * 200_000
    with pytest.raises(InvalidParameterError, match=rf"query is 999,999 characters long; shorten it to at most "
                                                    rf"{MAX_QUERY_CHARS:,} characters"):
        _fast(run_ranking, shoes, bm25, query, RankingConfig(alpha=2, n_samples=10, k=5, seed=1))
    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        assert main(["rank", "--query", query, "--samples", "5"], out=io.StringIO()) == 2
    assert "shorten it to at most 2,000 characters" in err.getvalue()


def test_bootstrap_counts_are_bounded():
    with pytest.raises(InvalidParameterError, match=r"n_boot=1,000,000,000 is more than the 1,000,000 .*1,000 "
                                                    r"resamples are the usual number"):
        _fast(bootstrap_mean, np.arange(10.0), n_boot=10**9)


def test_limit_helpers():
    assert check_at_most(5, "x", 10, fix="f") == 5
    with pytest.raises(InvalidParameterError, match="x=11 is more than the 10 one call takes; lower x"):
        check_at_most(11, "x", 10, fix="lower x")
    with pytest.raises(InvalidParameterError, match="x must be a positive integer"):
        check_at_most(0, "x", 10, fix="f")
    check_work(10, "a × b", fix="f", limit=10)
    with pytest.raises(InvalidParameterError, match=r"a × b = 11 cells is more than the 10 one step may hold; "
                                                    r"shrink a"):
        check_work(11, "a × b", fix="shrink a", limit=10)


def test_one_memory_budget_read_from_the_environment(monkeypatch):
    from fairrag_core.checks import DEFAULT_MEMORY_MB, check_memory, max_memory_bytes, rows_in_budget

    monkeypatch.delenv("FAIRRAG_MAX_MEMORY_MB", raising=False)
    assert max_memory_bytes() == DEFAULT_MEMORY_MB * 1_000_000 == 400_000_000
    check_memory(400_000_000, "a × b", fix="shrink a")
    with pytest.raises(InvalidParameterError, match=r"^a × b needs 500 MB, more than the 400 MB one step may allocate; "
                                                    r"shrink a \(or raise the budget with FAIRRAG_MAX_MEMORY_MB\)$"):
        check_memory(500_000_000, "a × b", fix="shrink a")
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "0.01")
    assert max_memory_bytes() == 10_000
    assert rows_in_budget(800, "one row", fix="f") == 12
    with pytest.raises(InvalidParameterError, match=r"^one row needs 0.02 MB, more than the 0.01 MB one step"):
        rows_in_budget(20_000, "one row", fix="f")
    check_work(1_250, "a × b", fix="f")  # 8 bytes a cell: 10,000 bytes
    with pytest.raises(InvalidParameterError, match=r"^a × b = 1,251 cells needs 0.01 MB, more than the 0.01 MB"):
        check_work(1_251, "a × b", fix="f")
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "lots")
    with pytest.raises(InvalidParameterError, match=r"\$FAIRRAG_MAX_MEMORY_MB='lots' is not a number of megabytes"):
        max_memory_bytes()


def test_upload_limit_and_a_200_megabyte_upload(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setattr(resources, "UPLOAD_ROOT", tmp_path / "uploads")
    assert max_upload_bytes() == 50_000_000
    big = b" " * 200_000_000
    with pytest.raises(DataFormatError, match=r"corpus.jsonl: the upload is 200 MB, more than the 50 MB the app "
                                              r"accepts; load a larger collection from its folder with the CLI"):
        _fast(resources.save_upload, ("corpus.jsonl", big), None, None)
    del big
    assert not (tmp_path / "uploads").exists()  # refused before anything was written
    monkeypatch.setenv("FAIRRAG_MAX_UPLOAD_MB", "0.0001")
    with pytest.raises(DataFormatError, match=r"queries.jsonl: the upload is 0 MB, more than the 0 MB"):
        resources.save_upload(("corpus.jsonl", b'{"doc_id": "d", "text": "t"}\n'), ("queries.jsonl", b"x" * 500), None)
    monkeypatch.setenv("FAIRRAG_MAX_UPLOAD_MB", "many")
    with pytest.raises(InvalidParameterError, match=r"\$FAIRRAG_MAX_UPLOAD_MB='many' is not a number of megabytes"):
        max_upload_bytes()


# -- CSV outputs: formulas defused -----------------------------------------------------------------------------
EVIL = ["=HYPERLINK(\"http://x\",\"y\")", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx", "-0.25", "plain", "<script>"]


def test_defuse_every_formula_start():
    assert [defuse(v) for v in EVIL] == ["'" + v for v in EVIL[:6]] + ["-0.25", "plain", "<script>"]
    table = pd.DataFrame({"=col": EVIL, "cat": pd.Categorical(EVIL), "n": range(len(EVIL))})
    back = pd.read_csv(io.BytesIO(csv_bytes(table)), dtype=str, keep_default_na=False)
    assert back.columns.tolist() == ["'=col", "cat", "n"]
    expected = ["'" + v for v in EVIL[:6]] + EVIL[6:]
    expected[5] = "'\nx"  # a CR inside a cell becomes a line feed, which pandas quotes
    assert back["'=col"].tolist() == expected and back["cat"].tolist() == expected
    assert table["=col"].tolist() == EVIL  # the caller's table is left alone


def test_a_carriage_return_cannot_start_a_new_row_with_a_formula():
    table = pd.DataFrame({"answer": ["fine\r=HYPERLINK(\"http://x\")", "a\r\nb"], "n": [1, 2]})
    rows = list(csv.reader(io.StringIO(csv_bytes(table).decode(), newline="")))
    assert rows == [["answer", "n"], ["fine\n=HYPERLINK(\"http://x\")", "1"], ["a\nb", "2"]]


def test_write_table_defuses_csv_and_keeps_parquet_typed(tmp_path):
    table = pd.DataFrame({"query": ["=1+1", "ok"], "x": [1.5, -2.0]})
    assert write_table(table, tmp_path / "t.csv").read_text().splitlines() == ["query,x", "'=1+1,1.5", "ok,-2.0"]
    back = pd.read_parquet(write_table(table, tmp_path / "t.parquet"))
    assert back["query"].tolist() == ["=1+1", "ok"]


def test_cli_output_csv_defuses_user_text(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(
        f'{{"doc_id": "d{i}", "text": "shoe text {i}", "provider": "=P{i % 2}"}}\n' for i in range(6)))
    (folder / "queries.jsonl").write_text('{"query_id": "=HYPERLINK(1)", "text": "shoe"}\n')
    (folder / "qrels.txt").write_text("=HYPERLINK(1) 0 d1 1\n")
    out = tmp_path / "sweep.csv"
    assert main(["exposure-sweep", "--collection", str(folder), "--alphas", "1", "--samples", "5", "-k", "2",
                 "--seed", "1", "--output", str(out)], out=io.StringIO()) == 0
    text = out.read_text()
    assert "'=HYPERLINK(1)" in text and "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text


def test_streamlit_caps_uploads_to_protect_the_server_and_the_app_counts_trace_requests():
    """The app's uploader cap (MiB, .streamlit/config.toml) protects the server (at most 1 GiB, refused in the
    browser above it) while a trace export the size of issue 29's (47 MB for 300 requests) passes it: below the cap,
    a trace export is limited in requests kept (MAX_UPLOAD_REQUESTS), any other file by FAIRRAG_MAX_UPLOAD_MB."""
    import tomllib
    from pathlib import Path

    from fairrag_core.checks import MAX_UPLOAD_REQUESTS

    config = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())
    cap = config["server"]["maxUploadSize"] * 1024 * 1024
    assert 60_000_000 < cap <= 1 << 30 and max_upload_bytes() < cap and MAX_UPLOAD_REQUESTS >= 300


@pytest.mark.parametrize("argv", [["rank", "--query", "trail shoe"],
                                  ["exposure-sweep", "--collection", "running-shoes", "--alphas", "1"]])
def test_the_cli_refuses_a_billion_samples_with_the_fix(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    start = time.perf_counter()
    assert main([*argv, "--samples", "1000000000"], out=io.StringIO()) == 2
    assert time.perf_counter() - start < 5
    err = capsys.readouterr().err
    assert "n_samples=1,000,000,000 is more than the 1,000,000 one call takes; lower N" in err


def test_an_alpha_grid_of_a_million_values_is_refused_before_parsing():
    from fairrag_core.checks import MAX_ALPHAS, parse_alphas

    text = ",".join(str(i) for i in range(1_000_000))  # 6.9 MB typed into "α values" or --alphas
    with pytest.raises(InvalidParameterError, match=r"1,000,000 α values is more than the 100 one grid takes; give "
                                                    r"fewer \(the paper uses 0,1,2,4,8\)"):
        _fast(parse_alphas, text)
    assert len(parse_alphas(",".join(str(i) for i in range(MAX_ALPHAS)))) == MAX_ALPHAS
    assert parse_alphas(",".join(["2"] * 500)) == (2.0,)  # repeats are one value
    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        assert main(["exposure-sweep", "--alphas", text], out=io.StringIO()) == 2
    assert "α values is more than the 100 one grid takes" in err.getvalue()
