"""Findings: what an audit or a comparison found, as typed sentences that carry their numbers, test and severity.

A :class:`Finding` is one plain-language sentence (from a simulated audit of news: "Continental Wire Service is
under-exposed in retrieval: 10.7 % [7.1, 14.3] of retrieval exposure vs a fair share of 11.6 % [8.0, 15.4] (gap −0.9
points [−1.4, −0.3]; p = 0.004 unadjusted, p = 0.018 Holm-adjusted over 5 providers; 28 queries, 1400 sampled
rankings)") with the numbers behind it: the effect with
its interval, the observed and reference values with theirs, the test's p-value and its Holm adjustment over the
family it belongs to, a direction and a severity. Two generators make them:

* :func:`~fairrag_core.audit.share_findings.ledger_findings` (on :func:`~fairrag_core.audit.share_findings.
  share_findings`) — per provider or group, the retrieval share and the attributed share (citations) against the
  fair share, tested as :mod:`fairrag_core.audit.share_gaps` describes;
* :func:`~fairrag_core.audit.comparison_findings.comparison_findings` — two systems on the same queries, from the
  tables of :func:`~fairrag_core.audit.compare.compare_systems` (per metric; per provider share).

**Interval and test** (:func:`noise_verdict`, :data:`INTERVAL_RULE`; one rule for every family): a finding prints
its effect with the unadjusted interval at the audit's level and, beside it, the unadjusted p-value (the pair that
belong together) and the Holm-adjusted one, named (``p = 0.015 unadjusted, p = 0.059 Holm-adjusted over 4
metrics``). It says a difference is beyond noise only when the Holm-adjusted test rejects *and* the interval
excludes 0, and that there is none only when the test does not reject *and* the interval holds 0; where the two
disagree (Holm's adjustment is stricter than one interval, and the interval is a percentile bootstrap, the test a
permutation or bootstrap-t test) it says "at the margin of noise" and gives both (kind ``AT_THE_MARGIN``, INFO).
Simultaneous intervals (Bonferroni at 1 − α/m) were not chosen: with 500–1,000 resamples their percentile bounds at
99.6 % (m = 14) rest on two draws per tail.

**Severity** is of harm (:func:`severity_of`, :func:`harm_severity`): INFO when not beyond noise (within noise, at
the margin, insufficient evidence, no difference) and for good news (fairer, a gain in relevance or utility);
SERIOUS when a harm is significant and at least half of the reference (a share at most half or at least 1.5 times
its fair share, a metric worsening by half its level under A); NOTABLE when significant and smaller. A headline
takes the most severe of its parts. :func:`sort_findings` puts the most severe first;
:func:`merge_insufficient` folds a page's "too little evidence" lines into one per family, after the rest.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import InvalidParameterError
from ..metrics.intervals import ConfidenceInterval

__all__ = ["FindingKind", "Severity", "Direction", "Finding", "SERIOUS_RATIO", "severity_of", "harm_severity",
           "Verdict", "noise_verdict", "INTERVAL_RULE", "merge_insufficient", "sort_findings", "render_findings",
           "findings_to_json"]

#: Effect, relative to its reference, from which a significant finding is SERIOUS (see :func:`severity_of`).
SERIOUS_RATIO = 0.5


class FindingKind(str, enum.Enum):
    """What a finding says. ``HEADLINE`` sums up a family or a comparison; ``WITHIN_NOISE`` is one group's
    non-significant result (a detail), ``NO_DIFFERENCE`` a family's or a metric's; ``AT_THE_MARGIN`` one whose
    Holm-adjusted test and interval disagree (:func:`noise_verdict`)."""

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
    AT_THE_MARGIN = "at the margin"
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

    @classmethod
    def from_dict(cls, data: dict) -> Finding:
        """The finding :meth:`to_dict` wrote (a stored run keeps its findings so): None numbers back to NaN, the
        intervals back to :class:`ConfidenceInterval`; ``p`` is derived, not read."""
        def number(key: str) -> float:
            value = data.get(key)
            return math.nan if value is None else float(value)

        def interval(ci: dict | None) -> ConfidenceInterval | None:
            return None if ci is None else ConfidenceInterval(**ci)

        return cls(FindingKind(data["kind"]), data["subject"], data["metric"], data["text"],
                   severity=Severity(data["severity"]), direction=Direction(data["direction"]),
                   estimate=number("estimate"), low=number("low"), high=number("high"), level=data["level"],
                   value=interval(data.get("value")), reference=interval(data.get("reference")),
                   relative=number("relative"), p_value=number("p_value"), p_adjusted=number("p_adjusted"),
                   test=data.get("test") or "", correction=data.get("correction") or "", alpha=data["alpha"],
                   n_queries=data["n_queries"], n_lines=data.get("n_lines"), family=data.get("family", ""),
                   detail=data.get("detail", False))


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


def harm_severity(significant: bool, harmful: bool, relative: float, *, serious: float = SERIOUS_RATIO) -> Severity:
    """The severity of a change that is ``harmful`` (less fair, a loss of relevance or utility) or not (good news:
    always INFO); a harm as :func:`severity_of`.

    >>> harm_severity(True, False, -0.9).value, harm_severity(True, True, -0.9).value
    ('info', 'serious')
    """
    return severity_of(significant, relative, serious=serious) if harmful else Severity.INFO


#: The rule by which every finding prints its interval and its test (module docstring), in the words of a report's
#: *How to read* and of docs/findings.md.
INTERVAL_RULE = ("Each finding prints its effect with its unadjusted 95% interval and, beside it, the unadjusted "
                 "p-value and the Holm-adjusted one over the family it names (the groups, or the metrics, tested "
                 "together). A finding says a difference is beyond noise only when the Holm-adjusted p ≤ 0.05 and "
                 "the interval excludes 0, and that there is none only when both say so; where they disagree it says "
                 "\"at the margin of noise\".")


class Verdict(str, enum.Enum):
    """What a finding may say of its effect: the Holm-adjusted test and the printed interval agree that it is
    beyond noise, or within it, or they disagree (at the margin)."""

    BEYOND = "beyond noise"
    WITHIN = "within noise"
    MARGIN = "at the margin of noise"


def noise_verdict(significant: bool, low: float, high: float, null: float = 0.0) -> Verdict:
    """BEYOND when the Holm-adjusted test rejects (``significant``) and ``[low, high]`` excludes ``null``; WITHIN when
    it does not and the interval holds ``null`` (or there is no interval); MARGIN otherwise.

    >>> [noise_verdict(s, lo, 0.1).value for s, lo in ((True, 0.01), (False, -0.1), (False, 0.01), (True, -0.1))]
    ['beyond noise', 'within noise', 'at the margin of noise', 'at the margin of noise']
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return Verdict.BEYOND if significant else Verdict.WITHIN
    excludes = low > null or high < null
    if significant == excludes:
        return Verdict.BEYOND if significant else Verdict.WITHIN
    return Verdict.MARGIN


def merge_insufficient(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with its headline "too little evidence" findings (kind INSUFFICIENT_EVIDENCE, not details,
    saying "Too little evidence"; two or more) kept as details and summed up in one short line naming each family
    (its metric) and whom it could not test — INFO and the last kind, so after the substantive findings. A page
    shows one line instead of one per system; JSON keeps every finding.

    >>> f = [Finding(FindingKind.INSUFFICIENT_EVIDENCE, f"every provider (α = {a})", "retrieval share − fair share",
    ...              "Too little evidence …", n_queries=3) for a in (0, 2)]
    >>> [g.text for g in merge_insufficient(f) if not g.detail]
    ['Too little evidence to test, on 3 queries: retrieval share − fair share (α = 0, α = 2).']
    """
    found = [f for f in findings if f.kind is FindingKind.INSUFFICIENT_EVIDENCE and not f.detail
             and "Too little evidence" in f.text]  # lines that name a fix ("log the candidates …") stay
    if len(found) < 2:
        return list(findings)
    families: dict[str, list[str]] = {}
    for f in found:  # "every provider (α = 0)" → "α = 0"; "α = 0 vs deterministic" as it is
        who = re.sub(r"^every [^(]*\((.*)\)$", r"\1", f.subject)
        families.setdefault(_METRIC_WORDS.get(f.metric, f.metric), []).append(who)
    queries = sorted({f.n_queries for f in found})
    on = (f"{queries[0]}" if len(queries) == 1 else f"{queries[0]}–{queries[-1]}") + \
        f" quer{'y' if queries == [1] else 'ies'}"
    text = "; ".join(f"{metric} ({', '.join(dict.fromkeys(who))})" for metric, who in families.items())
    merged = Finding(FindingKind.INSUFFICIENT_EVIDENCE, "several families", "; ".join(families),
                     f"Too little evidence to test, on {on}: {text}.", level=found[0].level, alpha=found[0].alpha,
                     n_queries=queries[-1], n_lines=found[0].n_lines, family="; ".join(families))
    ids = {id(f) for f in found}
    return [replace(f, detail=True) if id(f) in ids else f for f in findings] + [merged]


#: How a comparison's metric names a family in the merged "too little evidence" line.
_METRIC_WORDS = {"ee_d": "EE-D (is it fairer?)"}


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

