"""Parsed corpora kept on disk beside the retrieval indexes, so that a warm ``rank`` does not re-read 60,000 JSON lines.

Reading and checking the Debian corpus (63,666 JSON lines, 16.6 MB) takes 0.7–0.8 s on a loaded 2-core machine: most of
a warm CLI ``rank`` once its BM25 index is stored (issue 30, Must have 1: ≤ 1 s end to end). A corpus file of at
least :data:`MIN_CACHED_BYTES` is therefore parsed once and kept as columns in the index store
(:mod:`fairrag_core.retrieval.index_store`: same root, same ``FAIRRAG_INDEX=off`` switch, same atomic writes, listed
and cleared by ``index list`` / ``index clear`` as kind ``corpus``):

* ``strings.npy``: the UTF-8 bytes of every document's ``doc_id``, then every ``text``, ``title`` and ``provider``
  (column after column, :data:`COLUMNS`), ``offsets.npy``: where each string starts, in characters of the decoded
  text (``4 n + 1`` of them); ``group_ids.npy``: each document's row in ``groups.json``, the distinct ``groups``
  mappings as lists of ``[category, group]`` pairs in the file's order. No pickle: arrays are read with
  ``allow_pickle=False`` and the table as JSON.
* The key is the SHA-256 of (the corpus file's sha256, how it is parsed — ``jsonl`` or ``csv`` —, and the sha256 of
  the parsing code, :func:`parser_identity`): a changed byte in the file, or a changed loader, finds no entry and
  the file is parsed again.
* Finding the file's sha256 without reading it: ``corpus-sha256.json`` in the store's root maps a file (its resolved
  path, size and modification time in ns) to the sha256 taken of exactly the bytes the parse read. A file whose
  size or modification time changed is read again (one pass parses and hashes it); one rewritten with the same size
  and the same modification time to the nanosecond is taken as unchanged (as
  :func:`~fairrag_core.data.identity.file_sha256` already takes it within a process). The sha256 found there is also
  what :func:`~fairrag_core.data.identity.collection_sha256` uses, so the collection's sha256 is unchanged.
* Verified on reading: the arrays' shapes, offsets that only grow and end at the decoded text's length, group rows
  inside the table; an entry that fails is removed and rebuilt from the file, never trusted (as the index store
  treats an unreadable index). The check is structural: like the stored indexes' arrays, the bytes of a text are
  not re-hashed on every read.

The documents read back equal a fresh parse field for field (:class:`~fairrag_core.data.collection.Document`
equality, and their groups in the same order). Loading Debian's from the store takes about 0.16 s of CPU.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import stat
import uuid
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .collection import Document
from .files import Digest

__all__ = ["cached_documents", "parser_identity", "gc_paused", "MIN_CACHED_BYTES", "KIND", "COLUMNS", "SHA_MEMO"]

#: Corpus files smaller than this are parsed every time (a 1 MB corpus parses in about 30–50 ms, little more than
#: reading it back costs, and demo or test collections then leave nothing in the store).
MIN_CACHED_BYTES = 1_000_000
#: The ``kind`` of a parsed corpus in the index store (``index list`` shows it).
KIND = "corpus"
#: The modules whose code turns a corpus file into documents (the loaders, the field and file readers, the data model).
_PARSER_FILES = ("loaders.py", "fields.py", "files.py", "collection.py")
#: The string columns of a document, in the order ``strings.npy`` holds them.
COLUMNS = ("doc_id", "text", "title", "provider")
#: The memo of corpus files' sha256 by (resolved path, size, modification time), in the store's root.
SHA_MEMO = "corpus-sha256.json"
_MEMO_MOST = 1000  # files remembered; the oldest are dropped first
_GROUPS = "groups.json"


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a loader makes tens of thousands of objects that hold no cycles
    (it would otherwise scan them again and again: building 63,666 documents takes 0.23 s with it, 0.05 s
    without); back on after, unless it was off before."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def parser_identity() -> str:
    """The sha256 of the code that turns a corpus file into documents (the loaders, the field and file readers and
    the data model): part of every key, so a changed loader never reads a corpus another one parsed."""
    digest = hashlib.sha256()
    here = Path(__file__).parent  # read as files, not imported: the loader imports this module
    for name in _PARSER_FILES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()


def cached_documents(path: Path, parse: Callable[[Path, Digest | None], list[Document]], *, parser: str,
                     collection: str = "") -> list[Document]:
    """The documents of the corpus file ``path``: from the store when it holds this file's content parsed by this
    code, else ``parse(path, digest)`` (which feeds every byte it reads to ``digest``, when not ``None``), then
    stored (an entry that did not read back is replaced; one found after a parse is kept as it is).

    ``parser`` names how the file is parsed (``jsonl`` or ``csv``: the same bytes parse differently), ``collection``
    is the name ``index list`` shows. With the store off (``FAIRRAG_INDEX=off``), or a file under
    :data:`MIN_CACHED_BYTES`, this is ``parse`` alone. A store that cannot be written warns and the documents are
    returned as parsed (:meth:`~fairrag_core.data.array_store.IndexStore.try_save`)."""
    from .array_store import IndexStore, default_index_root
    from .identity import remember_file_sha256, stat_key

    root = default_index_root()
    try:
        regular = stat.S_ISREG(path.stat().st_mode)
        before = stat_key(path)
    except OSError:  # missing or unreadable: the parse says so, naming the fix
        regular = False
    if root is None or not regular or before[1] < MIN_CACHED_BYTES:
        return parse(path, None)
    store, identity = IndexStore(root), parser_identity()
    sha, broken = _memo(root).get(_memo_key(before)), None
    if sha is not None:
        key = IndexStore.key(KIND, sha, parser, identity)
        docs = _read(store, key)
        if docs is not None:
            remember_file_sha256(before, sha)
            return docs
        broken = key
    digest = hashlib.sha256()
    docs = parse(path, digest)
    if stat_key(path) != before:  # changed while it was read: use what was read, keep nothing
        return docs
    sha = digest.hexdigest()
    remember_file_sha256(before, sha)
    key = IndexStore.key(KIND, sha, parser, identity)
    if key == broken or store.manifest(key) is None:
        if store.path(key).exists():  # there but unreadable: replace it
            with contextlib.suppress(OSError):
                store.remove(key)
        arrays, groups = _encode(docs)
        manifest = {"kind": KIND, "collection": collection, "n_docs": len(docs), "corpus_sha256": sha,
                    "parser": parser, "source": before[0]}
        if not store.try_save(key, arrays, manifest, extra={_GROUPS: lambda p: p.write_text(
                json.dumps(groups, ensure_ascii=False), encoding="utf-8")}):
            return docs
    _remember(root, before, sha)
    return docs


def _encode(docs: Sequence[Document]) -> tuple[dict[str, np.ndarray], list[list[list[str]]]]:
    """The columns of ``docs`` (module docstring) and the table of their distinct groups."""
    strings = [getattr(doc, column) for column in COLUMNS for doc in docs]
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, strings), dtype=np.int64, count=len(strings)), out=offsets[1:])
    rows: dict[tuple[tuple[str, str], ...], int] = {}
    group_ids = np.fromiter((rows.setdefault(tuple(doc.groups.items()), len(rows)) for doc in docs),
                            dtype=np.int32, count=len(docs))
    blob = np.frombuffer("".join(strings).encode("utf-8"), dtype=np.uint8)
    return ({"strings": blob, "offsets": offsets, "group_ids": group_ids},
            [[list(pair) for pair in groups] for groups in rows])


def _read(store, key: str) -> list[Document] | None:
    """The documents stored under ``key``, or ``None`` when absent or not as written (module docstring)."""
    found = store.load(key)
    if found is None:
        return None
    arrays, manifest = found
    try:
        n = int(manifest["n_docs"])
        offsets, group_ids = arrays["offsets"], arrays["group_ids"]
        if offsets.shape != (len(COLUMNS) * n + 1,) or group_ids.shape != (n,) or offsets[0] != 0 or (
                n and np.any(np.diff(offsets) < 0)):
            return None
        text = arrays["strings"].tobytes().decode("utf-8")
        if int(offsets[-1]) != len(text):
            return None
        table = json.loads((store.path(key) / _GROUPS).read_text(encoding="utf-8"))
        ids = group_ids.tolist()
        if n and (min(ids) < 0 or max(ids) >= len(table)):
            return None
        groups = [MappingProxyType({str(c): str(g) for c, g in pairs}) for pairs in table]
        bounds = offsets.tolist()
        with gc_paused():
            strings = [text[start:end] for start, end in pairwise(bounds)]
            columns = [strings[i * n:(i + 1) * n] for i in range(len(COLUMNS))]
            return [Document.checked(*fields, groups[g]) for *fields, g in zip(*columns, ids)]
    except (KeyError, TypeError, ValueError, OSError, IndexError):  # a missing array or file, bad JSON or UTF-8
        return None


def _memo_key(file_key: tuple[str, int, int]) -> str:
    return "\t".join(map(str, file_key))


def _memo(root: Path) -> dict[str, str]:
    try:
        memo = json.loads((root / SHA_MEMO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}


def _remember(root: Path, file_key: tuple[str, int, int], sha: str) -> None:
    """Add a file's sha256 to the memo (written to a temporary file and renamed: a reader never sees half of it;
    two processes writing at once may lose one entry, which costs one more read of that file later)."""
    memo = {k: v for k, v in _memo(root).items() if not k.startswith(f"{file_key[0]}\t")}
    memo[_memo_key(file_key)] = sha
    memo = dict(list(memo.items())[-_MEMO_MOST:])
    tmp = root / f".{SHA_MEMO}.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        tmp.write_text(json.dumps(memo, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, root / SHA_MEMO)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
