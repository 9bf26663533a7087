"""Drift alarms over repeated looks: has a provider's share of retrieval exposure moved from its reference share?

A monitor looks at the same deployment every window (every day, say). A fixed-sample test re-run at each look
raises false alarms far above its level (30 daily looks at α = 5 % each: most deployments alarm once in a month at
equality). The test here is **always valid**: its false-alarm rate is at most α however many looks are taken and
whenever the monitor stops (Ville's inequality).

For each provider g, request i gives x_i ∈ [0, 1], the provider's share of the request's top-k slots (the shown
documents of that provider / the shown documents). Under the null, E[x_i | the past] = p_g, its share over the
reference period. For a fixed bet λ with 1 + λ(x − p) > 0 on [0, 1] (−1/(1 − p) < λ < 1/p),
M_t(λ) = Π_{i ≤ t} (1 + λ (x_i − p)) is a nonnegative martingale under the null (Waudby-Smith & Ramdas 2024,
"Estimating means of bounded random variables by betting", JRSS-B); so is the average over a grid of bets
(:data:`BETS`, fractions of the largest bet on each side: a two-sided mixture, an e-process). By Ville,
P(sup_t M_t ≥ 1/a) ≤ a, so ``p_t = min(1, 1 / max_{s ≤ t} M_s)`` is an always-valid p-value.

The reference share is estimated, not known: taken as known, its error alone raised false alarms to half the
monitors in 30 looks (benchmarks/calibrate_drift.py). So the null is a band: with probability ≥ 1 − α/2 every
provider's true reference share lies in ``mean ± z·sd/√n`` of the reference requests (:func:`reference_band`;
normal approximation, Bonferroni over providers), and the e-process bets on a rise against the band's top and on a
fall against its bottom (a supermartingale for any share in the band). Over the P providers the alarm is
Bonferroni's at the other α/2: provider g alarms at the first look where ``2P / sup M_g ≤ α``, so the family-wise
false-alarm rate over providers *and* looks stays ≤ α; the p reported is that adjusted one.

Assumptions: requests are independent given the past (a query served many times in a window is several requests),
and the reference period is long enough for the normal band (a week of 200 requests a day is;
benchmarks/calibrate_drift.py measures false alarms and detection delays, docs/monitor.md has the table).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["BETS", "DRIFT_ALPHA", "DriftAlarm", "mixture_log_e", "reference_band", "drift_alarms", "request_shares"]

#: The bets averaged, as fractions of the largest admissible bet on each side (1/p up, 1/(1 − p) down): small bets
#: detect small drifts slowly and safely, large ones large drifts fast; the average pays for both.
BETS = (0.05, 0.1, 0.2, 0.35, 0.5)
#: The family-wise false-alarm rate over providers and looks.
DRIFT_ALPHA = 0.05


def _bets(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(P, 2·len(BETS))`` bets per provider and the share each bets against: each fraction of 1/high (the share
    rose above ``high``) and of −1/(1 − low) (it fell below ``low``)."""
    low = np.clip(np.asarray(low, dtype=float), 1e-9, 1 - 1e-9)
    high = np.clip(np.asarray(high, dtype=float), 1e-9, 1 - 1e-9)
    f = np.asarray(BETS)
    bets = np.concatenate([f[None, :] / high[:, None], -f[None, :] / (1 - low[:, None])], axis=1)
    against = np.concatenate([np.repeat(high[:, None], len(f), 1), np.repeat(low[:, None], len(f), 1)], axis=1)
    return bets, against


def mixture_log_e(x: np.ndarray, low: np.ndarray, high: np.ndarray | None = None) -> np.ndarray:
    """log M_t of the mixture e-process after each request: ``x`` is ``(n, P)`` (requests in time order,
    providers); the null is that each provider's mean share lies in ``[low, high]`` (``(P,)`` each; ``high``
    None: ``low``, a point null). Bets on a rise are against ``high``, on a fall against ``low``: under the null each
    factor has mean ≤ 1, so M_t is a nonnegative supermartingale. Requests are taken in pieces within the memory
    budget (:func:`~fairrag_core.checks.rows_in_budget`); returns ``(n, P)``.

    >>> x = np.array([[0.2], [0.2], [0.2]])
    >>> bool(mixture_log_e(x, np.array([0.2]))[-1, 0] == 0.0)  # no drift: every bet keeps its stake
    True
    """
    from ..checks import rows_in_budget

    bets, against = _bets(low, low if high is None else high)  # (P, B)
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape)
    carry = np.zeros(bets.shape)
    rows = rows_in_budget(3 * 8 * bets.size, f"the drift test of {bets.shape[0]:,} providers",
                          fix="monitor fewer providers (a --service, or a provider map that groups them)")
    for start in range(0, len(x), rows):
        logs = carry + np.cumsum(np.log1p(bets * (x[start:start + rows, :, None] - against)), axis=0)  # (c, P, B)
        top = logs.max(axis=-1, keepdims=True)
        out[start:start + rows] = (top + np.log(np.exp(logs - top).mean(axis=-1, keepdims=True)))[..., 0]
        carry = logs[-1]
    return out


def reference_band(x: np.ndarray, alpha: float = DRIFT_ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference shares (mean per provider of the ``(n, P)`` reference requests) and the band
    ``mean ± z · sd/√n`` that holds every provider's true share with probability ≥ 1 − α/2 (normal approximation,
    Bonferroni over the P providers): the e-processes test beyond it with the other α/2."""
    from scipy.stats import norm

    x = np.asarray(x, dtype=float)
    mean = x.mean(axis=-2)
    n = x.shape[-2]
    se = x.std(axis=-2, ddof=1) / math.sqrt(n) if n > 1 else np.full_like(mean, np.inf)
    z = float(norm.ppf(1 - alpha / (4 * x.shape[-1])))
    return mean, np.clip(mean - z * se, 0.0, 1.0), np.clip(mean + z * se, 0.0, 1.0)


@dataclass(frozen=True)
class DriftAlarm:
    """A provider whose share moved beyond what its reference share allows, at the first look that said so.

    ``reference`` and ``current`` are its mean per-request share over the reference windows and over the looked-at
    windows up to the alarm; ``p`` the always-valid p (Bonferroni over ``providers``); ``since`` the first
    monitored window's start (ISO text), ``looks`` the looks taken up to the alarm, ``at`` that window's start."""

    provider: str
    reference: float
    current: float
    p: float
    since: str
    at: str
    looks: int
    providers: int
    window: str = "daily"

    @property
    def direction(self) -> str:
        return "rose" if self.current > self.reference else "fell"

    @property
    def text(self) -> str:
        """``Capital Courier's share of retrieval exposure fell from 11.0 % to 5.2 % since 2026-11-20; always-valid
        p = 0.003 after 8 daily looks.``"""
        look = "look" if self.looks == 1 else "looks"
        return (f"{self.provider}'s share of retrieval exposure {self.direction} from {self.reference:.1%} to "
                f"{self.current:.1%} since {self.since[:10]}; always-valid p = {self.p:.3g} after {self.looks} "
                f"{self.window} {look} (Bonferroni over {self.providers} providers).").replace("%", " %")

    def to_dict(self) -> dict[str, object]:
        return {"provider": self.provider, "reference": self.reference, "current": self.current, "p": self.p,
                "since": self.since, "at": self.at, "looks": self.looks, "providers": self.providers,
                "direction": self.direction, "text": self.text}


def drift_alarms(reference: np.ndarray, x: np.ndarray, looks: Sequence[int], providers: Sequence[str], *,
                 starts: Sequence[str], alpha: float = DRIFT_ALPHA, window: str = "daily") -> list[DriftAlarm]:
    """The alarms of the monitored requests ``x`` (``(n, P)`` per-request shares in time order, after the reference
    period) looked at after request ``looks[j]`` (exclusive end index of window j; ``starts[j]`` its start), against
    the ``(n_ref, P)`` ``reference`` requests: the band of :func:`reference_band` at α/2, and at each look the
    always-valid p of each provider's e-process beyond it (Bonferroni over the P providers) against the other α/2.
    One alarm per provider, at its first look with ``p ≤ alpha / 2``; the ``p`` reported is
    ``min(1, 2 · P / sup M)``, comparable with ``alpha``. Most significant first."""
    x, reference = np.asarray(x, dtype=float), np.asarray(reference, dtype=float)
    count = len(providers)
    if x.ndim != 2 or x.shape[1] != count or reference.ndim != 2 or reference.shape[1] != count:
        raise InvalidParameterError("drift_alarms takes (requests, providers) shares for the reference and the "
                                    "monitored requests")
    if len(looks) != len(starts):
        raise InvalidParameterError("drift_alarms takes one start per look")
    if not len(x) or not len(looks) or len(reference) < 2:
        return []
    mean, low, high = reference_band(reference, alpha)
    log_e = np.maximum.accumulate(mixture_log_e(x, low, high), axis=0)
    alarms = []
    for g, name in enumerate(providers):
        for j, end in enumerate(looks):
            if end <= 0:
                continue
            p = min(1.0, 2 * count * float(np.exp(-log_e[end - 1, g])))
            if p <= alpha:
                alarms.append(DriftAlarm(name, float(mean[g]), float(x[:end, g].mean()), p, since=starts[0],
                                         at=starts[j], looks=j + 1, providers=count, window=window))
                break
    return sorted(alarms, key=lambda a: (a.p, a.provider))


def request_shares(shown: Sequence[Sequence[str]], provider_of: dict[str, str], providers: Sequence[str]
                   ) -> np.ndarray:
    """``(requests, P)``: each request's share of its shown documents per provider (0 for a request that showed
    nothing; a document of no listed provider counts in the denominator only)."""
    index = {name: j for j, name in enumerate(providers)}
    out = np.zeros((len(shown), len(providers)))
    for i, docs in enumerate(shown):
        for doc in docs:
            j = index.get(provider_of.get(doc))
            if j is not None:
                out[i, j] += 1
        if len(docs):
            out[i] /= len(docs)
    return out
