"""The windows of fairness over time (``audit-log --window``, the Monitor page): their sizes and their UTC-aligned
bounds. Apart from :mod:`.monitor` so that the settings (:class:`~fairrag_core.audit.rag_log.LogAuditConfig`)
declare ``--window`` without importing the audit."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

__all__ = ["WINDOWS", "window_arg", "window_bounds"]

#: The window sizes ``--window`` takes, with the word for one look.
WINDOWS = {"1h": (timedelta(hours=1), "hourly"), "1d": (timedelta(days=1), "daily"),
           "7d": (timedelta(days=7), "weekly")}
_MONDAY = datetime(1970, 1, 5, tzinfo=UTC)  # weeks start on Monday 00:00 UTC; hours and days align with it too


def window_arg(text: str) -> str:
    """``--window``: one of :data:`WINDOWS`. Raises :class:`argparse.ArgumentTypeError` (argparse's message)."""
    text = str(text).strip().lower()
    if text not in WINDOWS:
        raise argparse.ArgumentTypeError(f"unknown window {text!r}; give one of {', '.join(WINDOWS)}")
    return text


def window_bounds(first: datetime, last: datetime, size: str) -> list[tuple[datetime, datetime]]:
    """The UTC-aligned windows ``[start, start + size)`` from the one holding ``first`` to the one holding ``last``.

    >>> [(a.isoformat()[:13], b.isoformat()[:13]) for a, b in window_bounds(
    ...     datetime(2026, 11, 27, 10, tzinfo=UTC), datetime(2026, 11, 28, 1, tzinfo=UTC), "1d")]
    [('2026-11-27T00', '2026-11-28T00'), ('2026-11-28T00', '2026-11-29T00')]
    """
    step = WINDOWS[size][0]
    start = _MONDAY + ((first - _MONDAY) // step) * step
    out = []
    while start <= last:
        out.append((start, start + step))
        start += step
    return out
