"""The server's data folder: the only place on the server's disk the app reads a log or run file from by name.

Anyone who can open the app can type into it (``make app ADDRESS=0.0.0.0`` serves a whole classroom), so the Audit
page does not read arbitrary paths: it reads files from ``$FAIRRAG_DATA_DIR`` only, and offers no server files at
all when the variable is unset (the default; uploads and the demo log still work). A file is read when, with every
symlink resolved, it lies inside that folder, is a regular file (not a device such as ``/dev/zero``, a FIFO or a
folder) and has a suffix of a log or run the command line audits (:mod:`fairrag_core.data.formats`); a folder is
read when it lies inside and is a ``fairrag collect`` store (:func:`~fairrag_core.data.store_window.is_store`), which
the Served tab then selects by service and time window. A folder holding a collection in the folder format
:func:`fairrag_core.load_collection` reads (``corpus.jsonl`` or ``corpus.csv``, optional ``queries.jsonl``,
``qrels.txt``, ``aspect_qrels.tsv``) is offered in the sidebar's collection box under its folder name
(:func:`data_collections`), on the same rules: inside the folder with every symlink resolved, each part a regular
file inside it, and its files small enough for the memory budget (:func:`checked_data_collection`). The command line,
run by the user on their own files, reads any path. No Streamlit here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from fairrag_core import InvalidParameterError
from fairrag_core.checks import check_memory
from fairrag_core.data.formats import not_served_message, served_suffixes
from fairrag_core.data.identity import COLLECTION_PARTS
from fairrag_core.data.store_window import is_store

__all__ = ["DATA_DIR_ENV", "DataDirError", "data_dir", "data_files", "checked_data_file", "data_stores",
           "checked_data_store", "data_collections", "checked_data_collection", "COLLECTION_MEMORY_FACTOR"]

#: Environment variable naming the folder the app may read served logs and runs from (unset: none).
DATA_DIR_ENV = "FAIRRAG_DATA_DIR"
_MAX_LISTED = 500
_MAX_DEPTH = 3  # subfolder levels listed below the data folder
#: Bytes a loaded collection holds per byte of its files (documents as Python objects, their texts, the lookups):
#: measured 3.7 on the Debian collection (16.6 MB of corpus.jsonl → 62 MB held, tracemalloc), rounded up.
COLLECTION_MEMORY_FACTOR = 4


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
    sorted paths relative to it (at most 500). A collection's own files (``corpus.jsonl``, ``queries.jsonl``, ...
    beside a corpus) are no logs: they are left out here and offered as a collection (:func:`data_collections`)."""
    root = folder.resolve(strict=True)
    suffixes = served_suffixes()
    found: list[str] = []
    for current, folders, files in os.walk(root):  # symlinked folders are not followed
        deep = len(Path(current).relative_to(root).parts) >= _MAX_DEPTH
        folders[:] = [] if deep else sorted(f for f in folders if not f.startswith("."))
        parts = _collection_parts(Path(current))
        collection_files = {path.name for path in parts.values()} if "corpus" in parts else set()
        for name in sorted(files):
            if name.startswith(".") or not name.lower().endswith(suffixes) or name in collection_files:
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


def _collection_parts(folder: Path) -> dict[str, Path]:
    """The parts of a collection in ``folder`` that exist (as anything: the checks say what is wrong with them),
    by part name, as :func:`fairrag_core.load_collection` finds them."""
    found = {}
    for part, names in COLLECTION_PARTS:
        path = next((folder / n for n in names if (folder / n).is_symlink() or (folder / n).exists()), None)
        if path is not None:
            found[part] = path
    return found


def _safe_collection(name: str | os.PathLike, root: Path) -> tuple[Path, int]:
    """The collection folder ``name`` resolved inside ``root`` and its files' bytes, if its path is safe (the
    checks of :func:`checked_data_collection` but the memory budget)."""
    refusal = f"the app opens collections only from ${DATA_DIR_ENV} ({root})"
    try:
        resolved = (root / Path(name).expanduser()).resolve(strict=True)
    except (OSError, RuntimeError):
        raise DataDirError(f"no folder {str(name)!r} in {root}; {refusal}") from None
    if not resolved.is_relative_to(root):
        raise DataDirError(f"{str(name)!r} is outside the data folder; {refusal}")
    if not resolved.is_dir():
        raise DataDirError(f"{str(name)!r} is not a folder; {refusal}, as folders holding corpus.jsonl")
    parts = _collection_parts(resolved)
    if "corpus" not in parts:
        raise DataDirError(f"{str(name)!r} holds no corpus.jsonl or corpus.csv; put the collection's files in it "
                           "(corpus, queries.jsonl, qrels.txt)")
    size = 0
    for path in parts.values():
        shown = f"{Path(name, path.name).as_posix()!r}"
        try:
            target = path.resolve(strict=True)
            info = target.stat()
        except (OSError, RuntimeError):
            raise DataDirError(f"{shown} cannot be opened; {refusal}") from None
        if not target.is_relative_to(root):
            raise DataDirError(f"{shown} leads outside the data folder; {refusal}")
        if not stat.S_ISREG(info.st_mode):
            raise DataDirError(f"{shown} is not a regular file (a folder, device or pipe); {refusal}")
        size += info.st_size
    return resolved, size


def checked_data_collection(name: str | os.PathLike, folder: Path) -> Path:
    """The collection folder ``name`` (relative to ``folder``) with its symlinks resolved, if the app may open it:
    inside ``folder``, holding ``corpus.jsonl`` or ``corpus.csv``, each part a regular file inside ``folder`` (a
    symlink that leads out is refused), and its files' bytes × :data:`COLLECTION_MEMORY_FACTOR` within the memory
    budget (:func:`~fairrag_core.checks.check_memory`). Otherwise :class:`DataDirError` saying why."""
    resolved, size = _safe_collection(name, folder.resolve(strict=True))
    try:
        check_memory(size * COLLECTION_MEMORY_FACTOR, f"the collection {str(name)!r} ({size / 1e6:,.1f} MB of files)",
                     fix="open it with the command line, or split it into smaller collections")
    except InvalidParameterError as err:
        raise DataDirError(str(err)) from None
    return resolved


def data_collections(folder: Path) -> list[str]:
    """The collection folders in ``folder`` (itself, ``"."``, or its subfolders, three levels down) that
    :func:`checked_data_collection` accepts but for the memory budget, which opening them checks (so a collection
    too large is listed and says why when picked), as sorted paths relative to it (at most 500; a collection's own
    subfolders are not searched)."""
    root = folder.resolve(strict=True)
    found: list[str] = []
    for current, folders, _ in os.walk(root):  # symlinked folders are not followed
        here = Path(current)
        relative = here.relative_to(root)
        if "corpus" in _collection_parts(here):
            folders[:] = []
            try:
                _safe_collection(relative, root)
            except DataDirError:
                continue  # e.g. a corpus symlinked from outside
            found.append(relative.as_posix())
            if len(found) >= _MAX_LISTED:
                break
            continue
        deep = len(relative.parts) >= _MAX_DEPTH
        folders[:] = [] if deep else sorted(f for f in folders if not f.startswith("."))
    return sorted(found)
