"""Merit from the system's own scores: the rule that turns a query's logged candidate scores into merit tiers, and
the fair target those tiers give.

A deployment has no relevance labels, but where its candidates carry scores (a reranker's input list) the paper's
fair target (Kim & Diaz 2025, Eq. 6; expected exposure, Diaz et al. 2020: equally meritorious documents get equal
expected exposure) can be computed with the system's own scores standing in for relevance. The rule is the user's,
declared once as :class:`~fairrag_core.audit.rag_log.LogAuditConfig` options (so the reproduce command carries it):

* ``--merit-grades G`` (default 4): tiers by score quantile within the query — tier t holds the candidates whose
  score lies between the query's t/G and (t+1)/G quantiles (quartiles for G = 4); equal scores share a tier;
* ``--merit-threshold T``: two tiers, score ≥ T meritorious.

:func:`tier_target` is the expected exposure, under the step model 1[i ≤ k], of the ranker that orders the tiers
(best first) and shuffles within each: the tiers fill the k slots in order, a tier that fits gets 1 per document, the
tier at the boundary shares the slots left equally (``slots / m_t``), the tiers below get 0. With two tiers it is
:func:`~fairrag_core.metrics.exposure.target_exposure` of the binary labels (a query without a meritorious candidate
spreads the k slots over all of them). The merit is the system's own estimate: every finding built on it says so
(:func:`merit_words`).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["DEFAULT_GRADES", "merit_tiers", "tier_target", "merit_words", "grades_arg", "threshold_arg"]

#: Tiers by score quantile within the query unless the user sets a threshold: quartiles.
DEFAULT_GRADES = 4
_GRADE_NAMES = {2: "halves", 3: "terciles", 4: "quartiles", 5: "quintiles", 10: "deciles"}


def merit_tiers(scores: np.ndarray, *, grades: int = DEFAULT_GRADES, threshold: float | None = None) -> np.ndarray:
    """Each candidate's tier (0 = least meritorious) from one query's ``scores``: 1[score ≥ ``threshold``] when a
    threshold is set, else its quantile tier among the query's scores (``grades`` tiers; equal scores, equal tier).

    >>> merit_tiers(np.array([0.9, 0.1, 0.5, 0.7]), grades=2).tolist()
    [1, 0, 0, 1]
    >>> merit_tiers(np.array([0.9, 0.1, 0.5]), threshold=0.5).tolist()
    [1, 0, 1]
    """
    scores = np.asarray(scores, dtype=float)
    if not np.all(np.isfinite(scores)):
        raise InvalidParameterError("merit tiers need a score for every candidate; leave out the queries whose "
                                    "candidates were logged without scores")
    if threshold is not None:
        return (scores >= threshold).astype(int)
    if grades < 2:
        raise InvalidParameterError(f"merit grades must be 2 or more (got {grades}); e.g. 4 for quartiles")
    cuts = np.quantile(scores, np.arange(1, grades) / grades) if scores.size else np.array([])
    return np.searchsorted(cuts, scores, side="right")


def tier_target(tiers: np.ndarray, k: int) -> np.ndarray:
    """The expected exposure ε* under 1[i ≤ k] of a ranker that orders ``tiers`` best first and shuffles within
    each (module docstring).

    >>> tier_target(np.array([3, 3, 2, 2, 2, 0]), 3).tolist()
    [1.0, 1.0, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333, 0.0]
    """
    tiers = np.asarray(tiers)
    out = np.zeros(tiers.size)
    slots = float(min(k, tiers.size))
    for tier in np.unique(tiers)[::-1]:
        if slots <= 0:
            break
        members = tiers == tier
        m = int(members.sum())
        out[members] = min(1.0, slots / m)
        slots -= min(slots, m)
    return out


def merit_words(*, grades: int = DEFAULT_GRADES, threshold: float | None = None) -> str:
    """The rule in words, as every merit finding states it: ``merit = the system's own scores, quartiles per
    query`` (or ``…, score ≥ 0.5 meritorious``)."""
    if threshold is not None:
        return f"merit = the system's own scores, score ≥ {threshold:g} meritorious"
    return f"merit = the system's own scores, {_GRADE_NAMES.get(grades, f'{grades} quantile tiers')} per query"


def grades_arg(text: str) -> int:
    """``--merit-grades``: a whole number ≥ 2 (4: quartiles of the query's candidate scores)."""
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value < 2 or not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of merit tiers, 2 or more (4: quartiles), got "
                                         f"{text!r}")
    return value


def threshold_arg(text: str) -> float:
    """``--merit-threshold``: a finite number (a candidate scored at least this is meritorious)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a score (a number) from which a candidate is meritorious, got "
                                         f"{text!r}")
    return value
