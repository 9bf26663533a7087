"""Reading data files safely: a size limit before anything is read, UTF-8 with the offending line, and uploads
refused above their own limit before they are written.

Every loader (:mod:`.loaders`, :mod:`.served`, :mod:`.judgments`, :mod:`.rag_log`) reads through here, so a missing,
unreadable, oversized or mis-encoded file gets one :class:`~fairrag_core.errors.DataFormatError` wording wherever it
is met. The limits come from :mod:`fairrag_core.checks` (``$FAIRRAG_MAX_FILE_MB``, ``$FAIRRAG_MAX_UPLOAD_MB``).
"""

from __future__ import annotations

from pathlib import Path

from ..checks import max_file_bytes, max_upload_bytes
from ..errors import DataFormatError

__all__ = ["read_bytes", "read_text", "check_upload"]


def read_bytes(path: Path) -> bytes:
    """The file's bytes, refusing a missing, unreadable or too large file (``$FAIRRAG_MAX_FILE_MB``)."""
    try:
        size, limit = path.stat().st_size, max_file_bytes()
        if size > limit:
            raise DataFormatError(f"the file is {size / 1e6:,.0f} MB, more than the {limit / 1e6:,.0f} MB a loader "
                                  "reads into memory; split it, or raise the limit with FAIRRAG_MAX_FILE_MB",
                                  path=path)
        return path.read_bytes()
    except FileNotFoundError:
        raise DataFormatError("file not found; check the path", path=path) from None
    except IsADirectoryError:
        raise DataFormatError("is a folder, expected a file", path=path) from None
    except OSError as err:
        raise DataFormatError(f"cannot be read ({err.strerror or err}); check its permissions", path=path) from None


def check_upload(name: str, data: bytes) -> None:
    """Refuse an uploaded file above ``$FAIRRAG_MAX_UPLOAD_MB`` (default 50 MB) before it is written or parsed."""
    limit = max_upload_bytes()
    if len(data) > limit:
        raise DataFormatError(f"the upload is {len(data) / 1e6:,.0f} MB, more than the {limit / 1e6:,.0f} MB the app "
                              "accepts; load a larger collection from its folder with the CLI (--collection PATH), "
                              "or raise the limit with FAIRRAG_MAX_UPLOAD_MB", path=name)


def read_text(path: Path) -> str:
    raw = read_bytes(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataFormatError(
            f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at offset {err.start}); re-save the file as UTF-8",
            path=path,
            line=line,
        ) from None
