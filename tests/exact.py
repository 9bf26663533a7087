"""Exact Plackett-Luce reference for tests: enumerate every ordered top-k prefix of a small candidate set."""

from __future__ import annotations

import itertools

import numpy as np


def paper_logits(scores, alpha: float) -> np.ndarray:
    """Eq. 2 written out independently of the package: min-max to [0, 1], +1, power α."""
    s = np.asarray(scores, dtype=float)
    span = s.max() - s.min()
    s_bar = np.ones_like(s) if span == 0 else 1.0 + (s - s.min()) / span
    return s_bar**alpha


def exact_prefix_probabilities(logits, k: int) -> dict[tuple[int, ...], float]:
    """P(top-k prefix = t) for every ordered k-tuple t, by the sequential definition (Eq. 1), in log space."""
    from scipy.special import logsumexp

    logits = np.asarray(logits, dtype=float)
    n = logits.size
    probs: dict[tuple[int, ...], float] = {}
    for prefix in itertools.permutations(range(n), int(k)):
        log_p, taken = 0.0, []
        for item in prefix:
            log_p += logits[item] - logsumexp(np.delete(logits, taken))
            taken.append(item)
        probs[prefix] = float(np.exp(log_p))
    return probs


def exact_inclusion(logits, k: int) -> np.ndarray:
    """P(d ∈ top-k) for each item: the exact expected exposure ε under the step model."""
    n = len(logits)
    incl = np.zeros(n)
    for prefix, p in exact_prefix_probabilities(logits, k).items():
        incl[list(prefix)] += p
    return incl


def exact_top2_inclusion(logits) -> np.ndarray:
    """Closed form of P(d ∈ top-2) for larger n, in log space: p_d + Σ_{j≠d} p_j · w_d / (W − w_j)."""
    from scipy.special import logsumexp

    logits = np.asarray(logits, dtype=float)
    log_first = logits - logsumexp(logits)
    log_rest = np.array([logsumexp(np.delete(logits, j)) for j in range(logits.size)])  # log(W − w_j)
    n = logits.size
    second = np.empty(n)
    for d in range(n):
        others = np.arange(n) != d
        second[d] = np.exp(log_first[others] + logits[d] - log_rest[others]).sum()
    return np.exp(log_first) + second
