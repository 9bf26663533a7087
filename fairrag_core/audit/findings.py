"""Findings: what an audit or a comparison found, as typed sentences that carry their numbers, test and severity.

A :class:`Finding` is one plain-language sentence (from a simulated audit: "Greyfield Footworks is under-exposed in
retrieval: 4.3 % [3.2, 5.7] of retrieval exposure vs a fair share of 7.6 % [7.6, 7.6] (gap −3.3 points [−4.4, −1.9];
p = 0.035, Holm-adjusted over 14 providers; 20 queries, 200 lines)") with the numbers behind it: the effect with
its interval, the observed and reference values with theirs, the test's p-value and its Holm adjustment over the
family it belongs to, a direction and a severity. Three generators:

* :func:`ledger_findings` (on :func:`share_table` / :func:`share_findings`) — per provider or group, the retrieval
  share against the fair share (retrieval − target) and the attributed share (citations) against the fair share
  (attributed − target);
* :func:`comparison_findings` — two systems on the same queries, metric by metric (EE-D lower = fairer, EE-R and EU
  higher = better), with a headline "B is fairer than A: EE-D −0.34 [−0.41, −0.28], p = 0.002; relevance falls
  0.07 [0.02, 0.13], p = 0.01";
* :func:`share_difference_findings` — per group, B's share against A's share on the same queries.

**Shares and gaps.** A share is a ratio of sums over the audited queries, ``s_g = Σ_q x_qg / Σ_q X_q`` with
``x_qg`` the exposure of group g in query q (retrieval: ε summed over the group's documents, Kim & Diaz 2025 Eq. 5;
attributed: ε^a, §3.4; fair: ε*, Eq. 6) and ``X_q = Σ_g x_qg``. The gap is ``s_g − τ_g`` (τ the fair share). Each
value is printed with its percentile bootstrap interval over queries, drawn with
:func:`~fairrag_core.metrics.bootstrap.resample_counts` exactly as :func:`~fairrag_core.audit.query_bootstrap.
ledger_intervals` draws them: with the same seed the finding's intervals are the ledger's.

**The test.** The gap is the mean over queries of the linearised contributions (delta method for a ratio of sums,
Davison & Hinkley 1997 §2.7.2) ``d_qg = Q [(x_qg − s⁰_g X_q)/Σ X − (y_qg − s⁰_g Y_q)/Σ Y]`` (y the reference,
s⁰ the pooled share; ``mean_q d_qg = s_g − τ_g`` exactly). H0: mean 0, tested two-sided with the symmetric
bootstrap-t over queries (:func:`~fairrag_core.metrics.significance.bootstrap_t_pvalues`, Hall 1988: the symmetric
p-value for retrieval; for sparse citations the symmetric and the equal-tailed p-value must both reject, see
:data:`ATTRIBUTED_TAILS`), Holm-adjusted
(:func:`~fairrag_core.metrics.significance.holm_adjust`) over the groups tested in that family. A group is flagged
when its adjusted p ≤ α = 1 − level. The interval printed beside it is the percentile interval (unadjusted, as the
ledger shows it), so at the margin a flagged gap's interval may touch 0 or an unflagged one miss it.

**Insufficient evidence.** With α/m the strictest Holm threshold (m groups with a fair share or some exposure), a
group is *not testable*, and says "insufficient evidence (n = …)", never "fair", when (i) it is at stake (has a fair
share or was shown) in n queries with 2/2ⁿ > α/m — 2/2ⁿ is the smallest p-value of the exact sign-flip test, and no
test that treats queries as exchangeable does better; or (ii) when the lines per query are known, the same holds for
n_eff, at most how many queries a system meeting its fair share would show it in at all
(:func:`~fairrag_core.metrics.significance.presence_bound`: a provider with a small share in short queries, or a
sparsely cited one, is absent from most of them even when treated fairly); or (iii) even its total absence — its
exposure set to 0 in every query, the others filling its slots — would not reach p ≤ α/m with this test on these
queries. These depend on the fair targets and the audit's size (under a fair system a group is only shown where it
has a fair share), not on how the group was treated, so the family tested is fixed before looking at it; Holm runs
over the testable groups.

**Severity** (:func:`severity_of`): INFO when not significant (within noise, insufficient evidence, no
difference); SERIOUS when significant and the effect is at least half of the reference (a share at most half or at
least 1.5 times its fair share, a metric moving by half its level under A); NOTABLE when significant and smaller.
A headline takes the most severe of its parts. :func:`sort_findings` puts the most severe first.

Calibration (``benchmarks/calibrate_findings.py``, ``docs/findings.md``), by simulation of audits the size of the
demo log (20 queries, 200 lines, 14 providers): a fair system gets an under- or over-exposed finding in 4.0 %
[3.3, 5.0] of audits and an under- or over-cited one in 4.3 % [3.5, 5.3]; a provider with 7 of the 92 documents
under-exposed by half is flagged in 82.5 % [80.0, 84.7] of them, one with 6 in 70.2 % [67.3, 73.0].
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..checks import MAX_RESAMPLES, check_at_most, check_open_unit, check_positive_int
from ..data import UNKNOWN_GROUP, Collection
from ..errors import InvalidParameterError
from ..metrics.bootstrap import resample_counts
from ..metrics.intervals import ConfidenceInterval, bootstrap_mean, paired_comparison, percentile_interval
from ..metrics.significance import bootstrap_t_pvalues, holm_adjust, presence_bound
from ..seeds import SeedLike, as_generator, check_seed, derive_seed

__all__ = [
    "FindingKind", "Severity", "Direction", "Finding", "SERIOUS_RATIO", "severity_of", "sort_findings",
    "render_findings", "findings_to_json",
    "ShareTable", "share_table", "share_findings", "ledger_findings", "share_difference_findings",
    "Better", "Aspect", "MetricSpec", "METRIC_SPECS", "comparison_findings",
    "RETRIEVAL_TAILS", "ATTRIBUTED_TAILS", "BOOTSTRAP_T", "SIGN_FLIP",
]

#: How the bootstrap-t p-value of a retrieval share gap is read (:func:`~fairrag_core.metrics.significance.
#: bootstrap_t_pvalues`): symmetric, calibrated in our retrieval checks and the more powerful.
RETRIEVAL_TAILS = "symmetric"
#: ... and of an attributed (citation) share gap: citations are sparse counts (about one per answer), for which the
#: symmetric p-value put nearly all its error in the "under-cited" tail; the symmetric and the equal-tailed p-value
#: must both reject.
ATTRIBUTED_TAILS = "both"
#: The test behind a share finding, in words, by its tails.
BOOTSTRAP_T = {"symmetric": "symmetric bootstrap-t over queries, two-sided",
               "equal": "equal-tailed bootstrap-t over queries, two-sided",
               "both": "bootstrap-t over queries, two-sided (symmetric and equal-tailed must both reject)"}
#: The test behind every metric comparison (:func:`~fairrag_core.metrics.intervals.paired_comparison`).
SIGN_FLIP = "paired randomization (sign-flip) test over queries, two-sided"
#: Effect, relative to its reference, from which a significant finding is SERIOUS (see :func:`severity_of`).
SERIOUS_RATIO = 0.5


class FindingKind(str, enum.Enum):
    """What a finding says. ``HEADLINE`` sums up a family or a comparison; ``WITHIN_NOISE`` is one group's
    non-significant result (a detail), ``NO_DIFFERENCE`` a family's or a metric's."""

    HEADLINE = "headline"
    FAIRER = "fairer"
    LESS_FAIR = "less fair"
    UNDER_EXPOSED = "under-exposed"
    OVER_EXPOSED = "over-exposed"
    UNDER_CITED = "under-cited"
    OVER_CITED = "over-cited"
    COST = "cost"
    GAIN = "gain"
    LESS_EXPOSED = "less exposed"
    MORE_EXPOSED = "more exposed"
    NO_DIFFERENCE = "no difference"
    INSUFFICIENT_EVIDENCE = "insufficient evidence"
    WITHIN_NOISE = "within noise"


_KIND_ORDER = {kind: i for i, kind in enumerate(FindingKind)}


class Severity(str, enum.Enum):
    """How much a reader should care (rule in :func:`severity_of`)."""

    SERIOUS = "serious"
    NOTABLE = "notable"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for the most severe."""
        return {Severity.SERIOUS: 0, Severity.NOTABLE: 1, Severity.INFO: 2}[self]


class Direction(str, enum.Enum):
    """Where the value lies against its reference when the test says it differs: ``below`` (under its fair share;
    B lower than A), ``above``, or ``none`` (no significant difference, or nothing tested)."""

    BELOW = "below"
    ABOVE = "above"
    NONE = "none"


def _clean(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass(frozen=True)
class Finding:
    """One finding: a sentence and the numbers behind it.

    Attributes:
        kind, subject, metric: what is said, about whom (a provider or group, ``"B vs A"``, ``"every provider"``),
            of which quantity (``"retrieval share − fair share"``, ``"ee_d"``, …).
        text: one plain-language sentence with the numbers (percentages with one decimal).
        severity, direction: see :class:`Severity`, :class:`Direction`.
        estimate, low, high, level: the effect (a share gap, B − A) with its percentile interval at ``level``
            (NaN when there is none); ``estimate`` lies in ``[low, high]``.
        value, reference: the observed value (the share; B's mean) and what it is compared with (the fair share;
            A's mean), each with its interval, or None.
        relative: the effect relative to the reference (gap / fair share; (B − A) / |A|), used by the severity.
        p_value, p_adjusted: the test's two-sided p-value and its Holm adjustment over ``family`` (NaN: untested).
        test, correction, alpha: the test's name, the correction (``"Holm over 14 providers"``), the level α at
            which a finding is significant (``p_adjusted ≤ alpha``).
        n_queries, n_lines: the queries (and lines or sampled rankings, when known) the finding rests on.
        family: the family of tests the finding belongs to (Holm's m counts its tested members).
        detail: True for what a headline of the same family already says (one group within noise, one group with
            too little evidence, each metric of a comparison): renderers may leave it out.
    """

    kind: FindingKind
    subject: str
    metric: str
    text: str
    severity: Severity = Severity.INFO
    direction: Direction = Direction.NONE
    estimate: float = math.nan
    low: float = math.nan
    high: float = math.nan
    level: float = 0.95
    value: ConfidenceInterval | None = None
    reference: ConfidenceInterval | None = None
    relative: float = math.nan
    p_value: float = math.nan
    p_adjusted: float = math.nan
    test: str = ""
    correction: str = ""
    alpha: float = 0.05
    n_queries: int = 0
    n_lines: int | None = None
    family: str = ""
    detail: bool = False

    def __post_init__(self) -> None:
        for name, enum_type in (("kind", FindingKind), ("severity", Severity), ("direction", Direction)):
            object.__setattr__(self, name, enum_type(getattr(self, name)))
        if (all(math.isfinite(v) for v in (self.estimate, self.low, self.high))
                and not self.low - 1e-12 <= self.estimate <= self.high + 1e-12):
            raise InvalidParameterError(f"interval [{self.low}, {self.high}] does not contain its estimate "
                                        f"{self.estimate}")

    @property
    def p(self) -> float | None:
        """The p-value the verdict uses: Holm-adjusted when the finding is one of a family, else the raw one."""
        return _clean(self.p_adjusted) if math.isfinite(self.p_adjusted) else _clean(self.p_value)

    @property
    def significant(self) -> bool:
        """Whether the test rejects at ``alpha`` (after Holm)."""
        p = self.p
        return p is not None and p <= self.alpha

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: ``text``, ``p`` (None when untested) and every field (NaN → None, enums → their value).

        >>> Finding(FindingKind.NO_DIFFERENCE, "every provider", "retrieval share − fair share",
        ...         "No provider's retrieval share differs from its fair share beyond noise.").to_dict()["p"] is None
        True
        """
        def interval(ci: ConfidenceInterval | None) -> dict[str, float | str] | None:
            return None if ci is None else {k: (_clean(v) if isinstance(v, float) else v)
                                            for k, v in ci.to_dict().items()}

        return {"kind": self.kind.value, "subject": self.subject, "metric": self.metric, "text": self.text,
                "severity": self.severity.value, "direction": self.direction.value, "p": self.p,
                "p_value": _clean(self.p_value), "p_adjusted": _clean(self.p_adjusted), "test": self.test or None,
                "correction": self.correction or None, "alpha": self.alpha, "estimate": _clean(self.estimate),
                "low": _clean(self.low), "high": _clean(self.high), "level": self.level,
                "value": interval(self.value), "reference": interval(self.reference),
                "relative": _clean(self.relative), "n_queries": self.n_queries, "n_lines": self.n_lines,
                "family": self.family, "detail": self.detail}


def severity_of(significant: bool, relative: float, *, serious: float = SERIOUS_RATIO) -> Severity:
    """INFO when not significant; SERIOUS when significant and ``|relative| ≥ serious``; NOTABLE otherwise.

    ``relative`` is the effect over its reference: −0.5 for a provider at half its fair share, (B − A)/|A| for a
    metric. An undefined ratio (a reference of 0) with a significant effect counts as SERIOUS.

    >>> severity_of(True, -0.5).value, severity_of(True, 0.2).value, severity_of(False, -0.9).value
    ('serious', 'notable', 'info')
    """
    if not significant:
        return Severity.INFO
    if not math.isfinite(relative) or abs(relative) >= serious:
        return Severity.SERIOUS
    return Severity.NOTABLE


def sort_findings(findings: Sequence[Finding]) -> list[Finding]:
    """Most severe first; then headlines, then by kind (:class:`FindingKind` order), smaller adjusted p, larger
    relative effect; ties keep their order."""
    def key(f: Finding) -> tuple[int, int, float, float]:
        p = f.p
        rel = abs(f.relative) if math.isfinite(f.relative) else math.inf
        return (f.severity.rank, _KIND_ORDER[f.kind], 1.0 if p is None else p, -rel)

    return sorted(findings, key=key)


def render_findings(findings: Sequence[Finding], *, details: bool = False) -> list[str]:
    """One line per finding, most severe first: ``"[serious] Greyfield Footworks is under-exposed …"``. Details (one
    group within noise, each metric behind a headline) only with ``details=True``.

    >>> render_findings([Finding(FindingKind.NO_DIFFERENCE, "B vs A", "ee_d", "EE-D does not differ.")])
    ['[info] EE-D does not differ.']
    """
    return [f"[{f.severity.value}] {f.text}" for f in sort_findings(findings) if details or not f.detail]


def findings_to_json(findings: Sequence[Finding]) -> list[dict[str, object]]:
    """The findings as a JSON list (most severe first), each with at least ``text`` and ``p``."""
    return [f.to_dict() for f in sort_findings(findings)]


# -- formatting ----------------------------------------------------------------------------------------------

def _minus(text: str) -> str:
    return text.replace("-", "−")


def _pct(x: float) -> str:
    """A share in percent with one decimal; exactly 0 prints as ``0``."""
    if not math.isfinite(x):
        return "—"
    return "0" if x == 0 else _minus(f"{100 * x:.1f}")


def _share_text(ci: ConfidenceInterval | None, point: float) -> str:
    if ci is None:
        return f"{_pct(point)} %"
    return f"{_pct(ci.estimate)} % [{_pct(ci.low)}, {_pct(ci.high)}]"


def _points(est: float, low: float, high: float) -> str:
    sign = "+" if est > 0 else ""
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{sign}{_pct(est)} points"
    return f"{sign}{_pct(est)} points [{_pct(low)}, {_pct(high)}]"


def _digits(*values: float) -> int:
    finite = [abs(v) for v in values if math.isfinite(v)]
    return 2 if finite and max(finite) >= 0.0995 else 3  # 0.0995 prints as 0.10


def _num(x: float, digits: int, *, signed: bool = False) -> str:
    if not math.isfinite(x):
        return "—"
    text = f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
    return _minus(text)


def _p_text(p: float) -> str:
    """``p = 0.004``, ``p = 0.21``, ``p < 0.001``."""
    if not math.isfinite(p):
        return "p = —"
    if p < 0.001:
        return "p < 0.001"
    if p >= 0.995:
        return "p = 1"
    return f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


def _alpha(level: float) -> float:
    """The test's level α = 1 − level, without the float noise of the subtraction (0.05, not 0.050000000000000044)."""
    return round(1.0 - level, 12)


def _alpha_text(alpha: float) -> str:
    return f"{100 * alpha:g} %"


def _n_text(n_queries: int, n_lines: int | None) -> str:
    q = f"{n_queries} quer{'y' if n_queries == 1 else 'ies'}"
    return q if n_lines is None else f"{q}, {n_lines} line{'' if n_lines == 1 else 's'}"


def _group_noun(by: str, plural: bool = False) -> str:
    if by == "provider":
        return "providers" if plural else "provider"
    return f"{by} groups" if plural else f"{by} group"


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
    or None when unknown. Build one with :func:`share_table` or directly from arrays (simulations, tests).
    """

    groups: tuple[str, ...]
    query_ids: tuple[str, ...]
    retrieval: np.ndarray
    target: np.ndarray
    attributed: np.ndarray | None = None
    lines: np.ndarray | None = None
    by: str = "provider"

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
                targets_only: bool = True) -> ShareTable:
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

    Groups are sorted and queries kept in order of first appearance, as in
    :func:`~fairrag_core.audit.query_bootstrap.ledger_intervals`.
    """
    for column in ("query_id", "doc_id", "exposure"):
        if column not in documents:
            raise InvalidParameterError(f"the documents table needs the column {column!r} (a log audit's "
                                        "run.documents or a sweep's documents, one system at a time)")
    if "alpha" in documents and documents["alpha"].nunique() > 1:
        raise InvalidParameterError("the documents hold several α; pass one system: documents[documents.alpha == a]")
    if by == "provider":
        owner = collection.providers
    elif by in collection.categories():
        owner = collection.group_of(by, fill=UNKNOWN_GROUP)
    else:
        raise InvalidParameterError(f"unknown grouping {by!r}; use 'provider' or one of "
                                    f"{collection.categories() or 'no categories'}")
    group_of = dict(zip(collection.doc_ids, owner))
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
                      lines=_lines_vector(lines, query_list), by=by)


# -- the share test ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _GroupResult:
    group: str
    value: ConfidenceInterval | None
    reference: ConfidenceInterval | None
    gap: ConfidenceInterval | None
    point_value: float
    point_reference: float
    p_value: float
    p_adjusted: float
    testable: bool
    reason: str
    n_at_stake: int
    n_informative: float

    def numbers(self) -> dict[str, object]:
        """The Finding fields of this group: the gap with its interval, both shares, the relative gap."""
        gap = self.gap
        est, low, high = (gap.estimate, gap.low, gap.high) if gap else (math.nan,) * 3
        relative = (self.point_value - self.point_reference) / self.point_reference if self.point_reference > 0 \
            else math.nan
        return {"estimate": est, "low": low, "high": high, "value": self.value, "reference": self.reference,
                "relative": relative}


def _streams(seed: SeedLike) -> tuple[SeedLike, np.random.Generator]:
    """The interval resamples draw from ``seed`` as :func:`ledger_intervals` does; the test from its own stream."""
    if seed is None:
        return None, np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed, seed
    return seed, np.random.default_rng(derive_seed(check_seed(seed), 20, 3))


def _shares(matrix: np.ndarray) -> np.ndarray:
    total = matrix.sum()
    return matrix.sum(axis=0) / total if total > 0 else np.full(matrix.shape[1], np.nan)


def _boot_shares(matrix: np.ndarray, counts: np.ndarray) -> np.ndarray:
    sums = counts @ matrix
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / sums.sum(axis=1, keepdims=True)


def _interval(point: float, draws: np.ndarray, level: float) -> ConfidenceInterval | None:
    if not math.isfinite(point):
        return None
    draws = draws[np.isfinite(draws)]
    return percentile_interval(point, draws if draws.size else np.array([point]), level=level)


def _contributions(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-query terms whose mean over queries is share(x) − share(y), observed and under total absence.

    ``d_qg = Q [(x_qg − s⁰_g X_q)/ΣX − (y_qg − s⁰_g Y_q)/ΣY]`` with s⁰ the pooled share of x and y; the absence
    terms set x_qg to 0 with each query's total X_q unchanged (the other groups fill the slots), so that their mean
    is −share(y).
    """
    n_q = x.shape[0]
    x_tot, y_tot = x.sum(axis=1, keepdims=True), y.sum(axis=1, keepdims=True)
    pooled = (x.sum(axis=0) + y.sum(axis=0)) / (x_tot.sum() + y_tot.sum())
    reference = (y - pooled * y_tot) / y_tot.sum()
    return (n_q * ((x - pooled * x_tot) / x_tot.sum() - reference),
            n_q * (-pooled * x_tot / x_tot.sum() - reference))


def _test_size(n_test: int | None, m: int, alpha: float) -> int:
    if n_test is None:
        return int(min(MAX_RESAMPLES, max(2000, math.ceil(20 * max(m, 1) / alpha))))
    return check_at_most(n_test, "n_test", MAX_RESAMPLES, hint="bootstrap-t resamples, e.g. 10000",
                         fix="10,000 resamples give p-values down to 1e-4")


def _gap_family(x: np.ndarray, y: np.ndarray, groups: Sequence[str], *, counts: np.ndarray,
                test_rng: np.random.Generator, lines: np.ndarray | None, level: float,
                n_test: int | None, tails: str) -> list[_GroupResult]:
    """Per group: share(x), share(y), the gap with intervals, the bootstrap-t p-value, Holm over the testable."""
    alpha = _alpha(level)
    n_g = x.shape[1]
    at_stake = (y.sum(axis=0) > 0) | (x.sum(axis=0) > 0)
    m_all = int(at_stake.sum())
    sx, sy = _shares(x), _shares(y)
    bx, by_ = _boot_shares(x, counts), _boot_shares(y, counts)
    observed, absent = _contributions(x, y)
    p_all = bootstrap_t_pvalues(np.hstack([observed, absent]), n_resamples=_test_size(n_test, m_all, alpha),
                                tails=tails, seed=test_rng)
    p_obs, p_abs = p_all[:n_g], p_all[n_g:]
    threshold = alpha / max(m_all, 1)
    x_tot, y_tot = x.sum(axis=1), y.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(y_tot > 0, x_tot / np.where(y_tot > 0, y_tot, 1.0), 0.0)
    testable = np.zeros(n_g, dtype=bool)
    reasons = [""] * n_g
    informatives = np.zeros(n_g)
    stake = np.sum((x > 0) | (y > 0), axis=0)
    for g in range(n_g):
        informative = float(stake[g])
        if lines is not None:  # only queries where a fair system would show it at least once carry a sign
            informative = presence_bound(y[:, g] * scale, lines) + float(np.sum((x[:, g] > 0) & (y[:, g] == 0)))
        informatives[g] = informative
        if not at_stake[g]:
            reasons[g] = _NOT_AT_STAKE
        elif 2.0 ** (1 - int(stake[g])) > threshold:
            reasons[g] = f"on {int(stake[g])} queries no test over queries can reach the {threshold:.2g} Holm needs"
        elif 2.0 ** (1 - informative) > threshold:
            reasons[g] = (f"at its fair share it would appear in at most {informative:.1f} of them on average, too "
                          f"few for a test over queries to reach the {threshold:.2g} Holm needs")
        elif p_abs[g] > threshold:
            reasons[g] = "even no exposure at all would not be significant here"
        else:
            testable[g] = True
    p_adj = np.full(n_g, np.nan)
    p_adj[testable] = holm_adjust(p_obs[testable])
    results = []
    for g, name in enumerate(groups):
        value, reference = _interval(sx[g], bx[:, g], level), _interval(sy[g], by_[:, g], level)
        gap = _interval(sx[g] - sy[g], bx[:, g] - by_[:, g], level)
        results.append(_GroupResult(name, value, reference, gap, float(sx[g]), float(sy[g]),
                                    float(p_obs[g]) if testable[g] else math.nan, float(p_adj[g]), bool(testable[g]),
                                    reasons[g], int(stake[g]), float(informatives[g])))
    return results


_NOT_AT_STAKE = "no fair share and no exposure in any audited query"


@dataclass(frozen=True)
class _Family:
    """The words of one family of share tests."""

    metric: str                 # "retrieval share − fair share"
    under: FindingKind
    over: FindingKind
    under_text: str             # "is under-exposed in retrieval"
    over_text: str
    of_what: str                # "of retrieval exposure"
    share: str                  # "retrieval share"
    reference: str              # "fair share"
    title: str                  # "Retrieval exposure"
    stake: str                  # "where it has a fair share"
    tails: str                  # RETRIEVAL_TAILS or ATTRIBUTED_TAILS


def _group_findings(results: list[_GroupResult], fam: _Family, *, by: str, level: float, n_queries: int,
                    n_lines: int | None, serious: float) -> list[Finding]:
    alpha = _alpha(level)
    tested = [r for r in results if r.testable]
    m = len(tested)
    noun, nouns = _group_noun(by), _group_noun(by, plural=True)
    n_text = _n_text(n_queries, n_lines)
    correction = f"Holm over {m} {nouns if m != 1 else noun}"
    common = {"metric": fam.metric, "level": level, "alpha": alpha, "n_queries": n_queries, "n_lines": n_lines,
              "family": f"{fam.metric}, by {by}", "test": BOOTSTRAP_T[fam.tails]}
    out, flagged, insufficient = [], [], []
    for r in results:
        if r.reason == _NOT_AT_STAKE:
            continue
        numbers = r.numbers()
        est, low, high, relative = numbers["estimate"], numbers["low"], numbers["high"], numbers["relative"]
        share = _share_text(r.value, r.point_value)
        fair = _share_text(r.reference, r.point_reference)
        if not r.testable:
            informative = (f", at most {r.n_informative:.1f} informative"
                           if r.n_informative < r.n_at_stake - 0.05 else "")
            insufficient.append(f"{r.group} (n = {r.n_at_stake}{informative})")
            text = (f"{r.group}: insufficient evidence (n = {r.n_at_stake} quer{'y' if r.n_at_stake == 1 else 'ies'} "
                    f"{fam.stake}) to tell its {fam.share} of {share} from its {fam.reference} of {fair}: "
                    f"{r.reason}")
            out.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, r.group, text=text, detail=True,
                               **numbers, **{**common, "test": ""}))
            continue
        significant = r.p_adjusted <= alpha
        stats_text = (f"gap {_points(est, low, high)}; {_p_text(r.p_adjusted)}, Holm-adjusted over {m} "
                      f"{nouns if m != 1 else noun}")
        if significant:
            below = r.point_value < r.point_reference
            kind, verb = (fam.under, fam.under_text) if below else (fam.over, fam.over_text)
            flagged.append(f"{r.group} ({kind.value})")
            text = (f"{r.group} {verb}: {share} {fam.of_what} vs a {fam.reference} of {fair} ({stats_text}; "
                    f"{n_text})")
            out.append(Finding(kind, r.group, text=text, severity=severity_of(True, relative, serious=serious),
                               direction=Direction.BELOW if below else Direction.ABOVE, p_value=r.p_value,
                               p_adjusted=r.p_adjusted, correction=correction, **numbers, **common))
        else:
            text = f"{r.group}: {fam.share} {share} vs a {fam.reference} of {fair}, within noise ({stats_text})"
            out.append(Finding(FindingKind.WITHIN_NOISE, r.group, text=text, p_value=r.p_value,
                               p_adjusted=r.p_adjusted, correction=correction, detail=True, **numbers, **common))
    too_little = (f"; too little evidence to tell for {len(insufficient)} "
                  f"{nouns if len(insufficient) != 1 else noun}: {_names(insufficient)}" if insufficient else "")
    every = f"every {noun}"
    if m == 0:
        text = (f"Too little evidence to test any {noun}'s {fam.share} against its {fam.reference} "
                f"({n_text}){too_little}")
        out.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, every, text=text, **{**common, "test": ""}))
    elif not flagged:
        text = (f"No {noun}'s {fam.share} differs from its {fam.reference} beyond noise ({m} "
                f"{nouns if m != 1 else noun} tested, Holm-adjusted at {_alpha_text(alpha)}; {n_text}){too_little}")
        out.append(Finding(FindingKind.NO_DIFFERENCE, every, text=text, correction=correction, **common))
    else:
        severities = [f.severity for f in out if f.kind in (fam.under, fam.over)]
        worst = min(severities, key=lambda s: s.rank)
        verb = "differs from its" if len(flagged) == 1 else "differ from their"
        text = (f"{fam.title}: {len(flagged)} of {m} {nouns if m != 1 else noun} tested {verb} "
                f"{fam.reference} beyond noise — {_names(flagged, limit=8)} (Holm-adjusted at "
                f"{_alpha_text(alpha)}; {n_text}){too_little}")
        out.append(Finding(FindingKind.HEADLINE, every, text=text, severity=worst, correction=correction, **common))
    return out


_RETRIEVAL = _Family("retrieval share − fair share", FindingKind.UNDER_EXPOSED, FindingKind.OVER_EXPOSED,
                     "is under-exposed in retrieval", "is over-exposed in retrieval", "of retrieval exposure",
                     "retrieval share", "fair share", "Retrieval exposure", "in which it has a fair share or was shown",
                     RETRIEVAL_TAILS)


def _attributed_family(label: str) -> _Family:
    return _Family("attributed share − fair share", FindingKind.UNDER_CITED, FindingKind.OVER_CITED,
                   "is under-cited", "is over-cited", f"of {label}", f"share of {label}", "fair share",
                   label[:1].upper() + label[1:], "in which it has a fair share or was shown", ATTRIBUTED_TAILS)


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
        return [Finding(FindingKind.INSUFFICIENT_EVIDENCE, f"every {_group_noun(table.by)}",
                        "retrieval share − fair share", f"Insufficient evidence to test any share: {why}",
                        level=level, alpha=_alpha(level), n_queries=n_q, n_lines=table.n_lines)]
    boot_seed, test_rng = _streams(seed)
    counts = resample_counts(n_q, n_boot, boot_seed)  # one set of resamples for every share, as the ledger's
    families = [(table.retrieval, _RETRIEVAL)]
    if table.attributed is not None and table.attributed.sum() > 0:
        families.append((table.attributed, _attributed_family(attributed_label)))
    out = []
    for x, words in families:
        results = _gap_family(x, table.target, table.groups, counts=counts, test_rng=test_rng, lines=table.lines,
                              level=level, n_test=n_test, tails=words.tails)
        out += _group_findings(results, words, by=table.by, level=level, n_queries=n_q, n_lines=table.n_lines,
                               serious=serious)
    return sort_findings(out)


def ledger_findings(documents: pd.DataFrame, collection: Collection, *, by: str = "provider",
                    attributed_column: str | None = None, attributed_label: str | None = None,
                    lines: int | Mapping[str, int] | pd.Series | None = None, level: float = 0.95,
                    n_boot: int = 1000, n_test: int | None = None, seed: SeedLike = None,
                    serious: float = SERIOUS_RATIO) -> list[Finding]:
    """Findings of an audit's exposure ledger: which providers (or groups) are under- or over-exposed in retrieval
    and in citations, beyond noise, against their fair share.

    ``documents`` is one system's per-(query, document) table (a log audit's ``run.documents``; a sweep's
    ``documents`` at one α); the queries without a fair target are left out, so that shares and fair shares cover
    the same queries. ``lines`` (per query, e.g. a log audit's ``run.table.set_index("query_id")["lines"]``, or the
    sweep's N) enables the absence bound of the insufficient-evidence rule. ``attributed_label`` defaults to
    "citations" for logged citations and attributed exposure, "entailing documents" for the judge. The rest as
    :func:`share_findings`.

    >>> from fairrag_core import load_collection
    >>> shoes = load_collection("running-shoes")
    >>> a, b = shoes.doc_ids[0], shoes.doc_ids[7]
    >>> docs = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q2"], "doc_id": [a, b, a, b],
    ...                      "exposure": [0.5, 0.5, 0.6, 0.4], "target_exposure": [0.5, 0.5, 0.5, 0.5]})
    >>> [f.kind.value for f in ledger_findings(docs, shoes, seed=0)]
    ['insufficient evidence', 'insufficient evidence', 'insufficient evidence']
    """
    table = share_table(documents, collection, by=by, attributed_column=attributed_column, lines=lines)
    if attributed_label is None:
        column = attributed_column or next((c for c in _ATTRIBUTED_COLUMNS
                                            if c in documents and documents[c].notna().any()), "")
        attributed_label = "entailing documents" if column == "entailed_exposure" else "citations"
    return share_findings(table, attributed_label=attributed_label, level=level, n_boot=n_boot, n_test=n_test,
                          seed=seed, serious=serious)


# -- two systems ---------------------------------------------------------------------------------------------

def share_difference_findings(a: ShareTable, b: ShareTable, *, name_a: str = "A", name_b: str = "B",
                              attributed: bool = False, level: float = 0.95, n_boot: int = 1000,
                              n_test: int | None = None, seed: SeedLike = None,
                              serious: float = SERIOUS_RATIO) -> list[Finding]:
    """Per group, B's share against A's on the queries both audited (retrieval, or ``attributed=True``).

    The paired test and intervals of :func:`share_findings` with A's share as the reference: contributions
    ``d_qg`` of share_B − share_A per query, symmetric bootstrap-t over the common queries, Holm over the groups
    tested; a group whose total absence under B would not be significant has insufficient evidence.
    """
    level = check_open_unit(level, "level", hint="e.g. 0.95")
    n_boot = check_at_most(n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                           fix="1,000 resamples are the usual number")
    if a.by != b.by:
        raise InvalidParameterError(f"the two tables group by {a.by!r} and {b.by!r}; build both with the same by=")
    common = [q for q in a.query_ids if q in set(b.query_ids)]
    if len(common) < 2:
        raise InvalidParameterError(f"{name_a} and {name_b} share {len(common)} audited quer(ies); a paired "
                                    "comparison needs two or more: audit both systems on the same queries")
    groups = sorted(set(a.groups) | set(b.groups))

    def aligned(table: ShareTable) -> np.ndarray:
        source = table.attributed if attributed else table.retrieval
        if source is None:
            raise InvalidParameterError("attributed=True, but a table has no attributed exposure; measure "
                                        "attribution in both audits")
        rows = [table.query_ids.index(q) for q in common]
        out = np.zeros((len(common), len(groups)))
        for j, g in enumerate(table.groups):
            out[:, groups.index(g)] = source[rows, j]
        return out

    x, y = aligned(b), aligned(a)
    if x.sum() <= 0 or y.sum() <= 0:
        raise InvalidParameterError("a system has no exposure on the common queries; nothing to compare")
    what = "attributed" if attributed else "retrieval"
    boot_seed, test_rng = _streams(seed)
    tails = ATTRIBUTED_TAILS if attributed else RETRIEVAL_TAILS
    results = _gap_family(x, y, groups, counts=resample_counts(len(common), n_boot, boot_seed), test_rng=test_rng,
                          lines=None, level=level, n_test=n_test, tails=tails)
    alpha = _alpha(level)
    tested = [r for r in results if r.testable]
    m = len(tested)
    noun, nouns = _group_noun(a.by), _group_noun(a.by, plural=True)
    correction = f"Holm over {m} {nouns if m != 1 else noun}"
    n_text = _n_text(len(common), None)
    subject = f"{name_b} vs {name_a}"
    common_fields = {"metric": f"{what} share, {name_b} − {name_a}", "level": level, "alpha": alpha,
                     "n_queries": len(common), "family": f"{what} share, {name_b} − {name_a}, by {a.by}",
                     "test": BOOTSTRAP_T[tails]}
    out, flagged, insufficient = [], [], []
    for r in results:
        if r.reason == _NOT_AT_STAKE:
            continue
        numbers = r.numbers()
        est, low, high, relative = numbers["estimate"], numbers["low"], numbers["high"], numbers["relative"]
        share_b, share_a = _share_text(r.value, r.point_value), _share_text(r.reference, r.point_reference)
        if not r.testable:
            insufficient.append(r.group)
            text = (f"{r.group}: insufficient evidence to compare its {what} share under {name_b} ({share_b}) and "
                    f"{name_a} ({share_a}) on {n_text}: even no exposure at all under {name_b} would not be "
                    "significant here")
            out.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, r.group, text=text, detail=True, **numbers,
                               **{**common_fields, "test": ""}))
            continue
        stats_text = f"{_points(est, low, high)}; {_p_text(r.p_adjusted)}, Holm-adjusted over {m} " \
                     f"{nouns if m != 1 else noun}"
        if r.p_adjusted <= alpha:
            less = r.point_value < r.point_reference
            kind = FindingKind.LESS_EXPOSED if less else FindingKind.MORE_EXPOSED
            flagged.append(f"{r.group} ({'less' if less else 'more'})")
            text = (f"{r.group} gets {'less' if less else 'more'} {what} exposure under {name_b} than under "
                    f"{name_a}: {share_b} vs {share_a} ({stats_text}; {n_text})")
            out.append(Finding(kind, r.group, text=text, severity=severity_of(True, relative, serious=serious),
                               direction=Direction.BELOW if less else Direction.ABOVE, p_value=r.p_value,
                               p_adjusted=r.p_adjusted, correction=correction, **numbers, **common_fields))
        else:
            text = (f"{r.group}: {what} share {share_b} under {name_b} vs {share_a} under {name_a}, within noise "
                    f"({stats_text})")
            out.append(Finding(FindingKind.WITHIN_NOISE, r.group, text=text, p_value=r.p_value,
                               p_adjusted=r.p_adjusted, correction=correction, detail=True, **numbers,
                               **common_fields))
    too_little = (f"; too little evidence to tell for {len(insufficient)} {nouns if len(insufficient) != 1 else noun}"
                  f": {_names(insufficient)}" if insufficient else "")
    if m == 0:
        out.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, subject,
                           text=f"Too little evidence to compare any {noun}'s {what} share between {name_b} and "
                                f"{name_a} ({n_text}){too_little}", **{**common_fields, "test": ""}))
    elif not flagged:
        out.append(Finding(FindingKind.NO_DIFFERENCE, subject, correction=correction,
                           text=f"No {noun}'s {what} share changes between {name_a} and {name_b} beyond noise ({m} "
                                f"{nouns if m != 1 else noun} tested, Holm-adjusted at {_alpha_text(alpha)}; "
                                f"{n_text}){too_little}", **common_fields))
    else:
        worst = min((f.severity for f in out if f.kind in (FindingKind.LESS_EXPOSED, FindingKind.MORE_EXPOSED)),
                    key=lambda s: s.rank)
        verb = "changes" if len(flagged) == 1 else "change"
        out.append(Finding(FindingKind.HEADLINE, subject, severity=worst, correction=correction,
                           text=f"{what.capitalize()} exposure, {name_b} vs {name_a}: {len(flagged)} of {m} "
                                f"{nouns if m != 1 else noun} tested {verb} share beyond noise — "
                                f"{_names(flagged, limit=8)} under {name_b} (Holm-adjusted at {_alpha_text(alpha)}; "
                                f"{n_text}){too_little}", **common_fields))
    return sort_findings(out)


class Better(str, enum.Enum):
    """Which way a metric improves."""

    LOWER = "lower"
    HIGHER = "higher"


class Aspect(str, enum.Enum):
    """What a metric measures: how fair the exposure is, or how good the results are."""

    FAIRNESS = "fairness"
    QUALITY = "quality"


@dataclass(frozen=True)
class MetricSpec:
    """How a per-query metric reads in a comparison: its label, which way is better, its aspect, and the noun a
    sentence uses for it ("relevance falls 0.07 …")."""

    label: str
    better: Better
    aspect: Aspect
    noun: str


_F, _Q = Aspect.FAIRNESS, Aspect.QUALITY
#: The per-query metrics of the sweeps, log audits and served runs.
METRIC_SPECS: Mapping[str, MetricSpec] = {
    "ee_d": MetricSpec("EE-D", Better.LOWER, _F, "disparity"),
    "ee_d_unbiased": MetricSpec("EE-D (unbiased)", Better.LOWER, _F, "disparity"),
    "eae_d": MetricSpec("EAE-D", Better.LOWER, _F, "attributed disparity"),
    "eae_d_cited": MetricSpec("EAE-D (cited)", Better.LOWER, _F, "attributed disparity"),
    "eae_d_entailed": MetricSpec("EAE-D (entailed)", Better.LOWER, _F, "attributed disparity"),
    "expeval_disparity": MetricSpec("disparity (expeval)", Better.LOWER, _F, "disparity"),
    "expeval_difference": MetricSpec("difference (expeval)", Better.LOWER, _F, "distance from the fair target"),
    "disparity": MetricSpec("disparity (expeval)", Better.LOWER, _F, "disparity"),
    "difference": MetricSpec("difference (expeval)", Better.LOWER, _F, "distance from the fair target"),
    "awrf": MetricSpec("AWRF", Better.HIGHER, _F, "group fairness"),
    "ee_r": MetricSpec("EE-R", Better.HIGHER, _Q, "relevance"),
    "expeval_relevance": MetricSpec("relevance (expeval)", Better.HIGHER, _Q, "relevance"),
    "relevance": MetricSpec("relevance (expeval)", Better.HIGHER, _Q, "relevance"),
    "eu": MetricSpec("EU", Better.HIGHER, _Q, "utility"),
    "eu_normalised": MetricSpec("normalised EU", Better.HIGHER, _Q, "utility"),
    "ndcg": MetricSpec("nDCG", Better.HIGHER, _Q, "nDCG"),
    "ear": MetricSpec("EAR", Better.HIGHER, _Q, "attribution rate"),
    "ear_cited": MetricSpec("EAR (cited)", Better.HIGHER, _Q, "attribution rate"),
    "ear_entailed": MetricSpec("EAR (entailed)", Better.HIGHER, _Q, "attribution rate"),
}


@dataclass(frozen=True)
class _MetricResult:
    name: str
    spec: MetricSpec
    n: int
    diff: ConfidenceInterval | None
    mean_a: ConfidenceInterval | None
    mean_b: ConfidenceInterval | None
    p_value: float
    testable: bool


def _smallest_sign_flip_p(n: int, n_permutations: int) -> float:
    """The smallest p-value :func:`paired_comparison` can give on n queries: 2/2ⁿ (exact), at least 1/(1 + B)."""
    return max(2.0 ** (1 - n), 1.0 / (1 + n_permutations)) if n > 16 else 2.0 ** (1 - n)


def comparison_findings(a_values: Mapping[str, Sequence[float] | np.ndarray],
                        b_values: Mapping[str, Sequence[float] | np.ndarray], *, name_a: str = "A", name_b: str = "B",
                        metrics: Mapping[str, MetricSpec] | None = None, primary: str | None = None,
                        level: float = 0.95, n_boot: int = 1000, n_permutations: int = 10000, seed: SeedLike = None,
                        serious: float = SERIOUS_RATIO) -> list[Finding]:
    """Is B fairer than A, and at what cost? Metric by metric on the same queries, and a headline.

    Args:
        a_values, b_values: per metric name, one value per query (same queries, same order; NaN where undefined:
            the pair is left out of that metric).
        name_a, name_b: how the sentences name the systems.
        metrics: specs of metrics not in :data:`METRIC_SPECS` (or to override them).
        primary: the fairness metric the headline leads with (default: the first fairness metric given).
        level, n_boot, n_permutations, seed: :func:`~fairrag_core.metrics.intervals.paired_comparison`.
        serious: the relative change (B − A)/|A| from which a significant finding is SERIOUS.

    Each metric's difference B − A (mean over queries, percentile interval over queries) is tested with the paired
    sign-flip test; p-values are Holm-adjusted over the metrics compared. A metric with too few queries for the
    exact test to ever reach α/m (2/2ⁿ > α/m) has insufficient evidence. Returns a HEADLINE ("B is fairer than A:
    EE-D −0.34 [−0.41, −0.28], p = 0.002; relevance falls 0.07 [0.02, 0.13], p = 0.01 (…)") and, as details, one
    FAIRER / LESS_FAIR / COST / GAIN / NO_DIFFERENCE / INSUFFICIENT_EVIDENCE finding per metric.

    >>> a = {"ee_d": [0.9, 0.8, 0.85, 0.95, 0.9, 0.8, 0.9, 0.85], "ee_r": [0.8, 0.7, 0.75, 0.8, 0.7, 0.75, 0.8, 0.7]}
    >>> b = {"ee_d": [0.5, 0.45, 0.5, 0.55, 0.5, 0.4, 0.5, 0.45], "ee_r": [0.7, 0.7, 0.7, 0.7, 0.6, 0.7, 0.7, 0.6]}
    >>> comparison_findings(a, b, seed=0)[0].text
    'B is fairer than A: EE-D −0.39 [−0.40, −0.38], p = 0.016; relevance falls 0.08 [0.05, 0.10], p = 0.016 \
(Holm-adjusted over 2 metrics; 8 queries)'
    """
    level = check_open_unit(level, "level", hint="e.g. 0.95")
    alpha = _alpha(level)
    specs = {**METRIC_SPECS, **(metrics or {})}
    names = [name for name in a_values if name in b_values]
    if not names:
        raise InvalidParameterError("a_values and b_values share no metric; pass the same metric names for both")
    unknown = [name for name in names if name not in specs]
    if unknown:
        raise InvalidParameterError(f"no spec for metric(s) {unknown}: pass metrics={{name: MetricSpec(label, "
                                    "Better.LOWER or Better.HIGHER, Aspect.FAIRNESS or Aspect.QUALITY, noun)}")
    rng = as_generator(seed)
    results = []
    for name in names:
        a, b = np.asarray(a_values[name], dtype=np.float64), np.asarray(b_values[name], dtype=np.float64)
        if a.shape != b.shape or a.ndim != 1:
            raise InvalidParameterError(f"{name}: A and B need one value per query each, on the same queries, "
                                        f"got {a.shape} and {b.shape}")
        keep = np.isfinite(a) & np.isfinite(b)
        n = int(keep.sum())
        if n < 2:
            results.append(_MetricResult(name, specs[name], n, None, None, None, math.nan, False))
            continue
        pair = paired_comparison(b[keep], a[keep], n_boot=n_boot, n_permutations=n_permutations, level=level,
                                 seed=rng)
        mean_a = bootstrap_mean(a[keep], n_boot=n_boot, level=level, seed=rng)
        mean_b = bootstrap_mean(b[keep], n_boot=n_boot, level=level, seed=rng)
        results.append(_MetricResult(name, specs[name], n, pair.difference, mean_a, mean_b, pair.p_value, True))
    m_all = len(results)
    results = [r if not r.testable or _smallest_sign_flip_p(r.n, n_permutations) <= alpha / m_all
               else _MetricResult(r.name, r.spec, r.n, r.diff, r.mean_a, r.mean_b, r.p_value, False) for r in results]
    tested = [r for r in results if r.testable]
    m = len(tested)
    adjusted = dict(zip([r.name for r in tested], holm_adjust(np.array([r.p_value for r in tested]))))
    correction = f"Holm over {m} metric{'s' if m != 1 else ''}"
    n_max = max(r.n for r in results)
    subject = f"{name_b} vs {name_a}"
    out, clauses = [], {}
    for r in results:
        common = {"metric": r.name, "level": level, "alpha": alpha, "n_queries": r.n,
                  "family": f"metrics, {name_b} − {name_a}", "detail": True}
        if not r.testable:
            clauses[r.name] = f"too few queries to compare {r.spec.label} (n = {r.n})"
            text = (f"{r.spec.label}: insufficient evidence to compare {name_b} with {name_a} (n = {r.n} "
                    f"quer{'y' if r.n == 1 else 'ies'} with a value in both)")
            numbers = {}
            if r.diff is not None:
                numbers = {"estimate": r.diff.estimate, "low": r.diff.low, "high": r.diff.high, "value": r.mean_b,
                               "reference": r.mean_a, "p_value": r.p_value}
            out.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, subject, text=text, **numbers, **common))
            continue
        d, p_adj = r.diff, float(adjusted[r.name])
        ref = r.mean_a.estimate
        relative = d.estimate / abs(ref) if ref != 0 else math.nan
        significant = p_adj <= alpha
        digits = _digits(d.estimate, d.low, d.high)
        signed = f"{_num(d.estimate, digits, signed=True)} [{_num(d.low, digits)}, {_num(d.high, digits)}]"
        improves = (d.estimate < 0) == (r.spec.better is Better.LOWER)
        if r.spec.aspect is Aspect.FAIRNESS:
            kind = (FindingKind.FAIRER if improves else FindingKind.LESS_FAIR) if significant else \
                FindingKind.NO_DIFFERENCE
            clause = f"{r.spec.label} {signed}, {_p_text(p_adj)}"
        else:
            kind = (FindingKind.GAIN if improves else FindingKind.COST) if significant else FindingKind.NO_DIFFERENCE
            if significant:
                verb = "rises" if d.estimate > 0 else "falls"
                lo, hi = (d.low, d.high) if d.estimate > 0 else (-d.high, -d.low)
                clause = (f"{r.spec.noun} {verb} {_num(abs(d.estimate), digits)} [{_num(lo, digits)}, "
                          f"{_num(hi, digits)}], {_p_text(p_adj)}")
            else:
                clause = f"{r.spec.noun} does not change beyond noise ({signed}, {_p_text(p_adj)})"
        clauses[r.name] = clause
        verdict = {FindingKind.FAIRER: f"{name_b} is fairer than {name_a} on {r.spec.label}",
                   FindingKind.LESS_FAIR: f"{name_b} is less fair than {name_a} on {r.spec.label}",
                   FindingKind.GAIN: f"{r.spec.label} is better under {name_b} than under {name_a}",
                   FindingKind.COST: f"{r.spec.label} is worse under {name_b} than under {name_a}",
                   FindingKind.NO_DIFFERENCE: f"{r.spec.label} does not differ between {name_b} and {name_a} "
                                              "beyond noise"}[kind]
        text = (f"{verdict}: {r.spec.label} {_num(r.mean_b.estimate, digits)} under {name_b} vs "
                f"{_num(ref, digits)} under {name_a}, {name_b} − {name_a} = {signed} ({_p_text(p_adj)}, "
                f"Holm-adjusted over {m} metric{'s' if m != 1 else ''}; {_n_text(r.n, None)})")
        out.append(Finding(kind, subject, text=text, severity=severity_of(significant, relative, serious=serious),
                           direction=(Direction.BELOW if d.estimate < 0 else Direction.ABOVE) if significant
                           else Direction.NONE, estimate=d.estimate, low=d.low, high=d.high, value=r.mean_b,
                           reference=r.mean_a, relative=relative, p_value=r.p_value, p_adjusted=p_adj,
                           test=SIGN_FLIP, correction=correction, **common))
    fairness = [r for r in results if r.spec.aspect is Aspect.FAIRNESS]
    if primary is not None and primary not in names:
        raise InvalidParameterError(f"primary={primary!r} is not among the compared metrics {names}")
    lead = next((r for r in results if r.name == primary), None) or (fairness[0] if fairness else None)
    lead_finding = next((f for f in out if lead is not None and f.metric == lead.name), None)
    if lead is None:
        opening = f"{name_b} vs {name_a}"
    elif lead_finding.kind is FindingKind.FAIRER:
        opening = f"{name_b} is fairer than {name_a}"
    elif lead_finding.kind is FindingKind.LESS_FAIR:
        opening = f"{name_b} is less fair than {name_a}"
    elif lead_finding.kind is FindingKind.INSUFFICIENT_EVIDENCE:
        opening = f"Too little evidence to tell whether {name_b} is fairer than {name_a}"
    else:
        opening = f"{name_b} is not fairer than {name_a} beyond noise"
    order = ([lead.name] if lead else []) + [r.name for r in results if r.spec.aspect is Aspect.QUALITY] + \
        [r.name for r in fairness if lead is None or r.name != lead.name]
    body = "; ".join(clauses[name] for name in order)
    worst = min((f.severity for f in out), key=lambda s: s.rank)
    tail = f"Holm-adjusted over {m} metric{'s' if m != 1 else ''}; " if m else ""
    headline = f"{opening}: {body} ({tail}{_n_text(n_max, None)})"
    numbers = {}
    if lead_finding is not None and lead_finding.kind is not FindingKind.INSUFFICIENT_EVIDENCE:
        lf = lead_finding
        numbers = {"estimate": lf.estimate, "low": lf.low, "high": lf.high, "value": lf.value,
                   "reference": lf.reference, "relative": lf.relative, "p_value": lf.p_value,
                   "p_adjusted": lf.p_adjusted, "test": SIGN_FLIP, "direction": lf.direction}
    out.append(Finding(FindingKind.HEADLINE, subject, lead.name if lead else "metrics", headline, severity=worst,
                       level=level, alpha=alpha, n_queries=n_max, family=f"metrics, {name_b} − {name_a}",
                       correction=correction if m else "", **numbers))
    return sort_findings(out)
