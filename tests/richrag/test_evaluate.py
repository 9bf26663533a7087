"""Held-out evaluation tables and fairness-meets-coverage tables on real pools (no model: a stub ranker)."""

import numpy as np
import pandas as pd
import pytest

from fairrag_core.richrag.evaluate import (
    RichEvalConfig,
    answer_scores,
    combine_folds,
    evaluate_pools,
    ncom_table,
    summarise,
    system_lists,
)
from fairrag_core.richrag.fairness import fairness_coverage_curve, provider_exposure, provider_summary
from fairrag_core.richrag.train import RankerTrainConfig, build_query_pools

IDS = ["mf-q01", "mf-q02", "mf-q03", "mf-q04", "mf-q05", "mf-q06"]


class ReversedPool:
    """A stand-in ranker: the pool from its end (no torch, no encoder)."""

    name = "stub"

    def features(self, query, aspects, documents, aspect_sets, aspect_ranks=None):
        return len(documents)

    def rank_features(self, features, k):
        return [list(range(m - 1, m - 1 - min(k, m), -1)) for m in features]


@pytest.fixture(scope="module")
def pools(multi_faceted, mf_bm25):
    return build_query_pools(multi_faceted, mf_bm25, IDS, RankerTrainConfig())


def test_every_system_lists_k_distinct_pool_positions(pools, mf_bm25):
    lists = system_lists(pools, mf_bm25, 5, {"ranker-dpo": ReversedPool()})
    assert list(lists) == ["relevance", "mmr", "round-robin", "ranker-dpo", "oracle"]
    for per_pool in lists.values():
        for qp, ranking in zip(pools, per_pool):
            assert len(ranking) == 5 == len(set(ranking)) and max(ranking) < len(qp.pool)


def test_summary_intervals_contain_their_estimates_and_the_oracle_is_one(pools, mf_bm25):
    lists = system_lists(pools, mf_bm25, 10, {"ranker-dpo": ReversedPool()})
    per_query = ncom_table(pools, lists, [3, 5])
    assert set(per_query.k) == {3, 5} and len(per_query) == 2 * len(lists) * len(pools)
    table = summarise(per_query, n_boot=300)
    assert (table.low <= table.ncom + 1e-12).all() and (table.ncom <= table.high + 1e-12).all()
    oracle = table[table.system == "oracle"]
    assert np.allclose(oracle.ncom, 1.0)
    rr = table[(table.system == "round-robin") & (table.k == 5)].iloc[0]
    means = per_query[per_query.k == 5].groupby("system").ncom.mean()
    assert rr.ranker_minus == pytest.approx(means["ranker-dpo"] - means["round-robin"])
    assert rr.diff_low <= rr.ranker_minus <= rr.diff_high and 0 < rr.p_value <= 1
    assert pd.isna(table[table.system == "ranker-dpo"].ranker_minus).all()  # no difference to itself


def test_evaluation_and_folds_keep_every_query_once(pools, mf_bm25):
    config = RichEvalConfig(ks=(3, 5), n_boot=200)
    parts = [evaluate_pools(pools[:3], mf_bm25, {"ranker-dpo": ReversedPool()}, config, split="a"),
             evaluate_pools(pools[3:], mf_bm25, {"ranker-dpo": ReversedPool()}, config, split="b")]
    both = combine_folds(parts, config, split="2 folds")
    assert both.query_ids == IDS
    assert both.per_query.groupby(["system", "k"]).size().eq(len(IDS)).all()
    out = both.to_dict()
    assert out["split"] == "2 folds" and {r["system"] for r in out["ncom"]} >= {"oracle", "ranker-dpo"}


class EchoGenerator:
    """Writes the first document back as the answer (a stand-in for the LLM; counts calls)."""

    name = "echo"

    def __init__(self):
        self.calls = 0
        self.model = self

    def complete(self, prompts, decoding=None):
        from fairrag_core.models.llm import Completion

        self.calls += len(prompts)
        return [Completion(p.user.split("\n")[1].split(": ", 1)[-1], "stop") for p in prompts]


def test_answer_scores_share_answers_between_identical_lists(pools, multi_faceted):
    lists = {"a": [[0, 1, 2]], "b": [[0, 1, 2]], "c": [[2, 1, 0]]}
    generator = EchoGenerator()
    docs = lambda qp, top: [multi_faceted.documents[int(qp.pool.indices[j])] for j in top]  # noqa: E731
    table = answer_scores(pools[:1], lists, generator, 3, documents=docs)
    assert generator.calls == 2 and list(table.system) == ["a", "b", "c"]
    assert table.cr2.iloc[0] == table.cr2.iloc[1] and ((table[["cr1", "cr2", "crl"]] >= 0).all().all())


def test_provider_exposure_hand_case(pools, multi_faceted):
    qp = pools[0]
    providers = [multi_faceted.documents[int(i)].provider for i in qp.pool.indices]
    table = provider_exposure(multi_faceted, [qp], {"x": [[0, 1, 2]]}, 3)
    _, counts = np.unique(providers[:3], return_counts=True)
    assert table.providers.iloc[0] == len(counts)
    assert table.provider_hhi.iloc[0] == pytest.approx(((counts / 3) ** 2).sum())
    assert provider_summary(table).columns.tolist() == ["system", "providers", "provider_hhi", "top_provider_share",
                                                        "ncom"]


def test_alpha_trades_disparity_for_coverage(pools, mf_bm25):
    from fairrag_core.richrag.evaluate import query_scores

    scores = {"relevance": [query_scores(qp, mf_bm25) for qp in pools[:3]],
              "coverage": [qp.phi.mean(axis=1) for qp in pools[:3]]}
    curve = fairness_coverage_curve(pools[:3], scores, [0, 2, 16], k=5, n_samples=60, seed=0,
                                    greedy={"oracle": [list(range(5)) for _ in pools[:3]]})
    pl = curve[curve.policy == "plackett-luce"].set_index(["system", "alpha"])
    for system in scores:
        assert pl.loc[(system, 0.0), "ee_d"] < pl.loc[(system, 2.0), "ee_d"] < pl.loc[(system, 16.0), "ee_d"]
    assert pl.loc[("coverage", 16.0), "ncom"] > pl.loc[("coverage", 0.0), "ncom"]
    greedy = curve[curve.policy == "greedy"]
    assert greedy.ee_d.tolist() == [1.0] and greedy.system.tolist() == ["oracle"]
    again = fairness_coverage_curve(pools[:3], scores, [0, 2, 16], k=5, n_samples=60, seed=0)
    assert again.equals(curve[curve.policy == "plackett-luce"].reset_index(drop=True))


def test_answers_can_be_limited_to_some_queries_and_systems(pools, mf_bm25, multi_faceted):
    from fairrag_core.errors import InvalidParameterError

    generator = EchoGenerator()
    docs = lambda qp, top: [multi_faceted.documents[int(qp.pool.indices[j])] for j in top]  # noqa: E731
    config = RichEvalConfig(k=3, answers=True, answer_queries=2, answer_systems=("relevance", "ranker-dpo"),
                            n_boot=50)
    result = evaluate_pools(pools, mf_bm25, {"ranker-dpo": ReversedPool()}, config, split="test",
                            generator=generator, documents=docs)
    assert set(result.answers.system) == {"relevance", "ranker-dpo"}
    assert result.answers.query_id.tolist() == [qp.query_id for qp in pools[:2] for _ in range(2)]
    assert set(result.per_query.query_id) == {qp.query_id for qp in pools}  # NCOM still on every query
    assert RichEvalConfig.from_dict(config.to_dict()) == config
    with pytest.raises(InvalidParameterError, match="choose from"):
        RichEvalConfig(answer_systems=("bm25",))
