"""Attribution metrics: how many retrieved documents an answer rests on, and how fairly the cited ones are exposed.

Kim & Diaz, "Towards Fair RAG", ICTIR 2025, §3.3.3–3.3.4. For a sampled top-k list π with answer ŷ_π and an
NLI judgement NLI(d, ŷ_π) ∈ {0, 1} for every retrieved document d (1: d entails the answer):

    AR(π)  = (1/k) Σ_{d∈π} NLI(d, ŷ_π)                                  (Eq. 8, attribution rate)
    EAR    = (1/N) Σ_π AR(π)                                              (Eq. 9, expected attribution rate)
    ε^a_d  = (1/N) Σ_π NLI(d, ŷ_π) · 1[d ∈ π]                             (Eq. 10, attributed exposure)
    EAE-D  = ‖ε^a‖² / k                                                   (Eq. 11, normalised like EE-D)

ε^a ≤ ε item-wise, so EAE-D ≤ EE-D, with equality when every retrieved document is credited. That bound is also
why EAE-D must not be read as "citations are fairer than retrieval": EAE-D scales with how much is cited (an
answer that cites 1.3 of k = 5 documents has Σ ε^a = 1.3, not 5), so a small EAE-D mostly says "little is cited".
The comparable number divides by what is cited instead of by k (our addition, not in the paper):

    EAE-D/cited = ‖ε^a‖² / ‖ε^a‖₁    (= Σ_d ε^a_d · p^a_d, the citation-weighted mean attributed exposure)

EE-D is the same quantity for retrieval (‖ε‖² / ‖ε‖₁, since ‖ε‖₁ = k). Both lie in (0, 1]: 1 when the same
documents are exposed (cited) every time, small when exposure (citation) is spread. EAE-D/cited above EE-D means
the answers concentrate their citations on fewer documents than retrieval concentrates exposure; below, that they
spread them more. Shares per provider (the ledger) tell the same story per group.

The functions take the *distinct* lists of a run with how many samples produced each (``counts``); leave
``counts`` out when every row is one sample.
"""

from __future__ import annotations

import numpy as np

from ..checks import check_k
from ..errors import InvalidParameterError, UndefinedMetricError
from .exposure import ee_disparity

__all__ = ["attribution_rate", "expected_attribution_rate", "attributed_exposure", "eae_disparity",
           "eae_d_per_cited", "NOTHING_ATTRIBUTED", "HOW_TO_READ"]

#: The sentence that goes beside EAE-D wherever it is shown next to EE-D.
HOW_TO_READ = ("EAE-D scales with how much is cited, so compare EE-D with EAE-D/cited (the same disparity per "
               "cited document): above EE-D, citations are more concentrated than retrieval; below, more spread")

#: Why EAE-D has no value when no answer rests on any document (a disparity of nothing would read 0, "fair").
NOTHING_ATTRIBUTED = ("no answer cites any of the documents it was shown, so there is no attributed exposure whose "
                      "fairness could be measured (EAR = 0 says how little is cited)")


def _check_entails(entails: object) -> np.ndarray:
    arr = np.asarray(entails)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidParameterError(f"entails must have shape (lists ≥ 1, k ≥ 1), one row per list, got {arr.shape}")
    if arr.dtype != bool and not (np.issubdtype(arr.dtype, np.number) and np.isin(arr, (0, 1)).all()):
        raise InvalidParameterError("entails must be boolean or 0/1 (document entails the answer or not)")
    return arr.astype(bool)


def _check_counts(counts: object, n_lists: int) -> np.ndarray:
    if counts is None:
        return np.ones(n_lists, dtype=np.int64)
    arr = np.asarray(counts)
    if arr.shape != (n_lists,) or not np.issubdtype(arr.dtype, np.integer) or (arr < 1).any():
        raise InvalidParameterError(f"counts must hold one positive integer per list ({n_lists}), got {arr!r}")
    return arr.astype(np.int64)


def attribution_rate(entails: np.ndarray) -> np.ndarray:
    """AR(π) of each list (Eq. 8): the share of its k documents that entail its answer.

    >>> attribution_rate(np.array([[1, 0, 1, 0], [1, 1, 1, 1]])).tolist()
    [0.5, 1.0]
    """
    return _check_entails(entails).mean(axis=1)


def expected_attribution_rate(entails: np.ndarray, counts: np.ndarray | None = None) -> float:
    """EAR (Eq. 9): the mean AR over the N sampled lists, each distinct list weighted by its count.

    >>> expected_attribution_rate(np.array([[1, 0], [1, 1]]), counts=np.array([3, 1]))
    0.625
    """
    arr = _check_entails(entails)
    weights = _check_counts(counts, arr.shape[0])
    return float(weights @ arr.mean(axis=1) / weights.sum())


def attributed_exposure(rankings: np.ndarray, entails: np.ndarray, n_items: int,
                        counts: np.ndarray | None = None) -> np.ndarray:
    """ε^a (Eq. 10): per item, the share of the N samples in which it was retrieved *and* entailed the answer.

    Args:
        rankings: ``(L, k)`` item indices of the distinct lists (or of every sample).
        entails: ``(L, k)`` booleans aligned with ``rankings``.
        n_items: number of candidates n.
        counts: samples per list (default: one each); N = their sum.

    >>> attributed_exposure(np.array([[0, 1], [2, 1]]), np.array([[1, 0], [1, 1]]), 4, counts=np.array([3, 1]))
    array([0.75, 0.25, 0.25, 0.  ])
    """
    ranks = np.asarray(rankings)
    arr = _check_entails(entails)
    if ranks.shape != arr.shape or not np.issubdtype(ranks.dtype, np.integer):
        raise InvalidParameterError(f"rankings must be integer indices with the shape of entails {arr.shape}, "
                                    f"got {ranks.shape}")
    if ranks.min() < 0 or ranks.max() >= n_items:
        raise InvalidParameterError(f"rankings hold indices outside [0, {n_items}); "
                                    "pass n_items = number of candidates")
    weights = _check_counts(counts, arr.shape[0])
    credit = np.bincount(ranks.ravel(), weights=(arr * weights[:, None]).ravel(), minlength=n_items)
    return credit / weights.sum()


def eae_disparity(attributed: np.ndarray, k: int) -> float:
    """EAE-D (Eq. 11): ‖ε^a‖² / k, the expected-exposure disparity of the attributed exposure.

    The same normalisation as EE-D (:func:`~fairrag_core.metrics.exposure.ee_disparity`), so the two can be
    plotted against each other with y = x as the bound.

    >>> eae_disparity(np.array([0.75, 0.25, 0.25, 0.0]), 2)
    0.34375

    Raises:
        UndefinedMetricError: nothing is attributed (ε^a = 0): the disparity of no exposure is not "fair".
    """
    eps = np.asarray(attributed, dtype=np.float64)
    check_k(k, eps.size)
    if eps.ndim == 1 and eps.size and np.all(np.isfinite(eps)) and not eps.any():
        raise UndefinedMetricError(f"EAE-D is undefined: {NOTHING_ATTRIBUTED}")
    return ee_disparity(eps, k)


def eae_d_per_cited(attributed: np.ndarray) -> float:
    """EAE-D/cited = ‖ε^a‖² / ‖ε^a‖₁: the disparity of attributed exposure per cited document, comparable with
    EE-D (module docstring). 1 when every answer cites the same documents; ``Σ ε^a / n`` when citations are spread
    evenly over n documents.

    >>> eae_d_per_cited(np.array([0.75, 0.25, 0.25, 0.0]))
    0.55

    Raises:
        UndefinedMetricError: nothing is attributed.
    """
    eps = np.asarray(attributed, dtype=np.float64)
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps)) or eps.min() < 0:
        raise InvalidParameterError("attributed exposure must be a non-empty vector of finite numbers ≥ 0")
    total = float(eps.sum())
    if total <= 0:
        raise UndefinedMetricError(f"EAE-D/cited is undefined: {NOTHING_ATTRIBUTED}")
    return float(eps @ eps / total)

