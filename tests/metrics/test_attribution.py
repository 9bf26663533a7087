"""EAR and EAE-D (Kim & Diaz 2025, Eq. 8–11): hand-computed cases, per-sample vs distinct-list forms, bounds."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core import InvalidParameterError, ee_disparity, expected_exposure
from fairrag_core.errors import UndefinedMetricError
from fairrag_core.metrics.attribution import (
    attributed_exposure,
    attribution_rate,
    eae_disparity,
    expected_attribution_rate,
)


def test_hand_computed_case():
    # N = 4 samples of k = 2 over n = 4 items: list (0, 1) three times, list (2, 1) once.
    # (0, 1): item 0 entails, item 1 does not → AR = 1/2; (2, 1): both entail → AR = 1.
    lists = np.array([[0, 1], [2, 1]])
    entails = np.array([[True, False], [True, True]])
    counts = np.array([3, 1])
    assert attribution_rate(entails).tolist() == [0.5, 1.0]
    assert expected_attribution_rate(entails, counts) == pytest.approx((3 * 0.5 + 1 * 1.0) / 4)  # 0.625
    eps_a = attributed_exposure(lists, entails, 4, counts)
    assert eps_a.tolist() == pytest.approx([3 / 4, 1 / 4, 1 / 4, 0.0])
    assert eae_disparity(eps_a, 2) == pytest.approx((0.75**2 + 0.25**2 + 0.25**2) / 2)  # 0.34375


def test_distinct_lists_with_counts_equal_every_sample_spelt_out():
    rng = np.random.default_rng(3)
    lists = np.array([rng.permutation(8)[:3] for _ in range(5)])
    entails = rng.random((5, 3)) < 0.6
    counts = rng.integers(1, 6, size=5)
    per_sample = np.repeat(lists, counts, axis=0)
    per_entails = np.repeat(entails, counts, axis=0)
    assert expected_attribution_rate(entails, counts) == pytest.approx(expected_attribution_rate(per_entails))
    np.testing.assert_allclose(attributed_exposure(lists, entails, 8, counts),
                               attributed_exposure(per_sample, per_entails, 8))


def test_every_document_credited_gives_retrieval_exposure_back():
    lists = np.array([[0, 1, 2], [3, 1, 0], [0, 1, 2]])
    everything = np.ones_like(lists, dtype=bool)
    eps_a = attributed_exposure(lists, everything, 5)
    np.testing.assert_allclose(eps_a, expected_exposure(lists, 5))
    assert eae_disparity(eps_a, 3) == pytest.approx(ee_disparity(expected_exposure(lists, 5), 3))
    assert expected_attribution_rate(everything) == 1.0
    # nothing credited: no attributed exposure, so no disparity of it (it read 0.0, "perfectly fair", before)
    with pytest.raises(UndefinedMetricError, match="EAE-D is undefined: no answer cites any"):
        eae_disparity(attributed_exposure(lists, ~everything, 5), 3)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 8), st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_eae_d_never_exceeds_ee_d_and_ear_is_a_share(n, k, lists, seed):
    k = min(k, n)
    rng = np.random.default_rng(seed)
    ranks = np.array([rng.permutation(n)[:k] for _ in range(lists)])
    entails = rng.random((lists, k)) < 0.5
    counts = rng.integers(1, 4, size=lists)
    eps = expected_exposure(np.repeat(ranks, counts, axis=0), n)
    eps_a = attributed_exposure(ranks, entails, n, counts)
    assert np.all(eps_a <= eps + 1e-12)
    if entails.any():
        assert eae_disparity(eps_a, k) <= ee_disparity(eps, k) + 1e-12
    assert 0.0 <= expected_attribution_rate(entails, counts) <= 1.0


@pytest.mark.parametrize("call, message", [
    (lambda: attribution_rate(np.array([1, 0])), "shape"),
    (lambda: attribution_rate(np.array([[2, 0]])), "boolean or 0/1"),
    (lambda: expected_attribution_rate(np.array([[1, 0]]), counts=np.array([0])), "positive integer per list"),
    (lambda: attributed_exposure(np.array([[0, 5]]), np.array([[1, 1]]), 3), r"outside \[0, 3\)"),
    (lambda: attributed_exposure(np.array([[0, 1, 2]]), np.array([[1, 1]]), 3), "shape of entails"),
    (lambda: eae_disparity(np.array([0.5, 0.5]), 3), "larger than the 2 candidate"),
])
def test_bad_input_names_the_fix(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()
