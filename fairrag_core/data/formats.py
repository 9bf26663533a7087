"""The served-file formats the package reads, declared once: what each is called, its file suffixes, how its first
line gives it away, which loader reads it and whether it is a *log* (served answers with their rankings and
citations) or a *run* (sampled rankings only).

Everything that decides by a file's name reads this table: :func:`~fairrag_core.data.rag_log.load_served` (the CLI's
``audit-log`` and the app read through it), the shard folders of :mod:`fairrag_core.audit.log_shards`, the app's
uploader and data folder, and the kind a stored run's identity falls back to. A new served format is one
:class:`ServedFormat` here and its reader. The app takes only these suffixes; ``load_served`` (and so the command
line) still reads a name with none of them as a run, since TREC runs are often named without one.

A suffix names a *kind*, not always one format: a RAG log and an OTLP JSON trace export share ``.jsonl``/``.json``
(the log reader tells them apart by the first object; an OTLP protobuf export is ``.pb``), an expeval/TREC run and
a TREC Fair 2022 run share ``.txt``, ``.tsv``, … (the run reader tells them apart by the first line).
:func:`format_of` does the same sniffing when the file is there to read. Each suffix may also be gzipped
(:data:`COMPRESSED`); the readers inflate by the first bytes.

>>> format_of("week1.jsonl.gz").kind, format_of("run.tsv").name, kind_of("Export.JSON")
('log', 'trec', 'log')
>>> upload_types()
['jsonl', 'ndjson', 'json', 'gz', 'pb', 'txt', 'run', 'tsv', 'trec']
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from ..errors import DataFormatError
from .files import read_lines
from .otlp_proto import is_protobuf
from .phoenix import is_phoenix_spans
from .served import RunFormat
from .served import _detect as detect_format  # the run reader's own look at the first line
from .suffixes import COMPRESSED, JSON_FILES, JSON_LINES, PROTOBUF, RUN_FILES, with_compressed
from .traces import is_otlp_export, starts_like_export

__all__ = ["ServedFormat", "SERVED_FORMATS", "COMPRESSED", "served_suffixes", "log_suffixes", "run_suffixes",
           "shard_suffixes", "kind_of", "is_log", "formats_named", "format_of", "upload_types", "not_served_message",
           "RUN_READER"]



def _first_object(path: Path) -> object:
    """The JSON value on the file's first non-blank line (None when it is not JSON or cannot be read)."""
    try:
        lines = read_lines(path)
        try:
            first = next(lines, None)
        finally:
            lines.close()
        return None if first is None else json.loads(first[1])
    except (DataFormatError, ValueError):
        return None


def _run_format(path: Path) -> RunFormat | None:
    """The run format the run reader sees on the first non-blank line (None when it sees none)."""
    try:
        lines = read_lines(path)
        try:
            first = list(islice(lines, 1))
        finally:
            lines.close()
        return detect_format(first[0], path) if first else None
    except DataFormatError:
        return None


@dataclass(frozen=True)
class ServedFormat:
    """One served-file format.

    ``name`` is what a loaded :class:`~fairrag_core.data.rag_log.RagLog` records as its ``format`` (and, for a run,
    the :class:`~fairrag_core.data.served.RunFormat` value); ``kind`` is ``"log"`` or ``"run"``; ``plain_suffixes``
    are the suffixes before compression and ``shard_suffixes`` those of them a folder of shards of one log may hold
    (JSON Lines by name: a ``.json`` file may be one whole document); ``recognised_by`` says what the reader looks at;
    ``reader`` is the loader as ``module:function``; ``sniff`` answers whether a file's first line is this format."""

    name: str
    title: str
    kind: str
    plain_suffixes: tuple[str, ...]
    recognised_by: str
    reader: str
    sniff: Callable[[Path], bool]
    shard_suffixes: tuple[str, ...] = ()

    @property
    def suffixes(self) -> tuple[str, ...]:
        """Every suffix of this format: the plain ones, then each compressed."""
        return with_compressed(self.plain_suffixes)

    def load(self, path: str | os.PathLike, **options):
        """Read ``path`` with this format's reader (a run reader is told the format; ``options`` go to the reader)."""
        module, function = self.reader.split(":")
        read = getattr(importlib.import_module(module), function)
        return read(path, format=self.name, **options) if self.kind == "run" else read(path, **options)



#: The run reader that tells the run formats sharing a suffix apart itself (TREC, TREC Fair 2022), by their first line.
RUN_READER = "fairrag_core.data.served:load_run"

#: The table: every format a served file may have, in the order :func:`format_of` tries them (a name alone gives
#: the first of its kind).
SERVED_FORMATS: tuple[ServedFormat, ...] = (
    ServedFormat("jsonl", "RAG log (JSONL, one served answer per line)", "log", JSON_FILES,
                 'first object has "query_id" and "ranking"', "fairrag_core.data.rag_log:load_rag_log",
                 lambda p: isinstance(o := _first_object(p), dict) and "query_id" in o and "ranking" in o,
                 shard_suffixes=JSON_LINES),
    # Phoenix's span JSON (data/phoenix.py) is read by the same trace reader, as OTLP: the same traces, format "otlp"
    ServedFormat("otlp", "OTLP trace export (JSON, or protobuf ExportTraceServiceRequests in .pb), or Phoenix spans "
                 "(JSON Lines)", "log", (*JSON_FILES, *PROTOBUF),
                 'first object has "resourceSpans" (one per line or the whole file), or is a Phoenix span '
                 '("context" with "trace_id" and "span_id"); .pb by name',
                 "fairrag_core.data.rag_log:load_traces",
                 lambda p: is_protobuf(p) or starts_like_export(p) or is_otlp_export(o := _first_object(p))
                 or is_phoenix_spans(o)),
    ServedFormat(RunFormat.TREC.value, "expeval/TREC run (qid sample docno rank score run_id)", "run", RUN_FILES,
                 "six whitespace-separated fields", RUN_READER,
                 lambda p: _run_format(p) is RunFormat.TREC),
    ServedFormat(RunFormat.TREC_FAIR_2022.value, "TREC Fair 2022 run (id seq_no page_id)", "run", RUN_FILES,
                 "two or three tab-separated fields, or its header row", RUN_READER,
                 lambda p: _run_format(p) is RunFormat.TREC_FAIR_2022),
)


def _suffixes(kind: str | None = None, *, shards: bool = False) -> tuple[str, ...]:
    out: list[str] = []
    for fmt in SERVED_FORMATS:
        if kind is None or fmt.kind == kind:
            out += [s for s in (with_compressed(fmt.shard_suffixes) if shards else fmt.suffixes) if s not in out]
    return tuple(out)


def served_suffixes() -> tuple[str, ...]:
    """Every suffix of a served file (logs first, then runs)."""
    return _suffixes()


def log_suffixes() -> tuple[str, ...]:
    """The suffixes read as a log (a RAG log or an OTLP trace export)."""
    return _suffixes("log")


def run_suffixes() -> tuple[str, ...]:
    """The suffixes read as a served run."""
    return _suffixes("run")


def shard_suffixes() -> tuple[str, ...]:
    """The suffixes of the files a folder of shards of one log holds."""
    return _suffixes(shards=True)


def not_served_message(name: str | os.PathLike) -> str:
    """What a file with no served suffix is told (callers add the fix that applies to them)."""
    return f"{str(name)!r} is not a log or run file (the suffix must be one of {', '.join(served_suffixes())})"


def kind_of(name: str | os.PathLike) -> str:
    """``"log"`` or ``"run"``, by the name's suffix (case-insensitive).

    Raises:
        DataFormatError: the name has none of :func:`served_suffixes`; the message lists them.
    """
    lowered = Path(name).name.lower()
    for fmt in SERVED_FORMATS:
        if lowered.endswith(fmt.suffixes):
            return fmt.kind
    raise DataFormatError(not_served_message(name) + "; rename it")


def is_log(name: str | os.PathLike) -> bool:
    """Whether the name's suffix is a log's (False for a run's and for an unknown suffix)."""
    return Path(name).name.lower().endswith(log_suffixes())


def formats_named(path_or_name: str | os.PathLike) -> list[ServedFormat]:
    """The formats a name's suffix allows, of the kind its first matching format has (none for an unknown suffix);
    nothing is read."""
    lowered = Path(path_or_name).name.lower()
    kind = next((fmt.kind for fmt in SERVED_FORMATS if lowered.endswith(fmt.suffixes)), None)
    return [fmt for fmt in SERVED_FORMATS if fmt.kind == kind and lowered.endswith(fmt.suffixes)]


def format_of(path_or_name: str | os.PathLike) -> ServedFormat:
    """The format of a served file: among the formats with its suffix, the first whose ``sniff`` recognises the
    file's first line when the file is there to read, else the first of them (whose reader also reads the others
    with that suffix).

    Raises:
        DataFormatError: the name has none of :func:`served_suffixes` (the message lists them).
    """
    candidates = formats_named(path_or_name)
    if not candidates:
        kind_of(path_or_name)  # raises, listing the suffixes
    path = Path(path_or_name)
    if path.is_file():
        found = next((fmt for fmt in candidates if fmt.sniff(path)), None)
        if found is not None:
            return found
    return candidates[0]


def upload_types() -> list[str]:
    """The file types the app's uploader offers: the last part of every served suffix, without its dot (a browser
    matches one extension; the upload is then checked against the whole suffix with :func:`kind_of`)."""
    out: list[str] = []
    for suffix in served_suffixes():
        last = suffix.rsplit(".", 1)[-1]
        if last not in out:
            out.append(last)
    return out
