"""What a deployed system served: stochastic (or plain) runs in expeval's and TREC Fair 2022's formats.

Every loader stops at the first problem with the file, the line and the fix; nothing is half-loaded. Parsers
take text (``parse_run``, ``parse_judgments``) so an upload is checked exactly like a file on disk.

Run formats (:class:`RunFormat`)
--------------------------------
``trec`` — the run format of expeval (Diaz et al., "Evaluating Stochastic Rankings with Expected Exposure",
    CIKM 2020; github.com/diazf/expeval, ``data.read_topfile``): six whitespace-separated fields per line,
    ``qid sample docno rank score run_id``. The second column names the *sample* (one sampled ranking of the
    query), so a plain TREC run with ``Q0`` there is a run with one sample per query. Ranks are 1-based, distinct
    and without gaps within a sample; the order of lines does not matter; the score must be a number and is
    ignored by the metrics (as in expeval: ties in score are broken by the rank column), but kept
    (:attr:`QueryRankings.scores`) for the what-if replay of an audit. We also refuse what expeval lets through or
    crashes on: a document twice in one sample, more than one run id per file, ragged or blank lines.
``trec-fair-2022`` — TREC Fair Ranking 2022 (fair-trec/trec2022-fair-public, ``wptrec/trecdata.scan_runs``):
    tab-separated ``id seq_no page_id`` (Task 2, repeated rankings) or ``id page_id`` (Task 1, one ranking), an
    optional header row, rank = order of the lines within a sequence (so a sequence's lines must be consecutive).
    The run id is the file name without its extensions (TREC names runs after their files).

Gzipped files (``.gz``, found by their first bytes) are inflated as they are read, one line at a time
(:func:`~fairrag_core.data.files.read_lines`); ranks and grades are whole numbers in the digits 0-9.
:meth:`ServedRankings.from_lists` builds a run from Python lists (e.g. the rankings of a RAG log).

Judgments (qrels with group ids) are read by :mod:`fairrag_core.data.judgments`.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import itertools
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ..checks import max_work_cells
from ..errors import DataFormatError, InvalidParameterError
from .blocks import one_delimiter, padded_rows
from .columnar import fair_columns, trec_columns
from .fields import ascii_int
from .files import Digest, read_lines

__all__ = ["RunFormat", "QueryRankings", "ServedRankings", "load_run", "parse_run", "record_lines", "as_source"]

_FAIR_HEADERS = (("id", "seq_no", "page_id"), ("id", "page_id"))
_TREC_FIELDS = "'qid sample docno rank score run_id'"


class RunFormat(str, enum.Enum):
    """How a run file is laid out (see the module docstring)."""

    AUTO = "auto"
    TREC = "trec"
    TREC_FAIR_2022 = "trec-fair-2022"
    LISTS = "lists"  # built in memory with ServedRankings.from_lists


@dataclass(frozen=True)
class QueryRankings:
    """The sampled rankings a system served for one query.

    ``positions[s, i]`` is the index in ``doc_ids`` of the document at rank ``i + 1`` of sample ``s``; a sample
    shorter than the longest is padded with ``-1``. ``doc_ids`` lists the distinct documents in order of first
    appearance. ``scores[s, i]`` is the score the run file gave that document (``trec`` runs; NaN in the padding),
    None when the format has no scores (TREC Fair 2022, :meth:`ServedRankings.from_lists`).
    """

    query_id: str
    sample_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    positions: np.ndarray
    scores: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return len(self.sample_ids)

    @property
    def depth(self) -> int:
        """Length of the longest sample."""
        return int(self.positions.shape[1])

    def samples(self) -> list[list[str]]:
        """Each sample as a list of doc ids in rank order."""
        return [[self.doc_ids[i] for i in row if i >= 0] for row in self.positions]


@dataclass(frozen=True)
class ServedRankings:
    """A run: per query, the N sampled rankings a system served (N = 1 for a deterministic TREC run)."""

    run_id: str
    format: RunFormat
    queries: Mapping[str, QueryRankings]
    source: str = ""
    sha256: str = ""  # of the file's bytes, when read from a file or an upload

    def __post_init__(self) -> None:
        if not self.queries:
            raise InvalidParameterError("a run needs at least one query with a ranking")
        object.__setattr__(self, "queries", MappingProxyType(dict(self.queries)))

    def __len__(self) -> int:
        return len(self.queries)

    def __getitem__(self, query_id: str) -> QueryRankings:
        return self.queries[query_id]

    @property
    def query_ids(self) -> list[str]:
        return list(self.queries)

    @property
    def n_lines(self) -> int:
        """Ranked documents over all samples and queries (the lines of a TREC run)."""
        return int(sum((q.positions >= 0).sum() for q in self.queries.values()))

    @classmethod
    def from_lists(cls, rankings: Mapping[str, Sequence[Sequence[str]]], *, run_id: str = "run") -> ServedRankings:
        """A run from ``{query_id: [[doc, …] per sample]}``; samples are named ``1, 2, …``.

        >>> run = ServedRankings.from_lists({"q1": [["a", "b"], ["b", "a"], ["c"]]})
        >>> run["q1"].n_samples, run["q1"].doc_ids, run["q1"].samples()[2]
        (3, ('a', 'b', 'c'), ['c'])
        """
        if not isinstance(rankings, Mapping) or not rankings:
            raise InvalidParameterError("rankings must map each query id to a non-empty list of rankings")
        queries = {}
        for qid, samples in rankings.items():
            if isinstance(samples, str) or not samples:
                raise InvalidParameterError(f"query {qid!r}: give a list of rankings (lists of doc ids), "
                                            f"got {samples!r}")
            lists = []
            for s, sample in enumerate(samples, start=1):
                if isinstance(sample, str) or not sample:
                    raise InvalidParameterError(f"query {qid!r}, ranking {s}: give a non-empty list of doc ids")
                ids = [str(d) for d in sample]
                if len(set(ids)) != len(ids):
                    twice = next(d for d in ids if ids.count(d) > 1)
                    raise InvalidParameterError(f"query {qid!r}, ranking {s} lists {twice!r} twice; a ranking "
                                                "shows each document once")
                lists.append(ids)
            queries[str(qid)] = _query_rankings(str(qid), [str(s) for s in range(1, len(lists) + 1)], lists)
        return cls(run_id=run_id, format=RunFormat.LISTS, queries=queries, source="<lists>")

    def to_trec(self) -> str:
        """The run in expeval's format (``qid sample docno rank score run_id``; score = depth − rank + 1)."""
        return "".join(f"{qid} {sample} {doc} {r} {len(row) - r + 1} {self.run_id}\n" for qid, q in self.queries.items()
                       for sample, row in zip(q.sample_ids, q.samples()) for r, doc in enumerate(row, 1))


def _query_rankings(qid: str, sample_ids: list[str], lists: list[list[str]],
                    scores: list[list[float]] | None = None) -> QueryRankings:
    depth = max(len(r) for r in lists)
    limit = max_work_cells()
    if len(lists) * depth > limit:
        raise DataFormatError(f"query {qid!r} has {len(lists):,} samples and one of them is {depth:,} documents deep: "
                              f"a table of {len(lists) * depth:,} cells is more than the {limit:,} of the memory "
                              "budget (FAIRRAG_MAX_MEMORY_MB); cut the rankings to the depth you evaluate (e.g. the "
                              "top 100)")
    vocab: dict[str, int] = {}
    lengths = np.array([len(row) for row in lists])
    codes = np.array([vocab.setdefault(d, len(vocab)) for row in lists for d in row], dtype=np.int64)
    positions = padded_rows(codes, lengths, fill=-1, dtype=np.int64)
    table = None if scores is None else padded_rows(np.array([x for row in scores for x in row], dtype=np.float64),
                                                    lengths, fill=np.nan, dtype=np.float64)
    return QueryRankings(qid, tuple(sample_ids), tuple(vocab), positions, table)


# -- reading ---------------------------------------------------------------------------------------------------
def record_lines(source: Path | bytes, where: object, digest: Digest | None = None) -> Iterator[tuple[int, str]]:
    """The records of a run or qrels file (a path or bytes, read by :func:`~fairrag_core.data.files.read_lines`:
    one line at a time, gzip inflated). A blank line is refused unless only blank lines follow it, as expeval stops
    reading at a blank line; it is found as a gap in the line numbers, so nothing is held to look ahead."""
    expected = 1
    for lineno, raw in read_lines(source, where=where, digest=digest):
        if lineno != expected:
            raise DataFormatError("blank line; delete it (one record per line, expeval stops at blank lines too)",
                                  path=where, line=expected)
        expected = lineno + 1
        yield lineno, raw


def as_source(text: str | bytes | Path) -> Path | bytes:
    """What :func:`record_lines` reads: a path or bytes as they are, a text as its UTF-8 bytes."""
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text


def load_run(path: str | os.PathLike, *, format: RunFormat | str = RunFormat.AUTO,
             run_id: str | None = None) -> ServedRankings:
    """Read a run file (``trec`` with a sample column, or ``trec-fair-2022``; ``auto`` tells them apart).

    ``run_id`` names a run whose format has no run id column (TREC Fair 2022); by default it is the file name
    without its extensions, as TREC names runs.

    Raises:
        DataFormatError: naming the file, the line and the fix (wrong field count, non-numeric rank or score,
            a rank repeated or skipped in a sample, a document twice in a sample, several run ids, …).
    """
    path = Path(path)
    return parse_run(path, source=path, format=format, run_id=run_id or path.name.split(".")[0])


def parse_run(text: str | bytes | Path, *, source: object = "<run>", format: RunFormat | str = RunFormat.AUTO,
              run_id: str | None = None) -> ServedRankings:
    """Parse a run from its text or bytes (the content of an upload; gzipped bytes are inflated) or from a file;
    ``source`` names it in error messages and ``run_id`` names a TREC Fair 2022 run (the TREC format carries its
    own run id). The lines are read one at a time (:func:`record_lines`): the first tells the format, the rest
    stream into the parser.

    >>> run = parse_run("q1 s1 d1 1 2.0 sys\\nq1 s1 d2 2 1.0 sys\\nq1 s2 d2 1 5 sys\\n")
    >>> run.run_id, run.format.value, run["q1"].samples(), run.sha256[:8]
    ('sys', 'trec', [['d1', 'd2'], ['d2']], '12fa70e6')
    """
    try:
        fmt = RunFormat(format)
    except ValueError:
        raise InvalidParameterError(f"run format {format!r} is not one of: auto, trec, trec-fair-2022") from None
    if fmt is RunFormat.LISTS:
        raise InvalidParameterError("format 'lists' is for ServedRankings.from_lists, not for files")
    digest = hashlib.sha256()
    lines = record_lines(as_source(text), source, digest)
    first = next(lines, None)
    if first is None:
        raise DataFormatError("no rankings found; the file is empty", path=source)
    records = itertools.chain((first,), lines)
    if fmt is RunFormat.AUTO:
        fmt = _detect(first, source)
    fields = first[1].split("\t")
    if fmt is RunFormat.TREC:
        delimiter = one_delimiter(first[1], (6,))
        blocks = delimiter and functools.partial(trec_columns, delimiter=delimiter)
    else:  # one tab between plain fields
        blocks = one_delimiter(first[1], (2, 3), ("\t",)) and functools.partial(
            fair_columns, width=len(fields), header=tuple(fields) in _FAIR_HEADERS)
    if blocks:  # Arrow's block reader first; it hands anything it cannot vouch for to the lines below
        lines.close()
        digest = hashlib.sha256()
        read = blocks(as_source(text), where=source, digest=digest, max_cells=max_work_cells())
        if read is not None:
            queries = {q.query_id: QueryRankings(*q) for q in read.queries}
            return ServedRankings(run_id=read.run_id or run_id or "run", format=fmt, queries=queries,
                                  source=str(source), sha256=digest.hexdigest())
        digest = hashlib.sha256()  # read it again, line by line, for the error that names the line
        records = record_lines(as_source(text), source, digest)
    run = _parse_trec(records, source) if fmt is RunFormat.TREC else _parse_fair(records, source, run_id or "run")
    return replace(run, sha256=digest.hexdigest())


def _detect(first: tuple[int, str], source: object) -> RunFormat:
    lineno, raw = first
    tabbed = _tab_fields(raw)
    if tabbed in _FAIR_HEADERS or ("\t" in raw.strip() and len(tabbed) in (2, 3)):
        return RunFormat.TREC_FAIR_2022
    n = len(raw.split())
    if n == 6:
        return RunFormat.TREC
    if n in (3, 4):
        raise DataFormatError(f"{n} fields: this looks like qrels ('qid group docno rel' or 'qid docno rel'), not a "
                              "run; pass the qrels first and the run second", path=source, line=lineno)
    raise DataFormatError(f"cannot tell the run format from {n} field(s); use 6 whitespace-separated fields "
                          f"{_TREC_FIELDS} (expeval) or tab-separated 'id seq_no page_id' (TREC Fair 2022)",
                          path=source, line=lineno)


def _parse_trec(records: Iterable[tuple[int, str]], source: object) -> ServedRankings:
    run_id, run_line = None, 0
    samples: dict[tuple[str, str], dict[int, tuple[str, float, int]]] = {}  # (qid, sample) → rank → (doc, score, line)
    docs: dict[tuple[str, str], dict[str, int]] = {}   # (qid, sample) → doc → line
    for lineno, raw in records:
        fields = raw.split()
        if len(fields) != 6:
            hint = "; this looks like qrels, pass the qrels first and the run second" if len(fields) == 4 else ""
            raise DataFormatError(f"expected 6 fields {_TREC_FIELDS}, found {len(fields)}{hint}",
                                  path=source, line=lineno)
        qid, sample, doc, rank_text, score_text, rid = fields
        rank = (int(rank_text) if rank_text.isdigit() and rank_text.isascii() and len(rank_text) < 10
                else ascii_int(rank_text))  # the usual case first
        if rank is None:
            raise DataFormatError(f"rank {rank_text[:24]!r} is not a whole number of at most 18 digits 0-9; the 4th "
                                  "field is the rank (1, 2, …)", path=source, line=lineno)
        if rank < 1:
            raise DataFormatError(f"rank {rank} is below 1; ranks start at 1 (add 1 to every rank of a run that "
                                  "counts from 0)", path=source, line=lineno)
        try:
            score = float(score_text)
        except ValueError:
            raise DataFormatError(f"score {score_text!r} is not a number; the 5th field is the score (ignored, but "
                                  "it must be numeric)", path=source, line=lineno) from None
        if run_id is None:
            run_id, run_line = rid, lineno
        elif rid != run_id:
            raise DataFormatError(f"run id {rid!r} differs from {run_id!r} (line {run_line}); put one run per file",
                                  path=source, line=lineno)
        key = (qid, sample)
        at = samples.setdefault(key, {})
        if rank in at:
            raise DataFormatError(f"rank {rank} appears twice in sample {sample!r} of query {qid!r} (first on line "
                                  f"{at[rank][2]}); break the tie: each rank holds one document",
                                  path=source, line=lineno)
        seen = docs.setdefault(key, {})
        if doc in seen:
            raise DataFormatError(f"document {doc!r} appears twice in sample {sample!r} of query {qid!r} (first on "
                                  f"line {seen[doc]}); a ranking shows each document once", path=source, line=lineno)
        at[rank] = (doc, score, lineno)
        seen[doc] = lineno
    rows = {}
    for (qid, sample), at in samples.items():
        if max(at) != len(at):
            missing = next(r for r in range(1, len(at) + 1) if r not in at)
            raise DataFormatError(f"sample {sample!r} of query {qid!r} skips rank {missing} (it goes up to "
                                  f"{max(at)}); number the ranks 1, 2, 3, … without gaps",
                                  path=source, line=at[max(at)][2])
        ranked = [at[r] for r in range(1, len(at) + 1)]
        rows[qid, sample] = [doc for doc, _, _ in ranked], [score for _, score, _ in ranked]
    return ServedRankings(str(run_id), RunFormat.TREC, _by_query(rows), str(source))


def _parse_fair(records: Iterable[tuple[int, str]], source: object, run_id: str) -> ServedRankings:
    records = iter(records)
    first = next(records)
    header = _tab_fields(first[1])
    width = len(header)
    if header not in _FAIR_HEADERS:
        records = itertools.chain((first,), records)
    current: tuple[str, str] | None = None
    lists: dict[tuple[str, str], list[str]] = {}
    started: dict[tuple[str, str], int] = {}
    seen: dict[str, int] = {}
    what = "'id seq_no page_id'" if width == 3 else "'id page_id'"
    for lineno, raw in records:
        fields = _tab_fields(raw)
        if len(fields) != width:
            if len(fields) == 1 and len(raw.split()) > 1:
                raise DataFormatError(f"fields are not tab-separated; the TREC Fair 2022 format is {what} with a "
                                      "tab between fields", path=source, line=lineno)
            raise DataFormatError(f"expected {width} tab-separated fields {what} like the lines above, found "
                                  f"{len(fields)}", path=source, line=lineno)
        if any(not f for f in fields):
            raise DataFormatError(f"empty field; each line is {what}", path=source, line=lineno)
        qid, doc = fields[0], fields[-1]
        key = (qid, fields[1] if width == 3 else "1")
        if key != current:
            if key in lists:
                raise DataFormatError(f"sequence {key[1]!r} of query {qid!r} resumes here after other lines (it "
                                      f"started on line {started[key]}); the lines of one sequence must be "
                                      "consecutive, since their order is the ranking", path=source, line=lineno)
            current, seen = key, {}
            lists[key], started[key] = [], lineno
        if doc in seen:
            raise DataFormatError(f"page {doc!r} appears twice in sequence {key[1]!r} of query {qid!r} (first on "
                                  f"line {seen[doc]}); a ranking shows each page once", path=source, line=lineno)
        seen[doc] = lineno
        lists[key].append(doc)
    if not lists:
        raise DataFormatError("only a header; add one line per ranked document", path=source)
    return ServedRankings(run_id, RunFormat.TREC_FAIR_2022, _by_query({k: (v, None) for k, v in lists.items()}),
                          str(source))


def _tab_fields(raw: str) -> tuple[str, ...]:
    return tuple(f.strip() for f in raw.strip().split("\t"))


def _by_query(rows: Mapping[tuple[str, str], tuple[list[str], list[float] | None]]) -> dict[str, QueryRankings]:
    """The rankings per query from ``{(qid, sample): (docs in rank order, their scores or None)}``."""
    by_query: dict[str, tuple[list[str], list[list[str]], list]] = {}
    for (qid, sample), (docs, scores) in rows.items():
        ids, lists, scored = by_query.setdefault(qid, ([], [], []))
        ids.append(sample)
        lists.append(docs)
        scored.append(scores)
    return {qid: _query_rankings(qid, ids, lists, None if scored[0] is None else scored)
            for qid, (ids, lists, scored) in by_query.items()}
