"""How findings write their numbers: one set of formatters for the share findings, the comparison findings and the
what-if (its findings, its text and the app's table), so that a share, a change or a p-value reads the same wherever
it is printed. Every minus is a true minus sign (−); "—" stands for a missing value. Where the sentences of one
module write a number differently on purpose, the difference is a parameter (``zero_sign``, ``untested``,
``exact_one``, ``digits``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["num", "pct", "interval", "share_text", "points", "p_text", "percent", "group_noun", "p_pair"]


def num(x: float, digits: int = 3, *, signed: bool = False, zero_sign: bool = False) -> str:
    """``x`` with ``digits`` decimals, or "—" when not finite; ``signed``: always with its sign (``+0.120``).

    A value that rounds to zero prints without a sign (``0.000``; ``±0.000`` when ``signed``), or with the one it
    rounded from when ``zero_sign`` (``−0.000``, ``+0.000``: the comparison's and the share findings' sentences).

    >>> num(-0.12), num(0.1234, signed=True), num(-0.0001, signed=True), num(-0.0001, zero_sign=True)
    ('−0.120', '+0.123', '±0.000', '−0.000')
    """
    if not math.isfinite(x):
        return "—"
    text = f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
    if float(text) == 0 and not zero_sign:
        text = ("±" if signed else "") + text.lstrip("+-")
    return text.replace("-", "−")


def pct(x: float, *, zero_sign: bool = False) -> str:
    """A share, or a change of one, in percent with one decimal (``12.5``, ``−3.1``); exactly 0 prints as ``0``,
    a missing value as "—" (``zero_sign`` as in :func:`num`)."""
    return "0" if x == 0 else num(100 * x, 1, zero_sign=zero_sign)


def interval(low: float, high: float, write: Callable[..., str] = num, **how: bool) -> str:
    """`` [low, high]``, each bound as ``write(bound, **how)`` writes it (:func:`num`, :func:`pct`), or "" when a
    bound is missing."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f" [{write(low, **how)}, {write(high, **how)}]"


def share_text(point: float, low: float = math.nan, high: float = math.nan) -> str:
    """``12.5 % [10.1, 14.8]``: a share in percent with its interval (without one when a bound is missing)."""
    return f"{pct(point)} %{interval(low, high, pct)}"


def points(estimate: float, low: float = math.nan, high: float = math.nan, *, zero_sign: bool = False) -> str:
    """``+3.1 points [0.4, 5.9]``: a change of a share in percentage points, signed, with its interval (without one
    when a bound is missing)."""
    sign = "+" if estimate > 0 else ""
    return f"{sign}{pct(estimate, zero_sign=zero_sign)} points{interval(low, high, pct, zero_sign=zero_sign)}"


def p_text(p: float, *, untested: str = "p = —", exact_one: bool = True, digits: int | None = None) -> str:
    """``p = 0.004``, ``p = 0.21``, ``p < 0.001``: three decimals below 0.1 and two from there (or always
    ``digits``); ``p = 1`` from 0.995 when ``exact_one``; ``untested`` when there is no p-value.

    >>> p_text(0.0004), p_text(0.034), p_text(0.21), p_text(0.999), p_text(0.999, exact_one=False, digits=3)
    ('p < 0.001', 'p = 0.034', 'p = 0.21', 'p = 1', 'p = 0.999')
    """
    if not math.isfinite(p):
        return untested
    if p < 0.001:
        return "p < 0.001"
    if exact_one and p >= 0.995:
        return "p = 1"
    return f"p = {p:.{digits or (3 if p < 0.1 else 2)}f}"


def p_pair(p_raw: float, p_adjusted: float, correction: str, write: Callable[[float], str] = p_text) -> str:
    """``p = 0.015 unadjusted, p = 0.059 Holm-adjusted over 4 metrics``: the p-value that belongs with the
    unadjusted interval printed beside it, and the one the verdict uses, named (``correction``: ``over 4 metrics``);
    the adjusted one alone when the raw one is missing.

    >>> p_pair(0.015, 0.059, "over 4 metrics")
    'p = 0.015 unadjusted, p = 0.059 Holm-adjusted over 4 metrics'
    """
    adjusted = f"{write(p_adjusted)} Holm-adjusted {correction}".rstrip()
    return adjusted if not math.isfinite(p_raw) else f"{write(p_raw)} unadjusted, {adjusted}"


def percent(x: float) -> str:
    """A level or a tolerance in percent, as short as it goes: ``5 %``, ``2.5 %``."""
    return f"{100 * x:g} %"


def group_noun(by: str, plural: bool = False) -> str:
    """``provider(s)``, or ``<category> group(s)``."""
    noun = "provider" if by == "provider" else f"{by} group"
    return f"{noun}s" if plural else noun
