"""t-tests that stay defined on samples without spread: pure functions on arrays.

* :func:`welch_p_value` — Welch's (1947) unpaired t-test (the Fair RAG paper's Table 2, Kim & Diaz 2025, §5);
* :func:`paired_t_p_value` — Student's (1908) paired t-test (FAIR-QR's per-category comparisons, Chen & Fang
  2025; :func:`~fairrag_core.metrics.intervals.paired_comparison`).

Why not call scipy directly: runs whose utilities agree to the last bits made ``scipy.stats`` warn "catastrophic
cancellation" and return 0/0 (a CI failure); here a spread below ``1e-12 · scale`` counts as none, and the
degenerate test gets its limiting value.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["welch_p_value", "paired_t_p_value"]


def welch_p_value(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of Welch's unpaired t-test that ``a`` and ``b`` have equal means (Welch 1947).

    ``t = (ā − b̄) / √(s_a²/n_a + s_b²/n_b)`` with Welch–Satterthwaite degrees of freedom; the same value as
    ``scipy.stats.ttest_ind(a, b, equal_var=False)``. Variances are taken about the mean (two passes), and a
    variance below ``(1e-12 · scale)²`` counts as none: scipy's single-precision check warns, then returns 0/0 on
    utilities that agree to the last bits. Without spread in either sample the test degenerates: p is 1.0 when
    the means agree (to that tolerance) and 0.0 when they differ. NaN when a sample has fewer than 2 values.
    """
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.size < 2 or y.size < 2:
        return float("nan")
    scale = max(1.0, float(np.abs(x).max()), float(np.abs(y).max()))
    tol = 1e-12 * scale
    vx = float(np.sum((x - x.mean()) ** 2)) / (x.size - 1)
    vy = float(np.sum((y - y.mean()) ** 2)) / (y.size - 1)
    vx, vy = (0.0 if v <= tol * tol else v for v in (vx, vy))
    difference = float(x.mean() - y.mean())
    se2 = vx / x.size + vy / y.size
    if se2 == 0.0:
        return 1.0 if abs(difference) <= tol else 0.0
    from scipy import stats  # on first use: scipy.stats costs 0.6 s to import

    df = se2 ** 2 / ((vx / x.size) ** 2 / (x.size - 1) + (vy / y.size) ** 2 / (y.size - 1))
    return float(2.0 * stats.t.sf(abs(difference) / np.sqrt(se2), df))


def paired_t_p_value(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the paired t-test that the mean of ``a − b`` is 0 (Student 1908).

    The same value as ``scipy.stats.ttest_rel(a, b)``. Differences whose spread is below ``1e-12 · scale`` count
    as constant: p is 1.0 when they are 0 (to that tolerance), 0.0 otherwise (t = ±∞); 1.0 for a single pair.
    """
    d = np.asarray(a, dtype=np.float64).ravel() - np.asarray(b, dtype=np.float64).ravel()
    if d.size == 0:
        raise InvalidParameterError("a paired t-test needs at least one pair")
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    mean = float(d.mean())
    if d.size < 2 or float(np.ptp(d)) <= tol:
        return 1.0 if abs(mean) <= tol or d.size < 2 else 0.0
    from scipy import stats  # on first use: scipy.stats costs 0.6 s to import

    se = float(np.sqrt(np.sum((d - mean) ** 2) / (d.size - 1) / d.size))
    return float(2.0 * stats.t.sf(abs(mean) / se, d.size - 1))
