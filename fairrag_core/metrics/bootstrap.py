"""One bootstrap for every exposure number: resample the units (sampled rankings, served lines, queries) with
replacement and read the statistic on each resample.

Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), §6 (the nonparametric bootstrap), §13 (percentile
intervals); Davison & Hinkley (1997), §5.2 (basic intervals). A resample of n units is a vector of counts drawn
from Multinomial(n, 1/n); with the units' contributions as the rows of a matrix ``M`` (one row per unit, e.g. the
top-k indicator of each sampled ranking over the documents), the resampled means are ``W @ M / n`` for the
``(B, n)`` count matrix ``W`` — one matrix product for all B resamples, whatever the statistic.

* :func:`resample_counts` — the ``(B, n)`` counts, the only place randomness enters;
* :func:`resampled_means` — ``W @ M / n``: e.g. the exposure vector ε of every resample;
* :func:`unbiased_squared_norm` — ‖ε‖² without the upward bias of the plug-in (no resampling);
* :func:`exposure_intervals` — EE-D (‖ε‖²/k, quadratic: bias-corrected estimate with the basic interval) and EE-R
  (⟨ε, w⟩, linear: plug-in with the percentile interval) from a unit × item matrix, as Kim & Diaz (2025) define them.

Every audit uses these: one query's N sampled rankings (:mod:`fairrag_core.metrics.exposure`), one query's served
lines (:mod:`fairrag_core.audit.rag_log`), a run's samples under expeval's user models
(:mod:`fairrag_core.audit.served`), and the queries of an audit (:mod:`fairrag_core.audit.query_bootstrap`).
"""

from __future__ import annotations

import numpy as np

from ..checks import MAX_RESAMPLES, check_at_most, check_open_unit, check_positive_int
from ..seeds import SeedLike, as_generator
from .intervals import ConfidenceInterval, bias_corrected_interval, percentile_interval

__all__ = ["resample_counts", "resampled_means", "unbiased_squared_norm", "exposure_intervals", "line_intervals",
           "distinct_rows", "COLLAPSE_LINES_FROM"]


def resample_counts(n_units: int, n_boot: int, seed: SeedLike = None) -> np.ndarray:
    """``(n_boot, n_units)`` counts of a bootstrap resample: row b says how often each unit is drawn (sums to n).

    >>> counts = resample_counts(4, 3, seed=0)
    >>> counts.shape, counts.sum(axis=1).tolist()
    ((3, 4), [4.0, 4.0, 4.0])
    """
    n_units = check_positive_int(n_units, "n_units", hint="units to resample: rankings, lines or queries")
    n_boot = check_at_most(n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                           fix="1,000 resamples are the usual number")
    rng = as_generator(seed)
    return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot).astype(np.float64)


def resampled_means(matrix: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The mean row of ``matrix`` (units × items) in every resample: ``counts @ matrix / n``, shape (B, items).

    >>> resampled_means(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[2.0, 0.0], [1.0, 1.0]])).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    return counts @ matrix / matrix.shape[0]


def unbiased_squared_norm(matrix, multiplicity: np.ndarray | None = None) -> float | None:
    """``‖ε‖²`` of the mean row ε, estimated without bias from the units (rows) of ``matrix`` (dense or sparse; with
    ``multiplicity``, row r stands for that many units): the U-statistic over pairs of different units,
    ``Σ_{i≠j} ⟨x_i, x_j⟩ / (N(N − 1)) = (‖Σ_i x_i‖² − Σ_i ‖x_i‖²) / (N(N − 1))``. The plug-in ``‖ε̂‖²`` is biased upward
    by ``Σ_d Var(ε̂_d)``; this needs no resampling, so it is the same number for every seed. None for N < 2. Being
    unbiased, it may fall below the metric's least value: callers clip.

    >>> unbiased_squared_norm(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]))  # pairs: one of 6 overlaps
    0.3333333333333333
    """
    weights = np.ones(matrix.shape[0]) if multiplicity is None else np.asarray(multiplicity, dtype=np.float64)
    n = float(weights.sum())
    if n < 2:
        return None
    total = np.asarray(matrix.T @ weights, dtype=np.float64).ravel()
    squares = matrix.multiply(matrix).sum(axis=1) if hasattr(matrix, "multiply") else np.einsum("ij,ij->i", matrix,
                                                                                                  matrix)
    return float(total @ total - weights @ np.asarray(squares, dtype=np.float64).ravel()) / (n * (n - 1))


def exposure_intervals(incidence: np.ndarray, k: int, *, relevance_weights: np.ndarray | None = None,
                       n_boot: int = 1000, level: float = 0.95, seed: SeedLike = None,
                       multiplicity: np.ndarray | None = None, least: float = 0.0
                       ) -> tuple[ConfidenceInterval, ConfidenceInterval | None]:
    """EE-D and EE-R with bootstrap intervals over the units (rows) of an incidence matrix.

    Args:
        incidence: ``(n_units, n_items)``: 1 where the unit (a sampled ranking, a served line) put the item in its
            top k. Its mean row is the exposure ε (Eq. 5).
        k: the ranking length; EE-D = ‖ε‖²/k (Eq. 16).
        relevance_weights: ``(n_items,)`` ε*/‖ε*‖² of the items (Eq. 28), or None for no EE-R.
        n_boot, level, seed: the bootstrap.
        multiplicity: ``(n_rows,)`` how many units each row stands for, when identical units were collapsed into one
            row (e.g. the served lines that showed the same top k). Resampling n units and counting them per row is
            a Multinomial(n, m/n) draw over the rows: the same bootstrap distribution at the cost of the distinct
            rows, not of the units (a query served 50,000 times with 60 distinct rankings resamples 60 rows).
        least: the least EE-D the policy can have (:func:`~fairrag_core.metrics.exposure.least_ee_disparity`: k/n
            when every unit fills its k slots from n candidates), below which neither the estimate nor the interval
            goes.

    EE-D is quadratic in ε: its plug-in is biased upward by Σ_d Var(ε̂_d), and so is the bootstrap distribution.
    The estimate shown is the exactly unbiased U-statistic over the N units, ``Σ_d Σ_{i≠j} e_id e_jd / (N(N − 1)k)
    = Σ_d (N² ε̂_d² − Σ_i e_id²) / (N(N − 1)k)`` (for 0/1 exposure ``Σ_d c_d(c_d − 1) / (N(N − 1)k)`` with c_d the
    units that showed d: :func:`~fairrag_core.metrics.exposure.unbiased_ee_disparity`), which needs no resampling —
    the same number for every seed — with the basic interval, both clipped to [``least``, 1] (an unbiased estimate
    of a policy near uniform would otherwise fall below what any policy can have about half the time). EE-R is
    linear in ε: the plug-in with the percentile interval (:mod:`fairrag_core.metrics.intervals`).

    >>> ee_d, ee_r = exposure_intervals(np.eye(4), 1, relevance_weights=np.full(4, 0.25), n_boot=200, seed=0)
    >>> round(ee_d.plug_in, 3), ee_d.low <= ee_d.estimate <= ee_d.high, round(ee_r.estimate, 3)
    (0.25, True, 0.25)
    """
    level = check_open_unit(level, "level", hint="e.g. 0.95")
    incidence = np.asarray(incidence, dtype=np.float64)
    if multiplicity is None:
        counts = resample_counts(incidence.shape[0], n_boot, seed)
        draws = resampled_means(incidence, counts)
        eps = incidence.mean(axis=0)
    else:
        multiplicity = np.asarray(multiplicity, dtype=np.float64)
        n_units = float(multiplicity.sum())
        n_boot = check_at_most(n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                               fix="1,000 resamples are the usual number")
        counts = as_generator(seed).multinomial(int(n_units), multiplicity / n_units, size=n_boot)
        draws = counts.astype(np.float64) @ incidence / n_units
        eps = multiplicity @ incidence / n_units
    unbiased = unbiased_squared_norm(incidence, multiplicity)
    ee_d = bias_corrected_interval(float(eps @ eps / k), np.einsum("bi,bi->b", draws, draws) / k, level=level,
                                   bounds=(least, 1.0), unbiased=None if unbiased is None else unbiased / k)
    ee_r = None
    if relevance_weights is not None:
        weights = np.asarray(relevance_weights, dtype=np.float64)
        ee_r = percentile_interval(float(eps @ weights), draws @ weights, level=level)
    return ee_d, ee_r


#: From this many served lines of one query on, lines that showed the same set of documents are resampled as one
#: row with their multiplicity (:func:`~fairrag_core.metrics.bootstrap.exposure_intervals`): the same bootstrap
#: distribution, drawn differently, so smaller queries keep the numbers they always had for a given seed.
COLLAPSE_LINES_FROM = 200


def distinct_rows(rows: np.ndarray, n_items: int, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``rows`` (values −1 … ``n_items`` − 1) and how many times each occurs (with ``counts``:
    how many lines each given row stands for, summed over equal rows), ordered by their key: each row read as one
    integer in base ``n_items`` + 1 when it fits (much faster than comparing rows; a value map that keeps order keeps
    the key order too, so rows given in another numbering come out in the same order)."""
    width = rows.shape[1]
    weights = np.ones(rows.shape[0], dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    if width and (n_items + 1) ** width < 2 ** 62:
        key = (rows.astype(np.int64) + 1) @ (np.int64(n_items + 1) ** np.arange(width, dtype=np.int64))
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return rows[first], np.bincount(inverse.ravel(), weights=weights, minlength=first.size).astype(np.int64)


def line_intervals(lines: np.ndarray, n_items: int, k: int, rng: np.random.Generator, n_boot: int, level: float,
                   relevance_weights: np.ndarray | None = None, *,
                   multiplicity: np.ndarray | None = None) -> dict[str, float]:
    """One query's intervals over its served lines (the lines resampled with replacement).

    ``lines``: ``(n, k)`` indices of the served documents (0 … ``n_items`` − 1) in each line's top k, −1 where a
    ranking was shorter than k (no document there: nobody is exposed). ``multiplicity``: the lines are already
    distinct rows, each standing for that many lines (a log aggregated per query by workers); otherwise from
    :data:`COLLAPSE_LINES_FROM` lines on they are collapsed here. Either way the rows are sorted sets in key order
    (:func:`distinct_rows`), so the draws do not depend on the order of the lines.

    EE-D is quadratic in ε, so its plug-in is biased upward: the unbiased estimate with the basic interval (which
    contains it; :func:`exposure_intervals`). EE-R = ⟨ε, ε*⟩/‖ε*‖² is linear in ε: the plug-in with a percentile
    interval; ``relevance_weights`` are ε*/‖ε*‖² of the served documents.
    """
    if multiplicity is not None:
        lines, multiplicity = distinct_rows(np.sort(lines, axis=1), n_items, multiplicity)
    elif lines.shape[0] >= COLLAPSE_LINES_FROM:  # lines that showed the same documents: one weighted row
        lines, multiplicity = distinct_rows(np.sort(lines, axis=1), n_items)
    valid = lines >= 0
    incidence = np.zeros((lines.shape[0], n_items))
    rows = np.broadcast_to(np.arange(lines.shape[0])[:, None], lines.shape)
    np.add.at(incidence, (rows[valid], lines[valid]), 1.0)
    ee_d, ee_r = exposure_intervals(incidence, k, relevance_weights=relevance_weights, n_boot=n_boot, level=level,
                                    seed=rng, multiplicity=multiplicity)
    out = {"ee_d": ee_d.estimate, "ee_d_low": ee_d.low, "ee_d_high": ee_d.high}
    if ee_r is not None:
        out.update(ee_r_low=ee_r.low, ee_r_high=ee_r.high)
    return out
