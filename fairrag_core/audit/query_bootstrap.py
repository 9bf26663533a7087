"""Intervals for audit headlines and ledgers: a percentile bootstrap over queries around the plug-in value.

An audit's headline numbers are means over queries of per-query metrics (EE-D, EE-R, EAR, EAE-D of what was
served), and a ledger's shares are ratios of sums over queries. The unit that varies from one audit to the next
is the query, so the interval resamples queries with replacement (B resamples) and reports the quantiles of the
resampled statistic: the *percentile* interval of the *plug-in* estimate (Efron & Tibshirani 1993, ch. 13),
built by :func:`fairrag_core.metrics.intervals.percentile_interval`, which contains the estimate printed beside
it (widened to reach it in the degenerate case where every resample falls on one side, e.g. a single query).
Means and ratios of sums are (close to) linear in the per-query values, so the percentile recipe applies; the
per-query EE-D of a log is the exposure the log *delivered*, not an estimate of a sampling policy, so it needs no
bias correction here (``ee_d_unbiased`` in the per-query table estimates the serving policy's EE-D).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..checks import check_memory, check_open_unit, check_positive_int
from ..data import Collection
from ..errors import InvalidParameterError
from ..metrics.bootstrap import resample_counts
from ..metrics.intervals import ConfidenceInterval, percentile_interval
from ..seeds import SeedLike

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["ESTIMATE_NOTE", "ONE_QUERY", "mean_interval", "ratio_interval", "ledger_intervals", "pooled_shares",
           "percentile_bounds", "share_intervals", "check_share_resamples"]

#: What every interval of this module is, in words a reader can check.
ESTIMATE_NOTE = ("mean over the audited queries (EE-D per query bias-corrected, as everywhere); {level:.0%} percentile "
                 "bootstrap interval over queries")
#: Why an interval over queries has no bounds: resampling one query always gives it back.
ONE_QUERY = "one query: no interval over queries (audit two or more queries)"


#: float64 (resamples × groups) arrays that resampled shares hold at once: three shares' draws kept for the gaps, the
#: product, the shares and the gap being formed, and the two sorted copies of the quantiles.
_SHARE_ARRAYS = 8
#: The input that makes resampled shares smaller, for the memory budget's refusal.
_FEWER_RESAMPLES = "lower the bootstrap resamples n_boot (1,000 are the usual number), or group by a coarser category"


def check_share_resamples(n_boot: int, n_queries: int, n_groups: int) -> None:
    """Refuse resampled shares that would pass the memory budget (:func:`~fairrag_core.checks.check_memory`) before
    they are drawn: ``8 B (Q + 8 G)`` bytes for B resamples of Q queries (the counts) and G groups (each provider a
    column: a collection of 2,098 providers at K = all has all of them at stake)."""
    check_memory(8 * n_boot * (n_queries + _SHARE_ARRAYS * n_groups),
                 f"{n_boot:,} resamples of {n_groups:,} groups' shares over {n_queries:,} queries",
                 fix=_FEWER_RESAMPLES)


def pooled_shares(totals: np.ndarray) -> np.ndarray:
    """Each group's share of its row's total (last axis), NaN where a row sums to 0: ``s_g = Σ_q x_qg / Σ_q X_q``
    when ``totals`` holds the groups' sums over queries (one row, or one row per resample)."""
    row_sums = totals.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(row_sums > 0, totals / row_sums, np.nan)


def percentile_bounds(point: np.ndarray, draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval at ``level`` of ``draws`` (resamples × groups), widened to hold ``point``; NaN for a
    group without a finite resample (never seen)."""
    tail = (1.0 - level) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(draws, [tail, 1.0 - tail], axis=0)
    return np.fmin(low, point), np.fmax(high, point)


def share_intervals(matrix: np.ndarray, counts: np.ndarray, level: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each group's pooled share of a ``(queries, groups)`` matrix, its shares under the resampling ``counts``
    (resamples × queries), and their percentile bounds. A group exactly 0 in every query gets NaN bounds: resampling
    queries that all lack it can only give 0 back, and "[0, 0]" would claim a certainty the audit does not have."""
    point, draws = pooled_shares(matrix.sum(axis=0)), pooled_shares(counts @ matrix)
    low, high = percentile_bounds(point, draws, level)
    never = ~matrix.any(axis=0)
    return point, draws, np.where(never, np.nan, low), np.where(never, np.nan, high)


def _interval(estimate: float, draws: np.ndarray, level: float) -> ConfidenceInterval:
    draws = draws[np.isfinite(draws)]
    return percentile_interval(estimate, draws if draws.size else [estimate], level=level)


def _check(n_boot: int, level: float) -> tuple[int, float]:
    return (check_positive_int(n_boot, "n_boot", hint="bootstrap resamples, e.g. 1000"),
            check_open_unit(level, "level", hint="e.g. 0.95"))


def mean_interval(values: Sequence[float] | np.ndarray, *, n_boot: int = 1000, level: float = 0.95,
                  seed: SeedLike = None) -> ConfidenceInterval | None:
    """The mean of the finite ``values`` (one per query) with a percentile bootstrap interval over them.

    NaN values (queries where the metric is undefined) are left out; None when fewer than two are left (one query
    says nothing about the next: every resample would give it back, a zero-width "interval").

    >>> ci = mean_interval([0.2, 0.4, 0.6, 0.8], seed=0)
    >>> round(ci.estimate, 3), ci.low <= ci.estimate <= ci.high
    (0.5, True)
    """
    n_boot, level = _check(n_boot, level)
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size < 2:
        return None
    weights = resample_counts(arr.size, n_boot, seed)
    return _interval(float(arr.mean()), weights @ arr / arr.size, level)


def ratio_interval(numerators: Sequence[float] | np.ndarray, denominators: Sequence[float] | np.ndarray, *,
                   n_boot: int = 1000, level: float = 0.95, seed: SeedLike = None) -> ConfidenceInterval | None:
    """Σ numerators / Σ denominators (pooled over queries) with a percentile bootstrap interval over queries.

    None when the denominators sum to 0, or only one query has a denominator (no interval over one query).

    >>> ci = ratio_interval([1, 2, 0], [2, 2, 1], seed=0)
    >>> round(ci.estimate, 3), ci.low <= ci.estimate <= ci.high
    (0.6, True)
    """
    n_boot, level = _check(n_boot, level)
    num, den = np.asarray(numerators, dtype=np.float64), np.asarray(denominators, dtype=np.float64)
    if num.shape != den.shape or num.ndim != 1:
        raise InvalidParameterError("numerators and denominators need one value per query each")
    if den.sum() <= 0 or int((den > 0).sum()) < 2:
        return None
    weights = resample_counts(num.size, n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (weights @ num) / (weights @ den)
    return _interval(float(num.sum() / den.sum()), draws, level)


def ledger_intervals(documents: pd.DataFrame, collection: Collection, *, by: str = "provider",
                     n_boot: int = 1000, level: float = 0.95, seed: SeedLike = None) -> pd.DataFrame:
    """Percentile bootstrap intervals over queries for the shares of an exposure ledger and its gap.

    ``documents`` is what :func:`~fairrag_core.audit.ledger.exposure_ledger` reads (one system), with a
    ``query_id`` column. Returns one row per group with ``retrieval_share_low/high``,
    ``attributed_share_low/high``, ``target_share_low/high``, ``share_gap_low/high`` (retrieval − target) and
    ``attributed_gap_low/high`` (attributed − target) (NaN where the column
    is absent, for a share that is exactly 0 in every query — never shown, or never cited —, and every bound when
    the documents come from a single query: :data:`ONE_QUERY`), each containing the ledger's plug-in share.
    """
    import pandas as pd

    n_boot, level = _check(n_boot, level)
    if "query_id" not in documents or "doc_id" not in documents:
        raise InvalidParameterError("the documents table needs the columns query_id and doc_id")
    group_of = dict(zip(collection.doc_ids, collection.owners(by)))
    groups = documents["doc_id"].map(group_of)
    if groups.isna().any():
        raise InvalidParameterError("some doc_ids are not in the collection; audit with the collection the run used")
    group_codes, group_names = pd.factorize(groups, sort=True)
    query_codes, _ = pd.factorize(documents["query_id"])
    n_q, n_g = int(query_codes.max()) + 1, len(group_names)
    check_share_resamples(n_boot, n_q, n_g)
    weights = resample_counts(n_q, n_boot, seed)
    out = pd.DataFrame({"group": list(group_names)})
    for name in ("retrieval_share", "attributed_share", "target_share", "share_gap", "attributed_gap"):
        out[f"{name}_low"] = out[f"{name}_high"] = np.nan  # NaN unless measured below
    if n_q < 2:
        return out
    resampled = {}
    for name, column in (("retrieval_share", "exposure"), ("attributed_share", "attributed_exposure"),
                         ("target_share", "target_exposure")):
        if column not in documents or not documents[column].notna().any():
            continue
        matrix = np.zeros((n_q, n_g))  # per query and group
        np.add.at(matrix, (query_codes, group_codes), documents[column].fillna(0.0).to_numpy(dtype=np.float64))
        if matrix.sum() <= 0:
            continue
        point, draws, out[f"{name}_low"], out[f"{name}_high"] = share_intervals(matrix, weights, level)
        resampled[name] = (point, draws)
    for gap, share in (("share_gap", "retrieval_share"), ("attributed_gap", "attributed_share")):
        if share in resampled and "target_share" in resampled:
            (p_s, d_s), (p_t, d_t) = resampled[share], resampled["target_share"]
            out[f"{gap}_low"], out[f"{gap}_high"] = percentile_bounds(p_s - p_t, d_s - d_t, level)
    return out
