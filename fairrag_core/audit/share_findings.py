"""Findings of one audited system: per provider or group, is its share of retrieval exposure, and of citations,
different from its fair share beyond noise?

:func:`share_table` gathers the per-query, per-group exposure (retrieval ε, Kim & Diaz 2025 Eq. 5; attributed
ε^a, §3.4; fair ε*, Eq. 6); :func:`share_findings` tests each group's gap with :func:`~fairrag_core.audit.
share_gaps.gap_family` (delta-method bootstrap-t over queries, Holm over the testable groups, "insufficient
evidence" where no test could reject) and writes a :class:`~fairrag_core.audit.findings.Finding` per group and a
headline per family; :func:`ledger_findings` does both from an audit's ledger. With the same seed the intervals
printed equal :func:`~fairrag_core.audit.query_bootstrap.ledger_intervals`.

Calibration (``benchmarks/calibrate_findings.py``, ``docs/findings.md``), by simulation of audits the size of the
demo log (20 queries, 200 lines, 14 providers): a fair system gets an under- or over-exposed finding in 4.0 %
[3.3, 5.0] of audits and an under- or over-cited one in 4.3 % [3.5, 5.3]; a provider with 7 of the 92 documents
under-exposed by half is flagged in 82.5 % [80.0, 84.7] of them, one with 6 in 70.2 % [67.3, 73.0].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..checks import MAX_RESAMPLES, check_at_most, check_open_unit, check_positive_int
from ..data import Collection
from ..errors import InvalidParameterError
from ..metrics.bootstrap import resample_counts
from ..metrics.intervals import ConfidenceInterval
from ..seeds import SeedLike
from .findings import (
    SERIOUS_RATIO,
    Direction,
    Finding,
    FindingKind,
    Verdict,
    noise_verdict,
    severity_of,
    sort_findings,
)
from .query_bootstrap import check_share_resamples
from .share_gaps import (
    ATTRIBUTED_TAILS,
    BOOTSTRAP_T,
    NOT_AT_STAKE,
    RETRIEVAL_TAILS,
    GroupGap,
    alpha_of,
    gap_family,
    test_streams,
)
from .wording import group_noun, p_pair, percent, points, share_text

__all__ = ["ShareTable", "share_table", "share_findings", "ledger_findings"]


# -- formatting ----------------------------------------------------------------------------------------------

def _share_text(ci: ConfidenceInterval | None, point: float) -> str:
    if ci is None:
        return "0 % (not once)" if point == 0 else share_text(point)
    return share_text(ci.estimate, ci.low, ci.high)


def _n_text(n_queries: int, n_lines: int | None, unit: str = "line") -> str:
    """``40 queries, 200 lines`` (``unit``: what one of the lines is, ``request`` for a trace export)."""
    q = f"{n_queries} quer{'y' if n_queries == 1 else 'ies'}"
    return q if n_lines is None else f"{q}, {n_lines} {unit}{'' if n_lines == 1 else 's'}"


def _names(items: Sequence[str], limit: int = 5) -> str:
    shown = list(items[:limit])
    more = len(items) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


# -- share tables --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ShareTable:
    """Per-query, per-group exposure of one audited system: the matrices every share finding is computed from.

    ``retrieval``, ``target`` and ``attributed`` are ``(queries, groups)`` sums of ε, ε* and ε^a over each group's
    documents (``attributed`` None when not measured); ``lines`` the lines (served or sampled rankings) per query,
    or None when unknown; ``unit`` what one of them is in sentences (``line``; ``request`` for a trace export, whose
    file lines are export batches). Build one with :func:`share_table` or directly from arrays (simulations, tests).
    """

    groups: tuple[str, ...]
    query_ids: tuple[str, ...]
    retrieval: np.ndarray
    target: np.ndarray
    attributed: np.ndarray | None = None
    lines: np.ndarray | None = None
    by: str = "provider"
    unit: str = "line"

    def __post_init__(self) -> None:
        shape = (len(self.query_ids), len(self.groups))
        for name in ("retrieval", "target", "attributed"):
            value = getattr(self, name)
            if value is None:
                continue
            arr = np.asarray(value, dtype=np.float64)
            if arr.shape != shape or not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise InvalidParameterError(f"{name} must be a finite, non-negative (queries × groups) = {shape} "
                                            f"array, got shape {arr.shape}")
            object.__setattr__(self, name, arr)
        if self.lines is not None:
            lines = np.asarray(self.lines, dtype=np.float64)
            if lines.shape != shape[:1] or np.any(lines < 0) or not np.all(np.isfinite(lines)):
                raise InvalidParameterError(f"lines must hold one non-negative count per query ({shape[0]})")
            object.__setattr__(self, "lines", lines)

    @property
    def n_lines(self) -> int | None:
        """All lines audited, or None when unknown."""
        return None if self.lines is None else round(float(self.lines.sum()))


def _lines_vector(lines: int | Mapping[str, int] | pd.Series | None, query_ids: Sequence[str]) -> np.ndarray | None:
    if lines is None:
        return None
    if isinstance(lines, int | np.integer):
        return np.full(len(query_ids), float(check_positive_int(int(lines), "lines", hint="rankings per query")))
    mapping = lines.to_dict() if isinstance(lines, pd.Series) else dict(lines)
    missing = [q for q in query_ids if q not in mapping]
    if missing:
        raise InvalidParameterError(f"lines has no count for {len(missing)} audited quer(ies), e.g. {missing[:3]}; "
                                    "pass one count per query (a log audit's table['lines'] indexed by query_id)")
    return np.array([float(mapping[q]) for q in query_ids])


_ATTRIBUTED_COLUMNS = ("attributed_exposure", "cited_exposure", "entailed_exposure")


def share_table(documents: pd.DataFrame, collection: Collection, *, by: str = "provider",
                attributed_column: str | None = None, lines: int | Mapping[str, int] | pd.Series | None = None,
                targets_only: bool = True, unit: str = "line") -> ShareTable:
    """The per-query, per-group matrices of one system's documents table.

    Args:
        documents: one row per (query, document) of one system (one α: filter a sweep's ``alpha`` first) with
            ``query_id``, ``doc_id``, ``exposure``, ``target_exposure`` and attributed columns (a log audit's
            ``run.documents``, a sweep's ``documents``).
        collection: where the providers and groups come from (documents without a group fall in ``"Unknown"``).
        by: ``"provider"`` or one of ``collection.categories()``.
        attributed_column: the attributed exposure to use; default the first measured of ``attributed_exposure``,
            ``cited_exposure``, ``entailed_exposure`` (None when none is).
        lines: lines (served or sampled rankings) per query: one int for all, or a mapping query_id → count.
        targets_only: keep only the queries with a fair target (relevance labels), so that every share covers the
            same queries as the fair share it is compared with.
        unit: what one of ``lines`` is, in the findings' sentences (``request`` for a trace export).

    Groups are sorted and queries kept in order of first appearance, as in
    :func:`~fairrag_core.audit.query_bootstrap.ledger_intervals`.
    """
    for column in ("query_id", "doc_id", "exposure"):
        if column not in documents:
            raise InvalidParameterError(f"the documents table needs the column {column!r} (a log audit's "
                                        "run.documents or a sweep's documents, one system at a time)")
    if "alpha" in documents and documents["alpha"].nunique() > 1:
        raise InvalidParameterError("the documents hold several α; pass one system: documents[documents.alpha == a]")
    group_of = dict(zip(collection.doc_ids, collection.owners(by)))
    groups = documents["doc_id"].map(group_of)
    if groups.isna().any():
        raise InvalidParameterError("some doc_ids are not in the collection; audit with the collection the run used")
    if attributed_column is None:
        attributed_column = next((c for c in _ATTRIBUTED_COLUMNS
                                  if c in documents and documents[c].notna().any()), None)
    elif attributed_column not in documents or not documents[attributed_column].notna().any():
        raise InvalidParameterError(f"{attributed_column!r} is not measured in these documents; use one of "
                                    f"{[c for c in _ATTRIBUTED_COLUMNS if c in documents] or 'none'}")
    target = (documents["target_exposure"] if "target_exposure" in documents
              else pd.Series(np.nan, index=documents.index))
    keep = np.ones(len(documents), dtype=bool)
    if targets_only:
        with_target = target.notna().groupby(documents["query_id"]).transform("any") & (
            target.fillna(0.0).groupby(documents["query_id"]).transform("sum") > 0)
        keep = with_target.to_numpy(bool)
    rows = documents[keep]
    group_codes, group_names = pd.factorize(groups[keep], sort=True)
    query_codes, query_ids = pd.factorize(rows["query_id"])
    n_q, n_g = len(query_ids), len(group_names)

    def matrix(values: pd.Series) -> np.ndarray:
        out = np.zeros((n_q, n_g))
        np.add.at(out, (query_codes, group_codes), values.fillna(0.0).to_numpy(dtype=np.float64))
        return out

    query_list = tuple(str(q) for q in query_ids)
    return ShareTable(groups=tuple(str(g) for g in group_names), query_ids=query_list,
                      retrieval=matrix(rows["exposure"]), target=matrix(target[keep]),
                      attributed=matrix(rows[attributed_column]) if attributed_column else None,
                      lines=_lines_vector(lines, query_list), by=by, unit=unit)


# -- the share test ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Family:
    """The words of one family of share tests (each group against its fair share, over the queries in which it
    has a fair share or was shown)."""

    metric: str                 # "retrieval share − fair share"
    under: FindingKind
    over: FindingKind
    under_text: str             # "is under-exposed in retrieval"
    over_text: str
    of_what: str                # "of retrieval exposure"
    share: str                  # "retrieval share"
    title: str                  # "Retrieval exposure"
    tails: str                  # RETRIEVAL_TAILS or ATTRIBUTED_TAILS
    # what the share is compared with, in words (the label-free families say "its share of retrieval exposure")
    vs: str = "a fair share"                            # "… of citations vs a fair share of 7.6 %"
    its: str = "its fair share"
    their: str = "their fair share"
    stake: str = "in which it has a fair share or was shown"
    factor: str = ""            # "for how often it is shown": print the ratio of the two shares (7.0× under-cited)
    never: str = ""             # the factor's words for a share of 0 ("never cited, though shown")


def _factor_text(r: GroupGap, fam: _Family, below: bool) -> str:
    """``7.0× under-cited for how often it is shown; `` (the reference share over the share, or its inverse), or
    "" when the family prints no factor."""
    if not fam.factor:
        return ""
    if below and r.point_value <= 0:
        return f"{fam.never}; "
    ratio = r.point_reference / r.point_value if below else r.point_value / r.point_reference
    kind = fam.under if below else fam.over
    return f"{ratio:.1f}× {kind.value} {fam.factor}; "


def _group_findings(results: list[GroupGap], fam: _Family, *, by: str, level: float, n_queries: int,
                    n_lines: int | None, serious: float, unit: str = "line") -> list[Finding]:
    alpha = alpha_of(level)
    m = sum(r.testable for r in results)
    noun, tested = group_noun(by), f"{m} {group_noun(by, plural=m != 1)}"
    n_text = _n_text(n_queries, n_lines, unit)
    correction = f"Holm over {tested}"
    common = {"metric": fam.metric, "level": level, "alpha": alpha, "n_queries": n_queries, "n_lines": n_lines,
              "family": f"{fam.metric}, by {by}", "test": BOOTSTRAP_T[fam.tails]}
    out, flagged, insufficient, margin = [], [], [], []
    for r in results:
        if r.reason == NOT_AT_STAKE:
            continue
        numbers = r.numbers()
        share = _share_text(r.value, r.point_value)
        fair = _share_text(r.reference, r.point_reference)
        if not r.testable:
            informative = (f", at most {r.n_informative:.1f} informative"
                           if r.n_informative < r.n_at_stake - 0.05 else "")
            insufficient.append(f"{r.group} (n = {r.n_at_stake}{informative})")
            text = (f"{r.group}: insufficient evidence (n = {r.n_at_stake} quer{'y' if r.n_at_stake == 1 else 'ies'} "
                    f"{fam.stake}) to tell its {fam.share} of {share} from {fam.its} of {fair}: {r.reason}")
            out.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, r.group, text=text, detail=True,
                               **numbers, **{**common, "test": ""}))
            continue
        stats_text = (f"gap {points(numbers['estimate'], numbers['low'], numbers['high'], zero_sign=True)}; "
                      f"{p_pair(r.p_value, r.p_adjusted, f'over {tested}')}")
        verdict = noise_verdict(r.p_adjusted <= alpha, numbers["low"], numbers["high"])
        if verdict is Verdict.BEYOND:
            below = r.point_value < r.point_reference
            kind, verb = (fam.under, fam.under_text) if below else (fam.over, fam.over_text)
            flagged.append(f"{r.group} ({kind.value})")
            text = (f"{r.group} {verb}: {share} {fam.of_what} vs {fam.vs} of {fair} ("
                    f"{_factor_text(r, fam, below)}{stats_text}; {n_text})")
            out.append(Finding(kind, r.group, text=text,
                               severity=severity_of(True, numbers["relative"], serious=serious),
                               direction=Direction.BELOW if below else Direction.ABOVE, p_value=r.p_value,
                               p_adjusted=r.p_adjusted, correction=correction, **numbers, **common))
        else:
            if verdict is Verdict.MARGIN:
                margin.append(r.group)
            kind = FindingKind.WITHIN_NOISE if verdict is Verdict.WITHIN else FindingKind.AT_THE_MARGIN
            text = f"{r.group}: {fam.share} {share} vs {fam.vs} of {fair}, {verdict.value} ({stats_text})"
            out.append(Finding(kind, r.group, text=text, p_value=r.p_value, p_adjusted=r.p_adjusted,
                               correction=correction, detail=True, **numbers, **common))
    too_little = (f"; too little evidence to tell for {len(insufficient)} "
                  f"{group_noun(by, plural=len(insufficient) != 1)}: {_names(insufficient)}" if insufficient else "")
    too_little += f"; at the margin of noise: {_names(margin)}" if margin else ""
    every = f"every {noun}"
    if m == 0:
        text = f"Too little evidence to test any {noun}'s {fam.share} against {fam.its} ({n_text}){too_little}"
        out.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, every, text=text, **{**common, "test": ""}))
    elif not flagged:
        text = (f"No {noun}'s {fam.share} differs from {fam.its} beyond noise ({tested} tested, Holm-adjusted "
                f"at {percent(alpha)}; {n_text}){too_little}")
        out.append(Finding(FindingKind.NO_DIFFERENCE, every, text=text, correction=correction, **common))
    else:
        worst = min((f.severity for f in out if f.kind in (fam.under, fam.over)), key=lambda s: s.rank)
        verb = f"differs from {fam.its}" if len(flagged) == 1 else f"differ from {fam.their}"
        text = (f"{fam.title}: {len(flagged)} of {tested} tested {verb} beyond noise — "
                f"{_names(flagged, limit=8)} (Holm-adjusted at {percent(alpha)}; {n_text}){too_little}")
        out.append(Finding(FindingKind.HEADLINE, every, text=text, severity=worst, correction=correction, **common))
    return out


_RETRIEVAL = _Family("retrieval share − fair share", FindingKind.UNDER_EXPOSED, FindingKind.OVER_EXPOSED,
                     "is under-exposed in retrieval", "is over-exposed in retrieval", "of retrieval exposure",
                     "retrieval share", "Retrieval exposure", RETRIEVAL_TAILS)


def _attributed_family(label: str) -> _Family:
    return _Family("attributed share − fair share", FindingKind.UNDER_CITED, FindingKind.OVER_CITED,
                   "is under-cited", "is over-cited", f"of {label}", f"share of {label}",
                   label[:1].upper() + label[1:], ATTRIBUTED_TAILS)


def share_findings(table: ShareTable, *, attributed_label: str = "citations", level: float = 0.95,
                   n_boot: int = 1000, n_test: int | None = None, seed: SeedLike = None,
                   serious: float = SERIOUS_RATIO) -> list[Finding]:
    """Findings of one audited system from its :class:`ShareTable`: retrieval − target and, when measured,
    attributed − target, per group (module docstring: the test, Holm, insufficient evidence, severity).

    Args:
        table: the per-query, per-group matrices (:func:`share_table`).
        attributed_label: what the attributed exposure is, in words (``"citations"``; ``"entailing documents"``
            for an NLI judge).
        level: interval level; the test's α is ``1 − level``.
        n_boot: percentile-interval resamples (as the ledger's intervals).
        n_test: bootstrap-t resamples; None: ``max(2000, 20 m / α)``, so that p-values reach well below α/m.
        seed: int, Generator or None. With an int, the intervals equal
            :func:`~fairrag_core.audit.query_bootstrap.ledger_intervals` with the same seed on the same queries.
        serious: the relative effect from which a significant finding is SERIOUS.

    Returns:
        Findings, most severe first: per family a HEADLINE (some group differs), NO_DIFFERENCE (none does) or
        INSUFFICIENT_EVIDENCE (none can be tested); per group UNDER_/OVER_EXPOSED, UNDER_/OVER_CITED, and as
        details WITHIN_NOISE or INSUFFICIENT_EVIDENCE.
    """
    level = check_open_unit(level, "level", hint="e.g. 0.95")
    n_boot = check_at_most(n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                           fix="1,000 resamples are the usual number")
    n_q = len(table.query_ids)
    if n_q < 2 or table.target.sum() <= 0:
        why = ("no audited query has a fair target (relevance labels)" if table.target.sum() <= 0
               else "one query: no test over queries (audit two or more queries)")
        return [Finding(FindingKind.INSUFFICIENT_EVIDENCE, f"every {group_noun(table.by)}",
                        "retrieval share − fair share", f"Insufficient evidence to test any share: {why}",
                        level=level, alpha=alpha_of(level), n_queries=n_q, n_lines=table.n_lines)]
    check_share_resamples(n_boot, n_q, len(table.groups))  # the test itself holds what the budget allows at once
    boot_seed, test_rng = test_streams(seed)
    counts = resample_counts(n_q, n_boot, boot_seed)  # one set of resamples for every share, as the ledger's
    families = [(table.retrieval, _RETRIEVAL)]
    if table.attributed is not None and table.attributed.sum() > 0:
        families.append((table.attributed, _attributed_family(attributed_label)))
    out = []
    for x, words in families:
        results = gap_family(x, table.target, table.groups, counts=counts, test_rng=test_rng, lines=table.lines,
                              level=level, n_test=n_test, tails=words.tails)
        out += _group_findings(results, words, by=table.by, level=level, n_queries=n_q, n_lines=table.n_lines,
                               serious=serious, unit=table.unit)
    return sort_findings(out)


def ledger_findings(documents: pd.DataFrame, collection: Collection, *, by: str = "provider",
                    attributed_column: str | None = None, attributed_label: str | None = None,
                    lines: int | Mapping[str, int] | pd.Series | None = None, level: float = 0.95,
                    n_boot: int = 1000, n_test: int | None = None, seed: SeedLike = None,
                    serious: float = SERIOUS_RATIO, unit: str = "line") -> list[Finding]:
    """Findings of an audit's exposure ledger: which providers (or groups) are under- or over-exposed in retrieval
    and in citations, beyond noise, against their fair share.

    ``documents`` is one system's per-(query, document) table (a log audit's ``run.documents``; a sweep's
    ``documents`` at one α); the queries without a fair target are left out, so that shares and fair shares cover
    the same queries. ``lines`` (per query, e.g. a log audit's ``run.table.set_index("query_id")["lines"]``, or the
    sweep's N) enables the absence bound of the insufficient-evidence rule. ``attributed_label`` defaults to
    "citations" for logged citations and attributed exposure, "entailing documents" for the judge; ``unit`` names
    one of the lines in sentences (``request`` for a trace export). The rest as :func:`share_findings`.

    >>> from fairrag_core import load_collection
    >>> shoes = load_collection("running-shoes")
    >>> a, b = shoes.doc_ids[0], shoes.doc_ids[7]
    >>> docs = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q2"], "doc_id": [a, b, a, b],
    ...                      "exposure": [0.5, 0.5, 0.6, 0.4], "target_exposure": [0.5, 0.5, 0.5, 0.5]})
    >>> [f.kind.value for f in ledger_findings(docs, shoes, seed=0)]
    ['insufficient evidence', 'insufficient evidence', 'insufficient evidence']
    """
    table = share_table(documents, collection, by=by, attributed_column=attributed_column, lines=lines, unit=unit)
    if attributed_label is None:
        column = attributed_column or next((c for c in _ATTRIBUTED_COLUMNS
                                            if c in documents and documents[c].notna().any()), "")
        attributed_label = "entailing documents" if column == "entailed_exposure" else "citations"
    return share_findings(table, attributed_label=attributed_label, level=level, n_boot=n_boot, n_test=n_test,
                          seed=seed, serious=serious)
