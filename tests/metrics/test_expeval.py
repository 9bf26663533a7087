import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core import InvalidParameterError, ee_disparity, ee_relevance, expected_exposure, sample_rankings
from fairrag_core.metrics.expeval import (
    ExposureSettings,
    bounds,
    exposure_matrix,
    group_bounds,
    judged_grades,
    missing_values,
    position_exposure,
    raw_values,
    resampled_values,
    target_exposure_graded,
)
from fairrag_core.metrics.exposure import target_exposure

RBP = ExposureSettings(user_model="rbp", patience=0.5)
GERR = ExposureSettings(user_model="gerr", patience=0.5, utility=0.5)


# -- hand-computed golden cases ---------------------------------------------------------------------------
def test_position_exposure_by_hand():
    relevant = np.array([[True, False, True, False]])
    valid = np.ones((1, 4), bool)
    assert position_exposure(relevant, valid, RBP).tolist() == [[1.0, 0.5, 0.25, 0.125]]
    # gerr: p^i (1 − u)^(relevant above): 1, .5·.5, .25·.5, .125·.25
    assert position_exposure(relevant, valid, GERR).tolist() == [[1.0, 0.25, 0.125, 0.03125]]
    step = ExposureSettings(user_model="step", k=2)
    assert position_exposure(relevant, valid, step).tolist() == [[1.0, 1.0, 0.0, 0.0]]
    assert position_exposure(relevant, np.array([[True, True, False, False]]), RBP).tolist() == [[1, 0.5, 0, 0]]


def test_expected_exposure_over_samples_by_hand():
    # samples [a, b], [b, c]; rbp p = .5: ε_a = (1 + 0)/2, ε_b = (.5 + 1)/2, ε_c = (0 + .5)/2
    matrix = exposure_matrix(np.array([[0, 1], [1, 2]]), np.zeros(3, bool), RBP)
    assert np.asarray(matrix.mean(axis=0)).ravel().tolist() == [0.5, 0.75, 0.25]


def test_graded_targets_by_hand():
    grades = np.array([2, 1, 1, 0])
    # rbp: grade 2 at rank 0 → 1; grade 1 shares ranks 1–2 → (.5 + .25)/2; grade 0 at rank 3 → .125
    assert target_exposure_graded(grades, RBP).tolist() == [1.0, 0.375, 0.375, 0.125]
    # gerr, q = p(1 − u) = .25 for relevant grades; grade 0: (1 − u)^3 · p^3
    assert target_exposure_graded(grades, GERR).tolist() == [1.0, 0.15625, 0.15625, 0.015625]


def test_unjudged_level_in_complete_mode_expeval_and_corrected():
    complete = ExposureSettings(complete=True, user_model="gerr")
    grades = judged_grades(np.array([1, 0, -1]), complete)
    # expeval: -1 is a level of its own under 0, discounted by (1 − u)^b with b = 2 documents above
    assert target_exposure_graded(grades, complete).tolist() == [1.0, 0.25, 0.0625]
    corrected = ExposureSettings(complete=True, bounds="corrected", user_model="gerr")
    merged = judged_grades(np.array([1, 0, -1]), corrected)
    assert merged.tolist() == [1.0, 0.0, 0.0]
    assert target_exposure_graded(merged, corrected).tolist() == [1.0, 0.1875, 0.1875]


def test_judged_grades_incomplete_and_binarised():
    assert np.isnan(judged_grades(np.array([3, 0, -1]), ExposureSettings())[1:]).all()
    assert judged_grades(np.array([3, 0, -1]), ExposureSettings(binarize=True, complete=True)).tolist() == [1, 0, -1]


def test_step_target_is_fair_rag_eq6():
    labels = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 0])
    step = ExposureSettings(user_model="step", k=5, complete=True)
    assert np.allclose(target_exposure_graded(labels, step), target_exposure(labels, 5))
    many = np.array([1] * 7 + [0] * 3)  # m > k: useful k/m, the rest 0
    assert np.allclose(target_exposure_graded(many, step), target_exposure(many, 5))


def test_bounds_by_hand():
    target = np.array([1.0, 0.375, 0.375, 0.125])
    incomplete = bounds(target[:3], 2, RBP)
    assert incomplete["disparity"].low == 0 and incomplete["disparity"].high == pytest.approx(4 / 3)  # 1/(1 − p²)
    assert incomplete["relevance"].high == pytest.approx(1.28125)  # ‖ε*‖²
    assert incomplete["difference"].high == pytest.approx(1.28125 + 2)  # ‖ε*‖² + 1/(1 − p)
    complete = bounds(target, 3, ExposureSettings(user_model="rbp", complete=True))
    assert complete["disparity"].high == pytest.approx(1.328125)  # Σ_{i<4} p^{2i}
    assert complete["disparity"].low == pytest.approx(1.875 ** 2 / 4)  # (Σ_{i<4} p^i)² / n
    assert complete["relevance"].low == pytest.approx(0.125 + 0.1875 + 0.09375 + 0.125)  # reverse ranking
    assert complete["difference"].high == pytest.approx(1.5625)


def test_single_level_relevance_is_degenerate_in_expeval_only():
    target = np.array([0.75, 0.75])
    assert bounds(target, 1, RBP)["relevance"].normalise(0.3) == 1.0  # expeval: the constant 1
    corrected = bounds(target, 1, ExposureSettings(user_model="rbp", bounds="corrected"))["relevance"]
    assert corrected.normalise(0.5625) == pytest.approx(0.5)  # ⟨ε, ε*⟩ / ‖ε*‖²
    assert missing_values(bounds(target, 1, RBP), target, RBP)["difference"] == 0.0  # expeval: "perfect"
    fixed = ExposureSettings(user_model="rbp", bounds="corrected")
    assert missing_values(bounds(target, 1, fixed), target, fixed)["difference"] == pytest.approx(1.125)


def test_group_bounds_expeval_and_corrected():
    target = np.array([0.9, 0.6])
    expeval = group_bounds(target, 2, RBP)
    assert expeval["disparity"].low == expeval["disparity"].high  # rbp: normalised group disparity is always 0
    assert expeval["relevance"].high == 0.0  # the `v * ub` typo: normalised group relevance is always 1
    assert expeval["difference"].high == pytest.approx(max(0.81 + 0.36, 0.36 + 0.81))  # S_p(2) = 1.5
    fixed = group_bounds(target, 2, ExposureSettings(user_model="rbp", bounds="corrected"), n_judged=3)
    assert (fixed["disparity"].low, fixed["disparity"].high) == pytest.approx((0.0, 2 * 1.75 ** 2))  # 0, K·S_p(3)²
    assert fixed["relevance"].high == pytest.approx(1.17)
    gerr = group_bounds(target, 2, GERR)
    # expeval's gerr "lower" bound K·S² exceeds what disjoint groups can reach: the target itself scores negative
    assert gerr["disparity"].normalise(float(target @ target)) < 0
    assert group_bounds(target[:1], 2, RBP)["disparity"].normalise(0.7) == 0.0  # one group


def test_zero_group_exposure_is_infinite_disparity_in_expeval():
    assert raw_values(np.zeros(2), np.ones(2), zero_disparity_is_inf=True)["disparity"] == np.inf
    assert raw_values(np.zeros(2), np.ones(2))["disparity"] == 0.0


def test_settings_are_checked():
    assert ExposureSettings().user_model.value == "step" and ExposureSettings().k is None  # k: the run's depth
    with pytest.raises(InvalidParameterError, match="k must be a positive integer"):
        ExposureSettings(user_model="step", k=0)
    with pytest.raises(InvalidParameterError, match="patience must be strictly between 0 and 1"):
        ExposureSettings(user_model="gerr", patience=1.0)
    with pytest.raises(InvalidParameterError, match="utility must be between 0 and 1"):
        ExposureSettings(utility=1.5)
    with pytest.raises(InvalidParameterError, match="user_model='dcg' is not one of: gerr, rbp, step"):
        ExposureSettings(user_model="dcg")
    with pytest.raises(InvalidParameterError, match="binarize must be True or False"):
        ExposureSettings(binarize="yes")
    assert ExposureSettings.from_dict(GERR.to_dict()) == GERR


def test_step_model_agrees_with_fair_rag_metrics():
    scores = np.linspace(0, 1, 12)
    labels = (scores > 0.7).astype(int)
    rankings = sample_rankings(scores, alpha=2, n_samples=40, k=4, seed=5)
    step = ExposureSettings(user_model="step", k=4, complete=True)
    eps = np.asarray(exposure_matrix(rankings, labels.astype(bool), step).mean(axis=0)).ravel()
    assert np.allclose(eps, expected_exposure(rankings, 12))
    target = target_exposure_graded(labels, step)
    raw = raw_values(eps, target)
    assert raw["disparity"] / 4 == pytest.approx(ee_disparity(eps, 4))
    assert raw["relevance"] / float(target @ target) == pytest.approx(ee_relevance(eps, labels, 4))


# -- properties ----------------------------------------------------------------------------------------------
@st.composite
def served(draw):
    n_docs = draw(st.integers(1, 12))
    n_samples = draw(st.integers(1, 8))
    rows = []
    for _ in range(n_samples):
        depth = draw(st.integers(1, n_docs))
        rows.append(draw(st.permutations(range(n_docs)))[:depth])
    positions = np.full((n_samples, n_docs), -1)
    for s, row in enumerate(rows):
        positions[s, : len(row)] = row
    grades = np.array(draw(st.lists(st.integers(-1, 3), min_size=n_docs, max_size=n_docs)))
    model = draw(st.sampled_from(["gerr", "rbp", "step"]))
    config = ExposureSettings(user_model=model, patience=draw(st.floats(0.05, 0.95)),
                              utility=draw(st.floats(0, 1)), k=draw(st.integers(1, 5)),
                              complete=draw(st.booleans()), bounds=draw(st.sampled_from(["expeval", "corrected"])))
    return positions, grades, config


@settings(max_examples=120, deadline=None)
@given(served())
def test_exposure_and_metric_invariants(case):
    positions, grades, config = case
    relevant = grades > 0
    matrix = exposure_matrix(positions, relevant, config)
    eps = np.asarray(matrix.mean(axis=0)).ravel()
    e = position_exposure(relevant[np.where(positions >= 0, positions, 0)] & (positions >= 0), positions >= 0, config)
    assert eps.sum() == pytest.approx(e.sum() / positions.shape[0])  # exposure sums: mass per sample, averaged
    assert np.all(eps >= 0) and np.all(eps <= 1 + 1e-12)
    judged = judged_grades(grades, config)
    keep = ~np.isnan(judged)
    if not keep.any():
        return
    target = np.zeros(grades.size)
    target[keep] = target_exposure_graded(judged[keep], config)
    if config.complete and config.user_model.value == "rbp":  # the oracle shows every judged document once
        assert target.sum() == pytest.approx((1 - config.patience ** keep.sum()) / (1 - config.patience))
    raw = raw_values(eps, target)
    assert raw["difference"] == pytest.approx(raw["disparity"] - 2 * raw["relevance"] + target @ target, abs=1e-9)
    query_bounds = bounds(target[keep], int(np.unique(judged[keep]).size), config)
    if not config.complete:  # lower bound 0: normalised disparity lies in [0, 1]
        assert -1e-12 <= query_bounds["disparity"].normalise(raw["disparity"]) <= 1 + 1e-12
    uniform = np.full((1, positions.shape[0]), 1.0 / positions.shape[0])
    again = resampled_values(matrix, target, uniform)
    for metric in raw:
        assert again[metric][0] == pytest.approx(raw[metric], abs=1e-9)
