"""The greedy silver list, COM and NCOM (RichRAG §3.4.1, App. C) on the hand case of DESIGN.md §3."""

import numpy as np
import pytest

from fairrag_core import InvalidParameterError
from fairrag_core.richrag.coverage import aspect_weights, com, greedy_coverage, ncom

PHI = np.array([[0.9, 0.1], [0.2, 0.6], [0.5, 0.4]])


def test_design_md_hand_case():
    # step 1: w = [.5, .5], gains [.50, .40, .45] → doc 0; step 2: best [.9, .1] → w = [.1, .9],
    # gains of docs 1, 2 = [.56, .41] → doc 1; COM(L*) = 1.06
    assert greedy_coverage(PHI, 2) == [0, 1]
    assert com(PHI, [0, 1]) == pytest.approx(1.06)
    # [2, 0]: .45 + (w = [.5, .6]/1.1) · [.9, .1] = .45 + .46364 = .91364; NCOM = .91364 / 1.06
    assert com(PHI, [2, 0]) == pytest.approx(0.45 + (0.5 * 0.9 + 0.6 * 0.1) / 1.1)
    assert ncom(PHI, [2, 0]) == pytest.approx(0.8619, abs=1e-4)
    assert ncom(PHI, greedy_coverage(PHI, 3)) == pytest.approx(1.0)


def test_weights_renormalise_and_fall_back_to_uniform():
    assert aspect_weights(np.array([0.9, 0.1])) == pytest.approx([0.1, 0.9])
    assert aspect_weights(np.array([0.5, 0.4])) == pytest.approx([0.5 / 1.1, 0.6 / 1.1])
    assert aspect_weights(np.ones(3)) == pytest.approx([1 / 3] * 3)  # everything covered: no preference


def test_first_pick_maximises_mean_coverage_and_ties_go_to_the_lower_index():
    rng = np.random.default_rng(4)
    for _ in range(50):
        phi = rng.random((6, 3))
        assert greedy_coverage(phi, 1)[0] == int(np.argmax(phi.mean(axis=1)))
    assert greedy_coverage(np.array([[0.5, 0.5], [0.5, 0.5]]), 2) == [0, 1]


def test_a_document_that_repeats_covered_aspects_gains_less_than_one_that_covers_the_gap():
    phi = np.array([[1.0, 0.0], [0.95, 0.0], [0.0, 0.6]])
    assert greedy_coverage(phi, 2) == [0, 2]
    assert ncom(phi, [0, 1]) < ncom(phi, [0, 2]) == pytest.approx(1.0)


@pytest.mark.parametrize("call, message", [
    (lambda: greedy_coverage(np.zeros((0, 2)), 1), "shape"),
    (lambda: greedy_coverage(PHI, 4), "larger than the 3 candidate"),
    (lambda: com(PHI, [0, 0]), "twice"),
    (lambda: com(PHI, [5]), "outside"),
    (lambda: ncom(PHI, []), "empty"),
    (lambda: com(-PHI, [0]), "≥ 0"),
])
def test_bad_input_names_the_fix(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()
