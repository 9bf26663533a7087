"""Training data for the list-wise ranker: the split, pools, augmented views, silver lists, US³ pairs, and a tiny
end-to-end run that is reproducible."""

import hashlib
from dataclasses import replace

import numpy as np
import pytest

from fairrag_core.errors import InvalidParameterError
from fairrag_core.richrag.coverage import greedy_coverage, ncom
from fairrag_core.richrag.ranker import EncodingCache
from fairrag_core.richrag.train import (
    RankerTrainConfig,
    augment,
    build_query_pools,
    dpo_pairs,
    fold_splits,
    prefetch_encodings,
    silver_instances,
    split_queries,
    train_ranker,
)


def test_fixed_split_is_disjoint_stratified_and_seeded(multi_faceted):
    config = RankerTrainConfig()
    train, test = split_queries(multi_faceted, config)
    assert len(test) == 15 and len(train) == 45 and not set(train) & set(test)
    assert (train, test) == split_queries(multi_faceted, config)
    assert split_queries(multi_faceted, replace(config, split_seed=1))[1] != test
    sizes = {n: sum(len(multi_faceted.query(q).aspects) == n for q in test) for n in (3, 4, 5)}
    everyone = {n: sum(len(q.aspects) == n for q in multi_faceted.queries) for n in (3, 4, 5)}
    assert all(abs(sizes[n] - 15 * everyone[n] / 60) < 1 for n in sizes)  # proportional to the strata


def test_training_seed_does_not_move_the_split(multi_faceted):
    assert split_queries(multi_faceted, RankerTrainConfig(seed=1)) == split_queries(multi_faceted,
                                                                                     RankerTrainConfig(seed=2))


def test_folds_hold_out_every_query_once(multi_faceted):
    folds = fold_splits(multi_faceted, 5, seed=0)
    held = [q for _, test in folds for q in test]
    assert sorted(held) == sorted(q.query_id for q in multi_faceted.queries)
    assert all(not set(train) & set(test) for train, test in folds)
    with pytest.raises(InvalidParameterError, match="n_folds must be between 2"):
        fold_splits(multi_faceted, 1, seed=0)


def test_bad_split_and_config_are_refused(multi_faceted):
    with pytest.raises(InvalidParameterError, match="test_queries must be between 1 and 59"):
        split_queries(multi_faceted, RankerTrainConfig(test_queries=60))
    with pytest.raises(InvalidParameterError, match="keep_min"):
        RankerTrainConfig(keep_min=0)
    with pytest.raises(InvalidParameterError, match="sft_epochs"):
        RankerTrainConfig(sft_epochs=0)


def test_pools_carry_phi_distractors_and_a_fixed_dropped_aspect(multi_faceted, mf_bm25, tiny_config):
    ids = ["mf-q01", "mf-q02"]
    pools = build_query_pools(multi_faceted, mf_bm25, ids, tiny_config, with_distractors=True)
    again = build_query_pools(multi_faceted, mf_bm25, ids[::-1], tiny_config, with_distractors=True)[::-1]
    for qp, twin in zip(pools, again):
        assert qp.phi.shape == (len(qp.pool), len(qp.aspects))
        assert len(qp.distractors) == tiny_config.distractors
        assert not set(qp.distractors) & set(qp.pool.indices.tolist())
        assert qp.distractor_phi.shape == (tiny_config.distractors, len(qp.aspects))
        assert qp.dropped_aspect == twin.dropped_aspect  # fixed per query, whatever the list it is built in


def test_augmented_views_are_consistent(multi_faceted, mf_bm25, tiny_config):
    qp = build_query_pools(multi_faceted, mf_bm25, ["mf-q03"], replace(tiny_config, aspect_dropout=1.0),
                           with_distractors=True)[0]
    rng = np.random.default_rng(0)
    for _ in range(20):
        view = augment(qp, rng, replace(tiny_config, aspect_dropout=1.0))
        m, n = view.phi.shape
        assert len(view.documents) == m == view.ranks.shape[0] and n == len(view.aspects) == view.ranks.shape[1]
        assert n == len(qp.aspects) - 1 and qp.aspects[qp.dropped_aspect] not in view.aspects
        assert m >= min(len(qp.pool), tiny_config.sft_k + 2)
        assert [tuple(np.flatnonzero(r > 0)) for r in view.ranks] == list(view.aspect_sets)
        for doc, row in zip(view.documents, view.phi):  # φ travels with its document and aspects
            if doc in qp.documents:
                original = qp.phi[qp.documents.index(doc)]
                assert set(np.round(row, 9)) <= set(np.round(original, 9))


def test_prefetch_covers_every_view_and_silver_lists_are_greedy(multi_faceted, mf_bm25, tiny_config, hash_cache):
    pools = build_query_pools(multi_faceted, mf_bm25, ["mf-q01", "mf-q04"], tiny_config, with_distractors=True)
    prefetch_encodings(hash_cache, pools)
    before = hash_cache.encoder.encoded
    for epoch in range(3):
        data = silver_instances(hash_cache, pools, tiny_config, epoch=epoch)
        assert len(data) == 2 * (tiny_config.augmentations + 1)
        for x in data:
            assert list(x.target) == greedy_coverage(x.phi, len(x.target))
    assert hash_cache.encoder.encoded == before  # nothing left to encode: the views' texts were all prefetched
    same = silver_instances(hash_cache, pools, tiny_config, epoch=1)
    assert [x.target for x in same] == [x.target for x in silver_instances(hash_cache, pools, tiny_config, epoch=1)]


def test_us3_pairs_keep_significant_gaps_only(multi_faceted, mf_bm25, tiny_config, hash_cache):
    pools = build_query_pools(multi_faceted, mf_bm25, ["mf-q01", "mf-q02"], tiny_config, with_distractors=True)

    def policy(instances, sample, seed):  # greedy: the first k; samples: random permutations
        rng = np.random.default_rng(seed)
        return [list(range(3)) if not sample else rng.permutation(x.n_candidates)[:3].tolist() for x in instances]

    config = replace(tiny_config, dpo_samples=6, mu=0.05)
    pairs, stats = dpo_pairs(hash_cache, pools, config, policy)
    assert stats["pairs"] == len(pairs) == stats["greedy_wins"] + stats["sample_wins"]
    for _, winner, loser in pairs:
        assert len(winner) == len(loser) == 3 and winner != loser
        assert [0, 1, 2] in (winner, loser)  # unilateral: one side is always the greedy list
    strict = dpo_pairs(hash_cache, pools, replace(config, mu=0.5), policy)[0]
    assert len(strict) <= len(pairs)


def _hash(net):
    from fairrag_core.models import listwise_ranker as lr

    digest = hashlib.sha256()
    for key, value in lr.state_dict_arrays(net).items():
        digest.update(key.encode() + value.tobytes())
    return digest.hexdigest()


def test_training_refuses_a_query_on_both_sides(multi_faceted, mf_bm25, tiny_config, hash_cache):
    with pytest.raises(InvalidParameterError, match="both training and test"):
        train_ranker(multi_faceted, tiny_config, retriever=mf_bm25, cache=hash_cache, train_ids=["mf-q01"],
                     test_ids=["mf-q01"], device="cpu")


@pytest.mark.slow
def test_tiny_end_to_end_training_is_reproducible(multi_faceted, mf_bm25, tiny_config, hash_cache):
    pytest.importorskip("torch")
    ids = ["mf-q01", "mf-q02", "mf-q03", "mf-q04"]

    def run(seed, cache):
        return train_ranker(multi_faceted, replace(tiny_config, seed=seed), retriever=mf_bm25, cache=cache,
                            train_ids=ids, test_ids=["mf-q05"], device="cpu")

    first = run(3, hash_cache)
    cold = EncodingCache(type(hash_cache.encoder)())  # a fresh cache: same vectors, same weights
    assert _hash(first.dpo_network) == _hash(run(3, cold).dpo_network)
    assert _hash(first.sft_network) != _hash(first.dpo_network) or not first.dpo_stats["pairs"]
    assert _hash(run(4, hash_cache).dpo_network) != _hash(first.dpo_network)
    assert [r["stage"] for r in first.history] == ["sft"] * tiny_config.sft_epochs + ["dpo"] * (
        tiny_config.dpo_epochs if first.dpo_stats["pairs"] else 0)
    assert set(first.seconds) == {"pools", "encode", "sft", "dpo"}


def test_reward_is_ncom():
    phi = np.array([[0.9, 0.1], [0.2, 0.6], [0.5, 0.4]])
    assert ncom(phi, greedy_coverage(phi, 2)) == 1.0
