"""ROUGE recall as RichRAG's released code computes it, for the coverage φ(d, a_i) and Com-ROUGE.

Wang et al. score coverage with ROUGE *recall* of a sub-answer (the reference) by a text (the hypothesis: a
document for φ, a response for Com-ROUGE). The released code (ShootingWong/RichRAG, ``src/diversity_metric_raw.py``
and ``src/evaluation.py``) calls the PyPI package ``rouge==1.0.1`` (pltrdy), **not** Google's ``rouge-score``.
Its recipe, which :data:`RougeVariant.RELEASED` reproduces here in our own code (checked number for number against
the package in ``tests/richrag/test_rouge.py``):

* sentences: the text split on ``"."``, empty pieces dropped, whitespace inside a piece collapsed (a piece of
  spaces only survives as an empty sentence whose single token is ``""``, as in the package);
* tokens: the sentences' words split on single spaces — case-sensitive, punctuation other than ``.`` kept,
  no stemming, no stop words;
* ROUGE-N recall = |n-grams(hyp) ∩ n-grams(ref)| / |n-grams(ref)| over **sets** of n-grams of the
  concatenated tokens (n-grams run across sentence ends; a repeated n-gram counts once);
* ROUGE-L recall (summary level, Lin 2004 §3.2 as the package implements it): for every reference sentence r_j and
  every hypothesis sentence c_k, one longest common subsequence LCS(r_j, c_k) is rebuilt (on a tie the walk
  moves left in the hypothesis); the *set* of words of all of them is ``U``; recall = |U| / |set(ref tokens)|;
* an empty hypothesis or reference (no sentence) scores 0 (the package raises; the released evaluation's
  wrapper turns that into 0).

Two other variants use Google's ``rouge-score`` (``RougeScorer(["rouge1", "rouge2", "rougeL"])``, recall;
lower-casing, non-alphanumerics removed, n-gram *counts* clipped, rougeL = LCS over the whole token sequence):
``ROUGE_SCORE`` without and ``ROUGE_SCORE_STEMMED`` with the Porter stemmer. They are for users who want the
common package; they do not reproduce the released numbers.

>>> rouge_recall("The cat sat on the mat", "the cat sat")  # "the" matches case-sensitively; "cat sat" once
(1.0, 0.5, 0.6666666666666666)
"""

from __future__ import annotations

import enum
import re
import string
from collections.abc import Sequence
from functools import lru_cache

from ..errors import InvalidParameterError

__all__ = ["RougeVariant", "rouge_recall", "rouge_recall_matrix", "answer_length"]


class RougeVariant(str, enum.Enum):
    """Which ROUGE implementation scores φ and Com-ROUGE."""

    RELEASED = "released"  # rouge==1.0.1 as the released RichRAG code (default)
    ROUGE_SCORE = "rouge-score"  # Google rouge-score 0.1.2, no stemmer
    ROUGE_SCORE_STEMMED = "rouge-score-stemmed"  # Google rouge-score 0.1.2, Porter stemmer


def _variant(variant: RougeVariant | str) -> RougeVariant:
    try:
        return RougeVariant(variant)
    except ValueError:
        choices = ", ".join(v.value for v in RougeVariant)
        raise InvalidParameterError(f"unknown ROUGE variant {variant!r}; choose one of: {choices}") from None


# -- the released recipe (rouge==1.0.1) ---------------------------------------------------------------------------
class _Text:
    """A text split the package's way: sentences of tokens, the flat token list, and n-gram sets."""

    __slots__ = ("bigrams", "sentences", "tokens", "unigrams")

    def __init__(self, text: str) -> None:
        self.sentences = [" ".join(piece.split()).split(" ") for piece in text.split(".") if piece]
        self.tokens = [t for sentence in self.sentences for t in sentence]
        self.unigrams = set(self.tokens)
        self.bigrams = set(zip(self.tokens, self.tokens[1:]))


@lru_cache(maxsize=4096)
def _split(text: str) -> _Text:
    return _Text(text)


def _lcs_words(ref: list[str], hyp: list[str]) -> list[str]:
    """The words of one LCS of ``ref`` and ``hyp``, rebuilt from the end the package's way."""
    n, m = len(ref), len(hyp)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        row, above, word = table[i], table[i - 1], ref[i - 1]
        for j in range(1, m + 1):
            row[j] = above[j - 1] + 1 if word == hyp[j - 1] else (above[j] if above[j] > row[j - 1] else row[j - 1])
    words: list[str] = []
    i, j = n, m
    while i > 0 and j > 0:
        if ref[i - 1] == hyp[j - 1]:
            words.append(ref[i - 1])
            i, j = i - 1, j - 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return words


def _released(hyp_text: str, ref_text: str) -> tuple[float, float, float]:
    hyp, ref = _split(hyp_text), _split(ref_text)
    if not hyp.sentences or not ref.sentences:
        return 0.0, 0.0, 0.0
    r1 = len(hyp.unigrams & ref.unigrams) / len(ref.unigrams) if ref.unigrams else 0.0
    r2 = len(hyp.bigrams & ref.bigrams) / len(ref.bigrams) if ref.bigrams else 0.0
    union: set[str] = set()
    for ref_sentence in ref.sentences:
        shared = set(ref_sentence)
        for hyp_sentence in hyp.sentences:
            if shared.isdisjoint(hyp_sentence):
                continue  # the LCS is empty: nothing to add
            union.update(_lcs_words(ref_sentence, hyp_sentence))
    rl = len(union) / len(ref.unigrams)
    return r1, r2, rl


# -- Google rouge-score -------------------------------------------------------------------------------------------
@lru_cache(maxsize=2)
def _scorer(stemmed: bool):
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stemmed)


def _google(hyp_text: str, ref_text: str, stemmed: bool) -> tuple[float, float, float]:
    scores = _scorer(stemmed).score(ref_text, hyp_text)  # score(target, prediction)
    return scores["rouge1"].recall, scores["rouge2"].recall, scores["rougeL"].recall


def rouge_recall(hypothesis: str, reference: str, *, variant: RougeVariant | str = RougeVariant.RELEASED,
                 ) -> tuple[float, float, float]:
    """(ROUGE-1, ROUGE-2, ROUGE-L) recall of ``reference`` by ``hypothesis`` (recipe in the module docstring).

    >>> rouge_recall("Home compost needs browns. Keep it moist.", "Keep the compost moist.")
    (0.75, 0.0, 0.75)
    """
    if not isinstance(hypothesis, str) or not isinstance(reference, str):
        raise InvalidParameterError("ROUGE compares two texts (str); got "
                                    f"{type(hypothesis).__name__} and {type(reference).__name__}")
    kind = _variant(variant)
    if kind is RougeVariant.RELEASED:
        return _released(hypothesis, reference)
    return _google(hypothesis, reference, kind is RougeVariant.ROUGE_SCORE_STEMMED)


def rouge_recall_matrix(hypotheses: Sequence[str], references: Sequence[str], *,
                        variant: RougeVariant | str = RougeVariant.RELEASED) -> list[list[tuple[float, float, float]]]:
    """``out[h][r]`` = :func:`rouge_recall` (hypotheses[h], references[r]) for every pair."""
    return [[rouge_recall(h, r, variant=variant) for r in references] for h in hypotheses]


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def answer_length(text: str) -> int:
    """Words of ``text`` after the SQuAD normalisation of the released code (lower-case, ASCII punctuation and
    the articles a/an/the removed): the length that weighs a sub-answer in Com-ROUGE.

    >>> answer_length("The pile, kept moist — not wet!")  # the dash is not ASCII punctuation: it stays a word
    6
    """
    return len(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())
