import math

import numpy as np
import pytest
from exact import exact_inclusion, exact_prefix_probabilities, exact_top2_inclusion, paper_logits
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fairrag_core import InvalidParameterError, normalise_scores, sample_rankings, sample_rankings_batch
from fairrag_core.ranking import sampling
from fairrag_core.ranking.sampling import (
    SEPARATION_MIN_MASS,
    deterministic_ranking,
    policy_logits,
    separation_note,
    top_mass,
)


def _inclusion_z(rankings: np.ndarray, expected: np.ndarray) -> float:
    """Largest |z| of observed inclusion frequencies against exact probabilities."""
    n_samples = rankings.shape[0]
    observed = np.bincount(rankings.ravel(), minlength=expected.size) / n_samples
    se = np.sqrt(np.maximum(expected * (1 - expected), 1e-12) / n_samples)
    return float(np.max(np.abs(observed - expected) / se))


# -- normalisation -----------------------------------------------------------------------------------
def test_normalise_golden_values():
    assert normalise_scores(np.array([0.0, 5.0, 10.0])).tolist() == [1.0, 1.5, 2.0]
    assert normalise_scores(np.array([-0.8, -0.2, 0.4])).tolist() == pytest.approx([1.0, 1.5, 2.0])
    assert normalise_scores(np.array([3.0, 3.0])).tolist() == [1.0, 1.0]
    assert normalise_scores(np.array([-1e308, 1e308])).tolist() == [1.0, 2.0]


def test_negative_scores_shift_once():
    # The released code shifts negative scores twice; min-max must land exactly on [1, 2].
    s_bar = normalise_scores(np.array([-5.0, -3.0, -1.0]))
    assert s_bar.min() == 1.0 and s_bar.max() == 2.0 and s_bar[1] == 1.5


def test_policy_logits_golden():
    assert policy_logits(np.array([0.0, 1.0, 2.0]), 2).tolist() == [1.0, 2.25, 4.0]
    assert policy_logits(np.array([0.0, 1.0]), 0).tolist() == [1.0, 1.0]
    assert policy_logits(np.array([0.0, 0.5, 1.0]), 500)[1] > policy_logits(np.array([0.0, 0.5, 1.0]), 500)[0]


# -- exactness against enumeration -------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("scores", [[3.0, 1.0, 2.0, 0.5, 2.5, 0.0], [-0.3, 0.1, 0.1, -0.9, 0.7]])
def test_inclusion_matches_exact_enumeration(scores, alpha):
    k = 3
    rankings = sample_rankings(np.array(scores), alpha=alpha, n_samples=40_000, k=k, seed=11)
    expected = exact_inclusion(paper_logits(scores, alpha), k)
    assert _inclusion_z(rankings, expected) < 4.5


@pytest.mark.parametrize("alpha", [1.0, 4.0])
def test_ordered_prefix_distribution_chi_square(alpha):
    scores = np.array([2.0, 1.0, 0.0, 1.5])
    k = 2
    exact = exact_prefix_probabilities(paper_logits(scores, alpha), k)
    n_samples = 60_000
    rankings = sample_rankings(scores, alpha=alpha, n_samples=n_samples, k=k, seed=5)
    keys = list(exact)
    index = {key: i for i, key in enumerate(keys)}
    observed = np.bincount([index[tuple(r)] for r in rankings.tolist()], minlength=len(keys))
    expected = np.array([exact[key] for key in keys]) * n_samples
    assert stats.chisquare(observed, expected).pvalue > 1e-4


@pytest.mark.parametrize("alpha", [0.0, 2.0, 8.0, 16.0])
def test_head_tail_path_matches_closed_form_top2(alpha):
    # n = 300 > head size, so the thinning path is exercised; the closed form is exact for k = 2.
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(size=290), [4.0, 3.9, 3.9, 3.5, 3.0, 2.8, 2.5, 2.5, 2.2, 2.1]])
    assert sampling._head_size(scores.size, 2) < scores.size
    rankings = sample_rankings(scores, alpha=alpha, n_samples=30_000, k=2, seed=3)
    expected = exact_top2_inclusion(paper_logits(scores, alpha))
    assert _inclusion_z(rankings, expected) < 5.0


@pytest.mark.parametrize("alpha", [0.0, 1.0, 3.0])
def test_thinning_with_a_tiny_head_is_still_exact(monkeypatch, alpha):
    # Force head size = k so nearly every item comes from the truncated-Gumbel tail.
    monkeypatch.setattr(sampling, "_head_size", lambda n, k: k)
    scores = np.array([0.2, 1.4, 0.9, 0.0, 1.1, 0.5, 1.4])
    rankings = sample_rankings(scores, alpha=alpha, n_samples=40_000, k=3, seed=9)
    expected = exact_inclusion(paper_logits(scores, alpha), 3)
    assert _inclusion_z(rankings, expected) < 4.5
    exact = exact_prefix_probabilities(paper_logits(scores, alpha), 3)
    best = max(exact, key=exact.get)
    freq = np.mean([tuple(r) == best for r in rankings.tolist()])
    assert freq == pytest.approx(exact[best], abs=5 * math.sqrt(exact[best] / 40_000))


# -- limits and ties ---------------------------------------------------------------------------------
def test_alpha_zero_is_uniform():
    rankings = sample_rankings(np.array([10.0, 0.0, 5.0, 1.0, 2.0]), alpha=0, n_samples=50_000, k=2, seed=1)
    assert _inclusion_z(rankings, np.full(5, 2 / 5)) < 4.5


@pytest.mark.parametrize("alpha", [64.0, 500.0, 1e6, math.inf])
def test_large_alpha_is_deterministic_but_ties_stay_random(alpha):
    scores = np.array([1.0, 0.5, 0.5, 0.0, 0.5])
    rankings = sample_rankings(scores, alpha=alpha, n_samples=6_000, k=2, seed=2)
    assert np.all(rankings[:, 0] == 0)
    second = np.bincount(rankings[:, 1], minlength=5) / 6_000
    assert second[[1, 2, 4]] == pytest.approx([1 / 3] * 3, abs=0.03)
    assert second[3] == 0


def test_tied_top_items_share_exposure_at_alpha_64():
    rankings = sample_rankings(np.array([2.0, 2.0, 2.0, 1.0]), alpha=64, n_samples=9_000, k=1, seed=4)
    share = np.bincount(rankings[:, 0], minlength=4) / 9_000
    assert share[:3] == pytest.approx([1 / 3] * 3, abs=0.03)


def test_ties_in_a_large_candidate_set_stay_random_at_high_alpha():
    scores = np.zeros(5_000)
    scores[:3] = 1.0  # three tied leaders among many equal low scores
    rankings = sample_rankings(scores, alpha=64, n_samples=3_000, k=4, seed=8)
    assert set(np.unique(rankings[:, :3])) == {0, 1, 2}
    fourth = rankings[:, 3]
    assert np.unique(fourth).size > 1_000  # the 4997-way tie is broken at random, not by index


@pytest.mark.parametrize("alpha", [9.5, 16.0, 64.0, 200.0, 999.0, 1001.0])
def test_no_overflow_or_nan(alpha):
    rng = np.random.default_rng(0)
    scores = rng.normal(size=2_000) * 50
    rankings = sample_rankings(scores, alpha=alpha, n_samples=50, k=10, seed=0)
    assert rankings.shape == (50, 10)
    assert np.all(rankings[:, 0] == np.argmax(scores))


def test_all_equal_scores_are_uniform_at_any_alpha():
    rankings = sample_rankings(np.full(6, 3.3), alpha=64, n_samples=30_000, k=2, seed=6)
    assert _inclusion_z(rankings, np.full(6, 2 / 6)) < 4.5


def test_k_equals_n_is_a_permutation():
    rankings = sample_rankings(np.arange(5.0), alpha=1, n_samples=100, k=5, seed=0)
    assert np.all(np.sort(rankings, axis=1) == np.arange(5))


def test_deterministic_ranking_keeps_collection_order_for_ties():
    assert deterministic_ranking(np.array([1.0, 3.0, 3.0, 2.0]), 3).tolist() == [1, 2, 3]


# -- reproducibility and batching --------------------------------------------------------------------
def test_seed_reproducible_and_generator_chained():
    scores = np.random.default_rng(0).random(500)
    a = sample_rankings(scores, alpha=2, n_samples=20, k=5, seed=42)
    b = sample_rankings(scores, alpha=2, n_samples=20, k=5, seed=42)
    assert np.array_equal(a, b)
    rng = np.random.default_rng(42)
    c = sample_rankings(scores, alpha=2, n_samples=20, k=5, seed=rng)
    d = sample_rankings(scores, alpha=2, n_samples=20, k=5, seed=rng)
    assert np.array_equal(a, c) and not np.array_equal(c, d)


def test_batch_shapes_and_per_query_alpha():
    rng = np.random.default_rng(1)
    scores = rng.random((4, 30))
    out = sample_rankings_batch(scores, alpha=np.array([0.0, 1.0, 8.0, math.inf]), n_samples=7, k=3, seed=0)
    assert out.shape == (4, 7, 3)
    assert np.all(out[3, :, 0] == np.argmax(scores[3]))
    for row in out.reshape(-1, 3):
        assert len(set(row.tolist())) == 3


def test_batch_distribution_matches_exact():
    scores = np.array([[2.0, 1.0, 0.0, 1.5], [0.0, 0.0, 1.0, 3.0]])
    out = sample_rankings_batch(scores, alpha=2.0, n_samples=30_000, k=2, seed=3)
    for q in range(2):
        assert _inclusion_z(out[q], exact_inclusion(paper_logits(scores[q], 2.0), 2)) < 4.5


# -- properties --------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=120),
    alpha=st.one_of(st.floats(0, 70), st.sampled_from([0.0, math.inf])),
    n_samples=st.integers(1, 20),
    data=st.data(),
)
def test_rankings_are_distinct_valid_indices(scores, alpha, n_samples, data):
    k = data.draw(st.integers(1, len(scores)))
    out = sample_rankings(np.array(scores), alpha=alpha, n_samples=n_samples, k=k, seed=0)
    assert out.shape == (n_samples, k) and out.dtype == np.int64
    assert out.min() >= 0 and out.max() < len(scores)
    assert all(len(set(row)) == k for row in out.tolist())


# -- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": float("nan")}, "alpha is NaN"),
        ({"alpha": -1.0}, "negative"),
        ({"alpha": True}, "real number"),
        ({"k": 9}, "k=9 is larger than the 3 candidate(s); set k ≤ 3"),
        ({"k": 0}, "k=0"),
        ({"n_samples": 0}, "n_samples=0"),
        ({"n_samples": 2.5}, "positive integer"),
        ({"seed": "abc"}, "seed must be"),
    ],
)
def test_bad_arguments_name_the_fix(kwargs, message):
    args = {"alpha": 1.0, "n_samples": 3, "k": 2, "seed": 0} | kwargs
    with pytest.raises(InvalidParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sample_rankings(np.array([1.0, 2.0, 3.0]), **args)


@pytest.mark.parametrize(
    ("scores", "message"),
    [([], "empty"), ([1.0, float("nan")], "NaN or infinity"), ([[1.0, 2.0]], "shape")],
)
def test_bad_scores(scores, message):
    with pytest.raises(InvalidParameterError, match=message):
        sample_rankings(np.array(scores), alpha=1, n_samples=1, k=1)


def test_batch_alpha_shape_mismatch():
    with pytest.raises(InvalidParameterError, match="shape"):
        sample_rankings_batch(np.ones((2, 3)), alpha=np.ones(3), n_samples=1, k=1)


# -- size guard: it bounds what the sampler really allocates (issue 19, item 6) ----------------------
def test_the_benchmark_case_n_one_million_runs():
    # bench_sampler.py's single query: n = 10⁶ candidates, N = 100, k = 5 (55 ms before a guard on N × n refused it)
    scores = np.random.default_rng(0).random(1_000_000)
    for alpha in (0.0, 2.0, math.inf):
        out = sample_rankings(scores, alpha=alpha, n_samples=100, k=5, seed=1)
        assert out.shape == (100, 5) and all(len(set(row)) == 5 for row in out.tolist())
    top5 = set(np.argsort(-scores)[:5].tolist())
    assert all(set(row) == top5 for row in sample_rankings(scores, alpha=math.inf, n_samples=100, k=5,
                                                           seed=1).tolist())


def test_the_guard_refuses_what_would_really_not_fit():
    # N × head: 1,000,000 × 4,472 cells of noise for n = 10⁶, k = 5, whatever the α
    scores = np.zeros(1_000_000)
    with pytest.raises(InvalidParameterError, match=r"N × sampled head of the candidates \(1,000,000 × 4,472\)"):
        sample_rankings(scores, alpha=2.0, n_samples=1_000_000, k=5)
    with pytest.raises(InvalidParameterError, match=r"\(1,000,000 × 4,472\)"):
        sample_rankings(scores, alpha=math.inf, n_samples=1_000_000, k=5)
    # a small candidate set is sampled whole: N × n
    with pytest.raises(InvalidParameterError, match=r"N × candidates \(1,000,000 × 60\)"):
        sample_rankings(np.zeros(60), alpha=1.0, n_samples=1_000_000, k=5)


def test_deterministic_limit_keeps_tie_groups_random_inside_and_at_the_boundary():
    # two tied leaders (always ranks 1–2, in random order), then a 4-way tie for the last slot of k = 3
    scores = np.array([0.0, 5.0, 3.0, 3.0, 9.0, 9.0, 3.0, 3.0])
    out = sample_rankings(scores, alpha=math.inf, n_samples=8_000, k=3, seed=5)
    assert set(map(tuple, np.sort(out[:, :2], axis=1).tolist())) == {(4, 5)}
    assert np.mean(out[:, 0] == 4) == pytest.approx(0.5, abs=0.03)
    assert np.all(out[:, 2] == 1)  # 5.0 is the third-best score: no tie there
    out = sample_rankings(scores, alpha=math.inf, n_samples=8_000, k=4, seed=5)
    fourth = np.bincount(out[:, 3], minlength=8) / 8_000
    assert fourth[[2, 3, 6, 7]] == pytest.approx([0.25] * 4, abs=0.03) and fourth[[0, 1, 4, 5]].sum() == 0


def test_top_mass_by_hand():
    # α = 2 on scores that min-max to [1, 1.5, 2]: weights e^1, e^2.25, e^4; the top one holds e^4 / their sum
    weights = np.exp([1.0, 2.25, 4.0])
    assert top_mass(np.array([0.0, 1.0, 2.0]), 2, top=1) == pytest.approx(weights[2] / weights.sum())
    assert top_mass(np.array([0.0, 1.0, 2.0]), 0, top=2) == pytest.approx(2 / 3)
    assert top_mass(np.array([0.0, 1.0, 2.0]), math.inf, top=1) == 1.0
    assert top_mass(np.arange(5.0), 2, top=10) == 1.0  # no more candidates than the top


def test_the_separation_note_fires_over_many_candidates_only():
    # a few strong scores over tens of thousands of weak ones, as BM25 over a 60,000-document corpus gives
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.uniform(20, 25, 15), rng.exponential(2.0, 63_651)])
    top20 = np.sort(scores)[::-1][:20]
    assert separation_note(top20, 2) is None and separation_note(top20, 0) is None
    note = separation_note(scores, 2)
    assert note is not None and "K = 63,666 candidates" in note and "K = 20, the default" in note
    mass = top_mass(scores, 2)
    assert mass < SEPARATION_MIN_MASS and f"{mass:.2%}" in note
    assert separation_note(scores, math.inf) is None  # the deterministic ranking separates by definition
