"""Comparing audited systems (issue 20, item 5): paired per-query differences with intervals and tests, per-provider
share differences, Holm across a family, any mix of logs, runs and simulated α values."""

import math

import numpy as np
import pytest

from fairrag_core import InvalidParameterError, SweepConfig, exposure_sweep, load_collection
from fairrag_core.audit.compare import ComparisonConfig, System, compare_systems, share_differences, systems_of
from fairrag_core.audit.rag_log import LogAuditConfig, audit_served
from fairrag_core.data.rag_log import RagLog
from fairrag_core.data.served import ServedRankings
from fairrag_core.ranking.sampling import sample_rankings
from fairrag_core.record import RunKind
from fairrag_core.retrieval import BM25Retriever


@pytest.fixture(scope="module")
def shoes():
    collection = load_collection("running-shoes")
    return collection, BM25Retriever(collection.texts)


def _served(collection, retriever, alpha, lines=12, seed=0):
    """What a system served: `lines` rankings of 5 per labelled query, sampled at α (inf: deterministic BM25)."""
    ids = np.array(collection.doc_ids)
    rankings = {}
    for q, query in enumerate(q for q in collection.queries if q.query_id in collection.qrels):
        scores = retriever.score(query.text)
        top = np.argsort(-scores, kind="stable")[:20]
        sampled = sample_rankings(scores[top], alpha=alpha, n_samples=lines, k=5, seed=seed + q)
        rankings[query.query_id] = [list(ids[top[row]]) for row in sampled]
    return RagLog.from_served(ServedRankings.from_lists(rankings, run_id=f"alpha-{alpha}"))


def test_share_differences_by_hand():
    # three queries; A splits its exposure evenly, B gives everything to group 0: shares (.5, .5) vs (1, 0)
    a = np.ones((3, 2))
    b = np.array([[2.0, 0.0]] * 3)
    table = share_differences(a, b, seed=0)
    assert table["difference"].tolist() == pytest.approx([-0.5, 0.5])
    # 2³ swaps, exact: only "swap none" and "swap all" give |difference| ≥ 0.5 → p = 2/8
    assert table["p_value"].tolist() == pytest.approx([0.25, 0.25])
    assert table["p_holm"].tolist() == pytest.approx([0.5, 0.5])  # Holm: sorted .25 .25 × 2 1 → running max .5 .5
    with pytest.raises(InvalidParameterError, match="same shape"):
        share_differences(a, b[:2], seed=0)


def test_b_is_fairer_than_a(shoes):
    collection, bm25 = shoes
    a = audit_served(_served(collection, bm25, math.inf), collection, LogAuditConfig(seed=1))
    b = audit_served(_served(collection, bm25, 1.0), collection, LogAuditConfig(seed=1))
    result = compare_systems([System("A", a), System("B", b)], collection, ComparisonConfig(seed=3, n_boot=400))
    assert result.record.kind is RunKind.COMPARISON and result.record.config.baseline == "A"
    metrics = result.table.set_index("metric")
    ee_d = metrics.loc["ee_d"]
    # per query, B − A by hand, over the 18 labelled queries
    by_hand = (b.table.set_index("query_id")["ee_d"] - a.table.set_index("query_id")["ee_d"]).mean()
    assert ee_d["difference"] == pytest.approx(by_hand) and ee_d["difference"] < -0.3
    assert ee_d["low"] <= ee_d["difference"] <= ee_d["high"] < 0 and ee_d["p_value"] < 0.001
    assert ee_d["n_queries"] == 18 and ee_d["p_holm"] >= ee_d["p_value"]
    assert metrics.loc["ee_r", "difference"] < 0  # the cost: less exposure on useful documents
    shares = result.documents
    assert set(shares["kind"]) == {"retrieval"} and shares["share_system"].sum() == pytest.approx(1.0)
    assert (shares["p_holm"] >= shares["p_value"] - 1e-12).all()
    assert ((shares["low"] <= shares["difference"] + 1e-12) & (shares["difference"] <= shares["high"] + 1e-12)).all()
    assert shares["difference"].tolist() == pytest.approx((shares["share_system"] - shares["share_baseline"]).tolist())


def test_a_system_against_itself_shows_nothing(shoes):
    collection, bm25 = shoes
    served = _served(collection, bm25, 2.0)
    a = audit_served(served, collection, LogAuditConfig(seed=1))
    result = compare_systems([System("A", a), System("A again", a)], collection, ComparisonConfig(seed=0, n_boot=200))
    assert (result.table["difference"] == 0).all() and (result.table["p_value"] == 1.0).all()
    assert np.allclose(result.documents["difference"], 0) and (result.documents["p_value"] == 1.0).all()


def test_simulated_alphas_compare_like_served_systems(shoes):
    collection, bm25 = shoes
    sweep = exposure_sweep(collection, bm25, SweepConfig(alphas=(0.0, math.inf), n_samples=20, k=5, seed=2,
                                                         candidates=20))
    systems = systems_of(sweep, label="sweep")
    assert [s.label for s in systems] == ["sweep · α = 0", "sweep · deterministic"]
    result = compare_systems(systems[::-1], collection, ComparisonConfig(seed=1, n_boot=200))
    ee_d = result.table.set_index("metric").loc["ee_d"]
    assert ee_d["system"] == "sweep · α = 0" and ee_d["difference"] < -0.5 and ee_d["p_value"] < 0.001
    # a served log and a simulated system in one comparison
    served = audit_served(_served(collection, bm25, math.inf), collection, LogAuditConfig(seed=1))
    mixed = compare_systems([System("log", served), systems[0]], collection, ComparisonConfig(seed=1, n_boot=200))
    assert mixed.table.set_index("metric").loc["ee_d", "difference"] < 0


def test_errors_name_the_fix(shoes):
    collection, bm25 = shoes
    a = audit_served(_served(collection, bm25, 2.0), collection, LogAuditConfig(seed=1))
    with pytest.raises(InvalidParameterError, match="at least two systems"):
        compare_systems([System("A", a)], collection)
    with pytest.raises(InvalidParameterError, match="baseline 'Z' is not one of the systems"):
        compare_systems([System("A", a), System("B", a)], collection, ComparisonConfig(baseline="Z"))
    one = RagLog.from_served(ServedRankings.from_lists({"rs-q01": [["rs-001", "rs-002"]] * 3}))
    other = RagLog.from_served(ServedRankings.from_lists({"rs-q02": [["rs-001", "rs-002"]] * 3}))
    x, y = (audit_served(log, collection, LogAuditConfig(seed=1)) for log in (one, other))
    with pytest.raises(InvalidParameterError, match="share no query"):
        compare_systems([System("X", x), System("Y", y)], collection)


def test_share_differences_over_many_groups_stay_within_the_memory_budget(monkeypatch):
    """Issue 28: the permutation test held permutations × groups arrays at once (10,000 × 2,098 providers: 1.7 GB).
    Under a small budget it takes the permutations in pieces, with the same p-values; resampled shares that do not
    fit are refused with the fix."""
    import tracemalloc

    rng = np.random.default_rng(4)
    a, b = rng.gamma(0.5, size=(15, 400)), rng.gamma(0.5, size=(15, 400))
    monkeypatch.delenv("FAIRRAG_MAX_MEMORY_MB", raising=False)
    whole = share_differences(a, b, n_boot=200, n_permutations=5000, seed=3)  # 5,000 × 400: 16 MB per array
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "7")
    tracemalloc.start()
    try:
        pieces = share_differences(a, b, n_boot=200, n_permutations=5000, seed=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12_000_000
    np.testing.assert_array_equal(pieces["p_value"].to_numpy(), whole["p_value"].to_numpy())
    np.testing.assert_array_equal(pieces["low"].to_numpy(), whole["low"].to_numpy())
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "4")  # 200 resamples of 400 groups' shares: 5.1 MB
    with pytest.raises(InvalidParameterError, match=r"^200 resamples of 400 groups' shares over 15 queries needs 5 MB, "
                                                    r"more than the 4 MB one step may allocate; lower the bootstrap"):
        share_differences(a, b, n_boot=200, n_permutations=5000, seed=3)
