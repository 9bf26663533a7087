"""``index``: list, build or clear the persistent retrieval indexes (:mod:`fairrag_core.retrieval.index_store`).

``index list`` shows every stored index (key, collection, kind, documents, size, when built, and for an HNSW graph
its recall@K against exact search); ``index build --collection X [--retriever dense]`` builds one ahead of time (the
first ``rank`` then finds it); ``index clear KEY`` deletes one (a key prefix as the list prints it), ``--all`` every
one. The folder is ``$FAIRRAG_INDEX``, else ``indexes/`` in ``$FAIRRAG_CACHE`` or ``~/.cache/fairrag``.
"""

from __future__ import annotations

import time

from ..data.collection_cache import KIND as CORPUS
from ..errors import InvalidParameterError
from ..options import COLLECTION, DEVICE, JSON, MODEL, RETRIEVER, add_option
from ..retrieval.index_store import INDEX_ENV, IndexStore, default_index_root
from .common import add_command, print_json

__all__ = ["register", "ACTIONS", "KEY_DIGITS"]

#: What ``index`` does.
ACTIONS = ("list", "build", "clear")
#: Hex digits of a key that ``index list`` prints (and ``index clear`` accepts as a prefix).
KEY_DIGITS = 12


def register(sub) -> None:
    """Add ``index`` to the command parser ``sub``."""
    from ..retrieval import RetrieverKind

    p = add_command(sub, "index", _cmd_index,
                    help="list, build or clear the persistent retrieval indexes (BM25 arrays, dense embeddings)",
                    description="`index list` shows the stored indexes; `index build --collection X [--retriever "
                                "dense]` builds one ahead of time; `index clear KEY` deletes one, `--all` every one. "
                                f"Folder: ${INDEX_ENV}, else indexes/ in $FAIRRAG_CACHE or ~/.cache/fairrag "
                                f"({INDEX_ENV}=off: indexes are built in memory per process).")
    p.add_argument("action", nargs="?", default="list", choices=list(ACTIONS))
    p.add_argument("key", nargs="?", default=None, help="with clear: the index's key (a prefix as `index list` "
                                                         "prints it)")
    p.add_argument("--all", action="store_true", help="with clear: delete every index")
    add_option(p, COLLECTION)
    add_option(p, RETRIEVER, choices=[k.value for k in RetrieverKind])
    add_option(p, MODEL)
    add_option(p, DEVICE)
    add_option(p, JSON)


def _store() -> IndexStore:
    root = default_index_root()
    if root is None:
        raise InvalidParameterError(f"the index store is off (${INDEX_ENV}=off); unset {INDEX_ENV} or point it to "
                                    "a folder")
    return IndexStore(root)


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def _cmd_index(args, out) -> int:
    store = _store()
    if args.action == "list":
        return _list(store, args, out)
    if args.action == "build":
        return _build(store, args, out)
    return _clear(store, args, out)


def _list(store: IndexStore, args, out) -> int:
    rows = [entry.row() for entry in store.entries()]
    if args.json:
        return print_json({"root": str(store.root), "indexes": rows}, out)
    if not rows:
        print(f"no indexes in {store.root}", file=out)
        return 0
    header = ("key", "kind", "collection", "documents", "size", "built", "recall@K")
    table = [header] + [
        (r["key"][:KEY_DIGITS], r["kind"], r["collection"] or "—", f"{r['documents']:,}", _megabytes(r["bytes"]),
         r["built"], f"{r['recall']:.3f} @{r['recall_k']}" if r.get("ann") else "—" if r["kind"] == CORPUS else "exact")
        for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    print(f"{len(rows)} indexes in {store.root}", file=out)
    for row in table:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip(), file=out)
    return 0


def _build(store: IndexStore, args, out) -> int:
    from ..data import load_collection
    from ..retrieval import build_retriever

    start = time.perf_counter()
    collection = load_collection(args.collection)
    retriever = build_retriever(args.retriever, collection.texts, model=args.model, device=args.device,
                                store=store, collection=collection.name)
    if args.retriever == "dense":
        _ = retriever.doc_vectors  # embed (or find) the corpus now
    seconds = time.perf_counter() - start
    manifest = getattr(retriever, "manifest", None)
    entry = store.resolve(manifest["key"]) if manifest else None
    row = entry.row() if entry is not None else {}
    if args.json:
        return print_json({"collection": collection.name, "retriever": retriever.name, "seconds": round(seconds, 3),
                           "index": row}, out)
    where = f"{row['key'][:KEY_DIGITS]} ({_megabytes(row['bytes'])})" if row else "(not stored)"
    print(f"{retriever.name} index of {collection.name} ({len(collection):,} documents): {where}, "
          f"ready in {seconds:.1f} s", file=out)
    return 0


def _clear(store: IndexStore, args, out) -> int:
    if args.all == bool(args.key):
        raise InvalidParameterError("index clear takes one KEY (as `index list` prints it) or --all")
    if args.all:
        removed = store.clear()
        keys = []
    else:
        entry = store.resolve(args.key)
        store.remove(entry.key)
        removed, keys = 1, [entry.key]
    if args.json:
        return print_json({"removed": removed, "keys": keys}, out)
    print(f"removed {removed} index{'es' if removed != 1 else ''} from {store.root}", file=out)
    return 0
