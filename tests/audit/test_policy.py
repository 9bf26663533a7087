"""The fairness gate's policy: parsing (and the one-line errors naming the line and key), each rule kind on findings
and headlines, exit codes, JUnit XML (parsed back) and the Markdown summary."""

import math
import re
import xml.etree.ElementTree as ET

import pytest

from fairrag_core.audit.findings import Finding, FindingKind, Severity
from fairrag_core.audit.policy import (
    DEFAULT_POLICY,
    FAILED,
    PASSED,
    WARNED,
    Bound,
    Headline,
    Level,
    Status,
    evaluate,
    load_policy,
    parse_policy,
)
from fairrag_core.audit.policy_report import junit_xml, markdown_summary, verdict_text
from fairrag_core.errors import DataFormatError


def _finding(kind=FindingKind.UNDER_CITED, subject="Stridewell", severity=Severity.SERIOUS, by="provider"):
    return Finding(kind, subject, "citation share − retrieval share",
                   f"{subject} is {kind.value} for how often it is shown: 1.2 % of citations vs 8.4 %",
                   severity=severity, estimate=-0.072, low=-0.1, high=-0.04, p_value=0.004, p_adjusted=0.012,
                   relative=-0.86, family=f"citation share − retrieval share, by {by}")


HEADLINES = {"ee_d": Headline("ee_d", "EE-D", 0.663, 0.587, 0.741),
             "eae_d_cited": Headline("eae_d_cited", "EAE-D (cited by the system)", 0.134, 0.110, 0.162)}


def test_the_default_policy_fails_on_under_exposed_and_under_cited_providers():
    policy = load_policy(None)
    assert policy.source == "the default policy" and DEFAULT_POLICY.count("[[rule]]") == 2
    assert [(r.finding, r.level, r.line) for r in policy.rules] == [
        (FindingKind.UNDER_EXPOSED, Level.FAIL, 1), (FindingKind.UNDER_CITED, Level.FAIL, 6)]
    assert [r.name for r in policy.rules] == ["no provider under-exposed beyond noise",
                                              "no provider under-cited beyond noise"]


def test_rules_take_their_defaults_and_either_spelling_of_a_kind():
    policy = parse_policy('[[rule]]\nfinding = "under_cited"\nprovider = "Ferrow Labs"\n\n'
                          '[[rule]]\nmetric = "eae_d"\nmax = 0.3\nmin = 0.01\nseverity = "warn"\nbound = "high"\n')
    first, second = policy.rules
    assert (first.finding, first.level, first.at_least, first.provider, first.name) == (
        FindingKind.UNDER_CITED, Level.FAIL, Severity.NOTABLE, "Ferrow Labs",
        "no under-cited finding about Ferrow Labs")
    assert (second.metric, second.max, second.min, second.bound, second.level, second.line) == (
        "eae_d", 0.3, 0.01, Bound.HIGH, Level.WARN, 5)
    assert second.name == "eae_d (interval's high end) ≥ 0.01 and ≤ 0.3"
    assert parse_policy('[[rule]]\nfinding = "less_fair"').rules[0].finding is FindingKind.LESS_FAIR


@pytest.mark.parametrize(("text", "message"), [
    ('[[rule]]\nfinding = "under-cited"\nmaxx = 3\n', "p.toml, line 3: rule 1: unknown key 'maxx'; a rule takes name"),
    ('[[rule]]\nmetric = "ee_d"\nmax = 0.5\n\n[[rule]]\nmetric = "eed"\nmax = 1\n',
     "p.toml, line 6: rule 2: metric: 'eed' is no headline metric; use one of ee_d, ee_r,"),
    ('[[rule]]\nfinding = "undercited"\n', "p.toml, line 2: rule 1: finding: 'undercited' is not one of headline,"),
    ('[[rule]]\nfinding = "under-cited"\nmax = 0.5\n',
     "p.toml, line 3: rule 1: max: 'max' belongs to a metric rule; drop it, or make it a rule of its own"),
    ('[[rule]]\nname = "x"\n', 'p.toml, line 1: rule 1: give exactly one of finding = "…"'),
    ('[[rule]]\nmetric = "ee_d"\n', "p.toml, line 2: rule 1: metric: a metric rule needs max = … and/or min = …"),
    ('[[rule]]\nmetric = "ee_d"\nmax = "0.5"\n', "p.toml, line 3: rule 1: max: '0.5' is not a finite number"),
    ('[[rule]]\nmetric = "ee_d"\nmin = 0.6\nmax = 0.5\n', "line 3: rule 1: min: min = 0.6 is above max = 0.5; swap"),
    ('[[rule]]\nfinding = "under-cited"\nseverity = "error"\n',
     "p.toml, line 3: rule 1: severity: 'error' is not one of fail, warn"),
    ('[[rule]]\nfinding = "under-cited"\nat_least = "huge"\n', "line 3: rule 1: at_least: 'huge' is not one of"),
    ('[[rule]\n', "p.toml: not valid TOML (Expected ']]' at the end of an array declaration (at line 1, column 7))"),
    ('[gate]\nx = 1\n', "p.toml: unknown table or key 'gate'; a policy holds only [[rule]] tables"),
    ('# nothing yet\n', "p.toml: no rule; add [[rule]] tables"),
])
def test_a_bad_policy_is_one_line_naming_the_line_the_key_and_the_fix(text, message):
    with pytest.raises(DataFormatError) as err:
        parse_policy(text, "p.toml")
    assert message in str(err.value) and "\n" not in str(err.value) and "docs/check.md" in str(err.value)


def test_an_unreadable_policy_file_names_itself(tmp_path):
    with pytest.raises(DataFormatError, match=r"nope.toml: cannot read the policy \(No such file or directory\)"):
        load_policy(str(tmp_path / "nope.toml"))


def test_a_finding_rule_breaks_on_a_matching_finding_of_its_severity_provider_and_grouping():
    policy = parse_policy('[[rule]]\nfinding = "under-cited"\n\n'
                          '[[rule]]\nfinding = "under-cited"\nat_least = "serious"\n\n'
                          '[[rule]]\nfinding = "under-cited"\nprovider = "Quillo"\n\n'
                          '[[rule]]\nfinding = "under-cited"\nby = "segment"\n\n'
                          '[[rule]]\nfinding = "under-exposed"\n')
    notable = _finding(severity=Severity.NOTABLE)
    verdict = evaluate(policy, [notable], HEADLINES)
    assert [o.status for o in verdict.outcomes] == [Status.BROKEN, Status.HOLDS, Status.HOLDS, Status.HOLDS,
                                                    Status.HOLDS]
    assert verdict.outcomes[0].message == notable.text and verdict.outcomes[0].findings == (notable,)
    assert verdict.outcomes[1].message == "the audit found no serious under-cited finding"
    assert verdict.outcomes[2].message == "the audit found no significant under-cited finding about Quillo"
    # a finding of the same kind within noise (a detail) never breaks a rule: under-cited is only said when significant
    within = _finding(FindingKind.WITHIN_NOISE, severity=Severity.INFO)
    assert evaluate(policy, [within], HEADLINES).exit_code() == PASSED
    serious = _finding(subject="Quillo", by="segment")
    assert [o.status for o in evaluate(policy, [notable, serious], HEADLINES).outcomes][:4] == [Status.BROKEN] * 4


def test_metric_rules_compare_the_estimate_or_an_end_of_its_interval_and_skip_what_was_not_measured():
    policy = parse_policy('[[rule]]\nmetric = "ee_d"\nmax = 0.7\n\n'
                          '[[rule]]\nmetric = "ee_d"\nmax = 0.7\nbound = "high"\n\n'
                          '[[rule]]\nmetric = "eae_d"\nmin = 0.2\nseverity = "warn"\n\n'
                          '[[rule]]\nmetric = "ee_r"\nmin = 0.5\n')
    verdict = evaluate(policy, [], HEADLINES, {"ee_r": "no relevance labels: the documents come from the log"})
    assert [o.status for o in verdict.outcomes] == [Status.HOLDS, Status.BROKEN, Status.BROKEN, Status.SKIPPED]
    assert verdict.outcomes[0].message == "EE-D 0.663 [0.587, 0.741]: 0.663 is ≤ 0.7"
    assert verdict.outcomes[1].message == ("EE-D 0.663 [0.587, 0.741]: its interval's high end 0.741 is above the "
                                           "maximum 0.7") and verdict.outcomes[1].value == 0.741
    # eae_d without its source is the first source measured (cited)
    assert verdict.outcomes[2].message == "EAE-D (cited by the system) 0.134 [0.110, 0.162]: 0.134 is below the " \
                                          "minimum 0.2"
    assert verdict.outcomes[3].message == "ee_r has no value: no relevance labels: the documents come from the log"
    assert (len(verdict.failed), len(verdict.warned), len(verdict.skipped)) == (1, 1, 1)
    one_query = {"ee_d": Headline("ee_d", "EE-D", 0.4)}
    outcome = evaluate(policy, [], one_query).outcomes[1]
    assert outcome.status is Status.SKIPPED and "no interval (one query)" in outcome.message
    assert math.isnan(one_query["ee_d"].low)


def test_exit_codes_pass_fail_warn_and_strict():
    fail = parse_policy('[[rule]]\nmetric = "ee_d"\nmax = 0.5\n')
    warn = parse_policy('[[rule]]\nmetric = "ee_d"\nmax = 0.5\nseverity = "warn"\n')
    holds = parse_policy('[[rule]]\nmetric = "ee_d"\nmax = 0.9\n')
    assert (PASSED, FAILED, WARNED) == (0, 1, 3)
    assert evaluate(fail, [], HEADLINES).exit_code() == FAILED
    assert evaluate(fail, [], HEADLINES).exit_code(strict=True) == FAILED
    assert evaluate(warn, [], HEADLINES).exit_code() == PASSED
    assert evaluate(warn, [], HEADLINES).result() == "passed with warnings"
    assert evaluate(warn, [], HEADLINES).exit_code(strict=True) == WARNED
    assert evaluate(holds, [], HEADLINES).exit_code(strict=True) == PASSED


def test_junit_xml_has_one_testcase_per_rule_with_the_findings_sentence_and_numbers():
    policy = parse_policy('[[rule]]\nname = "no provider under-cited"\nfinding = "under-cited"\n\n'
                          '[[rule]]\nmetric = "ee_d"\nmax = 0.5\nseverity = "warn"\n\n'
                          '[[rule]]\nmetric = "ee_r"\nmin = 0.5\n\n'
                          '[[rule]]\nmetric = "eae_d"\nmax = 0.5\n')
    found = _finding()
    verdict = evaluate(policy, [found], HEADLINES, subject="RAG log a.jsonl")
    root = ET.fromstring(junit_xml(verdict))
    assert root.tag == "testsuites" and (root.get("tests"), root.get("failures")) == ("4", "1")
    (suite,) = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("fairness of RAG log a.jsonl", "4", "1", "0", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["no provider under-cited", "ee_d ≤ 0.5", "ee_r ≥ 0.5", "eae_d ≤ 0.5"]
    failure = cases[0].find("failure")
    assert failure.get("message") == found.text and failure.get("type") == "fail"
    assert failure.text == ("Stridewell: citation share − retrieval share = -0.072 [-0.1, -0.04] at 0.95, "
                            "p = 0.012, severity serious")
    assert cases[1].find("failure") is None and cases[1].find("system-out").text.startswith("warning: EE-D 0.663")
    assert cases[2].find("skipped").get("message").startswith("ee_r has no value")
    assert list(cases[3]) == []
    strict = ET.fromstring(junit_xml(verdict, strict=True))
    assert strict.get("failures") == "2" and strict.find("testsuite/testcase[2]/failure").text == \
        "ee_d (estimate): 0.663; max: 0.5"


def test_markdown_summary_and_text_name_the_result_and_every_rule():
    policy = parse_policy('[[rule]]\nfinding = "under-cited"\n\n[[rule]]\nmetric = "ee_d"\nmax = 0.5\n'
                          'severity = "warn"\n')
    verdict = evaluate(policy, [_finding()], HEADLINES, subject="RAG log a|b.jsonl", notes=["2 lines left out"])
    summary = markdown_summary(verdict)
    assert summary.startswith("### ❌ Fairness check failed\n\nRAG log a\\|b.jsonl against policy: "
                              "1 failed, 1 warned, 0 skipped of 2 rules.\n")
    assert "| no under-cited finding | fail | FAIL | Stridewell is under-cited for how often it is shown" in summary
    assert "| ee_d ≤ 0.5 | warn | WARN | EE-D 0.663 [0.587, 0.741]: 0.663 is above the maximum 0.5 |" in summary
    assert summary.endswith("> note: 2 lines left out\n")
    passed = evaluate(parse_policy('[[rule]]\nmetric = "ee_d"\nmax = 0.9\n'), [], HEADLINES, subject="x")
    assert markdown_summary(passed).startswith("### ✅ Fairness check passed\n")
    text = verdict_text(verdict)
    assert text[0] == ("Fairness check of RAG log a|b.jsonl against policy: failed (1 failed, 1 warned, "
                       "0 skipped, 2 rules)")
    assert text[1].startswith("  [FAIL] no under-cited finding: Stridewell is under-cited")
    assert text[2] == "  [WARN] ee_d ≤ 0.5: EE-D 0.663 [0.587, 0.741]: 0.663 is above the maximum 0.5"


def test_the_docs_policies_parse_and_the_first_is_the_default():
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "check.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", docs, re.S)
    assert len(blocks) == 2 and blocks[0] == DEFAULT_POLICY
    example = parse_policy(blocks[1], "fairness.toml")
    assert [(r.level, r.finding or r.metric) for r in example.rules] == [
        (Level.FAIL, FindingKind.UNDER_EXPOSED), (Level.FAIL, FindingKind.UNDER_CITED), (Level.FAIL, "ee_d"),
        (Level.WARN, "eae_d"), (Level.WARN, FindingKind.UNDER_EXPOSED), (Level.WARN, "ee_r")]
