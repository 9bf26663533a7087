import math

import numpy as np
import pytest
from fairsearchcore import Fair, check_ranking
from fairsearchcore.models import FairScoreDoc
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core import InvalidParameterError, load_collection
from fairrag_core.ranking.rerank import (
    fair_adjusted_alpha,
    fair_fail_probability,
    fair_mtable,
    fair_topk,
    mmr,
    protected_group_mask,
    tfidf_cosine,
)

# -- MMR -----------------------------------------------------------------------------------------------
# Candidate 1 duplicates candidate 0 (similarity 1), candidate 2 is a little like both, candidate 3 like none.
SCORES = np.array([3.0, 2.9, 2.5, 1.0])  # min-max → rel = [1, 0.95, 0.75, 0]
SIMILARITY = np.array([
    [1.0, 1.0, 0.1, 0.0],
    [1.0, 1.0, 0.1, 0.0],
    [0.1, 0.1, 1.0, 0.0],
    [0.0, 0.0, 0.0, 1.0],
])


def test_mmr_skips_the_duplicate_of_the_best_item():
    # λ = 0.5. Pick 1: gains 0.5·rel → candidate 0.
    # Pick 2: 0.5·rel − 0.5·sim(·, 0): c1 0.475 − 0.5 = −0.025, c2 0.375 − 0.05 = 0.325, c3 0 → 2.
    # Pick 3: max sim to {0, 2}: c1 1.0 → −0.025, c3 0.0 → 0 → 3; then 1.
    assert mmr(SCORES, SIMILARITY, 4).tolist() == [0, 2, 3, 1]
    assert mmr(SCORES, SIMILARITY, 2, lambda_=0.5).tolist() == [0, 2]


def test_mmr_extreme_lambdas():
    # λ = 1: pure relevance, the score order
    assert mmr(SCORES, SIMILARITY, 4, lambda_=1.0).tolist() == [0, 1, 2, 3]
    assert mmr(np.array([1.0, 3.0, 2.0]), np.eye(3), 3, lambda_=1.0).tolist() == [1, 2, 0]
    # λ = 0: pure diversity. Pick 1: every gain is 0, the lower position wins → 0.
    # Pick 2: −sim(·, 0) = [−1, −0.1, 0] for 1, 2, 3 → 3.
    # Pick 3: −max sim to {0, 3}: c1 −1, c2 −0.1 → 2.
    assert mmr(SCORES, SIMILARITY, 4, lambda_=0.0).tolist() == [0, 3, 2, 1]


def test_mmr_ties_go_to_the_lower_position():
    assert mmr(np.ones(4), np.eye(4), 4).tolist() == [0, 1, 2, 3]


def _reference_mmr(scores, sim, k, lam):
    rel = (scores - scores.min()) / (scores.max() - scores.min()) if np.ptp(scores) else np.ones_like(scores)
    picked = []
    for _ in range(k):
        best, best_gain = None, -math.inf
        for i in range(len(scores)):
            if i in picked:
                continue
            penalty = max(sim[i, j] for j in picked) if picked else 0.0
            gain = lam * rel[i] - (1 - lam) * penalty
            if gain > best_gain:
                best, best_gain = i, gain
        picked.append(best)
    return picked


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), lam=st.sampled_from([0.0, 0.3, 0.5, 1.0]), seed=st.integers(0, 2**32 - 1))
def test_mmr_matches_a_direct_implementation(n, lam, seed):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=n) * 5
    sim = rng.uniform(-1, 1, size=(n, n))  # negative similarities too (dense cosines)
    sim = (sim + sim.T) / 2
    k = int(rng.integers(1, n + 1))
    assert mmr(scores, sim, k, lambda_=lam).tolist() == _reference_mmr(scores, sim, k, lam)


def test_mmr_bad_inputs_name_the_fix():
    for bad in (-0.1, 1.1, float("nan")):
        with pytest.raises(InvalidParameterError, match=r"lambda_ must be in \[0, 1\]"):
            mmr(SCORES, SIMILARITY, 2, lambda_=bad)
    with pytest.raises(InvalidParameterError, match="k=5 is larger than the 4 candidate"):
        mmr(SCORES, SIMILARITY, 5)
    with pytest.raises(InvalidParameterError, match="positive integer"):
        mmr(SCORES, SIMILARITY, 0)
    with pytest.raises(InvalidParameterError, match=r"similarity must be \(4, 4\)"):
        mmr(SCORES, np.eye(3), 2)
    with pytest.raises(InvalidParameterError, match="scores must be finite"):
        mmr(np.array([1.0, np.nan]), np.eye(2), 1)


# -- TF-IDF cosine -------------------------------------------------------------------------------------------
def test_tfidf_cosine_hand_example():
    # stems: d0 {jazz, pianist}, d1 {jazz, piano, player}, d2 {glacier, scientist}; n = 3
    # idf = ln((1 + 3) / (1 + df)) + 1: jazz (df 2) ln(4/3) + 1; every other term (df 1) ln 2 + 1
    # cos(d0, d1) = idf_jazz² / (sqrt(idf_jazz² + idf²) · sqrt(idf_jazz² + 2 idf²)) ≈ 0.2868
    jazz, other = math.log(4 / 3) + 1, math.log(2) + 1
    expected = jazz**2 / (math.sqrt(jazz**2 + other**2) * math.sqrt(jazz**2 + 2 * other**2))
    sim = tfidf_cosine(["jazz pianist", "jazz piano player", "glacier scientist"])
    assert sim[0, 1] == pytest.approx(expected, abs=1e-12)
    assert sim[0, 2] == sim[1, 2] == 0.0


def test_tfidf_cosine_is_symmetric_with_unit_diagonal():
    people = load_collection("people")
    texts = people.texts[:40] + [people.texts[0], "", "the and of"]  # a duplicate and two content-free texts
    sim = tfidf_cosine(texts)
    assert sim.shape == (43, 43)
    assert np.array_equal(sim, sim.T)
    assert np.all(np.diag(sim) == 1.0)
    assert sim.min() >= 0.0 and sim.max() <= 1.0
    assert sim[0, 40] == pytest.approx(1.0, abs=1e-12)  # identical texts
    assert sim[41, 42] == 0.0 and sim[41, :41].max() == 0.0  # no content words: like nothing else
    assert np.array_equal(tfidf_cosine(["", "the"]), np.eye(2))


def test_tfidf_cosine_bad_inputs():
    with pytest.raises(InvalidParameterError, match="not one string"):
        tfidf_cosine("jazz pianist")
    with pytest.raises(InvalidParameterError, match="texts is empty"):
        tfidf_cosine([])
    with pytest.raises(InvalidParameterError, match="must all be strings"):
        tfidf_cosine(["a", 3])


# -- FA*IR: reference values from fairsearchcore's own test-suite ---------------------------------------------
# fair-search/fairsearchcore-python, tests/test_fair.py at a92a3d6 (the 1.0.4 code).
UNADJUSTED = [
    (10, 0.2, 0.15, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]),
    (20, 0.25, 0.1, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3]),
    (30, 0.3, 0.05, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5]),
]
ADJUSTED = [
    (10, 0.2, 0.15, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]),
    (20, 0.25, 0.1, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]),
    (30, 0.3, 0.05, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4]),
]
ADJUSTED_ALPHA = [(10, 0.2, 0.15, 0.15), (20, 0.25, 0.1, 0.07812500000000001), (30, 0.3, 0.15, 0.0796875)]
FAIL_PROBABILITY = [
    (10, 0.2, 0.15, 0.13421772800000065),
    (20, 0.25, 0.1, 0.10515247355215251),
    (30, 0.3, 0.05, 0.04877730797178359),
]


@pytest.mark.parametrize("k, p, alpha, expected", UNADJUSTED)
def test_unadjusted_mtable_matches_fairsearchcore(k, p, alpha, expected):
    assert fair_mtable(k, p, alpha, adjust_alpha=False).tolist() == expected
    assert Fair(k, p, alpha).create_unadjusted_mtable() == expected  # the part of fairsearchcore that works


@pytest.mark.parametrize("k, p, alpha, expected", ADJUSTED)
def test_adjusted_mtable_matches_fairsearchcore_reference(k, p, alpha, expected):
    assert fair_mtable(k, p, alpha, compat=True).tolist() == expected
    assert fair_mtable(k, p, alpha).tolist() == expected  # these cases have no m-table step at the last rank
    # an unadjusted table at the adjusted α is the adjusted table (fairsearchcore's test_mtable_generation)
    assert fair_mtable(k, p, fair_adjusted_alpha(k, p, alpha), adjust_alpha=False).tolist() == expected


@pytest.mark.parametrize("k, p, alpha, expected", ADJUSTED_ALPHA)
def test_adjusted_alpha_matches_fairsearchcore_reference(k, p, alpha, expected):
    assert abs(fair_adjusted_alpha(k, p, alpha, compat=True) - expected) < 1e-4  # their tolerance
    assert fair_adjusted_alpha(k, p, alpha, compat=True) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("k, p, alpha, expected", FAIL_PROBABILITY)
def test_fail_probability_matches_fairsearchcore_reference(k, p, alpha, expected):
    table = fair_mtable(k, p, alpha)
    assert fair_fail_probability(table, p) == pytest.approx(expected, abs=1e-12)
    assert fair_fail_probability(table, p, compat=True) == pytest.approx(expected, abs=1e-12)


def test_fail_probability_by_hand_and_the_last_rank():
    # [0]*8 + [1, 1], p = 0.2: a fair random ranking fails iff its top 9 holds no protected item: 0.8^9
    assert fair_fail_probability([0] * 8 + [1, 1], 0.2) == pytest.approx(0.8**9, abs=1e-15)
    # a step at the last rank only: fails iff none of 10 is protected; fairsearchcore ignores that rank
    assert fair_fail_probability([0] * 9 + [1], 0.2) == pytest.approx(0.8**10, abs=1e-15)
    assert fair_fail_probability([0] * 9 + [1], 0.2, compat=True) == 0.0
    assert fair_fail_probability([0, 0, 0], 0.5) == 0.0


def test_full_and_compat_adjustment_differ_where_the_last_rank_matters():
    # k = 30, p = 0.3, α = 0.15: fairsearchcore's table requires 6 protected at rank 30; skipping that rank its
    # failure probability looks like 0.1525, but counted in full it is 0.1663, further from 0.15 than the
    # neighbouring table's 0.1467, so the full computation keeps that one (α' = 0.075).
    full, compat = fair_mtable(30, 0.3, 0.15), fair_mtable(30, 0.3, 0.15, compat=True)
    assert fair_adjusted_alpha(30, 0.3, 0.15) == pytest.approx(0.075, abs=1e-15)
    assert compat[-1] == 6 and full[-1] == 5
    assert fair_fail_probability(compat, 0.3, compat=True) == pytest.approx(0.15250241, abs=1e-8)
    assert fair_fail_probability(compat, 0.3) == pytest.approx(0.16634969, abs=1e-8)
    assert fair_fail_probability(full, 0.3) == pytest.approx(0.14674014, abs=1e-8)


def test_adjust_alpha_is_still_broken_in_fairsearchcore():
    # Why we compute it ourselves; if this starts passing, fairsearchcore's adjust_alpha can be used again.
    with pytest.raises(TypeError, match="__hash__ method should return an integer"):
        Fair(20, 0.25, 0.1).adjust_alpha()


# -- FA*IR re-ranking -----------------------------------------------------------------------------------------
def _docs(ids, scores, protected):
    return [FairScoreDoc(int(i), float(scores[i]), bool(protected[i])) for i in ids]


def _counts_meet(ranking, protected, table):
    return all(np.cumsum(protected[ranking]) >= table[: len(ranking)])


def test_fair_topk_moves_a_protected_item_up():
    scores = np.arange(12, 0, -1.0)  # candidate i has score 12 − i
    protected = np.arange(12) >= 9  # only the three lowest-scored candidates are protected
    table = fair_mtable(10, 0.3, 0.1)
    assert table.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    # score order has no protected item in the top 10: unfair at rank 7
    assert not check_ranking(_docs(range(10), scores, protected), table.tolist())
    # ranks 1–6 take the best non-protected; rank 7 needs one protected → 9; then the better heads: 6, 7, 8
    ranked = fair_topk(scores, protected, 10, p=0.3, alpha=0.1)
    assert ranked.tolist() == [0, 1, 2, 3, 4, 5, 9, 6, 7, 8]
    assert check_ranking(_docs(ranked, scores, protected), table.tolist())
    # a fair list is left alone
    assert fair_topk(scores, np.arange(12) % 3 == 0, 10, p=0.3, alpha=0.1).tolist() == list(range(10))


@pytest.mark.parametrize("p", [0.25, 0.3])
def test_fair_topk_fixes_fairsearchcores_unfair_example(p):
    # fairsearchcore's test_re_rank input: scores 20..1, protected only at the bottom (ids 15–19 here)
    scores = np.arange(20, 0, -1.0)
    protected = np.arange(20) >= 15
    table = fair_mtable(20, p, 0.1).tolist()
    assert not check_ranking(_docs(range(20), scores, protected), table)
    ranked = fair_topk(scores, protected, 20, p=p, alpha=0.1)
    assert sorted(ranked.tolist()) == list(range(20))
    assert check_ranking(_docs(ranked, scores, protected), table)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(12, 60), p=st.sampled_from([0.1, 0.3, 0.5]),
       adjust=st.booleans())
def test_fair_topk_meets_the_mtable_at_every_prefix(seed, n, p, adjust):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=n)
    protected = rng.random(n) < 0.5
    k = int(rng.integers(10, min(n, 30) + 1))
    table = fair_mtable(k, p, 0.1, adjust_alpha=adjust)
    ranked = fair_topk(scores, protected, k, p=p, alpha=0.1, adjust_alpha=adjust)
    assert len(set(ranked.tolist())) == k
    if protected.sum() >= table[-1]:  # enough protected candidates: the result must be fair
        assert _counts_meet(ranked, protected, table)
    # within each group the score order is kept
    for group in (protected, ~protected):
        picked = ranked[group[ranked]]
        assert np.all(np.diff(scores[picked]) <= 0)


def test_fair_topk_with_too_few_protected_fills_by_score():
    scores = np.arange(12, 0, -1.0)
    protected = np.zeros(12, dtype=bool)
    protected[11] = True
    # p = 0.5 requires several protected items; only one exists, so after it the list continues by score
    ranked = fair_topk(scores, protected, 10, p=0.5, alpha=0.1)
    assert 11 in ranked.tolist() and len(ranked) == 10


def test_fair_topk_at_fair_qr_settings_is_quick():
    rng = np.random.default_rng(0)
    scores, protected = rng.normal(size=500), rng.random(500) < 0.35
    ranked = fair_topk(scores, protected, 400, p=0.3, alpha=0.15)  # the paper's FA*IR settings
    assert _counts_meet(ranked, protected, fair_mtable(400, 0.3, 0.15))


def test_protected_group_mask():
    labels = np.array(["male", "female", "non-binary", "female", "Unknown"], dtype=object)
    assert protected_group_mask(labels, "female").tolist() == [False, True, False, True, False]
    assert not protected_group_mask(labels, "absent").any()
    with pytest.raises(InvalidParameterError, match="non-empty group name"):
        protected_group_mask(labels, "")
    with pytest.raises(InvalidParameterError, match="non-empty sequence"):
        protected_group_mask([], "female")


def test_fair_bad_inputs_name_the_fix():
    scores, protected = np.arange(5.0), np.array([True, False, True, False, False])
    for bad in (0, 1, -0.1, 1.5, float("nan")):
        with pytest.raises(InvalidParameterError, match="p must be strictly between 0 and 1"):
            fair_topk(scores, protected, 3, p=bad)
        with pytest.raises(InvalidParameterError, match="alpha must be strictly between 0 and 1"):
            fair_topk(scores, protected, 3, p=0.3, alpha=bad)
    with pytest.raises(InvalidParameterError, match="k=6 is larger than the 5 candidate"):
        fair_topk(scores, protected, 6, p=0.3)
    with pytest.raises(InvalidParameterError, match="positive integer"):
        fair_topk(scores, protected, 0, p=0.3)
    with pytest.raises(InvalidParameterError, match="one entry per candidate"):
        fair_topk(scores, protected[:3], 2, p=0.3)
    with pytest.raises(InvalidParameterError, match="boolean or 0/1"):
        fair_topk(scores, np.array([0, 2, 0, 0, 0]), 2, p=0.3)
    with pytest.raises(InvalidParameterError, match="non-decreasing"):
        fair_fail_probability([0, 2, 1], 0.3)
    with pytest.raises(InvalidParameterError, match="vector of integers"):
        fair_fail_probability([0.5, 1.0], 0.3)
