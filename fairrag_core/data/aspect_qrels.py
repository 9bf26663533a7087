"""RichRAG's aspect judgements: which documents cover which sub-aspect of a multi-faceted query (Wang et al.,
RichRAG; the coverage behind NCOM and Com-ROUGE).

Format: TSV with the header ``query_id<TAB>aspect_index<TAB>doc_id``; document ``doc_id`` covers aspect
``aspect_index`` (0-based, in the order of the query's ``aspects`` in queries.jsonl); one line per pair; ``#``
comments and blank lines are skipped. Read through the shared reader (:func:`~fairrag_core.data.files.read_lines`:
regular files only, gzip, LF/CRLF lines); every problem is a :class:`~fairrag_core.errors.DataFormatError` naming
the file, the line and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import DataFormatError
from .collection import Query
from .fields import ascii_int
from .files import read_lines

__all__ = ["load_aspect_qrels"]

_ASPECT_HEADER = ["query_id", "aspect_index", "doc_id"]


def load_aspect_qrels(path: str | os.PathLike, *, queries: Iterable[Query] | None = None,
                      doc_ids: Iterable[str] | None = None) -> dict[str, dict[int, tuple[str, ...]]]:
    """Read RichRAG aspect judgements (TSV ``query_id, aspect_index, doc_id``) into
    ``{query_id: {aspect_index: (doc_id, ...)}}``, documents in file order.

    With ``queries`` and ``doc_ids`` every line is checked against them (unknown query, aspect index beyond the
    query's aspects, unknown document).

    Raises:
        DataFormatError: naming the file, the line and the fix.
    """
    path = Path(path)
    by_id = {q.query_id: q for q in queries} if queries is not None else None
    known_docs = set(doc_ids) if doc_ids is not None else None
    found: dict[str, dict[int, list[str]]] = {}
    header_seen = False
    for line, raw in read_lines(path, comments=True):
        if raw.lstrip().startswith("#"):  # "#" after a non-ASCII space
            continue
        cells = [c.strip() for c in raw.split("\t")]
        if not header_seen:
            header_seen = True
            if cells != _ASPECT_HEADER:
                raise DataFormatError("the first line must be the header query_id<TAB>aspect_index<TAB>doc_id "
                                      f"(found {raw.strip()[:60]!r}); separate cells with tabs",
                                      path=path, line=line)
            continue
        if len(cells) != 3 or not all(cells):
            raise DataFormatError(f"expected 3 tab-separated cells 'query_id, aspect_index, doc_id', found "
                                  f"{len([c for c in cells if c])}; separate cells with one tab", path=path, line=line)
        qid, index_text, doc_id = cells
        index = ascii_int(index_text) if len(index_text) <= 6 and index_text[0] != "-" else None
        if index is None:
            raise DataFormatError(f"aspect_index {index_text[:20]!r} is not a whole number ≥ 0 (at most 6 digits "
                                  "0-9); aspect indices start at 0", path=path, line=line)
        if by_id is not None:
            if qid not in by_id:
                raise DataFormatError(f"unknown query_id {qid!r}; every judged query must be in queries.jsonl",
                                      path=path, line=line)
            n_aspects = len(by_id[qid].aspects)
            if index >= n_aspects:
                raise DataFormatError(f"query {qid!r} has {n_aspects} aspect(s) (indices 0–{n_aspects - 1}), "
                                      f"not {index}; fix the index or add the aspect in queries.jsonl",
                                      path=path, line=line)
        if known_docs is not None and doc_id not in known_docs:
            raise DataFormatError(f"unknown doc_id {doc_id!r}; every judged document must be in the corpus",
                                  path=path, line=line)
        docs = found.setdefault(qid, {}).setdefault(index, [])
        if doc_id in docs:
            raise DataFormatError(f"duplicate judgement ({qid}, {index}, {doc_id}); keep one line per pair",
                                  path=path, line=line)
        docs.append(doc_id)
    if not header_seen:
        raise DataFormatError("empty file; expected the header query_id<TAB>aspect_index<TAB>doc_id", path=path)
    return {q: {i: tuple(ds) for i, ds in per.items()} for q, per in found.items()}
