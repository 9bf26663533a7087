"""Randomness is explicit: every stochastic function takes a ``seed``/``rng``, and every run records the seed it
used, so that it can be reproduced from its configuration.

``SeedLike`` is ``None`` (fresh entropy), an ``int``, or a ``numpy.random.Generator``. Independent streams for the
parts of a run (one per α, per (query, α) task, per oracle) are derived from the run's seed with
:func:`derive_seed`, which depends only on the seed and the path, never on the order of execution.

A seed is a whole number in ``[0, 2**63)`` (:data:`MAX_SEED`): numpy's ``SeedSequence`` takes no negative number,
and the run store keeps seeds in a signed 64-bit column. :func:`check_seed` is the one place that says so; every
function and command that takes a seed goes through it.
"""

from __future__ import annotations

import numbers

import numpy as np

from .errors import InvalidParameterError

__all__ = ["SeedLike", "MAX_SEED", "check_seed", "as_generator", "new_seed", "derive_seed"]

SeedLike = int | np.random.Generator | None

#: Seeds are whole numbers ``0 ≤ seed ≤ MAX_SEED`` (2**63 − 1).
MAX_SEED = 2**63 - 1


def check_seed(seed: object) -> int:
    """``seed`` as an int in ``[0, 2**63)``; anything else is refused with the range.

    >>> check_seed(42)
    42
    >>> check_seed(-1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fairrag_core.errors.InvalidParameterError: seed=-1 is negative; use a whole number from 0 to 9223372036854775807...
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidParameterError(f"seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    if seed < 0:
        raise InvalidParameterError(f"seed={seed} is negative; use a whole number from 0 to {MAX_SEED} "
                                    "(e.g. --seed 42)")
    if seed > MAX_SEED:
        raise InvalidParameterError(f"seed={seed} is larger than {MAX_SEED} (2**63 − 1); use a smaller whole number")
    return int(seed)


def as_generator(seed: SeedLike) -> np.random.Generator:
    """A numpy Generator from ``None`` (fresh entropy), an ``int`` seed (:func:`check_seed`), or an existing
    Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return np.random.default_rng(check_seed(seed))
    raise InvalidParameterError(f"seed must be None, an int or a numpy Generator, got {type(seed).__name__}")


def new_seed() -> int:
    """A fresh random seed to record in a run's config, so that the run can be reproduced."""
    return int(np.random.SeedSequence().entropy % (2**63))


def derive_seed(seed: int, *path: int) -> int:
    """An independent 32-bit seed for the part of a run at ``path`` (e.g. query index, α index).

    >>> derive_seed(7, 0, 1) == derive_seed(7, 0, 1) != derive_seed(7, 1, 0)
    True
    """
    seed = check_seed(seed)
    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])
