"""The server's data folder: the only place on the server's disk the app reads a log or run file from by name.

Anyone who can open the app can type into it (``make app ADDRESS=0.0.0.0`` serves a whole classroom), so the Audit
page does not read arbitrary paths: it reads files from ``$FAIRRAG_DATA_DIR`` only, and offers no server files at
all when the variable is unset (the default; uploads and the demo log still work). A file is read when, with every
symlink resolved, it lies inside that folder, is a regular file (not a device such as ``/dev/zero``, a FIFO or a
folder) and has a suffix of a log or run the command line audits (:mod:`fairrag_core.data.formats`); a folder is
read when it lies inside and is a ``fairrag collect`` store (:func:`~fairrag_core.data.store_window.is_store`), which
the Served tab then selects by service and time window. The command line, run by the user on their own files, reads
any path. No Streamlit here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from fairrag_core import InvalidParameterError
from fairrag_core.data.formats import not_served_message, served_suffixes
from fairrag_core.data.store_window import is_store

__all__ = ["DATA_DIR_ENV", "DataDirError", "data_dir", "data_files", "checked_data_file", "data_stores",
           "checked_data_store"]

#: Environment variable naming the folder the app may read served logs and runs from (unset: none).
DATA_DIR_ENV = "FAIRRAG_DATA_DIR"
_MAX_LISTED = 500
_MAX_DEPTH = 3  # subfolder levels listed below the data folder


class DataDirError(InvalidParameterError):
    """A server file the app may not read (outside ``$FAIRRAG_DATA_DIR``, not a regular file, ...), or a data
    folder setting that names no folder; the message says what to do instead."""


def data_dir() -> Path | None:
    """``$FAIRRAG_DATA_DIR`` with its symlinks resolved, or None when unset (the app then reads no server files)."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    if not value:
        return None
    try:
        folder = Path(value).expanduser().resolve(strict=True)
    except (OSError, RuntimeError):
        folder = None
    if folder is None or not folder.is_dir():
        raise DataDirError(f"${DATA_DIR_ENV} is {value!r}, which is not a folder on this server; set it to the folder "
                           "holding the logs and runs to audit, or unset it (then upload files instead)")
    return folder


def checked_data_file(name: str | os.PathLike, folder: Path) -> Path:
    """The file ``name`` (relative to ``folder``, or absolute) with every symlink resolved, if the app may read it:
    inside ``folder``, a regular file, with a log or run suffix. Otherwise :class:`DataDirError` saying why."""
    root = folder.resolve(strict=True)
    asked = Path(name).expanduser()
    where = asked if asked.is_absolute() else root / asked
    refusal = f"the app reads server files only from ${DATA_DIR_ENV} ({root}); put the file there or upload it"
    try:
        resolved = where.resolve(strict=True)
    except FileNotFoundError:
        raise DataDirError(f"no file {str(name)!r} in {root}; {refusal}") from None
    except (OSError, RuntimeError) as err:  # a symlink loop, a permission problem
        raise DataDirError(f"{str(name)!r} cannot be opened ({getattr(err, 'strerror', None) or err}); "
                           f"{refusal}") from None
    if not resolved.is_relative_to(root):
        raise DataDirError(f"{str(name)!r} is outside the data folder; {refusal}")
    try:
        mode = resolved.stat().st_mode
    except OSError as err:
        raise DataDirError(f"{str(name)!r} cannot be opened ({err.strerror}); {refusal}") from None
    if not stat.S_ISREG(mode):
        raise DataDirError(f"{str(name)!r} is not a regular file (a folder, device or pipe); the app reads log and "
                           f"run files from ${DATA_DIR_ENV} ({root})")
    if not resolved.name.lower().endswith(served_suffixes()):
        raise DataDirError(not_served_message(name) + "; rename it or upload it")
    return resolved


def data_files(folder: Path) -> list[str]:
    """The files of ``folder`` (and of its subfolders, three levels down) that :func:`checked_data_file` accepts, as
    sorted paths relative to it (at most 500)."""
    root = folder.resolve(strict=True)
    suffixes = served_suffixes()
    found: list[str] = []
    for current, folders, files in os.walk(root):  # symlinked folders are not followed
        deep = len(Path(current).relative_to(root).parts) >= _MAX_DEPTH
        folders[:] = [] if deep else sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or not name.lower().endswith(suffixes):
                continue
            relative = (Path(current) / name).relative_to(root)
            try:
                checked_data_file(relative, root)
            except DataDirError:
                continue  # e.g. a symlink that leads out of the folder
            found.append(relative.as_posix())
            if len(found) >= _MAX_LISTED:
                return sorted(found)
    return sorted(found)


def checked_data_store(name: str | os.PathLike, folder: Path) -> Path:
    """The folder ``name`` (relative to ``folder``) with its symlinks resolved, if it lies inside ``folder`` and is a
    ``collect`` store (or one service's folder of it). Otherwise :class:`DataDirError` saying why."""
    root = folder.resolve(strict=True)
    try:
        resolved = (root / Path(name).expanduser()).resolve(strict=True)
    except (OSError, RuntimeError):
        raise DataDirError(f"no folder {str(name)!r} in {root}; the app reads stores only from ${DATA_DIR_ENV}") \
            from None
    if not resolved.is_relative_to(root):
        raise DataDirError(f"{str(name)!r} is outside the data folder; the app reads stores only from "
                           f"${DATA_DIR_ENV} ({root})")
    if not is_store(resolved):
        raise DataDirError(f"{str(name)!r} is no `fairrag collect` store (<service>/<hour>.jsonl files); point "
                           "collect --store at a folder inside the data folder")
    return resolved


def data_stores(folder: Path) -> list[str]:
    """The ``collect`` stores in ``folder`` (itself, ``"."``, or its subfolders, three levels down; a store's own
    service folders are not listed again), as sorted paths relative to it."""
    root = folder.resolve(strict=True)
    found: list[str] = []
    for current, folders, _ in os.walk(root):  # symlinked folders are not followed
        here = Path(current)
        if is_store(here):
            found.append(here.relative_to(root).as_posix())
            folders[:] = []
            continue
        deep = len(here.relative_to(root).parts) >= _MAX_DEPTH
        folders[:] = [] if deep else sorted(f for f in folders if not f.startswith("."))
        if len(found) >= _MAX_LISTED:
            break
    return sorted(found)
