"""Errors are part of the API: every failure a user can cause has a class and a message that names the fix.

All of them derive from :class:`FairRAGError`, so a caller (the CLI, the app) can catch one type and show
``str(err)`` as is. Input errors also derive from :class:`ValueError` so generic code keeps working.
"""

from __future__ import annotations

__all__ = [
    "FairRAGError",
    "InvalidParameterError",
    "UndefinedMetricError",
    "DataFormatError",
    "MissingGroupLabelError",
    "UnknownCollectionError",
    "ModelUnavailableError",
    "StoreError",
    "StoreBusyError",
    "StoreReadOnlyError",
    "StoreFullError",
    "StoreDamagedError",
    "BackendError",
]


class FairRAGError(Exception):
    """Base class of every error raised on purpose by ``fairrag_core``."""


class InvalidParameterError(FairRAGError, ValueError):
    """A numeric or categorical argument is out of its domain (NaN α, k > n, N = 0, ...)."""


class UndefinedMetricError(FairRAGError, ValueError):
    """A metric has no value for these inputs (EE-R with no useful document, an interval from one sample, the
    disparity of attributed exposure when nothing is attributed); the message says why. Reports show "—" (JSON:
    null) with that reason instead of a number made from nothing."""


class DataFormatError(FairRAGError, ValueError):
    """A corpus, query or qrels file cannot be read. The message names the file, the line and the fix."""

    def __init__(self, message: str, *, path: object = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f", line {line}"
            where += ": "
        super().__init__(where + message)
        self.path = path
        self.line = line


class MissingGroupLabelError(FairRAGError, ValueError):
    """Some documents have no label for a fairness category that a group metric needs."""


class UnknownCollectionError(FairRAGError, LookupError):
    """A collection name is neither a bundled demo collection nor a readable folder."""


class ModelUnavailableError(FairRAGError, RuntimeError):
    """A model id or path cannot be loaded here (e.g. no network); the message lists offline alternatives."""


class StoreError(FairRAGError, RuntimeError):
    """The run store or the answer cache cannot be read or written (a damaged file, a full disk)."""


class StoreBusyError(StoreError):
    """Another process held the run store or the answer cache for longer than the wait allowed; the message names
    the process and the fix."""


class StoreReadOnlyError(StoreError):
    """The store's file, or the folder it lives in, cannot be written here (permissions, a read-only mount); the
    message says to make it writable or to use another store."""


class StoreFullError(StoreError):
    """The disk that holds the store is full (or the user's quota is spent); the message names the device."""


class StoreDamagedError(StoreError):
    """The store's file cannot be opened as a database (damaged, or not a store at all); move it aside."""


class BackendError(FairRAGError, RuntimeError):
    """The execution backend cannot run the work (Ray not installed, a cluster address that does not answer); the
    message names the fix."""
