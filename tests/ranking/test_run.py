import numpy as np
import pytest

from fairrag_core import InvalidParameterError, RankingConfig, run_ranking
from fairrag_core.retrieval import BM25Retriever

MARATHON = "best shoes for a first marathon"


def test_known_query_gets_labels_and_ee_r(shoes, shoes_bm25):
    run = run_ranking(shoes, shoes_bm25, MARATHON, RankingConfig(alpha=2, n_samples=50, k=5, seed=1), n_boot=100)
    assert run.query.query_id == "rs-q01"
    assert run.rankings.shape == (50, 5) and run.labels is not None
    assert run.summary.ee_r is not None and 0 <= run.summary.ee_r.estimate <= 1
    # one deterministic ranking: EE-D is exactly 1, with no interval (there is nothing to resample)
    assert run.deterministic_summary.ee_d_plug_in == 1.0 and run.deterministic_summary.ee_d is None
    assert "one sampled ranking" in run.deterministic_summary.undefined["ee_d_interval"]
    docs = run.documents_table()
    assert docs["exposure"].sum() == pytest.approx(5) and docs["deterministic_exposure"].sum() == 5
    assert docs["target_exposure"].sum() == pytest.approx(5)
    providers = run.providers_table()
    assert providers["exposure"].sum() == pytest.approx(5)
    # the default first stage: the top K = 20 (issue 28: one default K in the CLI, the API and the app)
    assert run.candidate_indices.size == 20 and len(docs) == 20 and run.notes == ()
    assert set(providers["provider"]) == {shoes.providers[i] for i in run.candidate_indices}


def test_free_query_has_no_ee_r(shoes, shoes_bm25):
    run = run_ranking(shoes, shoes_bm25, "shoes with red laces", RankingConfig(alpha=1, n_samples=10, k=3, seed=0),
                      n_boot=10)
    assert run.query is None and run.labels is None and run.summary.ee_r is None


def test_seeded_runs_reproduce(shoes, shoes_bm25):
    config = RankingConfig(alpha=2, n_samples=20, k=5, seed=123)
    a = run_ranking(shoes, shoes_bm25, MARATHON, config, n_boot=10)
    b = run_ranking(shoes, shoes_bm25, MARATHON, config, n_boot=10)
    assert np.array_equal(a.rankings, b.rankings)
    assert a.summary.ee_d == b.summary.ee_d and a.summary.ee_r == b.summary.ee_r  # bootstrap seeded too
    c = run_ranking(shoes, shoes_bm25, MARATHON, RankingConfig(alpha=2, n_samples=20, k=5), n_boot=10)
    assert isinstance(c.seed, int)  # a fresh seed is drawn and recorded


def test_lower_alpha_spreads_exposure_over_more_providers(shoes, shoes_bm25):
    reached = []
    for alpha in (8.0, 4.0, 2.0, 0.5):
        run = run_ranking(shoes, shoes_bm25, MARATHON,
                          RankingConfig(alpha=alpha, n_samples=100, k=5, seed=7, candidates=None), n_boot=10)
        reached.append(int((run.providers_table()["exposure"] > 0).sum()))
    assert reached == sorted(reached) and reached[-1] > reached[0]
    assert reached[-1] == len(set(shoes.providers))


def test_first_stage_cut_off(shoes, shoes_bm25):
    run = run_ranking(shoes, shoes_bm25, MARATHON, RankingConfig(alpha=0, n_samples=30, k=5, candidates=10, seed=0),
                      n_boot=10)
    assert run.candidate_indices.size == 10
    assert set(run.rankings.ravel()) <= set(range(10))
    with pytest.raises(InvalidParameterError, match="k=12 is larger than the 10 candidate"):
        run_ranking(shoes, shoes_bm25, MARATHON, RankingConfig(alpha=0, k=12, candidates=10))


def test_retriever_must_match_collection(shoes):
    with pytest.raises(InvalidParameterError, match="build the retriever from collection.texts"):
        run_ranking(shoes, BM25Retriever(["a", "b"]), MARATHON, RankingConfig(alpha=1))


def test_empty_query(shoes, shoes_bm25):
    with pytest.raises(InvalidParameterError, match="query is empty"):
        run_ranking(shoes, shoes_bm25, "  ", RankingConfig(alpha=1))
