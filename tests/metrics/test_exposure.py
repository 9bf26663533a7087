import numpy as np
import pytest
from exact import exact_inclusion, paper_logits
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core import (
    InvalidParameterError,
    bootstrap_exposure_ci,
    ee_disparity,
    ee_relevance,
    expected_exposure,
    sample_rankings,
    summarise_exposure,
    target_exposure,
)
from fairrag_core.errors import UndefinedMetricError
from fairrag_core.metrics.exposure import unbiased_ee_disparity


# -- golden values computed by hand ------------------------------------------------------------------
def test_exposure_golden():
    eps = expected_exposure(np.array([[0, 1], [0, 2]]), 4)
    assert eps.tolist() == [1.0, 0.5, 0.5, 0.0]
    assert ee_disparity(eps, 2) == pytest.approx(1.5 / 2)  # ‖ε‖² = 1 + .25 + .25


def test_target_m_le_k():
    # n = 5, m = 2, k = 3: useful → 1, others → (3 − 2)/(5 − 2) = 1/3  (Eq. 6)
    assert target_exposure(np.array([1, 0, 1, 0, 0]), 3).tolist() == pytest.approx([1, 1 / 3, 1, 1 / 3, 1 / 3])


def test_target_m_gt_k():
    # n = 5, m = 4, k = 2: useful → k/m = 1/2, others → 0
    assert target_exposure(np.array([1, 1, 1, 1, 0]), 2).tolist() == [0.5, 0.5, 0.5, 0.5, 0.0]


def test_target_all_useful_and_none_useful():
    assert target_exposure(np.array([1, 1, 1]), 2).tolist() == pytest.approx([2 / 3] * 3)
    assert target_exposure(np.array([0, 0, 0, 0]), 2).tolist() == [0.5] * 4


def test_ee_relevance_golden():
    eps = np.array([1.0, 0.5, 0.5, 0.0])
    # m = 2 = k: ε* = [1, 1, 0, 0]; ⟨ε, ε*⟩ = 1.5; ‖ε*‖² = 2
    assert ee_relevance(eps, np.array([1, 1, 0, 0]), 2) == pytest.approx(0.75)
    # m = 1: ε* = [1, 1/3, 1/3, 1/3]; ⟨ε, ε*⟩ = 1 + 1/3; ‖ε*‖² = 1 + 1/3 → 1
    assert ee_relevance(eps, np.array([1, 0, 0, 0]), 2) == pytest.approx(1.0)
    # m = 3 > k: ε* = 2/3 on useful; ⟨ε, ε*⟩ = 2 · 2/3; ‖ε*‖² = 4/3 → 1
    assert ee_relevance(eps, np.array([1, 1, 1, 0]), 2) == pytest.approx(1.0)
    # everything on non-useful items → 0 when m ≥ k
    assert ee_relevance(np.array([0, 0, 1.0, 1.0]), np.array([1, 1, 0, 0]), 2) == 0.0


def test_design_toy_case_paper_vs_released_code():
    # DESIGN.md §1: n = 10, m = 2, k = 5, a perfect deterministic ranking.
    labels = np.array([1, 1] + [0] * 8)
    eps = expected_exposure(np.array([[0, 1, 2, 3, 4]]), 10)
    assert ee_relevance(eps, labels, 5) == pytest.approx(1.0)
    assert ee_relevance(eps, labels, 5, compat=True) == pytest.approx(0.64)  # 2 / (2 + 9/8)


def test_deterministic_and_uniform_bounds():
    n, k = 8, 3
    assert ee_disparity(expected_exposure(np.array([[5, 1, 2]] * 4), n), k) == 1.0
    assert ee_disparity(np.full(n, k / n), k) == pytest.approx(k / n)


def test_stochastic_oracle_reaches_ee_r_one():
    rng = np.random.default_rng(0)
    labels = np.array([1, 1, 0, 0, 0, 0, 0])
    # oracle: useful first (random order), then non-useful in random order
    rows = [np.concatenate([rng.permutation([0, 1]), rng.permutation(np.arange(2, 7))])[:4] for _ in range(20_000)]
    eps = expected_exposure(np.array(rows), 7)
    assert ee_relevance(eps, labels, 4) == pytest.approx(1.0, abs=0.01)


# -- against the exact policy exposure ---------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 2.0, 6.0])
def test_monte_carlo_ee_matches_exact(alpha):
    scores = np.array([0.9, 0.1, 0.5, 0.5, 0.0, 0.7])
    labels = np.array([1, 0, 1, 1, 0, 0])
    k = 3
    exact_eps = exact_inclusion(paper_logits(scores, alpha), k)
    rankings = sample_rankings(scores, alpha=alpha, n_samples=40_000, k=k, seed=1)
    eps = expected_exposure(rankings, 6)
    assert ee_disparity(eps, k) == pytest.approx(ee_disparity(exact_eps, k), abs=0.005)
    assert ee_relevance(eps, labels, k) == pytest.approx(ee_relevance(exact_eps, labels, k), abs=0.005)


def test_exact_ee_d_is_monotone_in_alpha():
    rng = np.random.default_rng(4)
    for _ in range(25):
        n = int(rng.integers(3, 7))
        k = int(rng.integers(1, n))
        scores = rng.normal(size=n)
        values = [ee_disparity(exact_inclusion(paper_logits(scores, a), k), k) for a in (0, 1, 2, 4, 8)]
        assert np.all(np.diff(values) >= -1e-12)
        assert values[0] == pytest.approx(k / n)


def test_sampled_ee_d_rises_with_alpha_in_expectation():
    scores = np.random.default_rng(2).random(50)
    means = [
        ee_disparity(expected_exposure(sample_rankings(scores, alpha=a, n_samples=2_000, k=5, seed=3), 50), 5)
        for a in (0, 1, 2, 4, 8, 16)
    ]
    assert np.all(np.diff(means[:4]) > 0) and np.all(np.diff(means) >= 0)  # saturates at 1 by α = 8


def test_unbiased_estimator_removes_finite_sample_bias():
    scores = np.linspace(0, 1, 12)
    exact = ee_disparity(exact_inclusion(paper_logits(scores, 1.0), 2), 2)
    plug_in, unbiased = [], []
    for seed in range(300):
        r = sample_rankings(scores, alpha=1.0, n_samples=10, k=2, seed=seed)
        plug_in.append(ee_disparity(expected_exposure(r, 12), 2))
        unbiased.append(unbiased_ee_disparity(r, 12))
    assert np.mean(plug_in) - exact > 0.03  # bias ≈ Σ ε(1 − ε)/(N k)
    assert np.mean(unbiased) == pytest.approx(exact, abs=0.01)


def test_bootstrap_interval_covers_the_exact_value():
    scores = np.linspace(0, 1, 15)
    labels = (scores > 0.6).astype(int)
    exact_eps = exact_inclusion(paper_logits(scores, 2.0), 2)
    truth_d, truth_r = ee_disparity(exact_eps, 2), ee_relevance(exact_eps, labels, 2)
    hits_d = hits_r = 0
    trials = 60
    for seed in range(trials):
        r = sample_rankings(scores, alpha=2.0, n_samples=100, k=2, seed=seed)
        ci_d, ci_r = bootstrap_exposure_ci(r, 15, labels=labels, n_boot=400, seed=seed)
        hits_d += ci_d.low <= truth_d <= ci_d.high
        hits_r += ci_r.low <= truth_r <= ci_r.high
    assert hits_d / trials >= 0.85 and hits_r / trials >= 0.85


def test_summary_fields():
    r = sample_rankings(np.arange(6.0), alpha=1, n_samples=50, k=2, seed=0)
    summary = summarise_exposure(r, 6, labels=np.array([0, 0, 0, 0, 1, 1]), n_boot=50, seed=0)
    assert summary.exposure.sum() == pytest.approx(2.0)
    assert summary.ee_r is not None and 0 <= summary.ee_r.low <= summary.ee_r.high <= 1
    assert summary.ee_d_unbiased == pytest.approx(unbiased_ee_disparity(r, 6))
    assert summarise_exposure(r, 6, n_boot=10, seed=0).ee_r is None


def test_the_ee_d_shown_is_the_unbiased_estimate_whatever_the_seed():
    # one concept, one number: the EE-D printed beside its interval is the U-statistic Σ c(c − 1)/(N(N − 1))/k, not a
    # bootstrap median, so two seeds (or a default, fresh one) give the same EE-D and only the interval moves
    r = sample_rankings(np.arange(8.0), alpha=2, n_samples=30, k=3, seed=2)  # EE-D ≈ 0.51, well above k/n
    first, second = (summarise_exposure(r, 8, n_boot=200, seed=s) for s in (0, 1))
    assert first.ee_d.estimate == second.ee_d.estimate == pytest.approx(unbiased_ee_disparity(r, 8))
    assert first.ee_d.low <= first.ee_d.estimate <= first.ee_d.high and first.ee_d.plug_in > first.ee_d.estimate
    # collapsed rows with their multiplicity give the same number as the rows themselves
    from fairrag_core.metrics.bootstrap import exposure_intervals

    rows = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [1, 1, 0, 0]], dtype=float)
    by_row, _ = exposure_intervals(rows, 2, n_boot=50, seed=0)
    collapsed, _ = exposure_intervals(rows[:2], 2, n_boot=50, seed=0, multiplicity=np.array([2, 1]))
    # counts 2, 3, 1: Σ c(c − 1) = 2 + 6 = 8 over N(N − 1) = 6, per k = 2
    assert by_row.estimate == collapsed.estimate == pytest.approx(8 / 6 / 2)


def test_the_ee_d_shown_never_falls_below_uniform():
    # a uniform policy's EE-D is exactly k/n; its unbiased estimate falls below that about half the time (an EE-D no
    # policy can have, beside the CLI's "uniform 0.250"), so the estimate and its interval are clipped at k/n
    from fairrag_core.metrics.exposure import ee_d_estimate

    shown = []
    for seed in range(40):
        r = sample_rankings(np.zeros(20), alpha=0, n_samples=20, k=5, seed=seed)
        summary = summarise_exposure(r, 20, n_boot=50, seed=0)
        assert summary.ee_d.low >= 0.25 and ee_d_estimate(r, 20) == summary.ee_d.estimate
        shown.append(summary.ee_d.estimate)
        unclipped = unbiased_ee_disparity(r, 20)
        assert summary.ee_d.estimate == pytest.approx(max(unclipped, 0.25))
    assert min(shown) == 0.25 and np.mean(shown) == pytest.approx(0.25, abs=0.01)


# -- properties --------------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 40), data=st.data())
def test_metric_invariants(n, data):
    k = data.draw(st.integers(1, n))
    alpha = data.draw(st.floats(0, 20))
    labels = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    scores = np.array(data.draw(st.lists(st.floats(-5, 5), min_size=n, max_size=n)))
    r = sample_rankings(scores, alpha=alpha, n_samples=data.draw(st.integers(1, 30)), k=k, seed=0)
    eps = expected_exposure(r, n)
    assert eps.sum() == pytest.approx(k)
    assert np.all((eps >= 0) & (eps <= 1))
    ee_d = ee_disparity(eps, k)
    assert k / n - 1e-12 <= ee_d <= 1 + 1e-12
    for compat in (False, True):
        if not labels.any():  # no useful item: EE-R is undefined, not a perfect 1
            with pytest.raises(UndefinedMetricError, match="no candidate is useful"):
                ee_relevance(eps, labels, k, compat=compat)
            continue
        assert -1e-12 <= ee_relevance(eps, labels, k, compat=compat) <= 1 + 1e-12


# -- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: expected_exposure(np.array([[0, 0]]), 3), "same item twice"),
        (lambda: expected_exposure(np.array([[0, 5]]), 3), "outside"),
        (lambda: expected_exposure(np.array([[0.0, 1.0]]), 3), "integer"),
        (lambda: expected_exposure(np.zeros((0, 2), dtype=int), 3), "shape"),
        (lambda: expected_exposure(np.array([[0, 1]]), 0), "n_items"),
        (lambda: ee_disparity(np.array([0.5, np.nan]), 1), "finite"),
        (lambda: ee_disparity(np.array([0.5, 0.5]), 3), "k=3 is larger"),
        (lambda: ee_relevance(np.array([1.0, 0.0]), np.array([1, 0, 0]), 1), "one entry per item"),
        (lambda: ee_relevance(np.array([1.0, 0.0]), np.array([2, 0]), 1), "threshold graded labels"),
        (lambda: bootstrap_exposure_ci(np.array([[0, 1]]), 3, level=1.5), "level"),
        (lambda: bootstrap_exposure_ci(np.array([[0, 1]]), 3, n_boot=0), "n_boot"),
        (lambda: unbiased_ee_disparity(np.array([[0, 1]]), 3), "at least 2"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()
