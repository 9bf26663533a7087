"""Vectorised reading of large runs (expeval's format, TREC Fair 2022's): blocks of text parsed by Arrow, rankings
built as arrays.

:func:`~fairrag_core.data.served.parse_run` reads a TREC/expeval run (``qid sample docno rank score run_id``)
through :func:`trec_columns` first, a TREC Fair 2022 run through :func:`fair_columns`. The blocks come from
:mod:`.blocks` (regular files only, the size budget, gzip inflated; a thread reads ahead); Arrow's CSV parser splits
each block into columns (in C++, on every core), the string columns dictionary-encoded, so Python touches each
*distinct* query, sample, document and rank once, never each line. Rankings are then built with numpy: one stable
sort when the lines are not already grouped by (query, sample) and ordered by rank, one table of positions per
query. Memory is the block plus about 20 bytes per line (codes and scores), not a Python object per line.

This reader is strict in the narrow sense: it accepts only what the line-by-line parser would accept *and* what it
can check in bulk — one delimiter (the first line's: a space or a tab), ASCII-digit ranks numbered 1, 2, … without
gaps or repeats per sample, each document once per sample, one run id, no blank line, no byte-order mark, no
stray carriage return. Anything else (a tab inside a space-separated line, two spaces in a row, a trailing blank,
a malformed line) makes it answer ``None``, and the caller reads the file again line by line, which gives the
same result or the error that names the line and the fix. So the fast path changes speed and memory, never what is
accepted or what is said.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..checks import max_work_cells
from .blocks import (
    Column,
    Unchecked,
    Vocabulary,
    numbers_of,
    padded_rows,
    parse_block,
    read_ahead,
    rows_with_repeats,
    size_of,
    text_blocks,
)
from .files import Digest

__all__ = ["RunColumns", "QueryColumns", "trec_columns", "fair_columns"]

_NAMES = ("qid", "sample", "doc", "rank", "score", "run")


class QueryColumns(NamedTuple):
    """One query's rankings as :class:`~fairrag_core.data.served.QueryRankings` holds them (its fields, in order)."""

    query_id: str
    sample_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    positions: np.ndarray
    scores: np.ndarray | None


class RunColumns(NamedTuple):
    run_id: str  # "" for TREC Fair 2022, whose lines name no run
    queries: list[QueryColumns]


def _rank_values(values: list[str]) -> np.ndarray | None:
    if not all(v.isascii() and v.isdigit() and len(v) <= 9 for v in values):
        return None
    return np.fromiter((int(v) for v in values), dtype=np.int32, count=len(values))


def _read(source: Path | bytes, where: object, digest: Digest | None, delimiter: str, names: tuple[str, ...],
          header: bool = False):
    """Per line, the codes of the text columns ``names`` (a rank: its value; a score: as read; the run id: not
    kept), and the vocabularies; None: read it line by line. With ``header``, the first line is skipped."""
    vocab = {name: Vocabulary() for name in names if name not in ("rank", "score")}
    size = len(source) if isinstance(source, bytes | bytearray) else size_of(source)
    columns: dict[str, Column] | None = None
    top_rank = 0
    blocks = read_ahead(text_blocks(source, where, digest))
    try:
        for block in blocks:
            table = parse_block(block, delimiter, names, ("score",))
            if table is None:
                return None
            if columns is None:  # room for the whole file at this block's bytes per line, +2 %
                estimate = int(table.num_rows * max(size, len(block)) / len(block) * 1.02) + 1024
                columns = {name: Column(np.float64 if name == "score" else np.int32, estimate)
                           for name in names if name != "run"}
                table = table.slice(1) if header else table
            for name in names:
                chunks = [chunk for chunk in table.column(name).chunks if len(chunk)]
                if name == "score":
                    for chunk in chunks:
                        columns["score"].reserve(len(chunk))[:] = numbers_of(chunk, np.float64)
                if not chunks or name == "score":
                    continue
                values = chunks[0].dictionary.to_pylist()  # one dictionary for the block's chunks (unified)
                codes = _rank_values(values) if name == "rank" else vocab[name].encode(values)
                if codes is None:
                    return None  # blanks inside or around a field, a rank that is not 1-9 digits 0-9
                if name != "run":
                    codes = codes.astype(np.int32)
                    for chunk in chunks:
                        # (a fancy index, then a copy: np.take(out=...) is 7 times slower here)
                        columns[name].reserve(len(chunk))[:] = codes[numbers_of(chunk.indices, np.int32)]
                if name == "rank":
                    top_rank = max(top_rank, int(codes.max()))
            del table
            slots = len(vocab["qid"].names) * len(vocab["sample"].names) * top_rank if "rank" in names else None
            if slots is not None and columns["qid"].size > slots:
                return None  # more lines than (query, sample, rank) slots: some rank repeats; say where, line by line
    except Unchecked:
        return None
    finally:
        blocks.close()
    if columns is None or not columns["qid"].size or ("run" in vocab and len(vocab["run"].names) != 1):
        return None
    return {name: column.values() for name, column in columns.items()}, vocab


def _segments(qid: np.ndarray, sample: np.ndarray, rank: np.ndarray, n_samples: int):
    """The order that groups the lines by query (in order of first appearance), then by sample (the same), then by
    rank (None: the file is in that order already), and where each sample starts; None when some sample's ranks
    are not 1, 2, …, n."""
    key = qid.astype(np.int64) * n_samples + sample
    order = None
    if not np.all(key[1:] >= key[:-1]):
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order = np.lexsort((rank, first[inverse], qid))
        key, rank = key[order], rank[order]
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    if not _ranks_count_up(rank, start):
        if order is not None:
            return None
        order = np.lexsort((rank, key))  # ranks shuffled within samples: sort them, keeping the samples' order
        if not _ranks_count_up(rank[order], start):
            return None
    return order, start


def _ranks_count_up(rank: np.ndarray, start: np.ndarray) -> bool:
    if not np.all(rank[start] == 1):
        return False
    step = np.diff(rank)
    step[start[1:] - 1] = 1  # where a new sample starts, the rank falls back to 1
    return bool(np.all(step == 1))


def _local_codes(docs: np.ndarray, seen_max: int, in_file_order: bool) -> tuple[np.ndarray, np.ndarray]:
    """(distinct documents in order of first appearance, each line's index among them)."""
    low, high = int(docs.min()), int(docs.max())
    if in_file_order and low > seen_max and high - low < 4 * docs.size + 64:
        # every document is new to this query, and codes were handed out in order of first appearance
        mark = np.zeros(high - low + 1, dtype=bool)
        mark[docs - low] = True
        distinct = np.flatnonzero(mark)
        local = np.full(high - low + 1, -1, dtype=np.int64)
        local[distinct] = np.arange(distinct.size)
        return distinct + low, local[docs - low]
    distinct, first, inverse = np.unique(docs, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    local = np.empty(distinct.size, dtype=np.int64)
    local[order] = np.arange(distinct.size)
    return distinct[order], local[inverse]


def _queries(vocab: dict[str, Vocabulary], sample_names: list[str], group_query: np.ndarray,
             group_sample: np.ndarray, start: np.ndarray, lengths: np.ndarray, doc: np.ndarray,
             score: np.ndarray | None, *, in_file_order: bool, max_cells: int) -> list[QueryColumns] | None:
    """One :class:`QueryColumns` per run of equal ``group_query``: its samples start at ``start`` in ``doc`` (and
    ``score``), ``lengths`` long, named by ``group_sample``. None when a query's table of samples × depth would pass
    ``max_cells`` (left to the line-by-line parser's error) or a sample holds a document twice."""
    query_start = np.flatnonzero(np.r_[True, group_query[1:] != group_query[:-1]])
    queries, seen_max = [], -1
    for a, b in zip(query_start.tolist(), np.r_[query_start[1:], start.size].tolist()):
        lo = int(start[a])
        hi = int(start[b]) if b < start.size else doc.size
        docs, rows = doc[lo:hi], lengths[a:b]
        if rows.size * int(rows.max()) > max_cells:
            return None
        distinct, cells = _local_codes(docs, seen_max, in_file_order)
        positions = padded_rows(cells, rows, fill=-1, dtype=np.int64)
        if rows_with_repeats(positions, distinct.size):
            return None  # a document twice in one sample
        table = None if score is None else padded_rows(score[lo:hi], rows, fill=np.nan, dtype=np.float64)
        queries.append(QueryColumns(vocab["qid"].names[group_query[a]],
                                    tuple(sample_names[i] for i in group_sample[a:b].tolist()),
                                    tuple(vocab["doc"].names[i] for i in distinct.tolist()), positions, table))
        seen_max = max(seen_max, int(docs.max()))
    return queries


def trec_columns(source: Path | bytes, *, where: object, delimiter: str = " ",
                 digest: Digest | None = None, max_cells: int | None = None) -> RunColumns | None:
    """A run in expeval's format read in blocks (see the module docstring), or None when the file needs the
    line-by-line parser (for its error message, or because it is laid out in a way this reader does not check).
    A query whose table of samples × depth would pass ``max_cells`` (default: the memory budget's
    :func:`~fairrag_core.checks.max_work_cells`) is left to that parser's error too."""
    max_cells = max_work_cells() if max_cells is None else max_cells
    read = _read(source, where, digest, delimiter, _NAMES)
    if read is None:
        return None
    columns, vocab = read
    qid, sample, doc, rank, score = (columns[k] for k in ("qid", "sample", "doc", "rank", "score"))
    del columns
    segments = _segments(qid, sample, rank, len(vocab["sample"].names))
    if segments is None:
        return None  # a rank repeated or skipped in a sample
    order, start = segments
    del rank
    if order is not None:
        qid, sample, doc, score = (a[order] for a in (qid, sample, doc, score))
        del order
    lengths = np.diff(np.r_[start, qid.size])
    group_query, group_sample = qid[start], sample[start]
    del qid, sample
    queries = _queries(vocab, vocab["sample"].names, group_query, group_sample, start, lengths, doc, score,
                       in_file_order=segments[0] is None, max_cells=max_cells)
    return None if queries is None else RunColumns(vocab["run"].names[0], queries)


# -- TREC Fair 2022 ----------------------------------------------------------------------------------------------
def fair_columns(source: Path | bytes, *, where: object, width: int, header: bool, digest: Digest | None = None,
                 max_cells: int | None = None) -> RunColumns | None:
    """A TREC Fair 2022 run (tab-separated ``id seq_no page_id``, or ``id page_id`` when ``width`` is 2; the first
    line a header when ``header``) read in blocks: the rank is the order of a sequence's lines, which must be
    consecutive. None sends it to the line-by-line parser (for its message, or anything this does not check);
    ``max_cells`` as in :func:`trec_columns`."""
    max_cells = max_work_cells() if max_cells is None else max_cells
    read = _read(source, where, digest, "\t", ("qid", "seq", "doc") if width == 3 else ("qid", "doc"), header)
    if read is None:
        return None
    columns, vocab = read
    qid, doc = columns["qid"], columns["doc"]
    seq = columns["seq"] if width == 3 else np.zeros_like(qid)
    n_seqs = max(len(vocab["seq"].names), 1) if width == 3 else 1
    key = qid.astype(np.int64) * n_seqs + seq
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    if np.unique(key[start]).size != start.size:
        return None  # a sequence resumes after other lines
    lengths = np.diff(np.r_[start, key.size])
    del key
    group_query, group_seq = qid[start], seq[start]
    in_file_order = bool(np.all(group_query[1:] >= group_query[:-1]))
    if not in_file_order:  # a query's sequences apart in the file: gather them, in order of first appearance
        moved = np.argsort(group_query, kind="stable")
        new_start = np.cumsum(lengths[moved]) - lengths[moved]
        doc = doc[np.repeat(start[moved] - new_start, lengths[moved]) + np.arange(doc.size)]
        start, lengths = new_start, lengths[moved]
        group_query, group_seq = group_query[moved], group_seq[moved]
    queries = _queries(vocab, vocab["seq"].names if width == 3 else ["1"], group_query, group_seq, start, lengths,
                       doc, None, in_file_order=in_file_order, max_cells=max_cells)
    return None if queries is None else RunColumns("", queries)
