"""Values a data file's fields may not hold although Python would read them: the checks every loader shares.

* Whole numbers (grades, ranks, indices) are written in the ASCII digits 0-9, with a leading ``-`` at most:
  ``int()`` also reads ``1_0`` (as 10), ``+3``, `` 3 `` and the digits of other scripts (``٣`` as 3), which no
  evaluation tool writes and which would make one file mean different things to different tools.
* JSON strings hold text: ``json.loads`` turns a lone surrogate escape (``"q\\ud800"``) into a string that cannot
  be encoded as UTF-8, which fails much later (pyarrow, a CSV export). A loader refuses it where it is read, with
  the field. Only a line whose JSON has a ``\\uD800``-``\\uDFFF`` escape is inspected, so valid files pay one regex
  search per line.
"""

from __future__ import annotations

import re

__all__ = ["ascii_int", "lone_surrogate_field", "SURROGATE_FIX"]

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")

#: What a message about a lone surrogate tells the user to do.
SURROGATE_FIX = ("a lone surrogate escape (\\ud800-\\udfff without its pair) is not text; fix the program that wrote "
                 "the file to write valid UTF-8, or remove the escape")


def ascii_int(text: str) -> int | None:
    """``text`` as an int when it is 1-18 ASCII digits (always an int64) with an optional leading ``-``; None
    otherwise.

    >>> ascii_int("12"), ascii_int("-1"), ascii_int("1_0"), ascii_int("+1"), ascii_int("٣"), ascii_int(" 3")
    (12, -1, None, None, None, None)
    """
    digits = text[1:] if text[:1] == "-" else text
    return int(text) if digits.isdigit() and digits.isascii() and len(digits) <= 18 else None


def lone_surrogate_field(raw: str, obj: object) -> str | None:
    """Where the parsed JSON ``obj`` of the line ``raw`` holds a lone surrogate (``"query_id"``,
    ``"ranking"[2]``, ``"metadata"."k"``, ``a key of "metadata"``), or None when it holds none.

    >>> import json
    >>> line = '{"query_id": "q\\\\ud800", "ranking": ["d1"]}'
    >>> lone_surrogate_field(line, json.loads(line))
    '"query_id"'
    >>> line = '{"text": "\\\\ud83d\\\\ude00 is fine"}'
    >>> lone_surrogate_field(line, json.loads(line)) is None
    True
    """
    if not _SURROGATE_ESCAPE.search(raw):
        return None
    stack: list[tuple[str, object]] = [("", obj)]
    while stack:  # a loop, not recursion: the nesting may be as deep as json.loads allows
        where, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return where or "the line"
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                name = f'"{key}"' if not _SURROGATE.search(key) else None
                if name is None:
                    return f"a key of {where}" if where else "a field name"
                stack.append((f"{where}.{name}" if where else name, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))
    return None
