"""Reading data files safely: one streaming reader of lines that never hangs and never holds a whole file.

Every loader (:mod:`.loaders`, :mod:`.served`, :mod:`.judgments`, :mod:`.rag_log`) reads through :func:`read_lines`,
so a missing, unreadable, oversized or mis-encoded file gets one :class:`~fairrag_core.errors.DataFormatError`
wording wherever it is met. The reader

* opens only a regular file: a FIFO, a device (``/dev/zero``, also through a symlink), a socket or a folder is
  refused from ``os.stat`` before it is opened, and again from ``os.fstat`` after (it is opened with
  ``O_NONBLOCK``, so a FIFO swapped in between cannot block);
* reads chunks of :data:`CHUNK_BYTES` and counts the bytes as they arrive against ``$FAIRRAG_MAX_FILE_MB``
  (``st_size`` only lets a file that says it is too large be refused before the first read; it is never trusted);
* inflates gzip (magic bytes ``1f 8b``, RFC 1952) as a stream, member after member, and counts the inflated bytes
  against the same limit, so a small "gzip bomb" stops at the limit instead of filling the memory;
* splits lines on ``\\n`` only (a ``\\r`` before it is dropped: CRLF files). U+2028, U+2029 and U+0085 are not line
  breaks: RFC 8259 lets them stand unescaped inside a JSON string, and ``json.dumps(..., ensure_ascii=False)``
  writes them so;
* decodes each line as UTF-8 (a byte-order mark only at the very start), naming the line and the byte offset of a
  bad byte;
* refuses a line longer than ``$FAIRRAG_MAX_LINE_MB`` (default 64 MB) as soon as it is that long;
* skips blank lines (only ASCII whitespace) and, when asked, ``#`` comment lines: a gap in the line numbers shows
  where they were. They cost no Python step (a regular expression finds the other lines of a chunk, and a chunk
  of whitespace only is just counted), so a file of a billion newlines, spaces or comments is read in seconds.

Memory stays O(chunk + longest line). :func:`check_upload` applies ``$FAIRRAG_MAX_UPLOAD_MB`` to an upload's bytes,
and to its inflated bytes when it is gzipped. The limits come from :mod:`fairrag_core.checks`.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..checks import max_file_bytes, max_line_bytes, max_upload_bytes
from ..errors import DataFormatError

__all__ = ["read_lines", "read_chunks", "check_upload", "file_sha256", "Digest", "CHUNK_BYTES", "GZIP_MAGIC"]

#: Bytes read (and inflated) per step.
CHUNK_BYTES = 1 << 20
#: The first two bytes of a gzip member (RFC 1952 §2.3.1).
GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer around a deflate stream
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_DATA_FILE_FIX = "give the path of a data file (.jsonl, .csv, .txt, .gz)"
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class Digest(Protocol):
    """What :func:`read_lines` feeds the raw bytes to (``hashlib.sha256()`` and friends)."""

    def update(self, data: bytes, /) -> None: ...


@dataclass(frozen=True)
class _Budget:
    """A byte limit and the words of its refusal."""

    limit: int
    what: str   # "the file"
    holds: str  # "a loader reads into memory"
    fix: str    # "split it, or raise the limit with FAIRRAG_MAX_FILE_MB"

    def refuse(self, where: object, size: int | None = None) -> DataFormatError:
        mb = f"{self.limit / 1e6:,.0f} MB"
        amount = f"{size / 1e6:,.0f} MB, more than the {mb}" if size is not None else f"more than the {mb}"
        return DataFormatError(f"{self.what} is {amount} {self.holds}; {self.fix}", path=where)

    def refuse_inflated(self, where: object) -> DataFormatError:
        return DataFormatError(f"{self.what} decompresses to more than {self.limit / 1e6:,.0f} MB, more than "
                               f"{self.holds}; {self.fix}", path=where)


def _file_budget() -> _Budget:
    return _Budget(max_file_bytes(), "the file", "a loader reads into memory",
                   "split it, or raise the limit with FAIRRAG_MAX_FILE_MB")


def read_lines(source: os.PathLike | bytes, *, where: object = None, digest: Digest | None = None,
               comments: bool = False) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a data file (a path) or of an upload's bytes, as ``(line_number, text)``.

    Line numbers count every ``\\n``-separated line from 1, blank ones included; the text has no line end. A line
    is blank when it holds only ASCII whitespace (space, tab, CR, VT, FF: JSON's own whitespace and the separators
    of TSV), so a line of U+00A0 or U+3000 reaches the loader, which refuses it as a malformed record. With
    ``comments``, lines whose first non-blank character is ``#`` are skipped too (TREC qrels, aspect qrels). A
    gzipped source is inflated. ``where`` names the source in errors (default: the path, or ``<data>``);
    ``digest`` receives the raw bytes as they are read (e.g. ``hashlib.sha256()``, so a caller can record which
    file it loaded without reading it twice). Nothing is read until the iterator is.

    Raises:
        DataFormatError: a missing or unreadable file, one that is not a regular file, a file or its inflated
            content above ``$FAIRRAG_MAX_FILE_MB``, broken gzip, a line above ``$FAIRRAG_MAX_LINE_MB``, bytes that
            are not UTF-8; each names the file (and the line) and the fix.

    >>> list(read_lines("a\\r\\n\\n  \\nb \\u2028 c".encode()))
    [(1, 'a'), (4, 'b \\u2028 c')]
    """
    if not isinstance(source, bytes | bytearray | memoryview | os.PathLike):
        raise TypeError(f"read_lines reads a path (os.PathLike) or bytes, got {type(source).__name__}")
    where = _where(source, where)
    return _lines(read_chunks(source, where=where, digest=digest), where, max_line_bytes(), comments)


def read_chunks(source: os.PathLike | bytes, *, where: object = None, digest: Digest | None = None) -> Iterator[bytes]:
    """The bytes of a data file or an upload in chunks, gzip inflated, under the same checks and budget as
    :func:`read_lines` (regular files only, ``$FAIRRAG_MAX_FILE_MB``), for readers that parse whole blocks at once
    (:mod:`fairrag_core.data.columnar`). ``digest`` receives the raw (not inflated) bytes."""
    budget, where = _file_budget(), _where(source, where)
    return _inflate(_raw_chunks(source, where, budget, digest), where, budget)


def _where(source: os.PathLike | bytes, where: object) -> object:
    """What to call the source in errors: ``where``, else ``<data>`` (bytes) or the path."""
    if where is not None:
        return where
    return "<data>" if isinstance(source, bytes | bytearray | memoryview) else Path(source)


def file_sha256(path: os.PathLike) -> str:
    """The sha256 of a data file's bytes, read as :func:`read_lines` reads it (a regular file, within the budget):
    what records and reports name an input by (a collection's files, a qrels file).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(delete=False) as f:
    ...     _ = f.write(b"abc")
    >>> file_sha256(Path(f.name))[:12]
    'ba7816bf8f01'
    >>> os.remove(f.name)
    """
    digest = hashlib.sha256()
    for _ in _file_chunks(Path(path), Path(path), _file_budget(), digest):
        pass
    return digest.hexdigest()


def check_upload(name: str, data: bytes) -> None:
    """Refuse an uploaded file above ``$FAIRRAG_MAX_UPLOAD_MB`` (default 50 MB) before it is written or parsed; a
    gzipped upload is inflated as a stream (nothing kept) and refused once its content passes the same limit."""
    budget = _Budget(max_upload_bytes(), "the upload", "the app accepts",
                     "load a larger collection from its folder with the CLI (--collection PATH), or raise the limit "
                     "with FAIRRAG_MAX_UPLOAD_MB")
    for _ in _inflate(_raw_chunks(data, name, budget, None), name, budget):
        pass


# -- raw bytes ------------------------------------------------------------------------------------------------
def _check_regular(mode: int, where: object) -> None:
    if not stat.S_ISREG(mode):
        kind = next((kind for test, kind in _KINDS if test(mode)), "not a regular file")
        raise DataFormatError(f"is {kind}, not a regular file; {_DATA_FILE_FIX}", path=where)


def _unreadable(err: OSError, where: object) -> DataFormatError:
    if isinstance(err, FileNotFoundError | NotADirectoryError):
        return DataFormatError("file not found; check the path", path=where)
    return DataFormatError(f"cannot be read ({err.strerror or err}); check its permissions", path=where)


def _file_chunks(path: Path, where: object, budget: _Budget, digest: Digest | None) -> Iterator[bytes]:
    try:
        info = os.stat(path)  # follows symlinks: a link to /dev/zero is a character device
    except (OSError, ValueError) as err:  # ValueError: a NUL in the path
        raise _unreadable(err if isinstance(err, OSError) else FileNotFoundError(), where) from None
    _check_regular(info.st_mode, where)
    if info.st_size > budget.limit:
        raise budget.refuse(where, info.st_size)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        raise _unreadable(err, where) from None
    try:
        _check_regular(os.fstat(fd).st_mode, where)  # the path may have been swapped since the stat
        total = 0
        while True:
            try:
                chunk = os.read(fd, CHUNK_BYTES)
            except OSError as err:
                raise _unreadable(err, where) from None
            if not chunk:
                return
            total += len(chunk)
            if total > budget.limit:  # the file grew, or st_size did not tell the truth
                raise budget.refuse(where)
            if digest is not None:
                digest.update(chunk)
            yield chunk
    finally:
        os.close(fd)


def _raw_chunks(source: os.PathLike | bytes, where: object, budget: _Budget, digest: Digest | None
                ) -> Iterator[bytes]:
    """The raw bytes of a file (:func:`_file_chunks`) or of bytes in memory, in chunks of at most
    :data:`CHUNK_BYTES`."""
    if not isinstance(source, bytes | bytearray | memoryview):
        yield from _file_chunks(Path(source), where, budget, digest)
        return
    data = bytes(source)
    if len(data) > budget.limit:
        raise budget.refuse(where, len(data))
    if digest is not None:
        digest.update(data)
    for start in range(0, len(data), CHUNK_BYTES):
        yield data[start:start + CHUNK_BYTES]


# -- gzip -----------------------------------------------------------------------------------------------------
def _inflate(chunks: Iterable[bytes], where: object, budget: _Budget) -> Iterator[bytes]:
    """The chunks as they are, or inflated when they start with the gzip magic bytes (several members too; zero
    padding between or after members is skipped, as :mod:`gzip` does), at most ``budget.limit`` bytes of output."""
    chunks = iter(chunks)
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= 2:
            break
    if head[:2] != GZIP_MAGIC:
        if head:
            yield head
        yield from chunks
        return
    inflater, in_member, total = zlib.decompressobj(_GZIP_WBITS), True, 0
    for data in itertools.chain((head,), chunks):
        while True:
            if not in_member:
                data = data.lstrip(b"\0")
                if not data:
                    break
                inflater, in_member = zlib.decompressobj(_GZIP_WBITS), True
            try:
                out = inflater.decompress(data, CHUNK_BYTES)
            except zlib.error:
                raise DataFormatError("looks gzipped but cannot be decompressed (the data is corrupt); re-compress it "
                                      "or save it as plain text", path=where) from None
            if out:
                total += len(out)
                if total > budget.limit:
                    raise budget.refuse_inflated(where)
                yield out
            if inflater.eof:
                data, in_member = inflater.unused_data, False
                continue
            data = inflater.unconsumed_tail
            if not data and len(out) < CHUNK_BYTES:  # a full output may leave more inside zlib: ask again
                break
    if in_member:
        raise DataFormatError("looks gzipped but cannot be decompressed (the data ends in the middle of the stream); "
                              "re-compress it or save it as plain text", path=where)


# -- lines ----------------------------------------------------------------------------------------------------
def _too_long(limit: int, where: object, line: int) -> DataFormatError:
    size = f"{limit / 1e6:,.0f}" if limit >= 1_000_000 else f"{limit / 1e6:.2g}"
    return DataFormatError(f"the line is longer than the {size} MB a loader holds as one line; put one "
                           "record per line (a file without line breaks is not JSONL or TSV), or raise the limit "
                           "with FAIRRAG_MAX_LINE_MB", path=where, line=line)


def _decode(line: bytes, start: int, where: object, lineno: int) -> str:
    """The text of a record line (its bytes start at stream offset ``start``), without a ``\r`` at its end."""
    try:
        return line.removesuffix(b"\r").decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFormatError(f"not valid UTF-8 (byte 0x{line[err.start]:02x} at offset {start + err.start}); "
                              "re-save the file as UTF-8", path=where, line=lineno) from None


_RECORD = re.compile(rb"(?m)^[ \t\r\x0b\x0c]*[^ \t\r\n\x0b\x0c][^\n]*")   # a line that is not blank
_RECORD_NOT_COMMENT = re.compile(rb"(?m)^[ \t\r\x0b\x0c]*[^ \t\r\n\x0b\x0c#][^\n]*")
_SKIPPED = re.compile(rb"(?m)^[ \t\r\x0b\x0c]*$")                    # a blank line
_SKIPPED_OR_COMMENT = re.compile(rb"(?m)^[ \t\r\x0b\x0c]*(?:#|$)")


def _lines(chunks: Iterable[bytes], where: object, limit: int, comments: bool = False
           ) -> Iterator[tuple[int, str]]:
    """The lines of a stream of chunks that are neither blank nor (with ``comments``) comments, numbered, decoded.

    The complete lines of a chunk (with the start of its first line, carried over from the chunks before) are
    decoded and split at once when one regular-expression search finds none of them blank or a comment. Otherwise
    the records are found by a regular expression, so blank and comment lines between them cost no Python step (a
    file of millions of them is read at the speed of ``re``); a chunk of whitespace only is not even searched. The
    patterns are linear: anchored at line starts, each fails on a line after one pass over its leading whitespace.
    """
    record, skipped = (_RECORD_NOT_COMMENT, _SKIPPED_OR_COMMENT) if comments else (_RECORD, _SKIPPED)
    lineno = 0          # lines finished so far
    offset = 0          # byte offset in the stream of the first line not finished
    parts: list[bytes] = []
    pending = 0         # bytes in parts: the start of a line that goes on in the next chunk
    for chunk in itertools.chain(chunks, (b"\n",)):  # a line feed to end a last line that has none
        first = chunk.find(b"\n")
        if first < 0:  # the line goes on
            parts.append(chunk)
            pending += len(chunk)
            if pending > limit:
                raise _too_long(limit, where, lineno + 1)
            continue
        if pending + first > limit:
            raise _too_long(limit, where, lineno + 1)
        if parts:
            chunk = b"".join([*parts, chunk])
        if lineno == 0 and chunk.startswith(_BOM):  # a byte-order mark, only at the very start
            chunk, offset = chunk[3:], 3
        last = chunk.rfind(b"\n")
        whole = None  # the lines up to the last line feed, when all of them are records
        if last <= limit and not skipped.search(chunk, 0, last):
            with contextlib.suppress(UnicodeDecodeError):  # a bad byte is found again below, with its line
                whole = chunk[:last].decode("utf-8").split("\n")
        if whole is not None:  # the usual case: one decode and one split for the chunk
            if b"\r" in chunk:
                whole = [text.removesuffix("\r") for text in whole]
            yield from zip(range(lineno + 1, lineno + 1 + len(whole)), whole)
            lineno += len(whole)
        elif not chunk.isspace():
            at = 0  # the start of the first line not yet counted
            for match in record.finditer(chunk, 0, last):
                begin, end = match.span()
                lineno += chunk.count(b"\n", at, begin) + 1
                if end - begin > limit:
                    raise _too_long(limit, where, lineno)
                yield lineno, _decode(match.group(), offset + begin, where, lineno)
                at = end + 1
            lineno += chunk.count(b"\n", at, last + 1)
        else:
            lineno += chunk.count(b"\n")
        offset += last + 1
        tail = chunk[last + 1:]
        parts, pending = ([tail], len(tail)) if tail else ([], 0)
        if pending > limit:
            raise _too_long(limit, where, lineno + 1)
