"""Coverage of a query's sub-aspects by a ranked list: the greedy silver list, COM and NCOM (RichRAG).

Wang et al., "RichRAG: Crafting Rich Responses for Multi-faceted Queries in Retrieval-Augmented Generation",
§3.4.1 (Eq. 8–9) and App. C (Eq. 13). ``phi`` is an ``(n_documents, n_aspects)`` matrix: φ(d, a_i) is how well
document d covers the i-th sub-answer (:func:`coverage_matrix` computes it with ROUGE recall).

At step t the importance of aspect i is what the list so far leaves uncovered, renormalised to sum to 1:

    w_i^t = Norm_i(1 − max_{d̃ ∈ L_{t−1}} φ(d̃, a_i))       (Eq. 9; at t = 1 every w_i = 1/n)
    Φ^t(d) = Σ_i w_i^t φ(d, a_i)                          (Eq. 8, the gain of adding d)

The greedy silver list L* picks ``argmax_d Φ^t(d)`` at every step (ties: the lower index). COM(L) sums the
gains of a list's own picks (Eq. 13) and NCOM(L) = COM(L) / COM(L*) with L* of the same length.
When every aspect is already fully covered, the weights ``1 − best`` are all zero; they are then taken
uniform (no aspect is preferred), so later picks still count their coverage.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checks import check_k
from ..errors import InvalidParameterError

__all__ = ["aspect_weights", "greedy_coverage", "com", "ncom"]


def _check_phi(phi: object) -> np.ndarray:
    arr = np.asarray(phi, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidParameterError(f"phi must have shape (n_documents ≥ 1, n_aspects ≥ 1), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or arr.min() < 0:
        raise InvalidParameterError("phi must hold finite coverage values ≥ 0 (e.g. ROUGE recall in [0, 1])")
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


def aspect_weights(best: np.ndarray) -> np.ndarray:
    """w^t from the best coverage of each aspect so far (Eq. 9): ``1 − best``, renormalised to sum to 1.

    >>> aspect_weights(np.array([0.9, 0.1])).round(2).tolist()
    [0.1, 0.9]
    >>> aspect_weights(np.zeros(2)).tolist()
    [0.5, 0.5]
    """
    gap = np.clip(1.0 - np.asarray(best, dtype=np.float64), 0.0, None)
    total = gap.sum()
    return gap / total if total > 0 else np.full(gap.size, 1.0 / gap.size)


def _gains(phi: np.ndarray, picks: Sequence[int]) -> list[float]:
    best = np.zeros(phi.shape[1])
    gains = []
    for d in picks:
        gains.append(float(aspect_weights(best) @ phi[d]))
        best = np.maximum(best, phi[d])
    return gains


def greedy_coverage(phi: np.ndarray, k: int) -> list[int]:
    """The greedy silver list L*_k (Eq. 8): at each step the document with the largest weighted gain.

    >>> greedy_coverage(np.array([[.9, .1], [.2, .6], [.5, .4]]), 2)
    [0, 1]
    """
    arr = _check_phi(phi)
    k = check_k(k, arr.shape[0])
    best = np.zeros(arr.shape[1])
    chosen: list[int] = []
    available = np.ones(arr.shape[0], dtype=bool)
    for _ in range(k):
        gains = np.where(available, arr @ aspect_weights(best), -np.inf)
        d = int(np.argmax(gains))  # first maximum: ties go to the lower index
        chosen.append(d)
        available[d] = False
        best = np.maximum(best, arr[d])
    return chosen


def com(phi: np.ndarray, ranking: Sequence[int]) -> float:
    """COM(L) (App. C, Eq. 13): the sum of each pick's weighted coverage gain, in list order.

    >>> round(com(np.array([[.9, .1], [.2, .6], [.5, .4]]), [2, 0]), 4)
    0.9136
    """
    arr = _check_phi(phi)
    return float(sum(_gains(arr, _check_ranking(ranking, arr.shape[0]))))


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
