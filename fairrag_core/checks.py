"""Argument checks and text parsers shared by the whole package: one wording for one mistake.

Every public function validates its arguments through these helpers, so a mistake reads the same wherever it
is made and always names the fix. They raise :class:`~fairrag_core.errors.InvalidParameterError`.

The shared size limits live here too: a query, the number of sampled rankings N and of bootstrap resamples, a file
or an upload, and the one memory budget (:func:`max_memory_bytes`, ``$FAIRRAG_MAX_MEMORY_MB``) that every step which
allocates in proportion to its inputs consults with the bytes it will really allocate (:func:`check_memory`; a step
that can work in pieces asks :func:`rows_in_budget` how many rows to hold at once, and so is bounded, not refused).
Each refusal says which knob to turn (``FAIRRAG_MAX_FILE_MB`` and ``FAIRRAG_MAX_UPLOAD_MB`` raise the file and upload
limits, ``FAIRRAG_MAX_LINE_MB`` the longest line of a data file, ``FAIRRAG_MAX_LOG_LINES`` the lines of a RAG log held
in memory, ``FAIRRAG_MAX_MEMORY_MB`` the memory budget of one step) or which input to make smaller.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

from .errors import InvalidParameterError

__all__ = [
    "check_k", "check_binary", "check_alpha", "check_positive_int", "check_non_negative", "check_open_unit",
    "parse_alpha", "parse_alphas", "parse_list", "check_at_most", "check_work", "check_memory", "rows_in_budget",
    "check_bytes", "max_file_bytes", "max_upload_bytes", "max_line_bytes", "max_log_lines", "max_memory_bytes",
    "max_work_cells",
    "MAX_QUERY_CHARS", "MAX_SAMPLES", "MAX_RESAMPLES", "DEFAULT_MEMORY_MB", "MAX_WORK_CELLS", "MAX_ALPHAS", "MAX_GRADE",
    "MAX_UPLOAD_REQUESTS",
]

#: Longest query (characters) a retriever accepts.
MAX_QUERY_CHARS = 2_000
#: Most sampled rankings N in one call (the paper uses 100; EE-D's interval at N = 10,000 is already ±0.01).
MAX_SAMPLES = 1_000_000
#: Most bootstrap resamples or random permutations (1,000 / 10,000 are the usual numbers).
MAX_RESAMPLES = 1_000_000
#: Default of :func:`max_memory_bytes`, the bytes one step may allocate: 400 MB, a fixed figure (not a measure of
#: this machine) that leaves room for several such steps, the app's other users and the interpreter on a laptop.
DEFAULT_MEMORY_MB = 400
#: Requests (traces) a trace-export upload may hold in the app, counted once it is cut to what the audit reads
#: (document texts and prompts dropped as it streams in: ``fairrag_studio.services.uploads.slim_trace_upload``), so
#: the limit a user meets is requests, not bytes of document text; the memory budget (:func:`check_memory`) is
#: consulted for the requests kept as well. 20,000 requests are 100 times issue 29's deployment; more is work for the
#: command line (``audit-log``, or ``collect`` for a deployment's exporter).
MAX_UPLOAD_REQUESTS = 20_000
#: Cells of one float64 work array at the default budget (e.g. N × candidates random keys, samples × depth of a served
#: run): 400 MB / 8 bytes = 50 M.
MAX_WORK_CELLS = DEFAULT_MEMORY_MB * 1_000_000 // 8
#: Most α values in one grid (the paper's sweeps use 5–6; each α is a full pass over the queries).
MAX_ALPHAS = 100
#: Largest |relevance grade| a qrels file may hold. TREC grades are small (0–4; -1/-2 for unjudged or junk); a bound
#: keeps a typo such as ``99999999999999999999`` from overflowing the int64 arrays the metrics work on.
MAX_GRADE = 1_000_000

_ALPHA_HINT = "0 = uniform, larger = closer to deterministic"


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


def check_alpha(alpha: object) -> float:
    """The fairness knob α as a float ≥ 0; ``inf`` is the deterministic limit (Kim & Diaz 2025, Eq. 2).

    >>> check_alpha(2), check_alpha(float("inf"))
    (2.0, inf)
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise InvalidParameterError(f"alpha must be a real number ≥ 0, got {alpha!r}")
    value = float(alpha)
    if math.isnan(value):
        raise InvalidParameterError(f"alpha is NaN; use a number ≥ 0 ({_ALPHA_HINT})")
    if value < 0:
        raise InvalidParameterError(f"alpha={value} is negative; use alpha ≥ 0 ({_ALPHA_HINT})")
    return value


def check_positive_int(value: object, name: str, *, hint: str = "") -> int:
    """``value`` as an int ≥ 1; ``hint`` says what the number counts.

    >>> check_positive_int(3, "n_samples")
    3
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidParameterError(f"{name} must be a positive integer{f' ({hint})' if hint else ''}, got {value!r}")
    if value < 1:
        raise InvalidParameterError(f"{name}={value}; {name} must be a positive integer{f' ({hint})' if hint else ''}")
    return int(value)


def check_non_negative(value: object, name: str, *, hint: str = "") -> float:
    """``value`` as a finite float ≥ 0.

    >>> check_non_negative(0.05, "tolerance")
    0.05
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value >= 0):
        raise InvalidParameterError(f"{name} must be a finite number ≥ 0{f' ({hint})' if hint else ''}, "
                                    f"got {value!r}")
    return float(value)


def check_open_unit(value: object, name: str, *, hint: str = "") -> float:
    """``value`` as a float strictly between 0 and 1 (a probability, a level, a share).

    >>> check_open_unit(0.95, "level")
    0.95
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0.0 < value < 1.0):
        raise InvalidParameterError(f"{name} must be strictly between 0 and 1{f' ({hint})' if hint else ''}, "
                                    f"got {value!r}")
    return float(value)


# -- text from users (the CLI and the app parse the same way) -------------------------------------------------
_INF_WORDS = {"inf", "infinity", "∞", "deterministic"}


def parse_alpha(text: str) -> float:
    """One α typed by a user: a number ≥ 0, or ``inf`` (also ``∞`` or ``deterministic``) for the deterministic
    ranker.

    >>> parse_alpha(" 2.5 "), parse_alpha("inf")
    (2.5, inf)
    """
    word = str(text).strip().lower()
    if word in _INF_WORDS:
        return math.inf
    try:
        value = float(word)
    except ValueError:
        raise InvalidParameterError(f"α must be a number ≥ 0 (or 'inf' for the deterministic ranker), "
                                    f"got {text!r}") from None
    if math.isnan(value) or value < 0:
        raise InvalidParameterError(f"α must be a number ≥ 0 (or 'inf' for the deterministic ranker), got {text!r}")
    return value


def parse_alphas(text: str) -> tuple[float, ...]:
    """A comma-separated α grid (``;`` also separates), in the order given, repeats dropped.

    >>> parse_alphas("0, 1,2;8, inf, 2")
    (0.0, 1.0, 2.0, 8.0, inf)
    """
    parts = parse_list(str(text).replace(";", ","))
    if not parts:
        raise InvalidParameterError("give at least one α value, separated by commas, e.g. 0,1,2,4,8")
    if len(set(parts)) > MAX_ALPHAS:
        raise InvalidParameterError(f"{len(set(parts)):,} α values is more than the {MAX_ALPHAS} one grid takes; "
                                    "give fewer (the paper uses 0,1,2,4,8), or split the grid over several sweeps")
    return tuple(dict.fromkeys(parse_alpha(p) for p in parts))


def parse_list(text: str | None) -> tuple[str, ...]:
    """A comma-separated list of ids or names, stripped, empty items dropped (``None`` → empty).

    >>> parse_list(" q1, q2,,q3 ")
    ('q1', 'q2', 'q3')
    """
    if text is None:
        return ()
    return tuple(p.strip() for p in str(text).split(",") if p.strip())


# -- size limits ------------------------------------------------------------------------------------------------
def check_at_most(value: object, name: str, limit: int, *, fix: str, hint: str = "") -> int:
    """``value`` as a positive int no larger than ``limit``; ``fix`` ends the message when it is.

    >>> check_at_most(100, "n_samples", 1000, fix="lower N")
    100
    """
    value = check_positive_int(value, name, hint=hint)
    if value > limit:
        raise InvalidParameterError(f"{name}={value:,} is more than the {limit:,} one call takes; {fix}")
    return value


def check_work(cells: int, what: str, *, fix: str, limit: int | None = None) -> None:
    """Refuse a float64 work array of ``cells`` cells (``what`` says which product, ``fix`` which knob) that passes
    the memory budget (:func:`check_memory`: 8 bytes a cell), or ``limit`` cells when one is given.

    >>> check_work(100 * 50, "N × candidates", fix="lower N")
    """
    if limit is None:
        check_memory(8 * cells, f"{what} = {cells:,} cells", fix=fix)  # cells ≤ max_work_cells()
    elif cells > limit:
        raise InvalidParameterError(f"{what} = {cells:,} cells is more than the {limit:,} one step may hold; {fix}")


def _env_megabytes(name: str, default_mb: int) -> int:
    text = os.environ.get(name, "").strip()
    try:
        return int(float(text) * 1_000_000) if text else default_mb * 1_000_000
    except ValueError:
        raise InvalidParameterError(f"${name}={text!r} is not a number of megabytes; e.g. {name}={default_mb}"
                                    ) from None


def max_file_bytes() -> int:
    """Largest data file a loader reads (``$FAIRRAG_MAX_FILE_MB``, default 1,000 MB)."""
    return _env_megabytes("FAIRRAG_MAX_FILE_MB", 1_000)


def max_upload_bytes() -> int:
    """Largest file the app accepts as an upload (``$FAIRRAG_MAX_UPLOAD_MB``, default 50 MB), counted after
    decompression for a gzipped upload."""
    return _env_megabytes("FAIRRAG_MAX_UPLOAD_MB", 50)


def max_line_bytes() -> int:
    """Longest line of a data file (``$FAIRRAG_MAX_LINE_MB``, default 64 MB): a loader holds one line at a time,
    so a file without line breaks is refused once its first line is this long instead of being held whole."""
    return _env_megabytes("FAIRRAG_MAX_LINE_MB", 64)


#: Default of :func:`max_log_lines`.
DEFAULT_MAX_LOG_LINES = 2_000_000


def max_log_lines() -> int:
    """Most lines of a RAG log one load holds in memory (``$FAIRRAG_MAX_LOG_LINES``, default 2,000,000).

    Each line becomes a Python object (:class:`~fairrag_core.data.LogEntry`: 145-215 bytes when its values repeat
    earlier lines, as in a gzip bomb of one line, measured in ``tests/data/test_rag_log.py``), so 2 M lines stay
    under half a gigabyte (the 900 MB bomb peaks under 0.5 GB). A later columnar log will lift this bound.
    """
    text = os.environ.get("FAIRRAG_MAX_LOG_LINES", "").strip()
    if not text:
        return DEFAULT_MAX_LOG_LINES
    if not (text.isascii() and text.isdigit()) or len(text) > 12 or int(text) < 1:
        raise InvalidParameterError(f"$FAIRRAG_MAX_LOG_LINES={text!r} is not a positive whole number of lines; "
                                    f"e.g. FAIRRAG_MAX_LOG_LINES={DEFAULT_MAX_LOG_LINES}")
    return int(text)


def max_memory_bytes() -> int:
    """Bytes one step may allocate (``$FAIRRAG_MAX_MEMORY_MB``, default :data:`DEFAULT_MEMORY_MB` = 400 MB).

    One budget for every path whose memory grows with its inputs (the sampler's N × candidates, the findings'
    resamples × providers, the what-if's resamples × N, a comparison's permutations × groups): each states the bytes
    it will allocate and is refused, with the input to make smaller, before it allocates them. A step that can work
    in pieces (the bootstrap-t test, the permutation test) holds :func:`rows_in_budget` rows at a time instead.
    """
    return _env_megabytes("FAIRRAG_MAX_MEMORY_MB", DEFAULT_MEMORY_MB)


def max_work_cells() -> int:
    """Cells of one 8-byte work array (float64 values, int64 positions) within :func:`max_memory_bytes`: 50 M at
    the default budget (:data:`MAX_WORK_CELLS`)."""
    return max_memory_bytes() // 8


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.0f}" if size >= 1_000_000 else f"{size / 1e6:.2g}"


def check_memory(size: int, what: str, *, fix: str) -> None:
    """Refuse a step that would allocate ``size`` bytes, more than :func:`max_memory_bytes`; ``what`` names the
    arrays, ``fix`` the input that makes them smaller.

    >>> check_memory(8 * 1000 * 100, "1,000 resamples × 100 groups", fix="lower n_boot")
    """
    limit = max_memory_bytes()
    if size > limit:
        raise InvalidParameterError(f"{what} needs {_megabytes(size)} MB, more than the {_megabytes(limit)} MB one "
                                    f"step may allocate; {fix} (or raise the budget with FAIRRAG_MAX_MEMORY_MB)")


def rows_in_budget(row_bytes: int, what: str, *, fix: str) -> int:
    """How many rows of ``row_bytes`` bytes a step that works in pieces may hold at once within
    :func:`max_memory_bytes` (at least one; a single row over the budget is refused as :func:`check_memory` does).

    >>> rows_in_budget(8 * 4_196, "one resample × 4,196 tests", fix="test fewer groups") > 1_000
    True
    """
    check_memory(row_bytes, what, fix=fix)
    return max(1, max_memory_bytes() // max(1, row_bytes))


def check_bytes(size: int, limit: int, what: str, *, fix: str) -> None:
    """Refuse ``size`` bytes above ``limit`` with a message in megabytes.

    >>> check_bytes(10, 100, "the corpus", fix="split it")
    """
    if size > limit:
        raise InvalidParameterError(f"{what} is {size / 1e6:,.1f} MB, more than the {limit / 1e6:,.0f} MB limit; {fix}")
