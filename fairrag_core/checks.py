"""Argument checks shared by the array functions (one wording for one mistake)."""

from __future__ import annotations

import numbers

from .errors import InvalidParameterError

__all__ = ["check_k"]


def check_k(k: object, n: int | None = None) -> int:
    """``k`` as an int: a positive integer, at most ``n`` (the candidates) when ``n`` is given.

    >>> check_k(3, 5)
    3
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidParameterError(f"k must be a positive integer, got {k!r}")
    if k < 1:
        raise InvalidParameterError(f"k={k}; k must be a positive integer (the number of documents in a ranking)")
    if n is not None and k > n:
        raise InvalidParameterError(f"k={k} is larger than the {n} candidate(s); set k ≤ {n} or retrieve more "
                                    "candidates")
    return int(k)
