"""Every finding's sentence agrees with its numbers (issue 31, Must have 3): no finding says "not … beyond noise" or
"no … differs" while its printed interval excludes 0, none claims a difference while its interval holds 0, and
good news is never serious. Checked over the finding builders with hypothesis, and over every finding of a
simulated audit of every demo collection (each α against the deterministic retriever, each system's providers) and
of the audit of the demo log."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core import load_collection
from fairrag_core.audit.comparison_findings import comparison_findings, sweep_findings
from fairrag_core.audit.findings import Finding, FindingKind, Severity, Verdict, merge_insufficient, noise_verdict
from fairrag_core.audit.share_findings import _RETRIEVAL, _group_findings
from fairrag_core.audit.share_gaps import GroupGap
from fairrag_core.data.demo import DEMO_COLLECTIONS, assets_dir
from fairrag_core.metrics.intervals import ConfidenceInterval

#: Kinds that claim a difference beyond noise.
CLAIMS = {FindingKind.HEADLINE, FindingKind.FAIRER, FindingKind.LESS_FAIR, FindingKind.UNDER_EXPOSED,
          FindingKind.OVER_EXPOSED, FindingKind.UNDER_CITED, FindingKind.OVER_CITED, FindingKind.COST,
          FindingKind.GAIN, FindingKind.LESS_EXPOSED, FindingKind.MORE_EXPOSED}
#: Words that say there is no difference.
NONE_SAID = re.compile(r"\bnot\b[^.;]*beyond noise|\bno\b[^.;]*\bdiffers?\b|within noise")


def disagreement(f: Finding) -> str | None:
    """Why ``f``'s sentence contradicts its printed interval, or None. The clause read is the one that holds the
    interval (up to the first "; ": a headline's later clauses speak of other metrics)."""
    if not (math.isfinite(f.low) and math.isfinite(f.high)):
        return None
    excludes = f.low > 0 or f.high < 0
    clause = re.sub(r"^α = [^:]*: |^deterministic: ", "", f.text).split("; ")[0]
    says_none = bool(NONE_SAID.search(clause))
    says_beyond = (f.kind in CLAIMS or "beyond noise" in clause) and not says_none and "margin" not in clause
    if says_none and excludes:
        return f"says no difference, interval [{f.low}, {f.high}] excludes 0: {f.text}"
    if says_beyond and not excludes:
        return f"claims a difference, interval [{f.low}, {f.high}] holds 0: {f.text}"
    return None


def harm_mislabelled(f: Finding) -> str | None:
    """Good news (fairer, a gain) that is not INFO."""
    if f.kind in (FindingKind.FAIRER, FindingKind.GAIN, FindingKind.MORE_EXPOSED) and f.severity is not Severity.INFO:
        return f"good news labelled {f.severity.value}: {f.text}"
    return None


def _check(findings) -> None:
    problems = [p for f in findings for p in (disagreement(f), harm_mislabelled(f)) if p]
    assert not problems, "\n".join(problems)


# -- the rule ----------------------------------------------------------------------------------------------------

def test_the_issue_sentence_is_at_the_margin_now():
    # "α = 8 is not fairer than deterministic beyond noise: EE-D −0.034 [−0.065, −0.012], p = 0.059" (issue 31)
    rows = [{"system": "α = 8", "baseline": "deterministic", "metric": m, "label": label, "mean_system": 0.9,
             "mean_baseline": 1.0, "difference": d, "low": lo, "high": hi, "p_value": p, "p_holm": ph,
             "n_queries": 18, "test": "paired sign-flip"}
            for m, label, d, lo, hi, p, ph in (("ee_d", "EE-D", -0.034, -0.065, -0.012, 0.015, 0.059),
                                              ("ee_r", "EE-R", 0.02, -0.01, 0.05, 0.3, 0.6))]
    run = SimpleNamespace(record=SimpleNamespace(config=SimpleNamespace(level=0.95, by="provider")),
                          table=pd.DataFrame(rows), documents=pd.DataFrame())
    found = comparison_findings(run)
    headline = next(f for f in found if not f.detail)
    assert headline.kind is FindingKind.AT_THE_MARGIN and headline.severity is Severity.INFO
    assert headline.text == ("α = 8 may be fairer than deterministic, at the margin of noise (its interval and its "
                             "Holm-adjusted test disagree): EE-D −0.034 [−0.065, −0.012], p = 0.015 unadjusted, "
                             "p = 0.059 Holm-adjusted over 2 metrics.")
    _check(found)


def test_good_news_is_info_and_its_cost_sets_the_severity():
    def run(ee_r_change):
        rows = [{"system": "α = 0", "baseline": "deterministic", "metric": m, "label": label, "mean_system": 0.5,
                 "mean_baseline": 1.0, "difference": d, "low": d - 0.05, "high": d + 0.05, "p_value": 0.001,
                 "p_holm": 0.002, "n_queries": 18, "test": "paired sign-flip"}
                for m, label, d in (("ee_d", "EE-D", -0.5), ("ee_r", "EE-R", ee_r_change))]
        return comparison_findings(SimpleNamespace(record=SimpleNamespace(config=SimpleNamespace(
            level=0.95, by="provider")), table=pd.DataFrame(rows), documents=pd.DataFrame()))

    gain = run(+0.2)  # fairer and more relevant: good news only
    assert {f.severity for f in gain} == {Severity.INFO}
    assert next(f for f in gain if not f.detail).text.startswith("α = 0 is fairer than deterministic")
    cost = run(-0.6)  # fairer, but EE-R falls by 60 % of its level: the cost is serious
    headline = next(f for f in cost if not f.detail)
    assert headline.kind is FindingKind.HEADLINE and headline.severity is Severity.SERIOUS
    assert next(f for f in cost if f.metric == "ee_d" and f.detail).severity is Severity.INFO  # fairer: info
    assert next(f for f in cost if f.metric == "ee_r").kind is FindingKind.COST


def test_too_little_evidence_lines_merge_into_one_after_the_rest():
    lines = [Finding(FindingKind.INSUFFICIENT_EVIDENCE, f"α = {a} vs deterministic", "ee_d",
                     f"Too little evidence to tell whether α = {a} is fairer than deterministic …", n_queries=3)
             for a in (0, 2)]
    lines += [Finding(FindingKind.INSUFFICIENT_EVIDENCE, f"every provider (α = {a})", "retrieval share − fair share",
                      f"α = {a}: Too little evidence to test any provider's retrieval share …", n_queries=3)
              for a in (0, 2, 8)]
    other = Finding(FindingKind.NO_DIFFERENCE, "every provider", "x", "No provider differs beyond noise.")
    merged = merge_insufficient([*lines, other])
    shown = [f.text for f in merged if not f.detail]
    assert shown == ["No provider differs beyond noise.",
                     "Too little evidence to test, on 3 queries: EE-D (is it fairer?) (α = 0 vs deterministic, α = 2 "
                     "vs deterministic); retrieval share − fair share (α = 0, α = 2, α = 8)."]
    assert len(merged) == 7  # every line kept, as a detail, for JSON
    assert merge_insufficient(lines[:1]) == lines[:1]  # one line: as it was


# -- property: every builder ---------------------------------------------------------------------------------------

_interval = st.tuples(st.floats(-0.5, 0.5), st.floats(0.0, 0.3), st.floats(0.0, 0.3)).map(
    lambda t: (t[0], t[0] - t[1], t[0] + t[2]))
_p = st.floats(1e-4, 1.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["ee_d", "ee_r", "eu", "ear"]), _interval, _p, _p), min_size=1,
                max_size=4, unique_by=lambda r: r[0]),
       st.lists(st.tuples(_interval, _p, _p), min_size=0, max_size=5), st.integers(2, 40))
def test_comparison_sentences_agree_with_their_intervals(metrics, shares, n_queries):
    rows = [{"system": "B", "baseline": "A", "metric": m, "label": m.upper(), "mean_system": 0.5,
             "mean_baseline": 0.6, "difference": d, "low": lo, "high": hi, "p_value": min(p, ph),
             "p_holm": max(p, ph), "n_queries": n_queries, "test": "paired sign-flip"}
            for m, (d, lo, hi), p, ph in metrics]
    docs = pd.DataFrame([{"system": "B", "baseline": "A", "kind": "retrieval", "group": f"P{i}", "difference": d,
                          "low": lo, "high": hi, "p_value": min(p, ph), "p_holm": max(p, ph), "share_system": 0.2,
                          "share_baseline": 0.2, "n_queries": n_queries} for i, ((d, lo, hi), p, ph)
                         in enumerate(shares)])
    run = SimpleNamespace(record=SimpleNamespace(config=SimpleNamespace(level=0.95, by="provider")),
                          table=pd.DataFrame(rows), documents=docs)
    _check(comparison_findings(run))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_interval, st.floats(0.05, 0.5), _p, _p), min_size=1, max_size=6))
def test_share_sentences_agree_with_their_intervals(groups):
    results = []
    for i, ((gap, low, high), fair, p, ph) in enumerate(groups):
        share = max(fair + gap, 0.0)
        results.append(GroupGap(f"P{i}", ConfidenceInterval(share, share, share, 0.95),
                                ConfidenceInterval(fair, fair, fair, 0.95), ConfidenceInterval(gap, low, high, 0.95),
                                share, fair, min(p, ph), max(p, ph), True, "", 20, 20.0))
    found = _group_findings(results, _RETRIEVAL, by="provider", level=0.95, n_queries=20, n_lines=200, serious=0.5)
    _check(found)
    for f, r in zip([f for f in found if f.subject != "every provider"], results):
        verdict = noise_verdict(r.p_adjusted <= 0.05, r.gap.low, r.gap.high)
        assert (f.kind is FindingKind.AT_THE_MARGIN) == (verdict is Verdict.MARGIN)


# -- every demo collection, and the demo log -----------------------------------------------------------------------

@pytest.mark.parametrize("name", DEMO_COLLECTIONS)
def test_every_finding_of_a_demo_audit_agrees_with_its_numbers(name):
    from fairrag_core.ranking.sweep import SweepConfig, exposure_sweep
    from fairrag_core.retrieval import BM25Retriever

    collection = load_collection(name)
    run = exposure_sweep(collection, BM25Retriever(collection.texts),
                         SweepConfig(alphas=(0.0, 2.0, 8.0, math.inf), n_samples=50, k=5, seed=0))
    found = sweep_findings(run, collection)
    assert found
    _check(found)
    shown = [f for f in found if not f.detail]
    insufficient = [f for f in shown if f.kind is FindingKind.INSUFFICIENT_EVIDENCE and "Too little" in f.text]
    assert len(insufficient) <= 1  # one line for them all, after the substantive findings
    if insufficient:  # nothing substantive after it
        after = shown[shown.index(insufficient[0]):]
        assert {f.kind for f in after} == {FindingKind.INSUFFICIENT_EVIDENCE}


def test_every_finding_of_the_demo_log_audit_agrees_with_its_numbers():
    from fairrag_core.audit.log_report import log_findings
    from fairrag_core.audit.rag_log import LogAuditConfig, audit_served
    from fairrag_core.data.rag_log import load_rag_log

    collection = load_collection("running-shoes")
    log = load_rag_log(assets_dir() / "logs" / "running-shoes.jsonl", collection=collection)
    run = audit_served(log, collection, LogAuditConfig(seed=0))
    found = log_findings(run, collection)
    assert found
    _check(found)
    assert np.all([f.p is None or 0 <= f.p <= 1 for f in found])


def test_every_what_if_finding_of_the_demo_export_agrees_with_its_numbers():
    """The what-if's (the recommender's replay) findings follow the same rule: the demo trace export replayed."""
    from fairrag_core.audit.rag_log import LogAuditConfig, audit_served
    from fairrag_core.audit.what_if import what_if_sampling
    from fairrag_core.data.rag_log import load_served

    collection = load_collection("running-shoes")
    path = assets_dir() / "logs" / "running-shoes.otlp.jsonl"
    audit = audit_served(load_served(path, collection=collection), collection, LogAuditConfig(seed=1, n_boot=200))
    result = what_if_sampling(load_served(path, collection=collection), collection, alphas=(0, 2, 8, math.inf),
                              n_samples=50, audit=audit)
    assert result.findings
    _check(result.findings)
