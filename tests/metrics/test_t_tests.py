"""The t-tests against scipy, and their limiting values on samples without spread."""

import numpy as np
import pytest
from scipy import stats

from fairrag_core.metrics.t_tests import paired_t_p_value, welch_p_value


@pytest.mark.parametrize("seed", range(5))
def test_welch_p_value_agrees_with_scipy(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(0.4, 0.1, size=rng.integers(2, 30))
    b = rng.normal(0.45, 0.3, size=rng.integers(2, 30))
    expected = stats.ttest_ind(a, b, equal_var=False).pvalue
    assert welch_p_value(a, b) == pytest.approx(expected, rel=1e-10)


def test_welch_p_value_without_spread_is_defined_and_silent():
    # Utilities equal up to the last bits made scipy warn "catastrophic cancellation" (a CI failure).
    third = np.array([1 / 3, 1 / 3 + 1e-17, 0.1 + 0.2 + 1 / 3 - 0.3])
    assert welch_p_value(third, np.full(4, 1 / 3)) == 1.0
    assert welch_p_value(np.full(3, 0.5), np.full(4, 0.25)) == 0.0
    # one side constant: the other's spread alone carries the test
    a, b = np.array([0.2, 0.4, 0.6]), np.full(5, 0.4)
    assert welch_p_value(a, b) == pytest.approx(1.0)
    assert welch_p_value(np.array([0.5]), b) != welch_p_value(np.array([0.5]), b)  # NaN: one value is no sample


def test_paired_t_p_value_agrees_with_scipy_and_is_defined_without_spread():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=12), rng.normal(0.3, size=12)
    assert paired_t_p_value(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-10)
    base = np.array([0.3, 0.5, 0.7])
    assert paired_t_p_value(base + 0.1 + np.array([0, 1e-16, 0]), base) == 0.0  # constant gap: t = ±∞
    assert paired_t_p_value(base, base + np.array([0, 1e-17, 0])) == 1.0
    assert paired_t_p_value(np.array([0.4]), np.array([0.1])) == 1.0
