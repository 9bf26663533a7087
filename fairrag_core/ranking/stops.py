"""α stops for one query: values of the fairness knob where each step moves EE-D by about the same amount.

How fast EE-D falls as α falls depends on the query: on the candidates' score spread (scores are min-maxed to
[1, 2] before the Plackett-Luce policy takes their α-th power, :mod:`.sampling`) and on k. Fixed stops were flat on
some queries (α = 8, 6 and 5 all showed EE-D 1.000 while α = 5 already sampled 3 distinct rankings) and jumped on
others. :func:`alpha_stops` reads the query's own curve instead: it estimates the EE-D of the policy (Kim & Diaz
2025, Eq. 16) on a fine grid of α from one batch of samples, then keeps the α where the curve crosses evenly spaced
EE-D levels between its value at α = 0 (uniform) and the deterministic limit. Same scores, k and seed: same stops.
"""

from __future__ import annotations

import numpy as np

from ..checks import check_positive_int
from ..seeds import SeedLike, as_generator
from .sampling import sample_rankings_batch

__all__ = ["alpha_stops", "ALPHA_GRID"]

#: The α values a stop can take: quarter steps to 4, half steps to 8, then 10, 12, 16, 24, 32.
ALPHA_GRID: tuple[float, ...] = (*np.arange(0.0, 4.0, 0.25).tolist(), *np.arange(4.0, 8.0, 0.5).tolist(),
                                 8.0, 10.0, 12.0, 16.0, 24.0, 32.0)


def _ee_d_curve(scores: np.ndarray, k: int, n_samples: int, seed: SeedLike) -> np.ndarray:
    """Plug-in EE-D (‖ε‖²/k, Eq. 16) of ``n_samples`` rankings at every α of :data:`ALPHA_GRID`, one batch."""
    grid = np.array(ALPHA_GRID)
    rankings = sample_rankings_batch(np.tile(scores, (grid.size, 1)), alpha=grid, n_samples=n_samples, k=k,
                                     seed=as_generator(seed))
    n = scores.size
    counts = np.zeros((grid.size, n))
    rows = np.repeat(np.arange(grid.size), n_samples * k)
    np.add.at(counts, (rows, rankings.reshape(-1)), 1.0)
    exposure = counts / n_samples  # the generator reads the whole top k: each shown slot counts 1
    return (exposure**2).sum(axis=1) / k


def alpha_stops(scores: np.ndarray, k: int, *, n_stops: int = 9, n_samples: int = 400,
                seed: SeedLike = 0) -> tuple[float, ...]:
    """Up to ``n_stops`` α values, ascending, starting at 0, where EE-D steps evenly from uniform to deterministic.

    Args:
        scores: the candidates' retrieval scores (the policy's input).
        k: the length of the shown list.
        n_stops: how many stops at most (fewer when the curve has fewer distinguishable levels: a query whose
            candidates all score alike is uniform at every α).
        n_samples: rankings per grid point for the curve (400: the level's standard error is about 0.01).
        seed: the curve's randomness (fixed by default, so a page shows the same stops every time).

    >>> alpha_stops(np.array([3.0, 2.0, 1.0, 0.5]), 2, n_stops=4)
    (0.0, 1.75, 2.75, 5.0)
    """
    s = np.asarray(scores, dtype=float)
    n_stops = check_positive_int(n_stops, "n_stops", hint="how many α stops")
    if s.ndim != 1 or s.size < 2 or k >= s.size or n_stops < 2 or np.ptp(s) == 0:
        return (0.0,)
    curve = _ee_d_curve(s, k, n_samples, seed)
    # the curve rises with α; sampling noise can dent it, and the stops must follow its trend
    rising = np.maximum.accumulate(curve)
    low, high = rising[0], rising[-1]
    if high - low < 0.02:
        return (0.0,)
    levels = low + (high - low) * np.linspace(0.0, 1.0, n_stops)
    # the first α that reaches each level (the last level: within 1 % of the curve's top, where it flattens)
    levels[-1] = high - 0.01 * (high - low)
    picked = [ALPHA_GRID[int(np.argmax(rising >= level - 1e-12))] for level in levels]
    return tuple(sorted(set(picked)))
