"""Significance for audit findings: pure functions on arrays (p-values, multiple comparisons, evidence bounds).

* :func:`holm_adjust` — Holm's (1979) step-down adjustment of a family of p-values (family-wise error ≤ α under
  any dependence between the tests);
* :func:`bootstrap_t_pvalues` — the two-sided bootstrap-t test (symmetric, equal-tailed or both) that the mean of
  each column of a ``(units, tests)`` matrix is 0, resampling the units (here: queries) with
  :func:`~fairrag_core.metrics.bootstrap.resample_counts` (Hall 1988; Hall & Wilson 1991);
* :func:`presence_bound` — at most how many of an audit's queries a group would appear in at all, were it given its
  fair share in every served ranking (used to say "insufficient evidence");
* :func:`wilson_interval` — the Wilson (1927) score interval of a binomial proportion (calibration figures).

Why a bootstrap-t and not a sign-flip or a percentile bootstrap test: a group's per-query share gap is skewed (most
queries show it slightly below its target, a few far above), and with ~20 queries the two simpler tests were too
liberal in the lower tail at Holm's thresholds, flagging fair providers as under-exposed more often than the nominal
level (``benchmarks/calibrate_findings.py``, ``docs/findings.md``). Studentising each resample corrects the skewness
to second order (Hall 1988; Hall, *The Bootstrap and Edgeworth Expansion*, 1992, §3.6).
"""

from __future__ import annotations

import numpy as np

from ..checks import MAX_RESAMPLES, check_at_most, check_open_unit, rows_in_budget
from ..errors import InvalidParameterError
from ..seeds import SeedLike, as_generator
from .bootstrap import resample_counts

__all__ = ["holm_adjust", "TAILS", "bootstrap_t_pvalues", "presence_bound", "wilson_interval"]

#: Most cells (resamples × units) drawn at once by :func:`bootstrap_t_pvalues`.
_CHUNK_CELLS = 4_000_000
#: float64 arrays of one resample's width (tests) that :func:`bootstrap_t_pvalues` holds at once per resample: the
#: two products, T* and the temporaries of :func:`_t` and of the comparisons.
_ARRAYS_PER_TEST = 12


def holm_adjust(p_values: np.ndarray) -> np.ndarray:
    """Holm–Bonferroni step-down adjusted p-values; NaN entries (untested) stay NaN and are not counted.

    With the m finite p-values sorted, ``p_(1) ≤ … ≤ p_(m)``, the adjusted values are
    ``p̃_(i) = min(1, max_{j ≤ i} (m − j + 1) p_(j))`` (Holm 1979, *Scand. J. Statist.* 6:65–70; the definition
    of statsmodels' ``multipletests(method="holm")``). Rejecting every hypothesis with ``p̃ ≤ α`` keeps the
    probability of any false rejection at most α, whatever the dependence between the tests.

    >>> holm_adjust(np.array([0.01, 0.04, 0.03, 0.005])).round(3).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise InvalidParameterError(f"p_values must be a vector, got shape {p.shape}")
    finite = np.isfinite(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise InvalidParameterError("p-values must lie in [0, 1] (NaN for an untested hypothesis)")
    out = np.full(p.shape, np.nan)
    index = np.flatnonzero(finite)
    m = index.size
    if m:
        order = index[np.argsort(p[index], kind="stable")]
        out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return out


def _t(mean: np.ndarray, second: np.ndarray, centre: np.ndarray, n: int, tol: float) -> np.ndarray:
    """(mean − centre) / (s / √n) with s² = n/(n − 1) (second − mean²); 0/0 → 0 and x/0 → ±∞."""
    var = np.maximum(second - mean * mean, 0.0) * n / (n - 1)
    se = np.sqrt(var / n)
    diff = mean - centre
    with np.errstate(divide="ignore", invalid="ignore"):
        t = diff / se
    return np.where(se > tol, t, np.where(diff > tol, np.inf, np.where(diff < -tol, -np.inf, 0.0)))


#: How :func:`bootstrap_t_pvalues` turns the bootstrap distribution of T* into a two-sided p-value.
TAILS = ("symmetric", "equal", "both")


def _at_least(values: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """values ≥ bound, with a relative tolerance for ties and ∞ ≥ ∞."""
    finite = np.isfinite(bound)
    slack = np.where(finite, 1e-9 * np.maximum(np.abs(np.where(finite, bound, 0.0)), 1.0), 0.0)
    return values >= bound - slack


def bootstrap_t_pvalues(contributions: np.ndarray, *, n_resamples: int = 10_000, tails: str = "both",
                        seed: SeedLike = None) -> np.ndarray:
    """Two-sided bootstrap-t p-values of ``H0: mean = 0`` for each column of ``contributions``.

    Args:
        contributions: ``(n_units, n_tests)`` (or a vector for one test): one row per unit (query), e.g. each
            query's contribution to a share gap, scaled so that the column mean is the statistic.
        n_resamples: bootstrap resamples B of the units (:func:`~fairrag_core.metrics.bootstrap.resample_counts`);
            the smallest p-value is 1/(B + 1).
        tails: ``"symmetric"``: ``(1 + #{|T*| ≥ |T|}) / (1 + B)``; ``"equal"`` (equal-tailed):
            ``2 (1 + #{T* ≤ T}) / (1 + B)`` for T < 0 (``T* ≥ T`` for T > 0), at most 1; ``"both"`` (default): the
            larger of the two, i.e. both must reject.
        seed: the resampling stream.

    With ``T = d̄ / (s/√n)`` and, for each resample b, ``T*_b = (d̄*_b − d̄) / (s*_b/√n)`` (Hall 1988, *JRSS B*
    50:35–45; Hall & Wilson 1991, *Biometrics* 47:757–762: resample around the estimate, studentise). The
    symmetric p-value is second-order accurate for the two-sided error (Hall 1988), but with very skewed terms (a
    sparse count, e.g. a provider's citations per query) it can put nearly all of that error in one tail; the
    equal-tailed one controls each tail to second order, but was liberal in our retrieval checks at 20 queries.
    ``"both"`` rejects only when both do: its size is at most the smaller of the two. The findings use
    ``"symmetric"`` for retrieval and ``"both"`` for citations (``benchmarks/calibrate_findings.py``). The +1 keeps
    the Monte-Carlo p-value valid (Phipson & Smyth 2010). All resamples are shared by the columns; they are drawn in
    pieces that keep the (resamples × tests) arrays within the memory budget
    (:func:`~fairrag_core.checks.rows_in_budget`), and the p-values do not depend on the pieces. A column with no
    spread is decided exactly: mean 0 gives p = 1; a nonzero mean with zero spread counts the resamples that also
    have none as at least as extreme.

    >>> p = bootstrap_t_pvalues(np.array([[0.1, -0.1], [0.2, 0.1], [0.3, -0.05], [0.25, 0.05], [0.15, 0.0]]),
    ...                         n_resamples=2000, seed=0)
    >>> bool(p[0] < 0.05), bool(p[1] > 0.5)
    (True, True)
    """
    if tails not in TAILS:
        raise InvalidParameterError(f"tails={tails!r}; use one of {TAILS}")
    d = np.asarray(contributions, dtype=np.float64)
    vector = d.ndim == 1
    if vector:
        d = d[:, None]
    if d.ndim != 2 or d.shape[0] < 2 or not np.all(np.isfinite(d)):
        raise InvalidParameterError("contributions must be a finite (units × tests) array with at least two units; "
                                    "a test over one query has no noise to measure")
    n_resamples = check_at_most(n_resamples, "n_resamples", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 10000",
                                fix="10,000 resamples are enough for p-values down to 1e-4")
    n, _ = d.shape
    tol = 1e-12 * max(1.0, float(np.abs(d).max(initial=0.0)))
    mean, second = d.mean(axis=0), (d * d).mean(axis=0)
    observed = _t(mean, second, np.zeros_like(mean), n, tol)
    rng = as_generator(seed)
    # resamples held at once: the draw's cells, and the memory budget for their (resamples × tests) arrays (the
    # findings over 2,098 providers test 4,196 columns: 130,000 resamples at once were 4 GB per array)
    chunk = min(max(1, _CHUNK_CELLS // n), rows_in_budget(
        8 * (n + _ARRAYS_PER_TEST * d.shape[1]), f"one bootstrap-t resample of {d.shape[1]:,} tests",
        fix="test fewer groups (top providers only, or a coarser grouping)"))
    beyond = np.zeros(d.shape[1])  # |T*| ≥ |T|
    same_side = np.zeros(d.shape[1])  # T* at least as far as T on its own side
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        counts = resample_counts(n, size, rng)
        t_star = _t(counts @ d / n, counts @ (d * d) / n, mean, n, tol)
        beyond += np.sum(_at_least(np.abs(t_star), np.abs(observed)), axis=0)
        same_side += np.sum(np.where(observed < 0, _at_least(-t_star, -observed), _at_least(t_star, observed)),
                            axis=0)
        done += size
    symmetric = (1.0 + beyond) / (1.0 + n_resamples)
    equal = np.minimum(1.0, 2.0 * (1.0 + same_side) / (1.0 + n_resamples))
    p = {"symmetric": symmetric, "equal": equal, "both": np.maximum(symmetric, equal)}[tails]
    p = np.where(observed == 0.0, 1.0, p)
    return p[0] if vector else p


def presence_bound(expected: np.ndarray, lines: np.ndarray) -> float:
    """Upper bound on the expected number of queries in which a group appears at least once, at its fair share.

    A line's count X of the group's documents is a whole number with mean ``t`` (its fair share of the k slots),
    so ``P(X = 0) ≥ 1 − t`` for ``t < 1``; lines are independent, so the group appears in query q with probability
    at most ``1 − (1 − min(t_q, 1))^{N_q}``, whatever the serving policy that meets the fair share. Summed over the
    queries with ``t_q > 0``. A query where a fair system would most likely not show (or cite) the group at all
    says nothing about the direction of its gap, so a test over queries has at most this many informative ones.

    >>> round(presence_bound(np.array([0.1, 0.0, 1.2]), np.array([3, 5, 2])), 3)  # (1 − 0.9³) + 0 + 1
    1.271
    """
    t = np.asarray(expected, dtype=np.float64)
    n = np.asarray(lines, dtype=np.float64)
    if t.shape != n.shape or t.ndim != 1 or np.any(t < 0) or np.any(n < 0):
        raise InvalidParameterError("expected and lines need one non-negative value per query each")
    with np.errstate(divide="ignore"):  # t ≥ 1: log 0 = −∞, present with probability up to 1
        log_absent = n * np.log1p(-np.minimum(t, 1.0))
    return float(np.sum(np.where(t > 0, -np.expm1(log_absent), 0.0)))


def wilson_interval(successes: int, trials: int, *, level: float = 0.95) -> tuple[float, float, float]:
    """The observed proportion with its Wilson score interval: ``(p̂, low, high)`` (Wilson 1927, *JASA* 22:209).

    ``(p̂ + z²/2n ± z √(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n)``, z the normal quantile of (1 + level)/2; it always
    contains p̂ and stays in [0, 1], also at 0 or n successes.

    >>> tuple(round(x, 4) for x in wilson_interval(0, 1000))
    (0.0, 0.0, 0.0038)
    """
    level = check_open_unit(level, "level", hint="e.g. 0.95")
    if trials < 1 or not 0 <= successes <= trials:
        raise InvalidParameterError(f"need 0 ≤ successes ≤ trials and trials ≥ 1, got {successes} of {trials}")
    from statistics import NormalDist  # scipy.stats would cost 0.6 s of start-up for one quantile

    z = NormalDist().inv_cdf((1 + level) / 2)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return p, float(max(0.0, min(centre - half, p))), float(min(1.0, max(centre + half, p)))
