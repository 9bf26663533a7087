"""What if the deployed system had sampled: the replay's exposure against exact Plackett-Luce values, α = ∞, seeds,
logs without scores, runs with a score column, the as-served side equal to the audit's, and the demo export."""

import io
import json
import math

import numpy as np
import pytest
from exact import exact_inclusion, paper_logits

from fairrag_core.audit.log_report import log_ledger, log_summary
from fairrag_core.audit.rag_log import LogAuditConfig, audit_served
from fairrag_core.audit.what_if import AS_SERVED, NO_QUALITY_METRIC, NO_SCORES, what_if_sampling
from fairrag_core.cli import main
from fairrag_core.data import Collection, Document, assets_dir, load_served
from fairrag_core.data.rag_log import LogEntry, RagLog
from fairrag_core.data.served import parse_run
from fairrag_core.errors import InvalidParameterError

DEMO_TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"


@pytest.fixture(scope="module")
def six():
    """Two queries of three candidates each; providers P (a, b, d) and Q (c, e, f); q1 judged (a, b useful)."""
    docs = tuple(Document(d, "", provider="P" if d in "abd" else "Q") for d in "abcdef")
    return Collection("six", docs, qrels={"q1": {"a": 1, "b": 1, "c": 0}})


def _log(rows):
    return RagLog("log", tuple(LogEntry(i, q, tuple(r), scores=s) for i, (q, r, s) in enumerate(rows, start=1)))


@pytest.fixture(scope="module")
def two_queries():
    """Served depth 2; candidates q1: a 3, b 2, c 1 and q2: d 1, e 2, f 4."""
    return _log([("q1", "ab", (3.0, 2.0)), ("q1", "ac", (3.0, 1.0)),
                 ("q2", "fe", (4.0, 2.0)), ("q2", "fd", (4.0, 1.0))])


def _exposure(result, alpha):
    docs = result.documents[result.documents["alpha"] == alpha]
    return dict(zip(docs["doc_id"], docs["exposure"]))


def test_alpha_zero_is_uniform_and_every_alpha_matches_exact_plackett_luce(two_queries, six):
    result = what_if_sampling(two_queries, six, alphas=(0, 1, 4), n_samples=20000, seed=5, n_boot=200)
    assert result.k == 2
    at_zero = _exposure(result, 0.0)
    assert at_zero == pytest.approx(dict.fromkeys("abcdef", 2 / 3), abs=0.015)  # k/n in expectation
    rows = result.per_query[result.per_query["alpha"] == 0.0]
    assert rows["ee_d"].to_numpy() == pytest.approx([2 / 3, 2 / 3], abs=0.01)  # ‖(2/3, 2/3, 2/3)‖²/2
    for alpha in (1.0, 4.0):
        got = _exposure(result, alpha)
        for docs, scores in (("abc", (3.0, 2.0, 1.0)), ("def", (1.0, 2.0, 4.0))):
            exact = exact_inclusion(paper_logits(scores, alpha), 2)
            assert [got[d] for d in docs] == pytest.approx(exact, abs=0.015)
    # every sampled ranking fills k slots: the exposure of a query sums to k
    sums = result.documents.groupby(["alpha", "query_id"])["exposure"].sum()
    assert np.allclose(sums, 2.0)


def test_the_replayed_ee_d_is_the_unbiased_estimate_of_its_rankings(two_queries, six):
    # as everywhere: Σ_d c_d(c_d − 1)/(N(N − 1))/k over the N replayed rankings, i.e. (N ‖ε̂‖² − k)/((N − 1) k) when
    # every ranking fills its k slots; the same for any bootstrap (n_boot), below the plug-in, inside its interval
    n = 50
    results = [what_if_sampling(two_queries, six, alphas=(1,), n_samples=n, seed=3, n_boot=b) for b in (100, 300)]
    for result in results:
        for row in result.per_query.itertuples():
            eps = np.array(list(_exposure(result, 1.0).values()))
            eps = eps[[d in ("abc" if row.query_id == "q1" else "def") for d in _exposure(result, 1.0)]]
            assert row.ee_d == pytest.approx((n * eps @ eps - 2) / ((n - 1) * 2))
            assert row.ee_d < row.ee_d_plug_in and row.ee_d_low <= row.ee_d <= row.ee_d_high
    assert results[0].per_query["ee_d"].tolist() == results[1].per_query["ee_d"].tolist()


def test_alpha_inf_is_the_deterministic_ranking_by_mean_logged_score(six):
    log = _log([("q1", "ab", (3.0, 2.0)), ("q1", "cb", (2.5, 0.5))])  # b: mean 1.25, below c
    result = what_if_sampling(log, six, alphas=(math.inf,), n_samples=50, seed=0, n_boot=100)
    assert _exposure(result, math.inf) == {"a": 1.0, "b": 0.0, "c": 1.0}
    assert result.documents["score"].tolist() == [3.0, 1.25, 2.5]
    row = result.per_query.iloc[0]
    assert row["ee_d"] == row["ee_d_plug_in"] == 1.0
    # EE-R as the log audit computes it: ε* over the collection (a, b useful, k = 2) → ⟨(1, 0, 1), ε*⟩/‖ε*‖² = 1/2
    assert row["ee_r"] == pytest.approx(0.5)
    assert any("different scores on different lines" in note and "mean" in note for note in result.notes)


def test_seeded_replays_repeat_and_each_alpha_has_its_own_stream(two_queries, six):
    first = what_if_sampling(two_queries, six, alphas=(0, 2), n_samples=40, seed=11, n_boot=100)
    again = what_if_sampling(two_queries, six, alphas=(0, 2), n_samples=40, seed=11, n_boot=100)
    assert first.curve.equals(again.curve) and first.per_query.equals(again.per_query)
    assert first.seed == 11 and [f.text for f in first.findings] == [f.text for f in again.findings]
    wider = what_if_sampling(two_queries, six, alphas=(2, 0, 8, math.inf), n_samples=40, seed=11, n_boot=100)
    assert wider.alphas == (0.0, 2.0, 8.0, math.inf)  # sorted, ∞ last
    same = ["query_id", "ee_d", "ee_d_plug_in", "ee_r"]
    assert wider.per_query[wider.per_query["alpha"] == 2.0][same].reset_index(drop=True).equals(
        first.per_query[first.per_query["alpha"] == 2.0][same].reset_index(drop=True))
    other = what_if_sampling(two_queries, six, alphas=(2,), n_samples=40, seed=12, n_boot=100)
    assert not np.allclose(other.per_query["ee_d_plug_in"], first.per_query.loc[
        first.per_query["alpha"] == 2.0, "ee_d_plug_in"])
    fresh = what_if_sampling(two_queries, six, alphas=(2,), n_samples=40, n_boot=100)
    assert isinstance(fresh.seed, int)  # drawn, recorded


def test_a_log_without_scores_is_refused_with_the_fix(six):
    with pytest.raises(InvalidParameterError) as err:
        what_if_sampling(_log([("q1", "ab", None)]), six, alphas=(0,))
    assert str(err.value) == NO_SCORES
    assert NO_SCORES.startswith("the log carries no scores: export document.score (traces) or the TREC score column")


def test_a_query_with_unscored_documents_is_skipped_with_the_reason(six):
    log = _log([("q1", "ab", (2.0, 1.0)), ("q1", "ac", (2.0, None)), ("q2", "de", (1.0, 2.0)),
                ("q2", "ef", (2.0, 3.0))])
    result = what_if_sampling(log, six, alphas=(0, math.inf), n_samples=30, seed=1, n_boot=100)
    assert set(result.skipped) == {"q1"} and "1 of its 3 served documents have no logged score" in result.skipped["q1"]
    assert set(result.per_query["query_id"]) == {"q2"} and result.curve["queries"].tolist() == [1, 1, 1]
    assert any("1 of 2 queries not replayed" in note for note in result.notes)
    assert "ee_r" in result.undefined  # q2 is unjudged: EE-R has no value, and the recommender no quality metric
    assert result.recommendation is None
    assert result.recommendation_text == NO_QUALITY_METRIC[0].upper() + NO_QUALITY_METRIC[1:] + "."


def test_a_trec_run_keeps_its_score_column_for_the_replay(six):
    run = parse_run("q1 s1 a 1 3.5 sys\nq1 s1 b 2 1.5 sys\nq1 s2 c 1 2.0 sys\nq2 s1 d 1 9 sys\n")
    np.testing.assert_array_equal(run["q1"].scores, [[3.5, 1.5], [2.0, np.nan]])  # NaN in the padding
    result = what_if_sampling(run, six, alphas=(math.inf,), n_samples=20, seed=2, n_boot=100)
    assert _exposure(result, math.inf) == {"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0}
    fair = parse_run("q1\ta\nq1\tb\n")  # TREC Fair 2022: no score column
    assert fair["q1"].scores is None
    with pytest.raises(InvalidParameterError, match="the log carries no scores"):
        what_if_sampling(fair, six, alphas=(0,))


def test_settings_are_checked_and_must_agree_with_the_audit(two_queries, six):
    with pytest.raises(InvalidParameterError, match="alpha"):
        what_if_sampling(two_queries, six, alphas=(-1,))
    with pytest.raises(InvalidParameterError, match="at least one α"):
        what_if_sampling(two_queries, six, alphas=())
    audit = audit_served(two_queries, six, LogAuditConfig(seed=3, n_boot=100))
    with pytest.raises(InvalidParameterError, match="differs from the audit's seed"):
        what_if_sampling(two_queries, six, alphas=(0,), audit=audit, seed=4)
    result = what_if_sampling(two_queries, six, alphas=(0,), audit=audit, n_samples=20)
    assert result.seed == 3 and result.n_boot == 100


@pytest.fixture(scope="module")
def demo(shoes):
    log = load_served(DEMO_TRACES, collection=shoes)
    audit = audit_served(log, shoes, LogAuditConfig(seed=7, n_boot=300))
    return log, audit, what_if_sampling(log, shoes, alphas=(0, 2, 8, math.inf), n_samples=60, audit=audit)


def test_the_as_served_side_is_the_audits_headline_and_ledger(demo, shoes):
    _, audit, result = demo
    served = result.curve[result.curve["system"] == AS_SERVED].iloc[0]
    summary = log_summary(audit).set_index("metric")
    for metric in ("ee_d", "ee_r"):
        assert [served[metric], served[f"{metric}_low"], served[f"{metric}_high"]] == pytest.approx(
            summary.loc[metric, ["estimate", "low", "high"]].tolist(), abs=1e-12)
    ledger = log_ledger(audit, shoes, by="provider", labelled_only=True).set_index("group")
    shares = result.shares[(result.shares["by"] == "provider") & (result.shares["alpha"] == 0.0)].set_index("group")
    assert result.shares_over == "queries with relevance labels"
    for column, theirs in (("observed_share", "retrieval_share"), ("observed_low", "retrieval_share_low"),
                           ("observed_high", "retrieval_share_high")):
        assert shares[column].to_numpy() == pytest.approx(ledger.loc[shares.index, theirs].to_numpy(), abs=1e-12)


def test_the_demo_curve_shares_and_what_is_estimated(demo):
    _, _, result = demo
    sampled = result.curve[result.curve["system"] == "sampled"].set_index("alpha")
    assert sampled.loc[0.0, "ee_d"] < sampled.loc[2.0, "ee_d"] < sampled.loc[8.0, "ee_d"] < sampled.loc[math.inf,
                                                                                                       "ee_d"]
    assert sampled.loc[math.inf, "ee_d"] == 1.0
    for _, part in result.shares.groupby(["by", "alpha"]):
        assert part["share"].sum() == pytest.approx(1.0) and part["observed_share"].sum() == pytest.approx(1.0)
        assert (part["share_low"] <= part["share"] + 1e-12).all()
        assert (part["share"] <= part["share_high"] + 1e-12).all()
    assert "not regenerated" in result.not_estimated and "never logged" in result.not_estimated
    assert result.findings and result.findings[0].text.startswith("Sampling at α = ")
    payload = json.loads(json.dumps(result.to_dict()))  # JSON-ready: no NaN, ∞ as "inf"
    assert payload["alphas"] == [0.0, 2.0, 8.0, "inf"] and payload["curve"][0]["alpha"] is None


def test_a_recommendation_on_a_deterministic_run_deeper_than_k(shoes, shoes_bm25, tmp_path):
    lines = []
    for query in shoes.queries:
        scores = shoes_bm25.score(query.text)
        top = np.argsort(-scores, kind="stable")[:20]
        lines += [f"{query.query_id} Q0 {shoes.doc_ids[i]} {r} {scores[i]:.4f} bm25" for r, i in enumerate(top, 1)]
    path = tmp_path / "bm25.trec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from fairrag_core.data.served import load_run

    run = load_run(path)
    audit = audit_served(load_served(path, collection=shoes), shoes, LogAuditConfig(k=5, seed=1, n_boot=300))
    result = what_if_sampling(run, shoes, alphas=(0, 2, 4, 8, math.inf), n_samples=100, audit=audit)
    served = result.curve.iloc[0]
    assert served["ee_d"] == 1.0  # one deterministic ranking per query
    chosen = result.recommended_alpha
    assert chosen is not None and math.isfinite(chosen)
    row = result.curve[(result.curve["system"] == "sampled") & (result.curve["alpha"] == chosen)].iloc[0]
    assert row["eligible"] and row["ee_d"] < served["ee_d"]
    assert result.findings[0].text.startswith(f"Sampling at α = {chosen:g} would lower EE-D from 1.000")
    assert "the recommender's pick" in result.findings[0].text


def test_the_demo_export_through_the_cli(tmp_path):
    out = io.StringIO()
    code = main(["audit-log", str(DEMO_TRACES), "--collection", "running-shoes", "--seed", "3", "--no-store",
                 "--boot", "300", "--what-if-alphas", "0,2,inf", "--what-if-samples", "60", "--json"], out=out)
    assert code == 0
    payload = json.loads(out.getvalue())
    what_if = payload["what_if"]
    curve = {("served" if row["alpha"] is None else row["alpha"]): row for row in what_if["curve"]}
    assert curve[0.0]["ee_d"] < curve[2.0]["ee_d"] < curve["inf"]["ee_d"] == 1.0  # EE-D falls as α falls
    headline = {r["metric"]: r for r in payload["summary"]}["ee_d"]
    assert curve["served"]["ee_d"] == pytest.approx(headline["estimate"])  # one concept, one number
    for alpha in (0.0, 2.0, "inf"):
        for by in ("provider", "segment"):
            rows = [r for r in what_if["shares"] if r["alpha"] == alpha and r["by"] == by]
            assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    first = what_if["findings"][0]
    focus = first["subject"].split(" vs ")[0].removeprefix("α = ")
    row = curve[float(focus)]
    assert (f"to {row['ee_d']:.3f} [{row['ee_d_low']:.3f}, {row['ee_d_high']:.3f}]" in first["text"]
            and f"from {curve['served']['ee_d']:.3f}" in first["text"])
    assert first["estimate"] == pytest.approx(row["ee_d_change"]) and first["p_value"] == pytest.approx(row["ee_d_p"])
    if row["ee_r_change"] is not None:
        assert f"({curve['served']['ee_r']:.3f} → {row['ee_r']:.3f}" in first["text"]
    assert "--what-if-alphas 0,2,inf --what-if-samples 60" in payload["command"]


# -- issue 28: the replay's memory is checked before it is drawn; finite extreme scores are valid ------------------
def test_a_replay_past_the_memory_budget_is_refused_before_any_work_naming_n(two_queries, six, monkeypatch):
    import time

    monkeypatch.delenv("FAIRRAG_MAX_MEMORY_MB", raising=False)
    start = time.perf_counter()
    with pytest.raises(InvalidParameterError, match=r"^the what-if's 200 resamples of N = 2,000,000 sampled rankings "
                                                    r"of up to 3 candidates needs 3,328 MB, more than the 400 MB one "
                                                    r"step may allocate; lower N \(--what-if-samples; the paper uses "
                                                    r"100\) or the resamples \(--boot\)"):
        what_if_sampling(two_queries, six, alphas=(0, 2), n_samples=2_000_000, seed=0, n_boot=200)
    assert time.perf_counter() - start < 5
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "0.1")  # one figure for all: 200 × 100 counts and the rest, 0.18 MB
    with pytest.raises(InvalidParameterError, match=r"N = 100 sampled rankings .* needs 0.18 MB, more than the 0.1 MB"):
        what_if_sampling(two_queries, six, alphas=(0, 2), n_samples=100, seed=0, n_boot=200)
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "1")
    assert len(what_if_sampling(two_queries, six, alphas=(0, 2), n_samples=100, seed=0, n_boot=200).per_query) == 4


def test_finite_extreme_scores_replay_and_only_nan_or_inf_leave_a_query_out(six):
    """Scores of ±1e308 are valid: their mean over lines (1e308 twice) and their spread (1e308 − (−1e308)) overflow
    float64, which read as "scores contain NaN or infinity" and withheld the whole audit. An infinite score is not a
    score: that query is left out, by name, and the others replayed."""
    log = _log([("q1", "ab", (1e308, -1e308)), ("q1", "ac", (1e308, 1.0)),
                ("q2", "de", (-1e308, -1.7e308)), ("q2", "ed", (-1.7e308, -1e308)),
                ("q3", "fa", (math.inf, 1.0))])
    result = what_if_sampling(log, six, alphas=(0, 2, math.inf), n_samples=50, seed=0, n_boot=50)
    scores = result.documents[result.documents["alpha"] == 0].set_index(["query_id", "doc_id"])["score"]
    assert scores.to_dict() == {("q1", "a"): 1e308, ("q1", "b"): -1e308, ("q1", "c"): 1.0,
                                ("q2", "d"): -1e308, ("q2", "e"): -1.7e308}
    assert np.isfinite(result.per_query[["ee_d", "ee_d_low", "ee_d_high"]].to_numpy(float)).all()
    top = result.documents[result.documents["alpha"] == math.inf].set_index(["query_id", "doc_id"])["exposure"]
    assert top[("q1", "a")] == 1.0 and top[("q1", "c")] == 1.0 and top[("q1", "b")] == 0.0  # k = 2, by score
    assert top[("q2", "d")] == 1.0 and top[("q2", "e")] == 1.0  # both shown at k = 2
    assert result.skipped == {"q3": "1 of its 2 served documents have only NaN or infinite logged scores (first: "
                                     "'f', inf); fix them in the export"}
