"""The fairness gate's policy (``python -m fairrag_core check``): rules on an audit's findings and headline metrics,
each a failure or a warning, and the verdict's exit code (its text, JUnit XML and Markdown:
:mod:`fairrag_core.audit.policy_report`).

A policy is a TOML file of ``[[rule]]`` tables (docs/check.md). A rule is one of two kinds:

* a **finding rule** (``finding = "under-cited"``): broken when the audit found a finding of that kind
  (:class:`~fairrag_core.audit.findings.FindingKind`, ``under_cited`` written either way) at least ``at_least``
  severe (default ``notable``: any significant finding, i.e. beyond noise after Holm's adjustment; ``serious``: only
  a share at most half or at least 1.5 times its reference, :func:`~fairrag_core.audit.findings.severity_of`;
  ``info``: any finding of the kind, e.g. ``insufficient evidence``), optionally only about one ``provider`` (a
  provider's or a category group's name as the findings write it) or one grouping (``by = "provider"`` or a category
  of the collection);
* a **metric rule** (``metric = "ee_d"``, ``max`` and/or ``min``): broken when the headline's ``bound`` of that
  metric (``estimate``, default; ``high``: the interval's upper end, so ``max`` holds beyond noise; ``low``: its lower
  end, so only a value above ``max`` beyond noise breaks it) lies above ``max`` or below ``min``. A per-source metric
  named without its source (``eae_d``) is the first source the audit measured (``cited``, then ``entailed``). A
  metric the audit could not measure (EE-R without relevance labels) leaves the rule *skipped*, with the reason.

Every rule has a ``severity``: ``fail`` (default) or ``warn``, and may have a ``name`` (default: the rule in words).
With no policy file the gate applies :data:`DEFAULT_POLICY`. Exit codes (:data:`EXIT_CODES`): 0 every rule holds,
1 a fail rule is broken, 3 only warn rules are broken and ``--strict`` was given; 2 is the command line's code for
a usage or input error (a bad policy, an unreadable log), as for every command.
"""

from __future__ import annotations

import enum
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import DataFormatError
from .findings import Finding, FindingKind, Severity, sort_findings

__all__ = ["Level", "Bound", "Status", "Rule", "Policy", "Headline", "headlines_from", "Outcome", "Verdict",
           "DEFAULT_POLICY", "EXIT_CODES", "PASSED", "FAILED", "WARNED", "parse_policy", "load_policy", "metric_names",
           "evaluate"]

#: The exit codes of the gate; 2 (a usage or input error) is the command line's, as for every command.
PASSED, FAILED, WARNED = 0, 1, 3
EXIT_CODES = {PASSED: "every rule holds (warnings allowed unless --strict)", FAILED: "a fail rule is broken",
              2: "usage or input error (bad policy, unreadable input): one line on stderr names the fix",
              WARNED: "only warn rules are broken, and --strict was given"}

#: The policy applied when none is given: no provider (nor group) under-exposed or under-cited beyond noise.
DEFAULT_POLICY = """\
[[rule]]
name = "no provider under-exposed beyond noise"
finding = "under-exposed"
severity = "fail"

[[rule]]
name = "no provider under-cited beyond noise"
finding = "under-cited"
severity = "fail"
"""


class Level(str, enum.Enum):
    """What a broken rule does to the verdict."""

    FAIL = "fail"
    WARN = "warn"


class Bound(str, enum.Enum):
    """Which number of a headline metric a metric rule compares: the estimate or an end of its interval."""

    ESTIMATE = "estimate"
    LOW = "low"
    HIGH = "high"


class Status(str, enum.Enum):
    """A rule's outcome on one audit."""

    HOLDS = "holds"
    BROKEN = "broken"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Rule:
    """One rule of a policy (see the module's docstring); ``line`` is where its ``[[rule]]`` starts in the file."""

    name: str
    level: Level = Level.FAIL
    finding: FindingKind | None = None
    provider: str | None = None
    by: str | None = None
    at_least: Severity = Severity.NOTABLE
    metric: str | None = None
    max: float | None = None
    min: float | None = None
    bound: Bound = Bound.ESTIMATE
    line: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "severity": self.level.value, "finding": self.finding and self.finding.value,
                "provider": self.provider, "by": self.by,
                "at_least": self.at_least.value if self.finding else None, "metric": self.metric, "max": self.max,
                "min": self.min, "bound": self.bound.value if self.metric else None, "line": self.line}


@dataclass(frozen=True)
class Policy:
    """The rules, in the file's order, and where they came from (a path, or ``the default policy``)."""

    rules: tuple[Rule, ...]
    source: str = "the default policy"


#: The keys a rule may have, and what each takes (for the error that names a wrong one).
_KEYS = {"name": "text", "severity": "'fail' or 'warn'", "finding": "a finding kind", "provider": "a name",
         "by": "'provider' or a category", "at_least": "'info', 'notable' or 'serious'", "metric": "a headline metric",
         "max": "a number", "min": "a number", "bound": "'estimate', 'low' or 'high'"}
_FINDING_KEYS, _METRIC_KEYS = {"finding", "provider", "by", "at_least"}, {"metric", "max", "min", "bound"}
_RULE_HEADER = re.compile(r"^\s*\[\[\s*rule\s*\]\]")


def metric_names() -> tuple[str, ...]:
    """The names a metric rule may use: every metric a log audit's headline can show (the registry's
    :data:`~fairrag_core.metrics.registry.LOG_HEADLINE` list and the metrics with a headline direction), a
    per-source one also as ``<key>_<source>`` (:data:`~fairrag_core.audit.rag_log.SOURCE_LABELS`)."""
    from ..metrics.registry import LOG_HEADLINE, METRICS
    from .rag_log import SOURCE_LABELS

    shown = [m for m in METRICS.values() if LOG_HEADLINE in m.tables or m.headline_direction]
    return tuple(name for m in shown for name in (m.key, *(m.columns(tuple(SOURCE_LABELS)) if m.per_source else ())))


def _lines(text: str) -> list[int]:
    """The 1-based line of each ``[[rule]]`` header, in order."""
    return [i + 1 for i, line in enumerate(text.splitlines()) if _RULE_HEADER.match(line)]


def _key_line(text: str, start: int | None, key: str) -> int | None:
    """The line of ``key = …`` in the rule starting at line ``start`` (else the rule's own line)."""
    if start is None:
        return None
    lines = text.splitlines()
    for i in range(start, len(lines)):
        if _RULE_HEADER.match(lines[i]) or lines[i].lstrip().startswith("["):
            break
        if re.match(rf"^\s*{re.escape(key)}\s*=", lines[i]):
            return i + 1
    return start


def _choice(enum_type: type[enum.Enum], value: object, allowed: Sequence[str], fail) -> enum.Enum:
    text = str(value).strip().lower().replace("_", "-") if isinstance(value, str) else value
    if enum_type is FindingKind and isinstance(text, str):
        text = text.replace("-", " ") if text.replace("-", " ") in {k.value for k in FindingKind} else text
    if text not in allowed:
        fail(f"{value!r} is not one of {', '.join(allowed)}")
    return enum_type(text)


def parse_policy(text: str, source: str = "policy") -> Policy:
    """The :class:`Policy` written in ``text`` (TOML; ``source`` names it in errors).

    Raises:
        DataFormatError: the TOML does not parse, or a rule has an unknown key, a wrong value, both or neither of
            ``finding`` and ``metric``; one line naming the file, the line, the key and the fix.

    >>> [r.name for r in parse_policy('[[rule]]\\nmetric = "ee_d"\\nmax = 0.5').rules]
    ['ee_d ≤ 0.5']
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise DataFormatError(f"not valid TOML ({err}); write rules as [[rule]] tables of key = value lines "
                              "(docs/check.md)", path=source) from None
    unknown = sorted(set(data) - {"rule"})
    if unknown:
        raise DataFormatError(f"unknown table or key {unknown[0]!r}; a policy holds only [[rule]] tables "
                              "(docs/check.md)", path=source)
    tables = data.get("rule", [])
    if not isinstance(tables, list) or not tables:
        raise DataFormatError("no rule; add [[rule]] tables, e.g. [[rule]] finding = \"under-cited\" "
                              "severity = \"fail\" (docs/check.md)", path=source)
    starts = _lines(text)
    return Policy(tuple(_rule(table, i, starts[i] if i < len(starts) else None, text, source)
                        for i, table in enumerate(tables)), source)


def _rule(table: dict, index: int, start: int | None, text: str, source: str) -> Rule:
    def fail(message: str, key: str | None = None, *, named: bool = True):
        line = _key_line(text, start, key) if key else start
        raise DataFormatError(f"rule {index + 1}: {key + ': ' if key and named else ''}{message} (docs/check.md)",
                              path=source, line=line)

    for key in table:
        if key not in _KEYS:
            fail(f"unknown key {key!r}; a rule takes {', '.join(_KEYS)}", key, named=False)
    kinds = [k for k in ("finding", "metric") if k in table]
    if len(kinds) != 1:
        fail("give exactly one of finding = \"…\" (e.g. \"under-cited\") and metric = \"…\" (e.g. \"ee_d\")")
    extra = sorted(set(table) & (_METRIC_KEYS if kinds == ["finding"] else _FINDING_KEYS) - {kinds[0]})
    if extra:
        fail(f"{extra[0]!r} belongs to a {'metric' if kinds == ['finding'] else 'finding'} rule; drop it, or make "
             "it a rule of its own", extra[0])
    for key in ("name", "provider", "by", "metric", "finding", "severity", "at_least", "bound"):
        if key in table and not isinstance(table[key], str):
            fail(f"{table[key]!r} is no text; quote it", key)
    for key in ("max", "min"):
        value = table.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value)):
            fail(f"{value!r} is not a finite number; write e.g. {key} = 0.5", key)
    level = _choice(Level, table.get("severity", "fail"), [v.value for v in Level],
                    lambda m: fail(m, "severity"))
    if kinds == ["finding"]:
        kind = _choice(FindingKind, table["finding"], [k.value for k in FindingKind], lambda m: fail(m, "finding"))
        at_least = _choice(Severity, table.get("at_least", "notable"), [v.value for v in Severity],
                           lambda m: fail(m, "at_least"))
        about = f" about {table['provider']}" if "provider" in table else ""
        by = f" by {table['by']}" if "by" in table else ""
        name = table.get("name") or f"no {kind.value} finding{about}{by}" + (
            " (serious)" if at_least is Severity.SERIOUS else "")
        return Rule(name, level, finding=kind, provider=table.get("provider"), by=table.get("by"),
                    at_least=at_least, line=start)
    metric, low, high = table["metric"], table.get("min"), table.get("max")
    names = metric_names()
    if metric not in names:
        fail(f"{metric!r} is no headline metric; use one of {', '.join(names)}", "metric")
    if low is None and high is None:
        fail("a metric rule needs max = … and/or min = …", "metric")
    if low is not None and high is not None and low > high:
        fail(f"min = {low:g} is above max = {high:g}; swap them", "min")
    bound = _choice(Bound, table.get("bound", "estimate"), [b.value for b in Bound], lambda m: fail(m, "bound"))
    of = "" if bound is Bound.ESTIMATE else f" (interval's {bound.value} end)"
    return Rule(table.get("name") or f"{metric}{of} {_limits(low, high)}", level, metric=metric, min=low, max=high,
                bound=bound, line=start)


def _limits(low: float | None, high: float | None) -> str:
    """``≥ 0.2 and ≤ 0.5``, ``≤ 0.5``: a metric rule's limits in words."""
    return " and ".join(w for w in (f"≥ {low:g}" if low is not None else "",
                                    f"≤ {high:g}" if high is not None else "") if w)


def load_policy(path: str | None) -> Policy:
    """The policy in the TOML file ``path``, or :data:`DEFAULT_POLICY` when None.

    Raises:
        DataFormatError: the file cannot be read, or :func:`parse_policy` refuses it.
    """
    if path is None:
        return parse_policy(DEFAULT_POLICY, "the default policy")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise DataFormatError(f"cannot read the policy ({reason}); give a UTF-8 TOML file (docs/check.md)",
                              path=path) from None
    return parse_policy(text, str(path))


@dataclass(frozen=True)
class Headline:
    """One headline metric of the audit: its value with its interval (NaN ends: no interval, one query)."""

    metric: str
    label: str
    estimate: float
    low: float = math.nan
    high: float = math.nan

    def bound(self, which: Bound) -> float:
        return {Bound.ESTIMATE: self.estimate, Bound.LOW: self.low, Bound.HIGH: self.high}[which]

    def text(self) -> str:
        interval = "" if math.isnan(self.low) else f" [{self.low:.3f}, {self.high:.3f}]"
        return f"{self.label} {self.estimate:.3f}{interval}"


def headlines_from(summary) -> dict[str, Headline]:
    """A log audit's headline table (:func:`~fairrag_core.audit.log_report.log_summary`: ``metric``, ``label``,
    ``estimate``, ``low``, ``high`` per row) as :class:`Headline` by metric name."""
    return {row.metric: Headline(row.metric, row.label, float(row.estimate), float(row.low), float(row.high))
            for row in summary.itertuples()}


@dataclass(frozen=True)
class Outcome:
    """A rule's outcome: holds, broken or skipped, one sentence why, and the findings or the value behind it."""

    rule: Rule
    status: Status
    message: str
    findings: tuple[Finding, ...] = ()
    value: float | None = None

    @property
    def failed(self) -> bool:
        return self.status is Status.BROKEN and self.rule.level is Level.FAIL

    @property
    def warned(self) -> bool:
        return self.status is Status.BROKEN and self.rule.level is Level.WARN

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule.to_dict(), "status": self.status.value, "message": self.message,
                "value": self.value, "findings": [f.to_dict() for f in self.findings]}


@dataclass(frozen=True)
class Verdict:
    """Every rule's outcome on one audit, what was audited (``subject``) and under which policy."""

    outcomes: tuple[Outcome, ...]
    subject: str = ""
    policy: str = "the default policy"
    notes: tuple[str, ...] = field(default=())

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.failed]

    @property
    def warned(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.warned]

    @property
    def skipped(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status is Status.SKIPPED]

    def exit_code(self, *, strict: bool = False) -> int:
        """:data:`FAILED` when a fail rule is broken; :data:`WARNED` when only warn rules are and ``strict``; else
        :data:`PASSED`."""
        if self.failed:
            return FAILED
        return WARNED if strict and self.warned else PASSED

    def result(self, *, strict: bool = False) -> str:
        """``passed``, ``failed``, ``passed with warnings`` or ``failed on warnings (--strict)``."""
        if self.failed:
            return "failed"
        if self.warned:
            return "failed on warnings (--strict)" if strict else "passed with warnings"
        return "passed"

    def to_dict(self, *, strict: bool = False) -> dict[str, object]:
        return {"subject": self.subject, "policy": self.policy, "result": self.result(strict=strict),
                "exit_code": self.exit_code(strict=strict), "failed": len(self.failed), "warned": len(self.warned),
                "skipped": len(self.skipped), "notes": list(self.notes),
                "rules": [o.to_dict() for o in self.outcomes]}


def _group_of(finding: Finding) -> str | None:
    """The grouping of a finding's family (``"retrieval share − fair share, by provider"`` → ``provider``)."""
    return finding.family.rsplit(", by ", 1)[1] if ", by " in finding.family else None


def _finding_outcome(rule: Rule, findings: Sequence[Finding]) -> Outcome:
    hits = [f for f in sort_findings(findings)
            if f.kind is rule.finding and f.severity.rank <= rule.at_least.rank
            and (rule.provider is None or f.subject == rule.provider) and (rule.by is None or _group_of(f) == rule.by)]
    if hits:
        return Outcome(rule, Status.BROKEN, hits[0].text, findings=tuple(hits))
    about = f" about {rule.provider}" if rule.provider else ""
    by = f" by {rule.by}" if rule.by else ""
    severe = {Severity.SERIOUS: " serious", Severity.NOTABLE: " significant", Severity.INFO: ""}[rule.at_least]
    return Outcome(rule, Status.HOLDS, f"the audit found no{severe} {rule.finding.value} finding{about}{by}")


def _metric_outcome(rule: Rule, headlines: Mapping[str, Headline], undefined: Mapping[str, str]) -> Outcome:
    from .rag_log import SOURCE_LABELS

    names = [rule.metric] + [f"{rule.metric}_{source}" for source in SOURCE_LABELS]
    found = next((headlines[n] for n in names if n in headlines), None)
    if found is None:
        why = undefined.get(rule.metric) or "the audit did not measure it (e.g. no relevance labels, no attributed " \
                                            "answers, or a user model without it)"
        return Outcome(rule, Status.SKIPPED, f"{rule.metric} has no value: {why}")
    value = found.bound(rule.bound)
    if math.isnan(value):
        return Outcome(rule, Status.SKIPPED, f"{found.text()}: no interval (one query), so no {rule.bound.value} "
                                             "end to compare; use bound = \"estimate\"")
    which = "" if rule.bound is Bound.ESTIMATE else f"its interval's {rule.bound.value} end "
    if rule.max is not None and value > rule.max:
        return Outcome(rule, Status.BROKEN, f"{found.text()}: {which}{value:.3f} is above the maximum {rule.max:g}",
                       value=value)
    if rule.min is not None and value < rule.min:
        return Outcome(rule, Status.BROKEN, f"{found.text()}: {which}{value:.3f} is below the minimum {rule.min:g}",
                       value=value)
    return Outcome(rule, Status.HOLDS, f"{found.text()}: {which}{value:.3f} is {_limits(rule.min, rule.max)}",
                   value=value)


def evaluate(policy: Policy, findings: Sequence[Finding], headlines: Mapping[str, Headline],
             undefined: Mapping[str, str] = {}, *, subject: str = "", notes: Sequence[str] = ()) -> Verdict:
    """Each rule of ``policy`` on one audit: its ``findings`` (details included: a finding rule reads their kinds),
    its ``headlines`` by metric name and the reasons of the metrics it left ``undefined``."""
    outcomes = tuple(_finding_outcome(rule, findings) if rule.finding is not None
                     else _metric_outcome(rule, headlines, undefined) for rule in policy.rules)
    return Verdict(outcomes, subject=subject, policy=policy.source, notes=tuple(notes))
