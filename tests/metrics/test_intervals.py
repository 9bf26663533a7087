import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core import InvalidParameterError, bootstrap_exposure_ci, sample_rankings
from fairrag_core.metrics.intervals import (
    BIAS_CORRECTED,
    PERCENTILE,
    ConfidenceInterval,
    bias_corrected_interval,
    bootstrap_mean,
    paired_comparison,
    percentile_interval,
)


def test_percentile_interval_is_widened_to_reach_a_one_sided_estimate():
    ci = percentile_interval(0.1, [0.2, 0.3, 0.4])
    assert ci.low == 0.1 and ci.estimate == ci.plug_in == 0.1 and ci.method == PERCENTILE


def test_bias_corrected_hand_case():
    # θ̂ = 0.3, draws centred on 0.34 (bias 0.04): θ̃ = 0.26, basic interval mirrors the quantiles around θ̂
    ci = bias_corrected_interval(0.3, [0.30, 0.32, 0.34, 0.36, 0.38], level=0.5)
    assert ci.estimate == pytest.approx(0.26) and (ci.low, ci.high) == pytest.approx((0.24, 0.28))
    assert ci.plug_in == 0.3 and ci.method == BIAS_CORRECTED
    clipped = bias_corrected_interval(0.01, [0.05, 0.06, 0.07], bounds=(0.0, 1.0))
    assert clipped.low == clipped.estimate == 0.0


def test_interval_must_contain_its_point():
    with pytest.raises(InvalidParameterError, match="does not contain its estimate"):
        ConfidenceInterval(0.5, 0.6, 0.7, 0.95)
    with pytest.raises(InvalidParameterError, match="needs the plug-in value"):
        ConfidenceInterval(0.5, 0.4, 0.7, 0.95, BIAS_CORRECTED)
    with pytest.raises(InvalidParameterError, match="level"):
        percentile_interval(0.5, [0.5], level=1.0)
    with pytest.raises(InvalidParameterError, match="finite"):
        percentile_interval(0.5, [np.nan])


def test_rank_cli_example_now_prints_a_consistent_interval():
    # a near-uniform policy over many items: EE-D's plug-in sits far above the exact value and above the
    # basic interval (the "EE-D 0.043 (CI 0.009–0.034)"); the printed point is now inside
    rankings = sample_rankings(np.zeros(200), alpha=0, n_samples=50, k=5, seed=3)
    ee_d, _ = bootstrap_exposure_ci(rankings, 200, n_boot=500, seed=1)
    assert ee_d.plug_in > ee_d.high  # the plug-in is outside: it is not what we print beside the interval
    assert ee_d.low <= ee_d.estimate <= ee_d.high
    assert abs(ee_d.estimate - 5 / 200) < abs(ee_d.plug_in - 5 / 200)  # exact value of the uniform policy: k/n
    as_json = ee_d.to_dict()  # JSON names the number inside the interval `estimate`, the plug-in `plug_in`
    assert as_json["low"] <= as_json["estimate"] <= as_json["high"] and as_json["plug_in"] == ee_d.plug_in


def test_bootstrap_mean_and_paired_comparison():
    ci = bootstrap_mean([1.0, 1.0, 1.0], seed=0)
    assert (ci.estimate, ci.low, ci.high) == (1.0, 1.0, 1.0)
    rng = np.random.default_rng(0)
    a = rng.uniform(size=40)
    same = paired_comparison(a, a, seed=0)
    assert same.p_value == 1.0 and same.p_value_t == 1.0 and same.difference.estimate == 0.0
    better = paired_comparison(a + 0.05 + rng.normal(0, 0.01, 40), a, seed=0)
    assert better.p_value < 0.001 and better.p_value_t < 0.001 and better.difference.low > 0
    assert better.n_queries == 40 and "randomization" in better.test
    with pytest.raises(InvalidParameterError, match="one value per query"):
        paired_comparison([1.0, 2.0], [1.0])


def test_exact_sign_flip_test_matches_enumeration_by_hand():
    # d = (1, 2, 3): |mean| ≥ 2 only for all-plus and all-minus → p = 2/8
    assert paired_comparison([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], seed=0).p_value == pytest.approx(0.25)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-10, 10), min_size=1, max_size=30), theta=st.floats(-10, 10),
       level=st.floats(0.5, 0.99))
def test_every_interval_contains_its_point(values, theta, level):
    for ci in (percentile_interval(theta, values, level=level), bias_corrected_interval(theta, values, level=level),
               bias_corrected_interval(theta, values, level=level, bounds=(-1.0, 1.0)),
               bootstrap_mean(values, n_boot=50, level=level, seed=0)):
        assert ci.low - 1e-12 <= ci.estimate <= ci.high + 1e-12
