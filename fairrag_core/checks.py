"""Argument checks shared by the array functions (one wording for one mistake)."""

from __future__ import annotations

import numbers

import numpy as np

from .errors import InvalidParameterError

__all__ = ["check_k", "check_binary"]


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


def check_binary(values: object, n: int, *, name: str, per: str = "item", fix: str) -> np.ndarray:
    """``values`` as a boolean array of shape ``(n,)``, one per ``per``; 0/1 numbers are accepted.

    ``fix`` ends the message for anything else (e.g. ``"; threshold graded labels first"``).

    >>> check_binary([0, 1, 1], 3, name="labels", fix="; threshold graded labels first").tolist()
    [False, True, True]
    """
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise InvalidParameterError(f"{name} must have one entry per {per}: expected shape ({n},), got {arr.shape}")
    if arr.dtype != bool:
        if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isin(arr, (0, 1))):
            raise InvalidParameterError(f"{name} must be boolean or 0/1{fix}")
        arr = arr.astype(bool)
    return arr
