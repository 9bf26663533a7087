"""Reading a large data file in blocks: the shared parts of the block readers of runs (:mod:`.columnar`), qrels
(:mod:`.judgments`) and RAG logs (:mod:`.log_columns`).

The bytes come through :func:`~fairrag_core.data.files.read_chunks` (regular files only, the size budget, gzip
inflated) and are cut into blocks of :data:`BLOCK_BYTES` at line ends (:func:`text_blocks`), read and hashed by a
thread one block ahead of the parser (:func:`read_ahead`); Arrow's CSV parser splits a block into columns, the text
ones dictionary-encoded (:func:`parse_block`), so Python meets each *distinct* value once (:class:`Vocabulary`), never
each line. A block the readers cannot vouch for in bulk (a byte-order mark, a carriage return inside a line) raises
:class:`Unchecked`, and the caller reads the file line by line instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..checks import max_line_bytes
from .files import Digest, _too_long, read_chunks

__all__ = ["BLOCK_BYTES", "SPACE", "Vocabulary", "Unchecked", "text_blocks", "read_ahead", "parse_block", "numbers_of",
           "Column", "size_of", "one_delimiter", "padded_rows", "rows_with_repeats"]

#: Bytes of text parsed per Arrow call (cut at a line end).
BLOCK_BYTES = 8 << 20
_ARROW_BLOCK = 4 << 20  # Arrow's own unit of parallel parsing inside a block
_BOM = b"\xef\xbb\xbf"
SPACE = re.compile(r"\s")  # what str.split() splits on: a field holding it is not one field


class Vocabulary:
    """Global codes for the distinct values of one string column, in order of first appearance."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.names: list[str] = []

    def encode(self, values: list[str]) -> np.ndarray | None:
        """Codes of a block's dictionary values; None when one of them is not a single whitespace-free field."""
        codes, known = self.codes, len(self.names)
        out = np.fromiter((codes.setdefault(v, len(codes)) for v in values), dtype=np.int64, count=len(values))
        if len(codes) > known:
            new = list(codes)[known:]
            if SPACE.search("".join(new)) or not all(new):
                return None
            self.names.extend(new)
        return out


class Unchecked(Exception):
    """A block holds something the bulk checks cannot vouch for (a byte-order mark, a stray carriage return)."""


def text_blocks(source: Path | bytes, where: object, digest: Digest | None, *,
                count_lines: bool = False) -> Iterator[memoryview] | Iterator[tuple[memoryview, int]]:
    """The text in blocks of about :data:`BLOCK_BYTES`, each ending at a line end (views, not copies); with
    ``count_lines``, ``(block, its number of lines)`` (counted here, in the reading thread of :func:`read_ahead`).

    A line longer than ``$FAIRRAG_MAX_LINE_MB`` is refused as soon as it is that long, with the line reader's
    message (:func:`~fairrag_core.data.files.read_lines`): a gzip that inflates to one 2 GB line without a line feed
    is refused after the limit's bytes, not held whole. Chunks are joined once, when a line end has arrived after
    a block's worth of bytes, so reading stays linear in the file's size however long its lines."""
    limit = max_line_bytes()
    pending: list[bytes] = []
    size, first = 0, True
    line_bytes = 0      # bytes after the last line feed read: the line that goes on
    ended = False       # pending holds a line feed
    seen = 0            # line feeds read before this chunk

    for chunk in read_chunks(source, where=where, digest=digest):
        start, last = chunk.find(b"\n"), chunk.rfind(b"\n")
        if start < 0:
            line_bytes += len(chunk)
            if line_bytes > limit:
                raise _too_long(limit, where, seen + 1)
        else:
            if line_bytes + start > limit:  # the line that ends here
                raise _too_long(limit, where, seen + 1)
            if last - start - 1 > limit:  # a whole line inside the chunk may be longer (a limit under a chunk)
                for i, line in enumerate(chunk[start + 1:last].split(b"\n")):
                    if len(line) > limit:
                        raise _too_long(limit, where, seen + 2 + i)
            seen += chunk.count(b"\n")
            line_bytes, ended = len(chunk) - last - 1, True
            if line_bytes > limit:
                raise _too_long(limit, where, seen + 1)
        pending.append(chunk)
        size += len(chunk)
        if size >= BLOCK_BYTES and ended:
            data = b"".join(pending)
            cut = data.rfind(b"\n") + 1
            _check(data, cut, first)
            first = False
            yield _block(data, cut, count_lines)
            pending, size, ended = [data[cut:]], len(data) - cut, False
    tail = b"".join(pending)
    if tail:
        tail = tail if tail.endswith(b"\n") else tail + b"\n"
        _check(tail, len(tail), first)
        yield _block(tail, len(tail), count_lines)


def _block(data: bytes, end: int, count_lines: bool) -> memoryview | tuple[memoryview, int]:
    view = memoryview(data)[:end]
    return (view, data.count(b"\n", 0, end)) if count_lines else view


def _check(data: bytes, end: int, first: bool) -> None:
    if first and data.startswith(_BOM):
        raise Unchecked
    if data.find(b"\r", 0, end) >= 0 and data.count(b"\r", 0, end) != data.count(b"\r\n", 0, end):
        raise Unchecked  # a carriage return inside a line: Arrow would end the line there, str.split would not


def parse_block(block: bytes, delimiter: str, names: tuple[str, ...], numbers: tuple[str, ...] = ()):
    """Arrow's parse of one block into the columns ``names``: the ``numbers`` as float64, the others as
    dictionary-encoded text (one dictionary per column for the whole block); None when Arrow refuses a line."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    text = pa.dictionary(pa.int32(), pa.string())
    # the system allocator: jemalloc (Arrow's default) hands each block's pages back and faults them in again, which
    # cost 0.7 s of system time per 10⁷ lines here; malloc keeps reusing them
    try:
        return pacsv.read_csv(
            pa.py_buffer(block),
            read_options=pacsv.ReadOptions(column_names=list(names), use_threads=True, block_size=_ARROW_BLOCK),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.float64() if n in numbers else text for n in names},
                null_values=[], true_values=[], false_values=[], strings_can_be_null=False,
                quoted_strings_can_be_null=False),
            memory_pool=pa.system_memory_pool()).unify_dictionaries()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def numbers_of(array, dtype) -> np.ndarray:
    """An Arrow array of numbers without nulls as a numpy view of its buffer (``to_numpy`` would import pandas,
    a quarter of a second of start-up)."""
    width = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * width)


class Column:
    """A numpy array that grows by whole blocks, written in place (no list of pieces to concatenate at the end)."""

    def __init__(self, dtype, capacity: int) -> None:
        self.data = np.empty(max(capacity, 1024), dtype=dtype)
        self.size = 0

    def reserve(self, more: int) -> np.ndarray:
        if self.size + more > self.data.size:
            grown = np.empty(max(self.size + more, int(self.data.size * 1.5)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.size += more
        return self.data[self.size - more: self.size]

    def values(self) -> np.ndarray:
        return self.data[: self.size]


def read_ahead(blocks: Iterator[memoryview]) -> Iterator[memoryview]:
    """The blocks, read (and hashed) by a thread one block ahead of the parser, so reading overlaps parsing. Closing
    this generator early (the parser gave up) waits for the block being read, then closes the file."""
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="fairrag-run-reader") as reader:
            ahead = reader.submit(next, blocks, None)
            while (block := ahead.result()) is not None:  # an error while reading is raised here, in the parser
                ahead = reader.submit(next, blocks, None)
                yield block
    finally:
        blocks.close()


def size_of(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def one_delimiter(line: str, widths: tuple[int, ...], delimiters: tuple[str, ...] = (" ", "\t")) -> str | None:
    """The one character (of ``delimiters``) that splits a file's first line into ``widths`` fields, each a plain
    field (no other whitespace, not empty); None sends the file to the line-by-line parser."""
    for delimiter in delimiters:
        fields = line.split(delimiter)
        if len(fields) in widths and all(f and f.split() == [f] for f in fields):
            return delimiter
    return None


def padded_rows(values: np.ndarray, lengths: np.ndarray, *, fill: float, dtype) -> np.ndarray:
    """Consecutive runs of ``values`` (``lengths[i]`` each) as the rows of a matrix, ``fill`` after a short row;
    a view of ``values`` when every row is as long as the longest."""
    depth = int(lengths.max(initial=0))
    if np.all(lengths == depth):
        return values.reshape(lengths.size, depth)
    out = np.full((lengths.size, depth), fill, dtype=dtype)
    row = np.repeat(np.arange(lengths.size), lengths)
    out[row, np.arange(values.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)] = values
    return out


def rows_with_repeats(rows: np.ndarray, n_values: int | None = None) -> bool:
    """Whether some row holds a value twice (−1 is padding): counted in one rows × ``n_values`` table when that is
    small, else each row sorted, in slices of 2²⁰ rows (bounded memory)."""
    n = rows.shape[0]
    if n_values is not None and n * n_values <= 8 * rows.size + 100_000:
        cells = rows + (np.arange(n) * n_values)[:, None]
        return bool(np.bincount(cells[rows >= 0], minlength=n * n_values).max(initial=0) > 1)
    for start in range(0, n, 1 << 20):
        ordered = np.sort(rows[start:start + (1 << 20)], axis=1)
        if np.any((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)):
            return True
    return False
