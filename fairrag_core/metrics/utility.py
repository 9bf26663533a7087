"""Utility of a generated answer against a gold answer: ROUGE-1/2/L, token F1, exact match, MAE.

Kim & Diaz (2025) pick the metric per task (§4): ROUGE for generation tasks (LaMP-4/5), accuracy for
classification (LaMP-2/3) and MAE for rating prediction, turned higher-is-better by subtracting it
from the metric's maximum (App. C.3). ROUGE comes from Google's ``rouge-score`` (Lin 2004, with the
Porter stemmer); token F1 and exact match follow the SQuAD normalisation (Rajpurkar et al. 2016):
lower-case, strip punctuation and the articles a/an/the, collapse spaces.

Short answers (a product, a person, a number: what the demo prompts ask for) are scored by *short-answer match*
(:func:`short_answer_match`): 1 when the normalised answer (accents and plural s folded) contains one of the query's
acceptable short answers as a run of whole words, else 0 — the answer-string accuracy of open-domain QA (Lee et al.
2019; Mallen et al. 2023, "accuracy" for PopQA), the short-answer counterpart of the paper's classification
accuracy. ROUGE-L against a descriptive gold answer scores a correct short answer ("Northmark Harbor 12" against "a
cushioned neutral trainer …") 0 and an echoed title above it, so :data:`UtilityMetric.AUTO` picks short-answer match
wherever the collection has short answers and ROUGE-L elsewhere (:func:`resolve_metric`).
"""

from __future__ import annotations

import enum
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ..errors import InvalidParameterError

__all__ = ["UtilityMetric", "normalise_answer", "rouge", "token_f1", "exact_match", "mae_utility",
           "short_answer_match", "utility", "resolve_metric", "gold_for", "NO_UTILITY_ABOVE_ZERO"]

#: Why normalised EU (EU / u_max, App. C.3) has no value: every answer, the oracle's included, scored 0.
NO_UTILITY_ABOVE_ZERO = "no answer scored above 0 against the gold answer, so EU / max utility is 0/0"


class UtilityMetric(str, enum.Enum):
    """Names accepted by :func:`utility`, the CLI ``--metric`` and the sweep config."""

    ROUGE1 = "rouge1"
    ROUGE2 = "rouge2"
    ROUGEL = "rougeL"
    F1 = "f1"
    EXACT_MATCH = "exact_match"
    ACCURACY = "accuracy"  # exact match of a normalised label: the paper's classification accuracy
    MAE = "mae"  # rating tasks: (max − |ŷ − y|) / max, higher is better
    SHORT_ANSWER = "short_answer"  # 1 when the answer contains an acceptable short answer (whole words), else 0
    AUTO = "auto"  # short_answer where the collection has short answers, else rougeL (resolve_metric)


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "“”‘’–—")


def normalise_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, drop punctuation and articles, collapse whitespace.

    >>> normalise_answer("The  Kestrel Rovers, 3–1!")
    'kestrel rovers 31'
    """
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=4)
def _scorer(kind: str):
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([kind], use_stemmer=True)


def rouge(prediction: str, reference: str, kind: str = "rougeL") -> float:
    """ROUGE F-measure of ``prediction`` against ``reference`` (``kind``: rouge1, rouge2, rougeL).

    >>> round(rouge("a cushioned neutral trainer", "a cushioned neutral shoe", "rouge1"), 3)
    0.75
    """
    if kind not in ("rouge1", "rouge2", "rougeL"):
        raise InvalidParameterError(f"unknown ROUGE variant {kind!r}; use rouge1, rouge2 or rougeL")
    if not prediction.strip() or not reference.strip():
        return 0.0
    return float(_scorer(kind).score(reference, prediction)[kind].fmeasure)


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall after SQuAD normalisation.

    >>> round(token_f1("every 300 to 500 miles", "300 to 500 miles"), 4)  # P = 4/5, R = 1
    0.8889
    """
    pred, ref = normalise_answer(prediction).split(), normalise_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, reference: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalise_answer(prediction) == normalise_answer(reference))


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def mae_utility(prediction: str, reference: str, *, max_error: float = 4.0) -> float:
    """Rating utility ``(max_error − |ŷ − y|) / max_error`` ∈ [0, 1] (LaMP-3: ratings 1–5, max_error 4).

    The first number in the prediction is the rating; a prediction without a number scores 0.

    >>> mae_utility("I'd give it 4 stars", "5")
    0.75
    """
    if max_error <= 0:
        raise InvalidParameterError("max_error must be positive (the largest possible absolute error)")
    gold = _NUMBER.search(reference)
    if gold is None:
        raise InvalidParameterError(f"gold answer {reference!r} has no number; MAE needs numeric answers")
    found = _NUMBER.search(prediction)
    if found is None:
        return 0.0
    error = min(abs(float(found.group()) - float(gold.group())), max_error)
    return (max_error - error) / max_error


def short_answer_match(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when the normalised ``prediction`` contains one of the acceptable short ``answers`` as a run of whole
    words (SQuAD normalisation), else 0.0.

    >>> short_answer_match("Try the Northmark Harbor 12.", ["Northmark Harbor 12", "Harbor 12"])
    1.0
    >>> short_answer_match("The Harbor 120", ["Harbor 12"])  # whole words only
    0.0
    >>> short_answer_match("Anna Wisniewicz", ["Wiśniewicz"])  # accents do not count
    1.0
    >>> short_answer_match("cushioned neutral trainers", ["cushioned neutral trainer"])  # nor a plural s
    1.0
    """
    said = f" {_folded(prediction)} "
    options = [answers] if isinstance(answers, str) else list(answers)
    return float(any((norm := _folded(a)) and f" {norm} " in said for a in options))


def _folded(text: str) -> str:
    """SQuAD-normalised with accents removed ("Wiśniewicz" and "Wisniewicz" are one name) and a plural "s" dropped
    from words of four letters or more ("cushioned neutral trainers" names "cushioned neutral trainer")."""
    decomposed = unicodedata.normalize("NFKD", text)
    words = normalise_answer("".join(c for c in decomposed if not unicodedata.combining(c))).split()
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")) else w
                    for w in words)


def resolve_metric(metric: UtilityMetric | str, queries: Iterable = ()) -> UtilityMetric:
    """The concrete metric for ``metric`` over ``queries`` (objects with ``answer`` and ``short_answers``):
    :data:`UtilityMetric.AUTO` is short-answer match when every query with a gold answer has short answers (and
    one does), else ROUGE-L — one metric for a whole collection, so EU means one thing across its queries."""
    metric = _as_metric(metric)
    if metric is not UtilityMetric.AUTO:
        return metric
    answered = [q for q in queries if q.answer or getattr(q, "short_answers", ())]
    short = bool(answered) and all(getattr(q, "short_answers", ()) for q in answered)
    return UtilityMetric.SHORT_ANSWER if short else UtilityMetric.ROUGEL


def gold_for(query, metric: UtilityMetric | str) -> str | tuple[str, ...] | None:
    """What ``query``'s answers are scored against under ``metric``: its short answers for short-answer match, its
    descriptive answer otherwise (None or empty: no gold, no EU)."""
    if query is None:
        return None
    if _as_metric(metric) is UtilityMetric.SHORT_ANSWER:
        return tuple(query.short_answers) or None
    return query.answer


def _as_metric(metric: UtilityMetric | str) -> UtilityMetric:
    try:
        return UtilityMetric(metric)
    except ValueError:
        names = ", ".join(m.value for m in UtilityMetric)
        raise InvalidParameterError(f"unknown utility metric {metric!r}; choose one of: {names}") from None


def utility(prediction: str, reference: str | Sequence[str] | None,
            metric: UtilityMetric | str = UtilityMetric.ROUGEL) -> float:
    """Score one answer with ``metric`` (a concrete one: resolve ``auto`` first with :func:`resolve_metric`).

    ``reference`` is the gold answer, or for short-answer match the acceptable short answers.

    Raises:
        InvalidParameterError: the query has no gold answer (``reference`` is None or empty), or an
            unknown metric name.
    """
    metric = _as_metric(metric)
    if metric is UtilityMetric.AUTO:
        raise InvalidParameterError("utility metric 'auto' must be resolved against the collection first "
                                    "(fairrag_core.metrics.utility.resolve_metric)")
    if metric is UtilityMetric.SHORT_ANSWER:
        answers = [reference] if isinstance(reference, str) else list(reference or ())
        if not any(a.strip() for a in answers):
            raise InvalidParameterError(
                "this query has no short answers, so short-answer match cannot score it; add \"short_answers\" to "
                "the query or use --metric rougeL")
        return short_answer_match(prediction, answers)
    if not isinstance(reference, str) and reference is not None:
        reference = next(iter(reference), None)
    if reference is None or not str(reference).strip():
        raise InvalidParameterError(
            "this query has no gold answer, so its utility (EU) cannot be measured; add an \"answer\" to the query"
        )
    if metric in (UtilityMetric.ROUGE1, UtilityMetric.ROUGE2, UtilityMetric.ROUGEL):
        return rouge(prediction, reference, metric.value)
    if metric is UtilityMetric.F1:
        return token_f1(prediction, reference)
    if metric in (UtilityMetric.EXACT_MATCH, UtilityMetric.ACCURACY):
        return exact_match(prediction, reference)
    return mae_utility(prediction, reference)
