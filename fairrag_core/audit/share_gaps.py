"""The test behind a share finding: is a group's share of exposure different from a reference share (its fair
share, or another system's), beyond the noise of the audited queries?

**Shares and gaps.** A share is a ratio of sums over the audited queries, ``s_g = Σ_q x_qg / Σ_q X_q`` with
``x_qg`` the exposure of group g in query q (retrieval: ε summed over the group's documents, Kim & Diaz 2025 Eq. 5;
attributed: ε^a, §3.4; fair: ε*, Eq. 6) and ``X_q = Σ_g x_qg``. The gap is ``s_g − τ_g`` (τ the fair share). Each
value is printed with its percentile bootstrap interval over queries, drawn with
:func:`~fairrag_core.metrics.bootstrap.resample_counts` exactly as :func:`~fairrag_core.audit.query_bootstrap.
ledger_intervals` draws them: with the same seed the finding's intervals are the ledger's.

**The test.** The gap is the mean over queries of the linearised contributions (delta method for a ratio of sums,
Davison & Hinkley 1997 §2.7.2) ``d_qg = Q [(x_qg − s⁰_g X_q)/Σ X − (y_qg − s⁰_g Y_q)/Σ Y]`` (y the reference,
s⁰ the pooled share; ``mean_q d_qg = s_g − τ_g`` exactly). H0: mean 0, tested two-sided with the symmetric
bootstrap-t over queries (:func:`~fairrag_core.metrics.significance.bootstrap_t_pvalues`, Hall 1988: the symmetric
p-value for retrieval; for sparse citations the symmetric and the equal-tailed p-value must both reject, see
:data:`ATTRIBUTED_TAILS`), Holm-adjusted
(:func:`~fairrag_core.metrics.significance.holm_adjust`) over the groups tested in that family. A group is flagged
when its adjusted p ≤ α = 1 − level. The interval printed beside it is the percentile interval (unadjusted, as the
ledger shows it), so at the margin a flagged gap's interval may touch 0 or an unflagged one miss it.

**Insufficient evidence.** With α/m the strictest Holm threshold (m groups with a fair share or some exposure), a
group is *not testable*, and says "insufficient evidence (n = …)", never "fair", when (i) it is at stake (has a fair
share or was shown) in n queries with 2/2ⁿ > α/m — 2/2ⁿ is the smallest p-value of the exact sign-flip test, and no
test that treats queries as exchangeable does better; or (ii) when the lines per query are known, the same holds for
n_eff, at most how many queries a system meeting its fair share would show it in at all
(:func:`~fairrag_core.metrics.significance.presence_bound`: a provider with a small share in short queries, or a
sparsely cited one, is absent from most of them even when treated fairly); or (iii) even its total absence — its
exposure set to 0 in every query, the others filling its slots — would not reach p ≤ α/m with this test on these
queries. These depend on the fair targets and the audit's size (under a fair system a group is only shown where it
has a fair share), not on how the group was treated, so the family tested is fixed before looking at it; Holm runs
over the testable groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import MAX_RESAMPLES, check_at_most
from ..metrics.intervals import ConfidenceInterval, percentile_interval
from ..metrics.significance import bootstrap_t_pvalues, holm_adjust, presence_bound
from ..seeds import SeedLike, check_seed, derive_seed
from .query_bootstrap import pooled_shares, share_intervals

__all__ = ["NOT_AT_STAKE", "GroupGap", "gap_family", "test_streams", "alpha_of", "RETRIEVAL_TAILS",
           "ATTRIBUTED_TAILS", "BOOTSTRAP_T"]

#: How the bootstrap-t p-value of a retrieval share gap is read (:func:`~fairrag_core.metrics.significance.
#: bootstrap_t_pvalues`): symmetric, calibrated in our retrieval checks and the more powerful.
RETRIEVAL_TAILS = "symmetric"
#: ... and of an attributed (citation) share gap: citations are sparse counts (about one per answer), for which the
#: symmetric p-value put nearly all its error in the "under-cited" tail; the symmetric and the equal-tailed p-value
#: must both reject.
ATTRIBUTED_TAILS = "both"
#: The test behind a share finding, in words, by its tails.
BOOTSTRAP_T = {"symmetric": "symmetric bootstrap-t over queries, two-sided",
               "equal": "equal-tailed bootstrap-t over queries, two-sided",
               "both": "bootstrap-t over queries, two-sided (symmetric and equal-tailed must both reject)"}


#: Why a group is left out of a family: nothing at stake for it.
NOT_AT_STAKE = "no fair share and no exposure in any audited query"


def alpha_of(level: float) -> float:
    """The test's level α = 1 − level, without the float noise of the subtraction (0.05, not 0.050000000000000044)."""
    return round(1.0 - level, 12)


@dataclass(frozen=True)
class GroupGap:
    """One group's result: its share and the reference share with intervals, the gap, the test's raw and
    Holm-adjusted p-values, whether it was testable (else why not), and the queries at stake."""

    group: str
    value: ConfidenceInterval | None
    reference: ConfidenceInterval | None
    gap: ConfidenceInterval | None
    point_value: float
    point_reference: float
    p_value: float
    p_adjusted: float
    testable: bool
    reason: str
    n_at_stake: int
    n_informative: float

    def numbers(self) -> dict[str, object]:
        """The Finding fields of this group: the gap with its interval, both shares, the relative gap."""
        gap = self.gap
        est, low, high = (gap.estimate, gap.low, gap.high) if gap else (math.nan,) * 3
        relative = (self.point_value - self.point_reference) / self.point_reference if self.point_reference > 0 \
            else math.nan
        return {"estimate": est, "low": low, "high": high, "value": self.value, "reference": self.reference,
                "relative": relative}


def test_streams(seed: SeedLike) -> tuple[SeedLike, np.random.Generator]:
    """The interval resamples draw from ``seed`` as :func:`~fairrag_core.audit.query_bootstrap.ledger_intervals`
    does; the test from its own stream."""
    if seed is None:
        return None, np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed, seed
    return seed, np.random.default_rng(derive_seed(check_seed(seed), 20, 3))


def _interval(point: float, draws: np.ndarray, level: float) -> ConfidenceInterval | None:
    if not math.isfinite(point):
        return None
    draws = draws[np.isfinite(draws)]
    return percentile_interval(point, draws if draws.size else np.array([point]), level=level)


def _contributions(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-query terms whose mean over queries is share(x) − share(y), observed and under total absence.

    ``d_qg = Q [(x_qg − s⁰_g X_q)/ΣX − (y_qg − s⁰_g Y_q)/ΣY]`` with s⁰ the pooled share of x and y; the absence
    terms set x_qg to 0 with each query's total X_q unchanged (the other groups fill the slots), so that their mean
    is −share(y).
    """
    n_q = x.shape[0]
    x_tot, y_tot = x.sum(axis=1, keepdims=True), y.sum(axis=1, keepdims=True)
    pooled = (x.sum(axis=0) + y.sum(axis=0)) / (x_tot.sum() + y_tot.sum())
    reference = (y - pooled * y_tot) / y_tot.sum()
    return (n_q * ((x - pooled * x_tot) / x_tot.sum() - reference),
            n_q * (-pooled * x_tot / x_tot.sum() - reference))


def _test_size(n_test: int | None, m: int, alpha: float) -> int:
    if n_test is None:
        return int(min(MAX_RESAMPLES, max(2000, math.ceil(20 * max(m, 1) / alpha))))
    return check_at_most(n_test, "n_test", MAX_RESAMPLES, hint="bootstrap-t resamples, e.g. 10000",
                         fix="10,000 resamples give p-values down to 1e-4")


def gap_family(x: np.ndarray, y: np.ndarray, groups: Sequence[str], *, counts: np.ndarray,
                test_rng: np.random.Generator, lines: np.ndarray | None, level: float,
                n_test: int | None, tails: str) -> list[GroupGap]:
    """Per group: share(x), share(y), the gap with intervals, the bootstrap-t p-value, Holm over the testable."""
    alpha = alpha_of(level)
    n_g = x.shape[1]
    at_stake = (y.sum(axis=0) > 0) | (x.sum(axis=0) > 0)
    m_all = int(at_stake.sum())
    sx, bx, x_low, x_high = share_intervals(x, counts, level)  # no interval for a group never shown (or cited)
    sy, by_ = pooled_shares(y.sum(axis=0)), pooled_shares(counts @ y)
    observed, absent = _contributions(x, y)
    p_all = bootstrap_t_pvalues(np.hstack([observed, absent]), n_resamples=_test_size(n_test, m_all, alpha),
                                tails=tails, seed=test_rng)
    p_obs, p_abs = p_all[:n_g], p_all[n_g:]
    threshold = alpha / max(m_all, 1)
    x_tot, y_tot = x.sum(axis=1), y.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(y_tot > 0, x_tot / np.where(y_tot > 0, y_tot, 1.0), 0.0)
    testable = np.zeros(n_g, dtype=bool)
    reasons = [""] * n_g
    informatives = np.zeros(n_g)
    stake = np.sum((x > 0) | (y > 0), axis=0)
    for g in range(n_g):
        informative = float(stake[g])
        if lines is not None:  # only queries where a fair system would show it at least once carry a sign
            informative = presence_bound(y[:, g] * scale, lines) + float(np.sum((x[:, g] > 0) & (y[:, g] == 0)))
        informatives[g] = informative
        if not at_stake[g]:
            reasons[g] = NOT_AT_STAKE
        elif 2.0 ** (1 - int(stake[g])) > threshold:
            reasons[g] = f"on {int(stake[g])} queries no test over queries can reach the {threshold:.2g} Holm needs"
        elif 2.0 ** (1 - informative) > threshold:
            reasons[g] = (f"at its fair share it would appear in at most {informative:.1f} of them on average, too "
                          f"few for a test over queries to reach the {threshold:.2g} Holm needs")
        elif p_abs[g] > threshold:
            reasons[g] = "even no exposure at all would not be significant here"
        else:
            testable[g] = True
    p_adj = np.full(n_g, np.nan)
    p_adj[testable] = holm_adjust(p_obs[testable])
    results = []
    for g, name in enumerate(groups):
        value = (ConfidenceInterval(float(sx[g]), float(x_low[g]), float(x_high[g]), float(level))
                 if math.isfinite(x_low[g]) else None)
        reference = _interval(sy[g], by_[:, g], level)
        gap = _interval(sx[g] - sy[g], bx[:, g] - by_[:, g], level)
        results.append(GroupGap(name, value, reference, gap, float(sx[g]), float(sy[g]),
                                    float(p_obs[g]) if testable[g] else math.nan, float(p_adj[g]), bool(testable[g]),
                                    reasons[g], int(stake[g]), float(informatives[g])))
    return results


