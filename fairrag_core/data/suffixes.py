"""The file-name suffixes the served-file readers share, declared once.

The formats table (:mod:`fairrag_core.data.formats`) builds every format's suffixes from these; the trace reader
(:mod:`fairrag_core.data.traces`) and the protobuf reader (:mod:`fairrag_core.data.otlp_proto`), which the table's
recognisers import and so cannot import the table back, read the same names here.

>>> with_compressed(PROTOBUF)
('.pb', '.pb.gz')
"""

from __future__ import annotations

__all__ = ["COMPRESSED", "JSON_LINES", "JSON_FILES", "PROTOBUF", "RUN_FILES", "with_compressed"]

#: Compression suffixes any served suffix may carry (``run.tsv.gz``); the readers inflate by the first bytes.
COMPRESSED = (".gz",)
#: JSON Lines: one object per line (a RAG log, or an OTLP export per line).
JSON_LINES = (".jsonl", ".ndjson")
#: JSON files: JSON Lines, or one whole (pretty-printed) export in a ``.json``.
JSON_FILES = (*JSON_LINES, ".json")
#: OTLP protobuf: ExportTraceServiceRequest messages (``.otlp.pb`` ends with ``.pb``).
PROTOBUF = (".pb",)
#: Served runs (expeval/TREC, TREC Fair 2022).
RUN_FILES = (".txt", ".run", ".tsv", ".trec")


def with_compressed(plain: tuple[str, ...]) -> tuple[str, ...]:
    """The plain suffixes, then each compressed."""
    return plain + tuple(s + c for c in COMPRESSED for s in plain)
