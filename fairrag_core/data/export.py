"""Tables written for people: CSV files and downloads that a spreadsheet opens without running anything.

A CSV cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets ("CSV injection", OWASP), and our tables carry user text: queries, answers, provider
and group names, doc ids from uploads and logs. :func:`csv_bytes` and :func:`write_table` put an apostrophe before
such a cell (shown as text, not run); numbers written as text (``-0.5``) stay as they are. A carriage return inside
a cell becomes a line feed: pandas leaves a cell with a lone CR unquoted, and a spreadsheet would start a new row
there, whose first cell could then be a formula. Parquet keeps its types
and is not opened by spreadsheets, so it is written unchanged. The CLI's ``--output`` files and the app's CSV
downloads go through here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd


__all__ = ["FORMULA_START", "defuse", "defused", "csv_bytes", "write_table"]

#: First characters that make a spreadsheet cell a formula (OWASP, CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def defuse(value: object) -> object:
    """``value`` with a leading apostrophe when it is text a spreadsheet would run as a formula.

    >>> defuse("=HYPERLINK(1)"), defuse("-0.5"), defuse("plain"), defuse(-3)
    ("'=HYPERLINK(1)", '-0.5', 'plain', -3)
    """
    if isinstance(value, str) and value.startswith(FORMULA_START):
        try:
            float(value)
            return value  # a negative number written as text is data, not a formula
        except ValueError:
            return "'" + value
    return value


def _cell(value: object) -> object:
    value = defuse(value)
    if isinstance(value, str) and "\r" in value:
        value = value.replace("\r\n", "\n").replace("\r", "\n")  # quoted by the CSV writer, one row kept
    return value


def defused(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``table`` with its column names and text cells (categorical ones too) defused; carriage returns
    inside cells become line feeds."""
    import pandas as pd

    safe = table.copy()
    safe.columns = [_cell(str(c)) for c in safe.columns]
    for i in range(safe.shape[1]):
        values = safe.iloc[:, i]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.astype(object)
        if values.dtype == object or pd.api.types.is_string_dtype(values):
            safe.isetitem(i, values.map(_cell))
    return safe


def csv_bytes(table: pd.DataFrame) -> bytes:
    """``table`` as UTF-8 CSV bytes without the index, formulas defused.

    >>> import pandas as pd
    >>> csv_bytes(pd.DataFrame({"q": ["=1+1", "ok"], "x": [-1, 2]})).decode().splitlines()
    ['q,x', "'=1+1,-1", 'ok,2']
    """
    return defused(table).to_csv(index=False).encode("utf-8")


def write_table(table: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``table`` to ``path``: Parquet for ``.parquet``, else CSV with formulas defused. Returns the path."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        table.to_parquet(path, index=False)
    else:
        path.write_bytes(csv_bytes(table))
    return path
