import json

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


def test_sweep_needs_queries(tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"doc_id": "a", "text": "x"}\n{"doc_id": "b", "text": "y"}\n')
    c = load_collection(tmp_path)
    with pytest.raises(InvalidParameterError, match="has no queries; add queries.jsonl"):
        exposure_sweep(c, BM25Retriever(c.texts), SweepConfig(k=1))


def test_a_sweep_over_partial_qrels_measures_ee_d_on_every_query_and_says_what_ee_r_leaves_out(tmp_path):
    """Issue 30: 3 of 5 queries without judgements were silently not swept ("0 left out"). EE-D needs no labels
    (Eq. 16), so every query is swept; EE-R (Eq. 28) is undefined without useful documents, and the means name the
    queries they leave out and why."""
    from fairrag_core.ranking.sweep import left_out

    docs = [{"doc_id": f"d{i}", "text": f"shoe {i} marathon trail road {'fast ' * i}", "provider": f"p{i % 3}"}
            for i in range(8)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps({"query_id": f"q{i}", "text": f"fast shoe {i}"})
                                                    + "\n" for i in range(5)))
    (tmp_path / "qrels.txt").write_text("q0 0 d1 1\nq0 0 d2 1\nq0 0 d3 1\nq1 0 d4 1\n")
    c = load_collection(tmp_path)
    run = exposure_sweep(c, BM25Retriever(c.texts), SweepConfig(alphas=(0.0, 2.0), n_samples=20, k=2, seed=1))
    table = run.table
    assert sorted(table["query_id"].unique()) == ["q0", "q1", "q2", "q3", "q4"]
    assert table["ee_d"].notna().all()
    assert table.set_index("query_id")["ee_r"].isna().groupby(level=0).all().to_dict() == {
        "q0": False, "q1": False, "q2": True, "q3": True, "q4": True}
    assert run.record.extra["unjudged_queries"] == ["q2", "q3", "q4"]
    summary = summarise_sweep(table)
    assert summary["queries"].tolist() == [5, 5] and summary["ee_r_queries"].tolist() == [1, 1]
    at_zero = table[table["alpha"] == 0.0]
    assert summary["ee_d"].iloc[0] == pytest.approx(at_zero["ee_d"].mean())
    assert summary["ee_r"].iloc[0] == pytest.approx(at_zero.loc[at_zero["query_id"] == "q0", "ee_r"].item())
    assert left_out(table, run.record.extra["unjudged_queries"]) == (
        "Swept 5 queries: EE-D and providers reached on all 5 (they need no relevance labels); EE-R on the 1 with "
        "≥ 2 useful candidates. Left out of EE-R: 3 of 5 without relevance judgements (EE-R undefined): q2, q3, q4; "
        "1 with one useful candidate (no fairness question among one, as in Kim & Diaz 2025, §4): q1.")
