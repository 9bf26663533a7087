"""A comparison's findings (issue 20): the headline says whether B is fairer than A, at what cost, and says "too
little evidence" when no test on that many queries could tell."""

import math

import numpy as np
import pytest

from fairrag_core import load_collection
from fairrag_core.audit.compare import ComparisonConfig, System, compare_systems
from fairrag_core.audit.comparison_findings import comparison_findings, with_findings
from fairrag_core.audit.findings import FindingKind, Severity
from fairrag_core.audit.rag_log import LogAuditConfig, audit_served
from fairrag_core.data.rag_log import RagLog
from fairrag_core.data.served import ServedRankings
from fairrag_core.ranking.sampling import sample_rankings
from fairrag_core.retrieval import BM25Retriever


@pytest.fixture(scope="module")
def shoes():
    collection = load_collection("running-shoes")
    return collection, BM25Retriever(collection.texts)


def _audit(collection, retriever, alpha, n_queries=None):
    """An audit of 12 rankings of 5 per labelled query (the first ``n_queries``), sampled at α (inf: BM25)."""
    ids = np.array(collection.doc_ids)
    labelled = [q for q in collection.queries if q.query_id in collection.qrels][:n_queries]
    rankings = {}
    for q, query in enumerate(labelled):
        top = np.argsort(-retriever.score(query.text), kind="stable")[:20]
        sampled = sample_rankings(retriever.score(query.text)[top], alpha=alpha, n_samples=12, k=5, seed=q)
        rankings[query.query_id] = [list(ids[top[row]]) for row in sampled]
    log = RagLog.from_served(ServedRankings.from_lists(rankings, run_id=f"alpha-{alpha}"))
    return audit_served(log, collection, LogAuditConfig(seed=1))


def _compare(collection, a, b):
    return with_findings(compare_systems([System("A", a), System("B", b)], collection,
                                         ComparisonConfig(seed=3, n_boot=300, n_permutations=2000)))


def test_headline_says_b_is_fairer_and_what_it_costs(shoes):
    collection, bm25 = shoes
    result = _compare(collection, _audit(collection, bm25, math.inf), _audit(collection, bm25, 1.0))
    headline = result.findings[0]
    ee_d = result.table.set_index("metric").loc["ee_d"]
    assert headline.kind is FindingKind.HEADLINE and headline.severity is Severity.SERIOUS
    assert headline.text.startswith("B is fairer than A: EE-D " + f"{ee_d['difference']:+.3f}".replace("-", "−"))
    assert headline.alpha == 0.05
    assert headline.estimate == pytest.approx(ee_d["difference"]) and headline.p == pytest.approx(ee_d["p_holm"])
    assert headline.low <= headline.estimate <= headline.high < 0
    assert result.findings == tuple(comparison_findings(result))  # from the tables alone: a stored one finds the same


def test_too_few_queries_is_too_little_evidence(shoes):
    collection, bm25 = shoes
    # 4 queries: the smallest two-sided sign-flip p is 2/2⁴ = 0.125 > 0.05, however large the difference
    result = _compare(collection, _audit(collection, bm25, math.inf, 4), _audit(collection, bm25, 0.0, 4))
    headline = next(f for f in result.findings if f.metric == "ee_d" and not f.detail)
    assert headline.kind is FindingKind.INSUFFICIENT_EVIDENCE and headline.severity is Severity.INFO
    assert headline.text.startswith("Too little evidence to tell whether B is fairer than A: on 4 queries")


def test_a_system_against_itself_is_not_fairer(shoes):
    collection, bm25 = shoes
    a = _audit(collection, bm25, 2.0)
    result = _compare(collection, a, a)
    headline = next(f for f in result.findings if f.metric == "ee_d" and not f.detail)
    assert headline.kind is FindingKind.NO_DIFFERENCE
    assert headline.text.startswith("B is not fairer than A beyond noise: EE-D +0.000")
    assert all(f.severity is Severity.INFO for f in result.findings)
