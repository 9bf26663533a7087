"""The stated target shares of ``audit-log --target-shares FILE``: a provider → share file (a contract, a policy, a
population; TREC Fair's targets are such a file), read and checked here without the audit's heavy imports, so that
the option's parser (:class:`~fairrag_core.audit.rag_log.LogAuditConfig`) keeps start-up small. The findings against
it are :func:`~fairrag_core.audit.label_free.stated_target_findings`.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
from pathlib import Path

from ..errors import DataFormatError

__all__ = ["load_target_shares", "target_shares_arg", "TARGET_SUM_TOLERANCE"]

#: How far the stated shares may sum from 1 (rounding in a hand-written file); they are then rescaled to sum to 1.
TARGET_SUM_TOLERANCE = 0.01


def load_target_shares(path: str | os.PathLike) -> dict[str, float]:
    """A provider → share file: CSV with the header ``provider,share`` and one row per provider, or JSON (an object
    ``{"provider": share, …}`` or a list of ``{"provider": …, "share": …}``). Shares are non-negative and sum to 1
    (within :data:`TARGET_SUM_TOLERANCE`, then rescaled); a provider the file does not list is not tested (the
    findings name it).

    Raises:
        DataFormatError: one line naming the file and the fix.
    """
    path = Path(path)
    fix = "write a provider,share CSV (or a JSON object provider → share) whose shares sum to 1"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise DataFormatError(f"cannot read the target shares ({err.__class__.__name__}); {fix}", path=path) from None
    rows: list[tuple[str, object]] = []
    if path.suffix.lower() == ".json" or text.lstrip()[:1] in "{[":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise DataFormatError(f"not JSON ({err.msg}); {fix}", path=path) from None
        if isinstance(data, dict):
            rows = [(str(k), v) for k, v in data.items()]
        elif isinstance(data, list) and all(isinstance(r, dict) and {"provider", "share"} <= r.keys() for r in data):
            rows = [(str(r["provider"]), r["share"]) for r in data]
        else:
            raise DataFormatError(f"JSON target shares must be an object or a list of {{provider, share}}; {fix}",
                                  path=path)
    else:
        lines = [r for r in csv.reader(text.splitlines()) if any(c.strip() for c in r)]
        if not lines or [c.strip().lower() for c in lines[0]] != ["provider", "share"]:
            raise DataFormatError(f"the first row must be the header provider,share; {fix}", path=path)
        for i, cells in enumerate(lines[1:], start=2):
            if len(cells) != 2:
                raise DataFormatError(f"{len(cells)} cell(s) in a row; {fix}", path=path, line=i)
            rows.append((cells[0].strip(), cells[1].strip()))
    shares: dict[str, float] = {}
    for provider, value in rows:
        try:
            share = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            share = math.nan
        if not provider or provider in shares or not math.isfinite(share) or share < 0:
            what = ("an empty provider" if not provider else f"{provider!r} twice" if provider in shares
                    else f"share {value!r} of {provider!r}")
            raise DataFormatError(f"{what}; {fix} (one row per provider, shares between 0 and 1)", path=path)
        shares[provider] = share
    total = sum(shares.values())
    if abs(total - 1.0) > TARGET_SUM_TOLERANCE:
        raise DataFormatError(f"the shares sum to {total:g}; {fix}", path=path)
    return {p: s / total for p, s in shares.items()}


def target_shares_arg(text: str) -> str:
    """``--target-shares FILE``: the file checked now (so a bad file stops the audit before it runs) and kept as an
    absolute path, so that the reproduce command finds it from any directory."""
    try:
        load_target_shares(text)
    except DataFormatError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return os.path.abspath(text)
