"""Randomness is explicit: every stochastic function takes a ``seed``/``rng``, and every run records the seed it
used, so that it can be reproduced from its configuration.

``SeedLike`` is ``None`` (fresh entropy), an ``int``, or a ``numpy.random.Generator``. Independent streams for the
parts of a run (one per α, per (query, α) task, per oracle) are derived from the run's seed with
:func:`derive_seed`, which depends only on the seed and the path, never on the order of execution.
"""

from __future__ import annotations

import numbers

import numpy as np

from .errors import InvalidParameterError

__all__ = ["SeedLike", "as_generator", "new_seed", "derive_seed"]

SeedLike = int | np.random.Generator | None


def as_generator(seed: SeedLike) -> np.random.Generator:
    """A numpy Generator from ``None`` (fresh entropy), an ``int`` seed, or an existing Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        return np.random.default_rng(seed)
    raise InvalidParameterError(f"seed must be None, an int or a numpy Generator, got {type(seed).__name__}")


def new_seed() -> int:
    """A fresh random seed to record in a run's config, so that the run can be reproduced."""
    return int(np.random.SeedSequence().entropy % (2**63))


def derive_seed(seed: int, *path: int) -> int:
    """An independent 32-bit seed for the part of a run at ``path`` (e.g. query index, α index).

    >>> derive_seed(7, 0, 1) == derive_seed(7, 0, 1) != derive_seed(7, 1, 0)
    True
    """
    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])
