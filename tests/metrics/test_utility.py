import pytest
from rouge_score import rouge_scorer

from fairrag_core import InvalidParameterError
from fairrag_core.metrics import exact_match, mae_utility, rouge, token_f1, utility


def test_rouge_matches_rouge_score():
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    pred, gold = "a cushioned neutral trainer half a size up", "cushioned neutral trainer, half a size bigger"
    expected = scorer.score(gold, pred)
    for kind in ("rouge1", "rouge2", "rougeL"):
        assert rouge(pred, gold, kind) == pytest.approx(expected[kind].fmeasure)


def test_rouge_golden():
    # unigrams: pred {kestrel, rovers, won}, gold {kestrel, rovers, 3, 1}: P = 2/3, R = 2/4 → F = 4/7
    assert rouge("Kestrel Rovers won", "Kestrel Rovers, 3–1", "rouge1") == pytest.approx(4 / 7)
    assert rouge("", "x") == 0.0


def test_token_f1_and_exact_match():
    assert token_f1("The 4.25 percent", "4.25 percent") == 1.0  # articles and punctuation dropped
    assert token_f1("every 300 to 500 miles", "300 to 500 miles") == pytest.approx(8 / 9)
    assert token_f1("blue", "red") == 0.0
    assert exact_match("Kestrel Rovers!", "kestrel rovers") == 1.0
    assert exact_match("Kestrel", "Kestrel Rovers") == 0.0


def test_mae_turned_higher_is_better():
    assert mae_utility("5", "5") == 1.0
    assert mae_utility("rating: 2", "5") == pytest.approx(0.25)
    assert mae_utility("no number", "3") == 0.0
    with pytest.raises(InvalidParameterError, match="no number"):
        mae_utility("3", "great")


def test_utility_dispatch_and_errors():
    assert utility("4.25 percent", "4.25 percent", "f1") == 1.0
    assert utility("x", "x", "accuracy") == 1.0
    with pytest.raises(InvalidParameterError, match="has no gold answer"):
        utility("anything", None)
    with pytest.raises(InvalidParameterError, match="has no gold answer"):
        utility("anything", "  ")
    with pytest.raises(InvalidParameterError, match="choose one of: rouge1"):
        utility("a", "a", "bleu")
