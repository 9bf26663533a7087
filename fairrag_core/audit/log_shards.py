"""A large log cut into shards (one file a day, say), read and aggregated per query by workers, merged on the
driver, audited for exposure with the numbers of the same log in one file.

A worker reads its shard column-wise (:func:`~fairrag_core.data.log_columns.read_log_columns`: the JSON parsing and
the checks, most of the cost) and aggregates it per query (:func:`aggregate_shard`): how many lines, the first
query text, and the distinct top-k sets it served with how often each was served — a query served 50,000 times with
60 distinct rankings becomes 60 rows. A query with fewer than
:data:`~fairrag_core.metrics.bootstrap.COLLAPSE_LINES_FROM` lines in the shard also keeps its lines in order, since a
small query's bootstrap resamples its lines one by one. The driver merges the shards' aggregates in name order
(:func:`merge_aggregates`) and the audit (:func:`~fairrag_core.audit.rag_log.audit_served`) reads each query from
them (:meth:`LogAggregate.exposure`): the served documents, their exposure ε — counts over lines, exact in floating
point — and the weighted rows of the bootstrap, the same as from the lines. The driver holds the aggregates, not the
lines, so a log larger than the driver's memory can be audited when its queries repeat their rankings.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.formats import shard_suffixes
from ..data.log_columns import ColumnLog, LogColumns, top_slots
from ..errors import DataFormatError
from ..metrics.bootstrap import COLLAPSE_LINES_FROM, distinct_rows

__all__ = ["log_shards", "QueryAggregate", "LogAggregate",
           "aggregate_shard", "merge_aggregates", "served_exposure"]



def log_shards(path: str | os.PathLike) -> list[Path]:
    """The files of a log: the file itself, or the JSONL shards of a folder (one log cut into parts, e.g. one file
    a day), in name order — the order of their lines."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    suffixes = shard_suffixes()  # JSON Lines logs, also gzipped (the table in fairrag_core.data.formats)
    shards = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(suffixes))
    if not shards:
        raise DataFormatError(f"the folder holds no log shards ({', '.join(suffixes)}); put the parts of the "
                              "log there, named so that name order is line order (e.g. 2026-03-01.jsonl)", path=path)
    return shards


@dataclass(frozen=True)
class QueryAggregate:
    """One query in one shard (or merged): its lines, distinct top-k sets (sorted rows of collection indices, −1 for
    an empty slot) with their counts, and — for a small query — its lines in order."""

    query_id: str
    n_lines: int
    rows: np.ndarray
    counts: np.ndarray
    ordered: np.ndarray | None


def aggregate_shard(columns: LogColumns, n_docs: int, k: int | None = None) -> LogAggregate:
    """Aggregate one shard per query (module docstring), as a log of one shard. ``n_docs``: the collection's size;
    ``k``: the audit's k when it was given (rankings are cut to it before their sets are taken), None for the longest
    ranking."""
    slots = columns.slots[:, :k] if k is not None else columns.slots
    queries = []
    for qid, lines in zip(columns.query_ids, columns.query_lines()):
        block = slots[lines]
        rows, counts = distinct_rows(np.sort(block, axis=1), n_docs)
        queries.append(QueryAggregate(qid, int(block.shape[0]), rows, counts,
                                      block.copy() if block.shape[0] < COLLAPSE_LINES_FROM else None))
    return LogAggregate(columns.source, columns.sha256, len(columns), columns.query_ids, columns.query_texts,
                        tuple(queries), columns.ranking_lengths)


@dataclass(frozen=True)
class LogAggregate(ColumnLog):
    """A whole log as its shards' merged aggregates (or one shard aggregated): what
    :func:`~fairrag_core.audit.rag_log.audit_served` reads for an exposure-only audit (the attributes of
    :class:`~fairrag_core.data.log_columns.LogColumns` it uses, and each query's exposure)."""

    source: str
    sha256: str
    n_lines: int
    query_ids: tuple[str, ...]
    query_texts: dict[str, str]
    queries: tuple[QueryAggregate, ...]
    ranking_lengths: tuple[int, int]

    def __len__(self) -> int:
        return self.n_lines

    def exposure(self, q: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """Query ``q`` as the audit reads a query's lines: its served documents (collection indices, ascending), its
        rows in their local indices (−1: an empty slot) with their counts (None: the lines themselves, in order),
        and the exposure ε of each served document (counts over lines / lines: the same floats as from the
        lines)."""
        query = self.queries[q]
        if query.ordered is not None:
            return served_exposure(top_slots(query.ordered, k))
        return served_exposure(top_slots(query.rows, k), query.counts)


def served_exposure(rows: np.ndarray, counts: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """One query's served documents (collection indices, ascending), its ``rows`` (top-k collection indices, −1 for
    an empty slot) in their local indices, ``counts`` (how many lines each row stands for; None: one line a row, in
    order), and the exposure ε of each served document: how many lines showed it over how many lines there are —
    integers divided once, so lines and their aggregates give the same floats."""
    served = np.unique(rows[rows >= 0])
    local = np.where(rows >= 0, np.searchsorted(served, np.maximum(rows, 0)), -1)
    valid = local >= 0
    weights = np.ones(rows.shape[0]) if counts is None else counts.astype(np.float64)
    per_slot = np.broadcast_to(weights[:, None], rows.shape)[valid]
    eps = np.bincount(local[valid], weights=per_slot, minlength=served.size) / weights.sum()
    return served, local, counts, eps


def merge_aggregates(parts: Sequence[LogAggregate], source: str | os.PathLike, n_docs: int) -> LogAggregate:
    """The shards' aggregates as one log, in shard order: queries in order of first appearance over the log, each
    query's rows and counts summed over its shards, its lines kept in order only while the log holds fewer than
    :data:`~fairrag_core.metrics.bootstrap.COLLAPSE_LINES_FROM` of them; the sha256 of the shards' manifest."""
    merged: dict[str, list[QueryAggregate]] = {}
    texts: dict[str, str] = {}  # each query's first text over the shards
    for part in parts:
        for query in part.queries:
            merged.setdefault(query.query_id, []).append(query)
        for qid, text in part.query_texts.items():
            texts.setdefault(qid, text)
    queries = []
    for qid, pieces in merged.items():
        n = sum(p.n_lines for p in pieces)
        width = max(p.rows.shape[1] for p in pieces)
        rows, counts = distinct_rows(np.concatenate([top_slots(p.rows, width) for p in pieces]), n_docs,
                                     np.concatenate([p.counts for p in pieces]))
        ordered = None
        if n < COLLAPSE_LINES_FROM:  # every piece kept its lines (each has fewer)
            ordered = np.concatenate([top_slots(p.ordered, width) for p in pieces])
        queries.append(QueryAggregate(qid, n, rows, counts, ordered))
    manifest = "".join(f"{part.name} {part.sha256}\n" for part in parts)
    return LogAggregate(str(source), hashlib.sha256(manifest.encode()).hexdigest(), sum(p.n_lines for p in parts),
                        tuple(merged), texts, tuple(queries),
                        (min(p.ranking_lengths[0] for p in parts), max(p.ranking_lengths[1] for p in parts)))
