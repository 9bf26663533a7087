"""Coverage of a query's sub-aspects: φ, the greedy silver list, COM, NCOM and Com-ROUGE (RichRAG).

Wang et al., "RichRAG: Crafting Rich Responses for Multi-faceted Queries in Retrieval-Augmented Generation",
§3.4.1 (Eq. 8–9), Eq. 11 and App. C (Eq. 13), as the released code computes them (ShootingWong/RichRAG,
``src/diversity_metric_raw.py``: ``find_doc_scores``, ``get_next_doc_score``, ``get_ideal_score``, ``Div_metric``,
``Div_metric_ans_weight``). Every choice below was read there and is checked against its numbers in
``tests/richrag/test_coverage.py`` (cases and command in ``tests/data/richrag/released_reference.json``).

**φ** (:func:`coverage_matrix`) is an ``(n_documents, n_aspects)`` matrix: φ(d, a_i) = max(ROUGE-1, ROUGE-2,
ROUGE-L) *recall* of the i-th sub-answer (reference) by the document (hypothesis), with the ``rouge==1.0.1``
recipe of :mod:`.rouge` (variant ``"released"``). The document's text is ``f"{title} {text}"`` as the released
``get_doc_str`` builds it (:func:`coverage_text`). App. C's prose says "average of ROUGE-2 and ROUGE-L"; the code
takes the max of ROUGE-1/2/L, which we follow by default (``combine="mean-2-l"`` gives the prose's version).

**Weights** (Eq. 9). ``covered_i`` is the best coverage of aspect i by the picks *before* step t; the weight is
what is left uncovered, renormalised to sum to 1 (the paper's "1 − Norm(max φ)" is, in the code,
"Norm(1 − max φ)"):

    w_i^t = (1 − covered_i) / Σ_j (1 − covered_j)        (at t = 1 every w_i = 1/n)
    Φ^t(d) = Σ_i w_i^t φ(d, a_i)                          (Eq. 8, the gain of adding d)

**All covered.** When the picks so far reach, on *every* aspect, the best coverage any candidate of the pool offers
(``covered_i == max_d φ(d, a_i)`` for all i), the released code resets ``covered`` to 0: the weights are uniform
again and the next picks start a new round. (If ``1 − covered`` summed to 0 it would fall back to uniform weights
for the silver list and to zero weights for a scored list, but with φ ∈ [0, 1] the reset always comes first.)
So COM depends on the whole pool, not only on the listed rows.

The greedy silver list L* picks ``argmax_d Φ^t(d)`` among the documents not yet picked (ties: the lower index,
as ``np.argmax``). COM(L) sums the gains of a list's own picks (Eq. 13) and NCOM(L) = COM(L) / COM(L*) with L* of
the same length; the released code divides 0 by 0 (NaN) when every φ is 0, we return 0.

**Com-ROUGE** (:func:`com_rouge`, Eq. 11): Σ_i δ_i ROUGE-recall(r, a_i), δ_i = the sub-answer's share of the
words of all sub-answers, words counted after the SQuAD normalisation (:func:`.rouge.answer_length`); ROUGE-1,
-2 and -L each (the paper reports CR-2 and CR-L).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import check_k
from ..errors import InvalidParameterError
from .rouge import RougeVariant, answer_length, rouge_recall

__all__ = [
    "CoverageCombine", "ComRouge", "aspect_weights", "coverage_matrix", "coverage_text", "com_rouge",
    "greedy_coverage", "com", "gains", "ncom",
]


class CoverageCombine(str, enum.Enum):
    """How φ combines the three ROUGE recalls of a (document, sub-answer) pair."""

    MAX = "max"  # max(R-1, R-2, R-L): the released code (default)
    MEAN_2_L = "mean-2-l"  # (R-2 + R-L) / 2: App. C's prose


def _check_phi(phi: object) -> np.ndarray:
    arr = np.asarray(phi, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidParameterError(f"phi must have shape (n_documents ≥ 1, n_aspects ≥ 1), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or arr.min() < 0 or arr.max() > 1:
        raise InvalidParameterError("phi must hold finite coverage values in [0, 1] (≥ 0 and ≤ 1, e.g. ROUGE recall)")
    return arr


def _check_ranking(ranking: Sequence[int], n_documents: int) -> list[int]:
    picks = [int(d) for d in ranking]
    if not picks:
        raise InvalidParameterError("the ranking is empty; give at least one document index")
    if min(picks) < 0 or max(picks) >= n_documents:
        raise InvalidParameterError(f"the ranking holds indices outside [0, {n_documents}); index rows of phi")
    if len(set(picks)) != len(picks):
        raise InvalidParameterError("the ranking lists a document twice; each index may appear once")
    return picks


def aspect_weights(covered: np.ndarray) -> np.ndarray:
    """w^t from the coverage of each aspect so far (Eq. 9): ``1 − covered``, renormalised to sum to 1
    (uniform when nothing is left uncovered).

    >>> aspect_weights(np.array([0.9, 0.1])).round(2).tolist()
    [0.1, 0.9]
    >>> aspect_weights(np.zeros(2)).tolist()
    [0.5, 0.5]
    """
    gap = np.clip(1.0 - np.asarray(covered, dtype=np.float64), 0.0, None)
    total = gap.sum()
    return gap / total if total > 0 else np.full(gap.size, 1.0 / gap.size)


class _Coverage:
    """The running ``covered`` vector of the released code, with its reset when every aspect is at the pool's best."""

    def __init__(self, phi: np.ndarray) -> None:
        self.phi = phi
        self.best = phi.max(axis=0)
        self.covered = np.zeros(phi.shape[1])

    def weights(self) -> np.ndarray:
        return aspect_weights(self.covered)

    def pick(self, d: int) -> None:
        self.covered = np.maximum(self.covered, self.phi[d])
        if np.array_equal(self.covered, self.best):
            self.covered = np.zeros_like(self.covered)


def gains(phi: np.ndarray, ranking: Sequence[int]) -> list[float]:
    """Φ^t(d^t) of every pick of ``ranking``, in list order (the terms COM sums).

    >>> [round(g, 4) for g in gains(np.array([[.9, .1], [.2, .6], [.5, .4]]), [2, 0])]
    [0.45, 0.4636]
    """
    arr = _check_phi(phi)
    state = _Coverage(arr)
    out = []
    for d in _check_ranking(ranking, arr.shape[0]):
        out.append(float(state.weights() @ arr[d]))
        state.pick(d)
    return out


def greedy_coverage(phi: np.ndarray, k: int) -> list[int]:
    """The greedy silver list L*_k (Eq. 8): at each step the document with the largest weighted gain.

    >>> greedy_coverage(np.array([[.9, .1], [.2, .6], [.5, .4]]), 2)
    [0, 1]
    """
    arr = _check_phi(phi)
    k = check_k(k, arr.shape[0])
    state = _Coverage(arr)
    chosen: list[int] = []
    available = np.ones(arr.shape[0], dtype=bool)
    for _ in range(k):
        scores = np.where(available, arr @ state.weights(), -np.inf)
        d = int(np.argmax(scores))  # first maximum: ties go to the lower index
        chosen.append(d)
        available[d] = False
        state.pick(d)
    return chosen


def com(phi: np.ndarray, ranking: Sequence[int]) -> float:
    """COM(L) (App. C, Eq. 13): the sum of each pick's weighted coverage gain, in list order.

    >>> round(com(np.array([[.9, .1], [.2, .6], [.5, .4]]), [2, 0]), 4)
    0.9136
    """
    return float(sum(gains(phi, ranking)))


def ncom(phi: np.ndarray, ranking: Sequence[int]) -> float:
    """NCOM(L) = COM(L) / COM(L*), L* the greedy silver list of the same length (App. C). 0 when COM(L*) = 0.

    NCOM is at most 1 whenever the greedy list is optimal for COM, which it is for a single pick; for longer
    lists a non-greedy list can exceed 1 (greedy is not exhaustive search), as in the released evaluation.

    >>> round(ncom(np.array([[.9, .1], [.2, .6], [.5, .4]]), [2, 0]), 3)
    0.862
    """
    arr = _check_phi(phi)
    picks = _check_ranking(ranking, arr.shape[0])
    silver = com(arr, greedy_coverage(arr, len(picks)))
    return com(arr, picks) / silver if silver > 0 else 0.0


# -- φ and Com-ROUGE from texts -----------------------------------------------------------------------------------
def coverage_text(document: object) -> str:
    """The text a document is scored by: ``f"{title} {text}"`` (the released ``get_doc_str``), or the string itself.

    >>> from fairrag_core.data import Document
    >>> coverage_text(Document("d1", "Keep it moist.", title="Compost"))
    'Compost Keep it moist.'
    """
    if isinstance(document, str):
        return document
    title, text = getattr(document, "title", ""), getattr(document, "text", None)
    if not isinstance(text, str):
        raise InvalidParameterError(f"expected a text or a Document, got {type(document).__name__}")
    return f"{title} {text}" if title else text


def _combine(scores: tuple[float, float, float], combine: CoverageCombine) -> float:
    return max(scores) if combine is CoverageCombine.MAX else (scores[1] + scores[2]) / 2


def coverage_matrix(documents: Sequence[object], sub_answers: Sequence[str], *,
                    variant: RougeVariant | str = RougeVariant.RELEASED,
                    combine: CoverageCombine | str = CoverageCombine.MAX) -> np.ndarray:
    """φ: ``(len(documents), len(sub_answers))`` ROUGE recall of each sub-answer by each document.

    ``documents`` are texts or :class:`~fairrag_core.data.Document` s (scored as :func:`coverage_text`);
    ``variant`` picks the ROUGE implementation (:class:`~.rouge.RougeVariant`: ``"released"`` = the ``rouge==1.0.1``
    recipe of the released code, ``"rouge-score"`` / ``"rouge-score-stemmed"`` = Google's package);
    ``combine``: ``"max"`` of ROUGE-1/2/L (released code) or ``"mean-2-l"`` (App. C's prose). An empty sub-answer
    gives a column of zeros (the released code would stop with an error).

    >>> coverage_matrix(["Keep the pile moist.", "Add dry leaves."], ["keep the pile moist", "add leaves"]).tolist()
    [[0.75, 0.0], [0.0, 0.5]]
    """
    try:
        combine = CoverageCombine(combine)
    except ValueError:
        choices = ", ".join(c.value for c in CoverageCombine)
        raise InvalidParameterError(f"unknown combine {combine!r}; choose one of: {choices}") from None
    if isinstance(sub_answers, str) or not len(sub_answers):
        raise InvalidParameterError("sub_answers must be a non-empty list of texts (one per aspect)")
    texts = [coverage_text(d) for d in documents]
    phi = np.zeros((len(texts), len(sub_answers)))
    for i, text in enumerate(texts):
        for j, answer in enumerate(sub_answers):
            phi[i, j] = _combine(rouge_recall(text, answer, variant=variant), combine)
    return phi


@dataclass(frozen=True)
class ComRouge:
    """Com-ROUGE of a response (Eq. 11): the δ-weighted ROUGE recalls and their parts per aspect.

    ``per_aspect[i]`` = (R-1, R-2, R-L) recall of sub-answer i by the response; ``weights[i]`` = δ_i.
    """

    rouge1: float
    rouge2: float
    rougeL: float
    weights: tuple[float, ...]
    per_aspect: tuple[tuple[float, float, float], ...]


def com_rouge(response: str, sub_answers: Sequence[str], *,
              variant: RougeVariant | str = RougeVariant.RELEASED) -> ComRouge:
    """Com-ROUGE (Eq. 11; the released ``Div_metric_ans_weight``): Σ_i δ_i ROUGE-recall(response, a_i).

    δ_i = words of a_i / words of all sub-answers (SQuAD-normalised words). An empty response scores 0.

    >>> cr = com_rouge("Keep the pile moist.", ["keep the pile moist", "add dry leaves"])  # 3 words each
    >>> cr.weights, cr.per_aspect[0], round(cr.rouge1, 3)
    ((0.5, 0.5), (0.75, 0.6666666666666666, 0.75), 0.375)
    """
    if not isinstance(response, str):
        raise InvalidParameterError(f"the response must be a text, got {type(response).__name__}")
    if isinstance(sub_answers, str) or not len(sub_answers):
        raise InvalidParameterError("sub_answers must be a non-empty list of texts (one per aspect)")
    lengths = np.array([answer_length(a) for a in sub_answers], dtype=np.float64)
    if lengths.sum() == 0:
        raise InvalidParameterError("every sub-answer is empty; give at least one sub-answer with words")
    weights = lengths / lengths.sum()
    parts = [rouge_recall(response, a, variant=variant) if response and a else (0.0, 0.0, 0.0)
             for a in sub_answers]
    total = weights @ np.array(parts)
    return ComRouge(float(total[0]), float(total[1]), float(total[2]),
                    tuple(float(w) for w in weights), tuple(tuple(float(x) for x in p) for p in parts))
