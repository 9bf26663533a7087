"""Judgments to audit served rankings with: graded qrels with group ids, as expeval reads them.

expeval's qrels (Diaz et al., CIKM 2020; github.com/diazf/expeval, ``data.read_qrels``): ``qid gid[|gid…] docno
rel`` or ``qid docno rel`` (then the group is ``-1``, expeval's "no group label"), whitespace-separated. ``rel`` is
an integer grade; ``-1`` marks an unjudged document. The group ids are separated by ``|`` (expeval's README says
``,`` but its code splits on ``|``; we refuse ``,`` so that a file cannot mean two things). Our TREC qrels
``qid 0 docno rel`` are the same format with group ``0``. :func:`judgments_from_collection` takes the qrels of a
:class:`~fairrag_core.data.Collection` and the group of every document from its ``provider`` or one fairness
category. Like every loader, these stop at the first problem with the file, the line and the fix.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..checks import MAX_GRADE
from ..errors import DataFormatError, InvalidParameterError
from .blocks import SPACE, Unchecked, numbers_of, one_delimiter, parse_block, read_ahead, text_blocks
from .collection import UNKNOWN_GROUP, Collection
from .fields import ascii_int
from .files import Digest
from .served import as_source, record_lines

__all__ = ["NO_GROUP", "Judgments", "load_judgments", "parse_judgments", "judgments_from_collection",
           "judgment_columns"]

NO_GROUP = "-1"  # expeval's group id for a document without a group label


@dataclass(frozen=True)
class Judgments:
    """Graded relevance and group ids per (query, document), in file order.

    ``relevance[qid][doc]`` is the grade (``-1`` = unjudged); ``groups[qid][doc]`` the document's group ids for
    that query. ``doc_groups`` gives groups for documents a query's lines do not label (filled from a collection
    for every document), used by AWRF; expeval's group mode only uses ``groups``.
    """

    relevance: Mapping[str, Mapping[str, int]]
    groups: Mapping[str, Mapping[str, tuple[str, ...]]]
    source: str = ""
    doc_groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sha256: str = ""  # of the qrels file's bytes (empty for judgments built from a collection)

    def __post_init__(self) -> None:
        if not self.relevance:
            raise InvalidParameterError("judgments need at least one judged (query, document) pair")
        for qid, judged in self.relevance.items():
            labelled = self.groups.get(qid, {})
            for doc, grade in judged.items():
                if (isinstance(grade, bool) or not isinstance(grade, int | np.integer)
                        or not -1 <= grade <= MAX_GRADE):
                    raise InvalidParameterError(f"grade of ({qid}, {doc}) must be an integer from -1 (unjudged) to "
                                                f"{MAX_GRADE:,}, got {grade!r}")
                if doc not in labelled:
                    raise InvalidParameterError(f"({qid}, {doc}) has no group ids; use ('{NO_GROUP}',) for none")

    @property
    def query_ids(self) -> list[str]:
        return list(self.relevance)

    def group_of(self, query_id: str, doc_id: str) -> tuple[str, ...]:
        """The groups of ``doc_id`` for ``query_id``: the query's label, else ``doc_groups``, else Unknown."""
        found = self.groups.get(query_id, {}).get(doc_id) or self.doc_groups.get(doc_id)
        return found or (UNKNOWN_GROUP,)

    def to_expeval(self) -> str:
        """The judgments in expeval's qrels format ``qid gid[|gid…] docno rel``."""
        return "".join(f"{q} {'|'.join(self.groups[q][d])} {d} {g}\n"
                       for q, judged in self.relevance.items() for d, g in judged.items())


def load_judgments(path: str | os.PathLike) -> Judgments:
    """Read expeval qrels (``qid gid[|gid…] docno rel`` or ``qid docno rel``) or TREC qrels (``qid 0 docno rel``).

    Raises:
        DataFormatError: naming the file, the line and the fix.
    """
    path = Path(path)
    return parse_judgments(path, source=path)


def parse_judgments(text: str | bytes | Path, *, source: object = "<qrels>") -> Judgments:
    """Parse judgments from their text or bytes (gzipped bytes are inflated) or from a file, one line at a time;
    ``source`` names them in error messages. A grade is a whole number in the digits 0-9 from -1 (unjudged) to
    :data:`~fairrag_core.checks.MAX_GRADE` (1,000,000).

    >>> j = parse_judgments("q1 1|2 d1 2\\nq1 d2 0\\nq1 0 d3 -1\\n")
    >>> dict(j.relevance["q1"]), dict(j.groups["q1"])
    ({'d1': 2, 'd2': 0, 'd3': -1}, {'d1': ('1', '2'), 'd2': ('-1',), 'd3': ('0',)})
    """
    digest = hashlib.sha256()
    delimiter = _four_fields(as_source(text), source)
    if delimiter is not None:  # Arrow's block reader first; it hands anything it cannot vouch for to the lines below
        read = judgment_columns(as_source(text), where=source, delimiter=delimiter, digest=digest)
        if read is not None:
            return Judgments(*read, str(source), sha256=digest.hexdigest())
        digest = hashlib.sha256()
    relevance: dict[str, dict[str, int]] = {}
    groups: dict[str, dict[str, tuple[str, ...]]] = {}
    lines: dict[tuple[str, str], int] = {}
    for lineno, raw in record_lines(as_source(text), source, digest):
        fields = raw.split()
        if len(fields) == 4:
            qid, gid_text, doc, rel = fields
        elif len(fields) == 3:
            (qid, doc, rel), gid_text = fields, NO_GROUP
        else:
            hint = ("; this looks like a run, pass the qrels first and the run second" if len(fields) == 6 else "")
            raise DataFormatError(f"expected 4 fields 'qid group docno rel' (or 3: 'qid docno rel'), found "
                                  f"{len(fields)}{hint}", path=source, line=lineno)
        grade = _grade(rel)
        if grade is None:
            raise DataFormatError(f"relevance {rel[:24]!r} is not a whole number from -1 to {MAX_GRADE:,} in the "
                                  "digits 0-9; use a grade ≥ 0 (TREC grades are small, e.g. 0-4), or -1 for unjudged",
                                  path=source, line=lineno)
        gids = _group_ids(gid_text)
        if gids is None:
            fix = ("uses ','; separate group ids with '|' (expeval's code splits on '|')" if "," in gid_text
                   else "has an empty group id; write ids like 1|2")
            raise DataFormatError(f"group field {gid_text!r} {fix}", path=source, line=lineno)
        if (qid, doc) in lines:
            raise DataFormatError(f"duplicate judgment for ({qid}, {doc}) (first on line {lines[qid, doc]}); keep "
                                  "one line per pair", path=source, line=lineno)
        lines[qid, doc] = lineno
        relevance.setdefault(qid, {})[doc] = grade
        groups.setdefault(qid, {})[doc] = gids
    if not relevance:
        raise DataFormatError("no judgments found; the file is empty", path=source)
    return Judgments(relevance, groups, str(source), sha256=digest.hexdigest())


def _grade(text: str) -> int | None:
    """A grade from -1 to :data:`~fairrag_core.checks.MAX_GRADE` in the digits 0-9; None otherwise."""
    grade = int(text) if text.isdigit() and text.isascii() and len(text) < 7 else ascii_int(text)  # the usual case
    return grade if grade is not None and -1 <= grade <= MAX_GRADE else None


def _group_ids(text: str) -> tuple[str, ...] | None:
    """The distinct group ids of a group field (``1|2``); None when it uses ``,`` or holds an empty id."""
    ids = tuple(text.split("|"))
    return None if "," in text or not all(ids) else tuple(dict.fromkeys(ids))


def _four_fields(source: Path | bytes, where: object) -> str | None:
    """The delimiter of qrels whose first line is four fields split by one space or one tab; None otherwise."""
    lines = record_lines(source, where)
    first = next(lines, None)
    lines.close()
    return None if first is None else one_delimiter(first[1], (4,))


def judgments_from_collection(collection: Collection, *, groups_by: str = "provider") -> Judgments:
    """Judgments from a collection's qrels, each document's group being its ``provider`` or its group in one
    fairness category (``groups_by="region"``; documents without one are ``Unknown``).

    >>> from fairrag_core.data import load_collection
    >>> j = judgments_from_collection(load_collection("running-shoes"))
    >>> len(j.query_ids) > 0 and len(j.doc_groups) == 92
    True
    """
    if not collection.qrels:
        raise InvalidParameterError(f"collection {collection.name!r} has no qrels; add qrels.txt to judge a run")
    labels = collection.owners(groups_by)
    doc_groups = {d.doc_id: (str(g),) for d, g in zip(collection.documents, labels)}
    relevance = {q: dict(j) for q, j in collection.qrels.items()}
    groups = {q: {d: doc_groups[d] for d in j} for q, j in collection.qrels.items()}
    return Judgments(relevance, groups, f"collection {collection.name} (groups: {groups_by})", doc_groups,
                     sha256=collection.sha256)


# -- the block reader (large qrels) -------------------------------------------------------------------------
def judgment_columns(source: Path | bytes, *, where: object, delimiter: str = " ", digest: Digest | None = None
                     ) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, tuple[str, ...]]]] | None:
    """Qrels of four fields (``qid group docno rel``) read in blocks into ``(relevance, groups)`` as
    :class:`Judgments` holds them, in file order; None sends them to the line-by-line parser (3-field lines, mixed
    widths, an odd grade or group field, a pair judged twice, anything this does not check)."""
    relevance: dict[str, dict[str, int]] = {}
    groups: dict[str, dict[str, tuple[str, ...]]] = {}
    pairs = 0
    parsed = {"rel": ({}, _grade), "group": ({}, _group_ids)}  # field → (value → what it says or None, parser)
    names = ("qid", "group", "doc", "rel")
    blocks = read_ahead(text_blocks(source, where, digest))
    try:
        for block in blocks:
            table = parse_block(block, delimiter, names, ())
            if table is None:
                return None
            for name in names:
                chunks = table.column(name).chunks
                values = chunks[0].dictionary.to_pylist() if chunks else []
                if name != "rel" and (SPACE.search("".join(values)) or not all(values)):
                    return None
                if name in parsed:
                    known, parse = parsed[name]
                    known.update((v, parse(v)) for v in values if v not in known)
                    if any(known[v] is None for v in values):
                        return None
            qids, gids, docs, rels = (_strings(table.column(name)) for name in names)
            grades, group_ids = parsed["rel"][0], parsed["group"][0]
            for qid, gid, doc, rel in zip(qids, gids, docs, rels):
                if qid not in relevance:
                    relevance[qid], groups[qid] = {}, {}
                relevance[qid][doc] = grades[rel]
                groups[qid][doc] = group_ids[gid]
            pairs += len(qids)
            del table
    except Unchecked:
        return None
    finally:
        blocks.close()
    if not pairs or sum(len(j) for j in relevance.values()) != pairs:
        return None  # empty, or a (query, document) pair judged twice: the line parser says where
    return relevance, groups


def _strings(column) -> list[str]:
    """A dictionary-encoded Arrow column as Python strings, one per line (through numpy: Arrow's ``to_pylist``
    makes a scalar object per value and is ten times slower)."""
    out: list[str] = []
    for chunk in column.chunks:
        values = np.array(chunk.dictionary.to_pylist(), dtype=object)
        out.extend(values[numbers_of(chunk.indices, np.int32)].tolist())
    return out
