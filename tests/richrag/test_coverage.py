"""φ, the greedy silver list, COM, NCOM and Com-ROUGE (RichRAG §3.4.1, Eq. 11, App. C): the hand case of
DESIGN.md §3, and the released code's numbers on cases built from the multi-faceted collection and at random."""

import json
from pathlib import Path

import numpy as np
import pytest

from fairrag_core import InvalidParameterError
from fairrag_core.richrag.coverage import (
    aspect_weights,
    com,
    com_rouge,
    coverage_matrix,
    gains,
    greedy_coverage,
    ncom,
)

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


# -- the released code's numbers (tests/data/richrag/released_reference.json; the command that made them is in it) --
REFERENCE = json.loads((Path(__file__).parents[1] / "data" / "richrag" / "released_reference.json").read_text())


@pytest.mark.parametrize("case", REFERENCE["synthetic"], ids=lambda c: f"seed{c['seed']}")
def test_greedy_list_com_and_ncom_match_the_released_code(case):
    phi = np.array(case["phi"])
    assert greedy_coverage(phi, case["k"]) == case["greedy"]
    assert com(phi, case["greedy"]) == pytest.approx(case["com_greedy"], abs=1e-12)
    for prediction, expected in zip(case["predictions"], case["ncom"]):
        assert ncom(phi, prediction) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("case", REFERENCE["text_cases"], ids=lambda c: c["query_id"])
def test_phi_silver_list_ncom_and_com_rouge_on_collection_texts_match_the_released_code(case):
    phi = coverage_matrix(case["documents"], case["sub_answers"])
    assert phi == pytest.approx(np.array(case["phi"]), abs=1e-12)
    assert greedy_coverage(phi, case["k"]) == case["greedy"]
    assert com(phi, case["greedy"]) == pytest.approx(case["com_greedy"], abs=1e-12)
    for prediction, expected in zip(case["predictions"], case["ncom"]):
        assert ncom(phi, prediction) == pytest.approx(expected, abs=1e-12)
    for item in case["com_rouge"]:
        got = com_rouge(item["response"], case["sub_answers"])
        assert [got.rouge1, got.rouge2, got.rougeL] == pytest.approx(item["value"], abs=1e-12)


def test_the_reset_when_every_aspect_reaches_the_pools_best():
    # doc 0 gives every aspect its best value in the pool: after it the weights are uniform again (released code)
    phi = np.array([[1.0, 0.5], [0.2, 0.4], [0.1, 0.45]])
    assert gains(phi, [0, 1]) == pytest.approx([0.75, 0.3])  # not 0.0 · .2 + 1.0 · .4 = .4 (no reset)
    assert gains(phi, [1, 0]) == pytest.approx([0.3, (0.8 * 1.0 + 0.6 * 0.5) / 1.4])


def test_phi_combines_and_variants():
    docs, answers = ["Keep the pile moist."], ["keep the pile moist"]
    assert coverage_matrix(docs, answers).tolist() == [[0.75]]  # case-sensitive: "Keep" ≠ "keep"
    assert coverage_matrix(docs, answers, combine="mean-2-l")[0, 0] == pytest.approx((2 / 3 + 0.75) / 2)
    assert coverage_matrix(docs, answers, variant="rouge-score").tolist() == [[1.0]]  # lower-cased
    assert coverage_matrix(docs, ["", "pile"]).tolist() == [[0.0, 1.0]]  # an empty sub-answer covers nothing
    with pytest.raises(InvalidParameterError, match="combine"):
        coverage_matrix(docs, answers, combine="sum")
    with pytest.raises(InvalidParameterError, match="ROUGE variant"):
        coverage_matrix(docs, answers, variant="rouge-3")
    with pytest.raises(InvalidParameterError, match="non-empty list"):
        coverage_matrix(docs, "keep the pile moist")


def test_com_rouge_weights_by_normalised_length_and_scores_empty_responses_zero():
    result = com_rouge("", ["the pile", "dry leaves and straw"])
    assert result.weights == pytest.approx((1 / 5, 4 / 5))  # "the" is dropped; "and" is a word
    assert (result.rouge1, result.rouge2, result.rougeL) == (0.0, 0.0, 0.0)
    with pytest.raises(InvalidParameterError, match="every sub-answer is empty"):
        com_rouge("text", ["", "  "])
