"""Expected exposure for machine users: EE-D (disparity) and EE-R (relevance), normalised to [0, 1].

Kim & Diaz, "Towards Fair RAG", ICTIR 2025, §3.3.1 and App. C, after Diaz et al., "Evaluating
Stochastic Rankings with Expected Exposure", CIKM 2020.

The generator reads the top k with equal attention and ignores the rest (step browsing model
``MU(i) = 1[i ≤ k]``, Eq. 4), so the exposure of item d over N sampled rankings is

    ε_d = (1/N) Σ_π 1[d ∈ π_{1:k}]                                   (Eq. 5, Monte-Carlo)

The target ε* is the exposure under an oracle that ranks the m useful items first in random order
(Eq. 6): useful d → 1 if m ≤ k else k/m; non-useful d → (k−m)/(n−m) if m ≤ k else 0.

    EE-D = ‖ε‖² / k                                                  (Eq. 16)
    EE-R = ⟨ε, ε*⟩ / ‖ε*‖²,  ‖ε*‖² = m + (k−m)²/(n−m) (m ≤ k) or k²/m (m > k)   (Eq. 28)

EE-D is 1 for a deterministic ranker and ~k/n for a uniform one; higher EE-R means exposure sits on
useful items. EE-R is *undefined* when no item is useful (m = 0): ε* is then uniform and every ranking scores
exactly 1, a perfect score from nothing, so :func:`ee_relevance` refuses it (:class:`UndefinedMetricError`) and
the summaries report None with the reason. An interval needs at least two sampled rankings.

``compat=True`` reproduces the authors' released code, whose ε* is zero on non-useful items while the normaliser
stays as above, so its EE-R cannot reach 1 when m < k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..checks import check_binary, check_k, check_positive_int
from ..errors import InvalidParameterError, UndefinedMetricError
from ..seeds import SeedLike
from .bootstrap import exposure_intervals
from .intervals import ConfidenceInterval

__all__ = [
    "expected_exposure",
    "target_exposure",
    "ee_disparity",
    "ee_relevance",
    "unbiased_ee_disparity",
    "least_ee_disparity",
    "ConfidenceInterval",
    "ExposureSummary",
    "bootstrap_exposure_ci",
    "summarise_exposure",
    "ee_d_estimate",
    "NO_USEFUL_ITEM",
    "ONE_SAMPLE",
]

#: Why EE-R (and the fair target's relevance side) has no value: the reason shown beside "—".
NO_USEFUL_ITEM = ("no candidate is useful (m = 0), so every ranking would score EE-R = 1; EE-R needs at least one "
                  "useful document (lower the usefulness grade, e.g. --min-rel, or pick a query with relevance labels)")
#: Why an interval has no bounds.
ONE_SAMPLE = "one sampled ranking: no interval (sample N ≥ 2 rankings)"




def _check_rankings(rankings: object, n_items: int) -> np.ndarray:
    arr = np.asarray(rankings)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidParameterError(f"rankings must have shape (N ≥ 1, k ≥ 1), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise InvalidParameterError("rankings must hold integer item indices (positions in the score vector)")
    if arr.min() < 0 or arr.max() >= n_items:
        raise InvalidParameterError(f"rankings hold indices outside [0, {n_items}); "
                                    "pass n_items = number of candidates")
    ordered = np.sort(arr, axis=1)
    if np.any(ordered[:, 1:] == ordered[:, :-1]):
        raise InvalidParameterError("a ranking lists the same item twice; each row must hold distinct indices")
    return arr


def _check_exposure(exposure: object) -> np.ndarray:
    eps = np.asarray(exposure, dtype=np.float64)
    if eps.ndim != 1 or eps.size == 0:
        raise InvalidParameterError(f"exposure must be a non-empty vector, got shape {eps.shape}")
    if not np.all(np.isfinite(eps)) or eps.min() < 0:
        raise InvalidParameterError("exposure must be finite and non-negative (use expected_exposure to build it)")
    return eps


def _check_labels(labels: object, n: int) -> np.ndarray:
    return check_binary(labels, n, name="labels", fix=" (useful or not); threshold graded labels first")


def expected_exposure(rankings: np.ndarray, n_items: int) -> np.ndarray:
    """Per-item exposure ε under the top-k step model (Eq. 5), estimated from sampled rankings.

    Args:
        rankings: ``(N, k)`` integer indices, one sampled ranking per row (``sample_rankings`` output).
        n_items: number of candidates ``n``.

    Returns:
        ``(n,)`` float vector; ε_d is the fraction of rankings that include d. Sums to k.

    >>> expected_exposure(np.array([[0, 1], [0, 2]]), 4).tolist()
    [1.0, 0.5, 0.5, 0.0]
    """
    n_items = check_positive_int(n_items, "n_items", hint="the number of candidates")
    arr = _check_rankings(rankings, int(n_items))
    return np.bincount(arr.ravel(), minlength=int(n_items)) / arr.shape[0]


def target_exposure(labels: np.ndarray, k: int, *, compat: bool = False) -> np.ndarray:
    """Oracle exposure ε* (Eq. 6) for boolean usefulness ``labels``.

    >>> target_exposure(np.array([1, 1, 0, 0, 0]), 3).tolist()
    [1.0, 1.0, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333]
    """
    raw = np.asarray(labels)
    if raw.ndim != 1:
        raise InvalidParameterError(f"labels must be a vector with one entry per item, got shape {raw.shape}")
    lab = _check_labels(raw, raw.size)
    n = lab.size
    k = check_k(k, n)
    m = int(lab.sum())
    useful = 1.0 if m <= k else k / m
    other = 0.0 if (compat or m >= k or m == n) else (k - m) / (n - m)
    return np.where(lab, useful, other)


def _relevance_normaliser(m: int, n: int, k: int) -> float:
    if m > k:
        return k * k / m
    return m + ((k - m) ** 2 / (n - m) if n > m else 0.0)


def ee_disparity(exposure: np.ndarray, k: int) -> float:
    """Normalised expected-exposure disparity ``‖ε‖² / k`` ∈ [0, 1] (App. C.1, Eq. 16). Lower is fairer.

    >>> ee_disparity(np.array([1.0, 1.0, 0.0, 0.0]), 2)
    1.0
    >>> ee_disparity(np.array([0.5, 0.5, 0.5, 0.5]), 2)
    0.5
    """
    eps = _check_exposure(exposure)
    k = check_k(k, eps.size)
    return float(eps @ eps / k)


def ee_relevance(exposure: np.ndarray, labels: np.ndarray, k: int, *, compat: bool = False) -> float:
    """Normalised expected-exposure relevance ``⟨ε, ε*⟩ / ‖ε*‖²`` ∈ [0, 1] (App. C.2, Eq. 28).

    Args:
        exposure: ε from :func:`expected_exposure`.
        labels: boolean usefulness per item (utility labels, or relevance ≥ threshold).
        k: ranking length.
        compat: reproduce the released code (ε* = 0 on non-useful items, same normaliser).

    >>> ee_relevance(np.array([1.0, 1.0, 0.0, 0.0]), np.array([1, 1, 0, 0]), 2)
    1.0

    Raises:
        UndefinedMetricError: no item is useful (m = 0).
    """
    eps = _check_exposure(exposure)
    lab = _check_labels(labels, eps.size)
    k = check_k(k, eps.size)
    if not lab.any():
        raise UndefinedMetricError(f"EE-R is undefined: {NO_USEFUL_ITEM}")
    target = target_exposure(lab, k, compat=compat)
    return float(eps @ target / _relevance_normaliser(int(lab.sum()), lab.size, k))


def least_ee_disparity(n_items: int, k: int, filled: int | None = None) -> float:
    """The least EE-D = ‖ε‖²/k any policy can have when each ranking fills ``filled`` (default k) of its slots from
    ``n_items`` candidates: uniform exposure ``filled/n`` per item, so ``filled² / (n·k)`` (k/n for full rankings).
    An unbiased estimate of a policy near uniform falls below it about half the time; the EE-D shown is clipped here.

    >>> least_ee_disparity(20, 5), least_ee_disparity(4, 5, filled=4)
    (0.25, 0.8)
    """
    filled = k if filled is None else filled
    return (filled / n_items) * (filled / k)  # exactly k/n for full rankings


def unbiased_ee_disparity(rankings: np.ndarray, n_items: int) -> float:
    """Unbiased Monte-Carlo estimate of the policy's normalised EE-D from N ≥ 2 sampled rankings.

    The plug-in ``‖ε̂‖²/k`` is biased upward by ``Σ_d ε_d(1 − ε_d) / (N·k)`` (each count is
    binomial). With counts ``c_d``, ``Σ_d c_d(c_d − 1) / (N(N − 1))`` is unbiased for ``‖ε‖²``.
    Useful to compare runs with different N; the paper reports the plug-in.

    >>> round(unbiased_ee_disparity(np.array([[0, 1], [2, 3]]), 4), 6)
    0.0
    """
    arr = _check_rankings(rankings, n_items)
    n_samples, k = arr.shape
    if n_samples < 2:
        raise InvalidParameterError("the unbiased estimate needs at least 2 sampled rankings")
    counts = np.bincount(arr.ravel(), minlength=n_items).astype(np.float64)
    return float((counts * (counts - 1)).sum() / (n_samples * (n_samples - 1)) / k)


@dataclass(frozen=True)
class ExposureSummary:
    """Exposure of every item and the EE metrics over N sampled rankings.

    ``ee_d`` and ``ee_r`` carry their bootstrap intervals (None when N < 2: one ranking gives no interval);
    ``ee_d_plug_in`` and ``ee_r_plug_in`` are the plug-in values over the N rankings (what the paper reports;
    ``ee_r_plug_in`` is None without labels or when no item is useful). ``undefined`` maps each metric left
    without a value to the reason, in words a reader can act on.
    """

    exposure: np.ndarray
    k: int
    n_samples: int
    ee_d: ConfidenceInterval | None
    ee_r: ConfidenceInterval | None
    ee_d_unbiased: float | None = None  # None when N < 2
    ee_d_plug_in: float = float("nan")
    ee_r_plug_in: float | None = None
    undefined: dict[str, str] = field(default_factory=dict)

    @property
    def ee_d_value(self) -> float:
        """The EE-D shown everywhere: the bias-corrected estimate (inside its interval); with N = 1, the plug-in."""
        return self.ee_d.estimate if self.ee_d is not None else self.ee_d_plug_in


def bootstrap_exposure_ci(
    rankings: np.ndarray,
    n_items: int,
    *,
    labels: np.ndarray | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    compat: bool = False,
    seed: SeedLike = None,
) -> tuple[ConfidenceInterval, ConfidenceInterval | None]:
    """Bootstrap intervals for EE-D and EE-R, resampling the N rankings with replacement.

    They show how much of a difference between two α values is Monte-Carlo noise from a finite N. Each
    interval contains the estimate it comes with (:class:`~fairrag_core.metrics.intervals.ConfidenceInterval`;
    print ``ci.estimate`` beside ``[ci.low, ci.high]``):

    * EE-D is quadratic in ε, so its plug-in ``‖ε̂‖²/k`` is biased upward by ``Σ_d ε_d(1 − ε_d)/(N·k)``
      (see :func:`unbiased_ee_disparity`) and the bootstrap distribution is shifted by the same amount: a
      percentile interval can miss the plug-in. EE-D therefore comes as the *bias-corrected* estimate — the
      unbiased :func:`unbiased_ee_disparity`, the same number for every seed — with the *basic* interval
      ``[2θ̂ − q_hi, 2θ̂ − q_lo]`` of the policy's exact value, both clipped to [k/n, 1] (uniform to deterministic:
      :func:`least_ee_disparity`)
      (``method="bias-corrected"``); ``plug_in`` keeps the plug-in the paper reports.
    * EE-R is linear in ε and unbiased: the plug-in with its percentile interval (``method="percentile"``).

    Vectorised: only items that appear in some ranking carry exposure, so the work is
    ``n_boot × N × (distinct items)`` whatever the corpus size.
    """
    arr = _check_rankings(rankings, n_items)
    n_samples, k = arr.shape
    k = check_k(k, n_items)
    items, compact = np.unique(arr, return_inverse=True)
    member = np.zeros((n_samples, items.size))
    np.put_along_axis(member, compact.reshape(arr.shape), 1.0, axis=1)
    weights = None
    if labels is not None and _check_labels(labels, n_items).any():  # m = 0: EE-R is undefined (ee_relevance)
        lab = _check_labels(labels, n_items)
        target = target_exposure(lab, k, compat=compat)[items]
        weights = target / _relevance_normaliser(int(lab.sum()), lab.size, k)
    return exposure_intervals(member, k, relevance_weights=weights, n_boot=n_boot, level=level, seed=seed,
                              least=least_ee_disparity(n_items, k))


def summarise_exposure(
    rankings: np.ndarray,
    n_items: int,
    *,
    labels: np.ndarray | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    compat: bool = False,
    seed: SeedLike = None,
) -> ExposureSummary:
    """Exposure vector plus EE-D (and EE-R when ``labels`` are given) with bootstrap intervals.

    Undefined values are None, with their reason in ``undefined``: EE-R when no item is useful, every interval
    (and the unbiased EE-D) when there is a single ranking.
    """
    arr = _check_rankings(rankings, n_items)
    eps = expected_exposure(arr, n_items)
    k = arr.shape[1]
    undefined: dict[str, str] = {}
    useful = None if labels is None else _check_labels(labels, n_items)
    ee_r_plug_in = None
    if useful is not None:
        if useful.any():
            ee_r_plug_in = ee_relevance(eps, useful, k, compat=compat)
        else:
            undefined["ee_r"] = NO_USEFUL_ITEM
    ee_d = ee_r = unbiased = None
    if arr.shape[0] > 1:
        ee_d, ee_r = bootstrap_exposure_ci(arr, n_items, labels=useful, n_boot=n_boot, level=level, compat=compat,
                                           seed=seed)
        unbiased = unbiased_ee_disparity(arr, n_items)
    else:
        undefined["ee_d_interval"] = ONE_SAMPLE
        if ee_r_plug_in is not None:
            undefined["ee_r_interval"] = ONE_SAMPLE
    return ExposureSummary(eps, k, arr.shape[0], ee_d, ee_r, unbiased, ee_disparity(eps, k), ee_r_plug_in,
                           undefined)


def ee_d_estimate(rankings: np.ndarray, n_items: int) -> float:
    """The one EE-D number the package shows for a policy sampled N times: the bias-corrected estimate of
    :func:`bootstrap_exposure_ci` — :func:`unbiased_ee_disparity` clipped to [:func:`least_ee_disparity`, 1], which
    needs no resampling —;
    with a single ranking, its plug-in (which is what one ranking's disparity is). Sweeps put it in their ``ee_d``
    column, as the pages, the CLI and the reports show it.

    >>> ee_d_estimate(np.array([[0, 1]]), 4), ee_d_estimate(np.array([[0, 1], [2, 3]]), 4)  # unbiased 0, at least k/n
    (1.0, 0.5)
    """
    arr = _check_rankings(rankings, n_items)
    if arr.shape[0] < 2:
        return ee_disparity(expected_exposure(arr, n_items), arr.shape[1])
    return float(np.clip(unbiased_ee_disparity(arr, n_items), least_ee_disparity(n_items, arr.shape[1]), 1.0))

