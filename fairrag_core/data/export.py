"""Tables written for people: CSV files and downloads that a spreadsheet opens without running anything.

A CSV cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets ("CSV injection", OWASP), and our tables carry user text: queries, answers, provider
and group names, doc ids from uploads and logs. :func:`csv_bytes` and :func:`write_table` put an apostrophe before
such a cell (shown as text, not run); numbers written as text (``-0.5``) stay as they are. A carriage return inside
a cell becomes a line feed: pandas leaves a cell with a lone CR unquoted, and a spreadsheet would start a new row
there, whose first cell could then be a formula. Parquet keeps its types
and is not opened by spreadsheets, so it is written unchanged. The CLI's ``--output`` files and the app's CSV
downloads go through here.

A table written for a run carries the run's header (:meth:`fairrag_core.record.RunRecord.header`: package, version,
commit, the reproduce command, inputs with sha256, seed and settings). In a CSV it comes first, one ``# key: value``
line per field (a value is JSON unless it is plain text), then the table: ``pandas.read_csv(path, comment="#")``
and R's ``read.csv(path, comment.char = "#")`` read the table, :func:`read_header` the header. When a header is
written, text cells are quoted if any of them holds ``#`` (a quoted ``#`` is data to both readers). In Parquet the
header is the table's ``attrs["fairrag"]`` (``pandas.read_parquet(path).attrs``).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd


__all__ = ["FORMULA_START", "HEADER_KEY", "defuse", "defused", "csv_bytes", "write_table", "header_lines",
           "read_header"]

#: Where a Parquet file keeps the run's header (``DataFrame.attrs``), and the JSON outputs' key for it.
HEADER_KEY = "fairrag"

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


def _header_value(value: Any) -> str:
    """A header value on one line: plain text as it is, anything else (or text that JSON would read as something
    else, or text on several lines) as JSON."""
    if isinstance(value, str) and "\n" not in value and value == value.strip():
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False, default=str)


def header_lines(header: dict[str, Any]) -> str:
    """``header`` as a CSV's leading comment lines, ``# key: value`` each.

    >>> print(header_lines({"version": "0.1.0", "seed": 7, "settings": {"k": 5}}), end="")
    # version: 0.1.0
    # seed: 7
    # settings: {"k": 5}
    """
    return "".join(f"# {key}: {_header_value(value)}\n" for key, value in header.items())


def read_header(path: str | os.PathLike) -> dict[str, Any]:
    """The header of a CSV written by :func:`write_table` (its leading ``# key: value`` lines; empty when it has
    none), or of a Parquet file (its ``attrs["fairrag"]``)."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        import pandas as pd

        return dict(pd.read_parquet(path).attrs.get(HEADER_KEY, {}))
    header: dict[str, Any] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.startswith("# "):
                break
            key, _, text = line[2:].rstrip("\n").partition(": ")
            try:
                header[key] = json.loads(text)
            except ValueError:
                header[key] = text
    return header


def csv_bytes(table: pd.DataFrame, *, header: dict[str, Any] | None = None) -> bytes:
    """``table`` as UTF-8 CSV bytes without the index, formulas defused; with ``header``, its ``# key: value``
    lines first (module docstring).

    >>> import pandas as pd
    >>> csv_bytes(pd.DataFrame({"q": ["=1+1", "ok"], "x": [-1, 2]})).decode().splitlines()
    ['q,x', "'=1+1,-1", 'ok,2']
    """
    import pandas as pd

    safe = defused(table)
    if not header:
        return safe.to_csv(index=False).encode("utf-8")
    texts = [str(c) for c in safe.columns] + [
        v for i in range(safe.shape[1]) if not pd.api.types.is_numeric_dtype(safe.iloc[:, i])
        for v in safe.iloc[:, i] if isinstance(v, str)]
    quoting = csv.QUOTE_NONNUMERIC if any("#" in text for text in texts) else csv.QUOTE_MINIMAL
    return (header_lines(header) + safe.to_csv(index=False, quoting=quoting)).encode("utf-8")


def write_table(table: pd.DataFrame, path: str | os.PathLike, *, header: dict[str, Any] | None = None) -> Path:
    """Write ``table`` to ``path``: Parquet for ``.parquet``, else CSV with formulas defused; with ``header`` (a
    run's :meth:`~fairrag_core.record.RunRecord.header`), the header too (module docstring). Returns the path."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        if header:
            table = table.copy()
            table.attrs[HEADER_KEY] = header
        table.to_parquet(path, index=False)
    else:
        path.write_bytes(csv_bytes(table, header=header))
    return path
