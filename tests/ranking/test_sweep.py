import numpy as np
import pytest

from fairrag_core import InvalidParameterError, SweepConfig, exposure_sweep, load_collection, summarise_sweep
from fairrag_core.retrieval import BM25Retriever


def test_sweep_table_and_paper_picture(shoes, shoes_bm25):
    run = exposure_sweep(shoes, shoes_bm25, SweepConfig(alphas=(0, 2, 8), n_samples=50, k=5, seed=1))
    table = run.table
    assert len(table) == 3 * len(shoes.queries)
    assert set(table.columns) >= {"query_id", "alpha", "n", "m", "ee_d", "ee_r", "providers_reached"}
    assert run.record.seed == 1 and run.record.config.alphas == (0, 2, 8)
    assert run.record.sampled_rankings == 3 * len(shoes.queries) * 50
    summary = summarise_sweep(table)
    assert list(summary["alpha"]) == [0.0, 2.0, 8.0]
    assert np.all(np.diff(summary["ee_d"]) > 0)  # EE-D rises with α (paper, Fig. 3)
    assert np.all(np.diff(summary["ee_r"]) > 0)  # and so does exposure on useful documents
    # uniform at α = 0: E[plug-in EE-D] = k/n + (1 − k/n)/N (the finite-N bias); the EE-D shown (bias-corrected)
    # removes it and lands on the policy's exact k/n
    uniform = 5 / 20  # among the default first-stage K = 20
    assert run.record.extra["candidates_used"] == 20 and "notes" not in run.record.extra
    plug_in = table[table["alpha"] == 0]["ee_d_plug_in"].mean()
    assert plug_in == pytest.approx(uniform + (1 - uniform) / 50, abs=0.006)
    assert summary["ee_d"].iloc[0] == pytest.approx(uniform, abs=0.004)


def test_sweep_reproducible_and_query_selection(shoes, shoes_bm25):
    config = SweepConfig(alphas=(1.0,), n_samples=20, k=3, seed=5, query_ids=("rs-q01", "rs-q02"))
    a = exposure_sweep(shoes, shoes_bm25, config)
    b = exposure_sweep(shoes, shoes_bm25, config)
    assert a.table.equals(b.table) and a.documents.equals(b.documents) and a.record == b.record
    assert list(a.table["query_id"]) == ["rs-q01", "rs-q02"]


def test_sweep_errors(shoes, shoes_bm25):
    with pytest.raises(InvalidParameterError, match="at least one α"):
        exposure_sweep(shoes, shoes_bm25, SweepConfig(alphas=()))
    with pytest.raises(InvalidParameterError, match="negative"):
        exposure_sweep(shoes, shoes_bm25, SweepConfig(alphas=(-1.0,)))
    with pytest.raises(InvalidParameterError, match="unknown query_id"):
        exposure_sweep(shoes, shoes_bm25, SweepConfig(query_ids=("nope",)))
    with pytest.raises(InvalidParameterError, match="k=500"):
        exposure_sweep(shoes, shoes_bm25, SweepConfig(k=500))


def test_sweep_needs_qrels(tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"doc_id": "a", "text": "x"}\n{"doc_id": "b", "text": "y"}\n')
    c = load_collection(tmp_path)
    with pytest.raises(InvalidParameterError, match="no queries with relevance labels"):
        exposure_sweep(c, BM25Retriever(c.texts), SweepConfig(k=1))
