"""The fairness gate's verdict for readers and CI (:mod:`fairrag_core.audit.policy`): the text the command prints,
JUnit XML (one test case per rule; what every CI system reads) and a short Markdown summary (a CI job's page)."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from .policy import Outcome, Status, Verdict

__all__ = ["verdict_text", "junit_xml", "markdown_summary"]

_MARK = {Status.HOLDS: "ok", Status.SKIPPED: "skipped"}
#: The further findings the text prints under a broken finding rule (JSON, JUnit and Markdown: every one, or the
#: first).
_ALSO = 3


def _mark(outcome: Outcome) -> str:
    return _MARK.get(outcome.status) or outcome.rule.level.value.upper()


def verdict_text(verdict: Verdict, *, strict: bool = False) -> list[str]:
    """The text the command prints: the result, then one line per rule (``[FAIL]``, ``[WARN]``, ``[ok]``,
    ``[skipped]``) with its sentence, and the further findings behind a broken finding rule."""
    lines = [f"Fairness check of {verdict.subject} against {verdict.policy}: {verdict.result(strict=strict)} "
             f"({len(verdict.failed)} failed, {len(verdict.warned)} warned, {len(verdict.skipped)} skipped, "
             f"{len(verdict.outcomes)} rules)"]
    for outcome in verdict.outcomes:
        lines.append(f"  [{_mark(outcome)}] {outcome.rule.name}: {outcome.message}")
        lines += [f"      also: {f.text}" for f in outcome.findings[1:1 + _ALSO]]
        if len(outcome.findings) > 1 + _ALSO:
            lines.append(f"      and {len(outcome.findings) - 1 - _ALSO} more (--json lists every one)")
    return lines


def _numbers(outcome: Outcome) -> str:
    """The numbers of a broken rule for a JUnit failure's body: the value, or each finding's estimate, interval and
    p-value."""
    if outcome.value is not None:
        limits = [f"{k}: {v:g}" for k, v in (("min", outcome.rule.min), ("max", outcome.rule.max)) if v is not None]
        return "; ".join([f"{outcome.rule.metric} ({outcome.rule.bound.value}): {outcome.value:.6g}", *limits])
    parts = []
    for f in outcome.findings:
        p = f.p
        parts.append(f"{f.subject}: {f.metric} = {f.estimate:.6g} [{f.low:.6g}, {f.high:.6g}] at {f.level:g}"
                     + (f", p = {p:.3g}" if p is not None else "") + f", severity {f.severity.value}")
    return "\n".join(parts)


def junit_xml(verdict: Verdict, *, strict: bool = False) -> str:
    """The verdict as JUnit XML: one ``<testsuite>`` of one ``<testcase>`` per rule, a broken fail rule (and, with
    ``strict``, a broken warn rule) as ``<failure>`` with its sentence as ``message`` and its numbers as text, a
    broken warn rule otherwise as ``<system-out>`` (JUnit has no warning), a skipped rule as ``<skipped>``."""
    suites = ET.Element("testsuites", name="fairrag check")
    failures = sum(1 for o in verdict.outcomes if o.failed or (strict and o.warned))
    suite = ET.SubElement(suites, "testsuite", name=f"fairness of {verdict.subject}", tests=str(len(verdict.outcomes)),
                          failures=str(failures), errors="0", skipped=str(len(verdict.skipped)))
    suites.set("tests", suite.get("tests"))
    suites.set("failures", suite.get("failures"))
    for outcome in verdict.outcomes:
        case = ET.SubElement(suite, "testcase", name=outcome.rule.name,
                             classname=f"fairrag.check.{outcome.rule.level.value}")
        if outcome.failed or (strict and outcome.warned):
            failure = ET.SubElement(case, "failure", message=outcome.message, type=outcome.rule.level.value)
            failure.text = _numbers(outcome)
        elif outcome.warned:
            ET.SubElement(case, "system-out").text = f"warning: {outcome.message}\n{_numbers(outcome)}"
        elif outcome.status is Status.SKIPPED:
            ET.SubElement(case, "skipped", message=outcome.message)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_summary(verdict: Verdict, *, strict: bool = False) -> str:
    """A short Markdown summary (a CI job's step summary): the result, a table of the rules, and the notes."""
    icon = {"failed": "❌", "passed": "✅"}.get(verdict.result(strict=strict).split()[0], "")
    lines = [f"### {icon} Fairness check {verdict.result(strict=strict)}", "",
             f"{_cell(verdict.subject)} against {_cell(verdict.policy)}: {len(verdict.failed)} failed, "
             f"{len(verdict.warned)} warned, {len(verdict.skipped)} skipped of {len(verdict.outcomes)} rules.", "",
             "| rule | severity | result | why |", "|---|---|---|---|"]
    lines += [f"| {_cell(o.rule.name)} | {o.rule.level.value} | {_mark(o)} | {_cell(o.message)} |"
              for o in verdict.outcomes]
    lines += [f"\n> note: {_cell(note)}" for note in verdict.notes]
    return "\n".join(lines) + "\n"
