"""Significance helpers of the findings: Holm by hand and against its definition, the bootstrap-t test against
the t-test, the absence bound and Wilson by hand."""

import math

import numpy as np
import pytest
from scipy import stats

from fairrag_core import InvalidParameterError
from fairrag_core.metrics.significance import (
    bootstrap_t_pvalues,
    holm_adjust,
    presence_bound,
    wilson_interval,
)

K = 5


# -- Holm -----------------------------------------------------------------------------------------------------

def _holm_reference(p):
    """statsmodels' multipletests(method="holm") written out: step down, multiply by (m − i), keep monotone."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def test_holm_hand_computed_cases():
    # sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → kept monotone: 0.06
    assert holm_adjust(np.array([0.01, 0.04, 0.03, 0.005])) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust(np.array([0.5, 0.6])) == pytest.approx([1.0, 1.0])  # 0.5·2 = 1, capped
    assert holm_adjust(np.array([0.02])) == pytest.approx([0.02])  # a family of one: unchanged
    out = holm_adjust(np.array([0.01, np.nan, 0.02]))  # NaN = untested: not counted in m
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)
    with pytest.raises(InvalidParameterError, match=r"p-values must lie in \[0, 1\]"):
        holm_adjust(np.array([0.1, 1.5]))


def test_holm_matches_its_definition_on_random_families():
    rng = np.random.default_rng(0)
    for m in (2, 5, 14, 40):
        p = rng.uniform(0, 0.2, size=m) ** 2
        p[rng.integers(m)] = p[rng.integers(m)]  # ties
        assert holm_adjust(p) == pytest.approx(_holm_reference(list(p)))


# -- the bootstrap-t test, the absence bound, Wilson ------------------------------------------------------------

def test_bootstrap_t_agrees_with_the_t_test_on_normal_data():
    rng = np.random.default_rng(1)
    x = rng.normal(0.2, 1.0, size=(200, 3)) * [1.0, 1.0, 0.0]  # last column: no spread, mean 0
    p = bootstrap_t_pvalues(x, n_resamples=10000, seed=2)
    t = stats.ttest_1samp(x[:, :2], 0.0).pvalue
    assert p[:2] == pytest.approx(t, abs=0.015)
    assert p[2] == 1.0
    with pytest.raises(InvalidParameterError, match="at least two units"):
        bootstrap_t_pvalues(np.ones((1, 2)))


def test_presence_bound_and_wilson_by_hand():
    assert presence_bound(np.array([0.1, 0.2]), np.array([3, 2])) == pytest.approx((1 - 0.9**3) + (1 - 0.8**2))
    assert presence_bound(np.array([1.5, 0.0]), np.array([3, 2])) == 1.0  # t ≥ 1: shown every time; t = 0: never
    p, low, high = wilson_interval(37, 1000)
    ref = stats.binomtest(37, 1000).proportion_ci(confidence_level=0.95, method="wilson")
    assert (p, low, high) == pytest.approx((0.037, ref.low, ref.high))



# -- memory (issue 28): the resamples are drawn in pieces within the budget, and give the same p-values ---------------

def test_the_test_holds_what_the_memory_budget_allows_and_its_p_values_do_not_change(monkeypatch):
    import tracemalloc

    d = np.random.default_rng(3).normal(0.05, 1.0, size=(20, 300))
    monkeypatch.delenv("FAIRRAG_MAX_MEMORY_MB", raising=False)
    whole = bootstrap_t_pvalues(d, n_resamples=3000, tails="both", seed=7)  # one piece: 3,000 × 300 arrays, 7 MB
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "0.5")  # 17 resamples at a time
    tracemalloc.start()
    try:
        pieces = bootstrap_t_pvalues(d, n_resamples=3000, tails="both", seed=7)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(pieces, whole)
    assert peak < 1_500_000
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "0.01")  # not even one resample of 300 tests fits
    with pytest.raises(InvalidParameterError, match=r"one bootstrap-t resample of 300 tests needs 0.029 MB, more "
                                                    r"than the 0.01 MB one step may allocate; test fewer groups"):
        bootstrap_t_pvalues(d, n_resamples=3000, seed=7)
