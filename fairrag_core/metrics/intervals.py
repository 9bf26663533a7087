"""Intervals a reviewer can trust: every interval contains the point estimate printed beside it.

Two bootstrap recipes (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, §13 and §12.5; Davison &
Hinkley, *Bootstrap Methods and their Application*, 1997, §5.2–5.3), chosen by the statistic:

* **plug-in + percentile interval** for statistics that are means or linear in the data (EE-R, means over
  queries, a mean paired difference): the estimate is the plug-in θ̂ and the interval the bootstrap quantiles
  ``[q_{(1−L)/2}, q_{(1+L)/2}]`` of θ*. Their bootstrap distribution is centred on θ̂, so θ̂ lies inside; should
  the resamples all fall on one side (degenerate data), the interval is widened to reach θ̂ and says so.
* **bias-corrected estimate + basic interval** for quadratic statistics (EE-D = ‖ε‖², the difference
  ‖ε − ε*‖²), whose plug-in is biased upward by the Monte-Carlo noise of a finite number N of sampled rankings:
  the bootstrap distribution is shifted by the same bias, so a percentile interval can miss θ̂ altogether
  (FairRAG's ``rank`` printed "EE-D 0.043 (CI 0.009–0.034)"). The basic (pivotal) interval
  ``[2θ̂ − q_hi, 2θ̂ − q_lo]`` targets the policy's exact value. The estimate printed with it is, where the
  statistic has one, its exactly unbiased estimate from the N units (EE-D: the U-statistic
  ``Σ_d (N² ε̂_d² − Σ_i e_id²) / (N(N − 1)k)``, :func:`~fairrag_core.metrics.bootstrap.exposure_intervals`), which
  needs no resampling and so is the same number for every seed; otherwise ``θ̃ = 2θ̂ − median(θ*)``, the point the
  interval shrinks to as L → 0. The interval is widened to reach the estimate should it fall outside (it sits
  near the interval's middle: the basic interval is centred on θ̂ minus the bootstrap's estimate of the same bias).
  Optional bounds clip the estimate and the interval alike.

:func:`paired_comparison` compares two systems on the same queries: the mean per-query difference with a
percentile bootstrap interval over queries, and the two-sided p-value of a paired randomization (sign-flip)
test (Fisher 1935; Smucker, Allan & Carterette, CIKM 2007), exact when there are at most 16 queries; the paired
t-test's p-value is given beside it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..checks import MAX_RESAMPLES, check_at_most, check_open_unit
from ..errors import InvalidParameterError
from ..seeds import SeedLike, as_generator
from .t_tests import paired_t_p_value

__all__ = [
    "ConfidenceInterval", "PERCENTILE", "BIAS_CORRECTED", "percentile_interval", "bias_corrected_interval",
    "bootstrap_mean", "PairedComparison", "paired_comparison",
]

PERCENTILE = "percentile"
BIAS_CORRECTED = "bias-corrected"
_METHOD_TEXT = {PERCENTILE: "plug-in estimate, percentile bootstrap interval",
                BIAS_CORRECTED: "bias-corrected (unbiased) estimate, basic bootstrap interval"}


@dataclass(frozen=True)
class ConfidenceInterval:
    """An estimate with its bootstrap interval ``[low, high]`` at ``level``.

    ``estimate`` is the number the interval is for, and always lies in ``[low, high]``: print it beside the
    interval, and it is what JSON calls ``estimate``. For ``method="percentile"`` it is the plug-in value over the
    data at hand; for ``method="bias-corrected"`` it is the bias-corrected estimate, and ``plug_in`` keeps the
    plug-in value (what the papers' tables report), which may fall outside the interval.

    >>> ci = ConfidenceInterval(0.021, 0.009, 0.034, 0.95, BIAS_CORRECTED, plug_in=0.043)
    >>> ci.estimate, ci.plug_in, ci.describe()
    (0.021, 0.043, '0.021 (95% CI 0.009–0.034; bias-corrected (unbiased) estimate, basic bootstrap interval)')
    """

    estimate: float
    low: float
    high: float
    level: float
    method: str = PERCENTILE
    plug_in: float | None = None

    def __post_init__(self) -> None:
        if self.method not in _METHOD_TEXT:
            raise InvalidParameterError(f"method={self.method!r}; use {PERCENTILE!r} or {BIAS_CORRECTED!r}")
        if self.plug_in is None:
            if self.method == BIAS_CORRECTED:
                raise InvalidParameterError("a bias-corrected interval needs the plug-in value it corrects")
            object.__setattr__(self, "plug_in", float(self.estimate))
        if not self.low - 1e-12 <= self.estimate <= self.high + 1e-12:
            raise InvalidParameterError(f"interval [{self.low}, {self.high}] does not contain its estimate "
                                        f"{self.estimate}; build it with percentile_interval or "
                                        "bias_corrected_interval")

    @property
    def method_text(self) -> str:
        """What the estimate and the interval are, in words."""
        return _METHOD_TEXT[self.method]

    def describe(self, digits: int = 3) -> str:
        """``estimate (L% CI low–high; what they are)``."""
        return (f"{self.estimate:.{digits}f} ({self.level:.0%} CI {self.low:.{digits}f}–{self.high:.{digits}f}; "
                f"{self.method_text})")

    def to_dict(self) -> dict[str, float | str]:
        """The interval for JSON: ``estimate`` (inside ``[low, high]``), ``low``, ``high``, ``level``, ``method`` and
        ``plug_in`` (equal to ``estimate`` for a percentile interval).

        >>> percentile_interval(0.5, [0.4, 0.6], level=0.5).to_dict()["estimate"]
        0.5
        """
        return {"estimate": float(self.estimate), "low": float(self.low), "high": float(self.high),
                "level": float(self.level), "method": self.method, "plug_in": float(self.plug_in)}


def _draws(draws: object, level: object) -> tuple[np.ndarray, float, float]:
    arr = np.asarray(draws, dtype=np.float64).ravel()
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InvalidParameterError("bootstrap draws must be a non-empty array of finite numbers")
    level = check_open_unit(level, "level", hint="e.g. 0.95")
    tail = (1.0 - level) / 2.0
    q_low, q_high = np.quantile(arr, [tail, 1.0 - tail])
    return arr, float(q_low), float(q_high)


def percentile_interval(estimate: float, draws: np.ndarray, *, level: float = 0.95) -> ConfidenceInterval:
    """Plug-in ``estimate`` with the percentile interval of its bootstrap ``draws`` (widened to reach the
    estimate if every draw falls on one side of it).

    >>> percentile_interval(0.5, [0.4, 0.45, 0.5, 0.55, 0.6], level=0.5)
    ConfidenceInterval(estimate=0.5, low=0.45, high=0.55, level=0.5, method='percentile', plug_in=0.5)
    """
    _, q_low, q_high = _draws(draws, level)
    estimate = float(estimate)
    return ConfidenceInterval(estimate, min(q_low, estimate), max(q_high, estimate), float(level))


def bias_corrected_interval(estimate: float, draws: np.ndarray, *, level: float = 0.95,
                            bounds: tuple[float, float] | None = None,
                            unbiased: float | None = None) -> ConfidenceInterval:
    """Bias-corrected estimate with the basic interval ``[2θ̂ − q_hi, 2θ̂ − q_lo]`` of the plug-in ``estimate`` θ̂.

    The estimate is ``unbiased`` when given (the statistic's exactly unbiased estimate, e.g. EE-D's U-statistic:
    no resampling, so one number whatever the seed), else ``2θ̂ − median(θ*)``; the interval is widened to reach
    it. ``bounds=(lo, hi)`` clips the estimate and the interval to the metric's range (e.g. [0, 1]).

    >>> ci = bias_corrected_interval(0.30, [0.30, 0.32, 0.34, 0.36, 0.38], level=0.5)
    >>> round(ci.estimate, 3), round(ci.low, 3), round(ci.high, 3), ci.plug_in
    (0.26, 0.24, 0.28, 0.3)
    >>> ci = bias_corrected_interval(0.30, [0.30, 0.32, 0.34, 0.36, 0.38], level=0.5, unbiased=0.265)
    >>> round(ci.estimate, 3), round(ci.low, 3), round(ci.high, 3)
    (0.265, 0.24, 0.28)
    """
    arr, q_low, q_high = _draws(draws, level)
    theta = float(estimate)
    corrected = 2 * theta - float(np.median(arr)) if unbiased is None else float(unbiased)
    values = np.array([corrected, min(2 * theta - q_high, corrected), max(2 * theta - q_low, corrected)])
    if bounds is not None:
        values = np.clip(values, *bounds)
    corrected, low, high = (float(v) for v in values)
    return ConfidenceInterval(corrected, low, high, float(level), BIAS_CORRECTED, plug_in=theta)


def _values(values: object, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} must be a non-empty vector of finite numbers (one per query)")
    return arr


def bootstrap_mean(values: np.ndarray, *, n_boot: int = 1000, level: float = 0.95,
                   seed: SeedLike = None) -> ConfidenceInterval:
    """Mean of per-query ``values`` with a percentile bootstrap interval over queries (resampled with
    replacement): how much the mean would move with another sample of queries.

    >>> ci = bootstrap_mean([0.2, 0.4, 0.6], n_boot=200, seed=0)
    >>> round(ci.estimate, 3), ci.low <= ci.estimate <= ci.high
    (0.4, True)
    """
    arr = _values(values, "values")
    n_boot = check_at_most(n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                           fix="1,000 resamples are the usual number")
    rng = as_generator(seed)
    picks = rng.integers(0, arr.size, size=(n_boot, arr.size))
    return percentile_interval(float(arr.mean()), arr[picks].mean(axis=1), level=level)


@dataclass(frozen=True)
class PairedComparison:
    """System A against system B on the same queries: mean of A − B with its interval, and the p-values."""

    mean_a: float
    mean_b: float
    difference: ConfidenceInterval
    p_value: float
    p_value_t: float
    n_queries: int
    test: str = "paired randomization (sign-flip) test, two-sided"


_EXACT_MAX = 16


def paired_comparison(a: np.ndarray, b: np.ndarray, *, n_boot: int = 1000, n_permutations: int = 10000,
                      level: float = 0.95, seed: SeedLike = None) -> PairedComparison:
    """Paired comparison of per-query values ``a`` and ``b`` (same queries, same order).

    ``d_q = a_q − b_q``; the estimate is ``mean(d)`` with a percentile bootstrap interval over queries. The
    p-value is that of the two-sided paired randomization test: under H0 (no difference) the sign of each d_q is
    exchangeable, so ``p = P(|mean(s ∘ d)| ≥ |mean(d)|)`` over random signs s — by enumerating all 2^n sign
    vectors when n ≤ 16, else from ``n_permutations`` random ones as ``(1 + hits) / (1 + n_permutations)``
    (Phipson & Smyth 2010). ``p_value_t`` is the paired t-test's (``scipy.stats.ttest_rel``; 1.0 when every
    difference is equal to the others).

    >>> c = paired_comparison([0.5, 0.6, 0.7, 0.8], [0.4, 0.5, 0.6, 0.7], seed=0)
    >>> round(c.difference.estimate, 3), c.p_value  # 4 queries: the exact test's smallest p is 2/16
    (0.1, 0.125)
    """
    x, y = _values(a, "a"), _values(b, "b")
    if x.size != y.size:
        raise InvalidParameterError(f"a and b must hold one value per query each, got {x.size} and {y.size}")
    n_permutations = check_at_most(n_permutations, "n_permutations", MAX_RESAMPLES,
                                   hint="random sign flips, e.g. 10000", fix="10,000 sign flips are the usual number")
    rng = as_generator(seed)
    d = x - y
    interval = bootstrap_mean(d, n_boot=n_boot, level=level, seed=rng)
    observed = abs(d.mean())
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    if d.size <= _EXACT_MAX:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        p_value = float(np.mean(np.abs(signs @ d / d.size) >= observed - tol))
    else:
        signs = rng.choice((1.0, -1.0), size=(n_permutations, d.size))
        hits = int(np.sum(np.abs(signs @ d / d.size) >= observed - tol))
        p_value = (1 + hits) / (1 + n_permutations)
    return PairedComparison(float(x.mean()), float(y.mean()), interval, p_value, paired_t_p_value(x, y), int(d.size))
