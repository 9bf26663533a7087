"""Log audit on a six-document hand case: exposure, EE-R, logged vs judged attribution, ledgers, the record."""

import json

import numpy as np
import pandas as pd
import pytest
from fakes import SubstringAttributor

from fairrag_core import Collection, Document, InvalidParameterError, Query, RunStore, load_collection
from fairrag_core.audit.log_report import default_ledger_scope, log_ledger, log_summary
from fairrag_core.audit.rag_log import (
    LogAuditConfig,
    audit_rag_log,
    finish_log_audit,
    judge_log,
    plan_log_audit,
    read_log,
)
from fairrag_core.data import assets_dir, load_rag_log
from fairrag_core.record import RunKind, RunRecord

DEMO_LOG = assets_dir() / "logs" / "running-shoes.jsonl"

# providers A (d1, d2), B (d3, d4), C (d5), D (d6); region north = d1 d3 d5, south = d2 d4 d6
TEXTS = {"d1": "alpha gamma one", "d2": "alpha two", "d3": "beta three", "d4": "four", "d5": "delta five",
         "d6": "six"}
PROVIDER = {"d1": "A", "d2": "A", "d3": "B", "d4": "B", "d5": "C", "d6": "D"}
REGION = {"d1": "north", "d2": "south", "d3": "north", "d4": "south", "d5": "north", "d6": "south"}

# q1 (labelled: d1 = 2, d3 = 1, d5 = 0 → m = 2 useful at min_rel 1) and q2 (no labels); k = 2
LOG = [
    {"query_id": "q1", "ranking": ["d1", "d2"], "answer": "alpha", "citations": ["d1"], "session": "s1"},
    {"query_id": "q1", "ranking": ["d1", "d3"], "answer": "beta", "citations": ["d1", "d3"]},
    {"query_id": "q1", "ranking": ["d3", "d1"], "answer": "gamma", "citations": []},
    {"query_id": "q1", "ranking": ["d1", "d2"], "answer": "alpha", "citations": ["d2", "d6"]},  # d6 not shown
    {"query_id": "q2", "ranking": ["d5", "d6"], "answer": "delta", "citations": ["d5"], "query": "delta?"},
    {"query_id": "q2", "ranking": ["d6", "d4"]},  # neither answer nor citations logged
]


@pytest.fixture(scope="module")
def tiny():
    docs = tuple(Document(d, t, provider=PROVIDER[d], groups={"region": REGION[d]}) for d, t in TEXTS.items())
    return Collection("tiny", docs, (Query("q1", "first question"), Query("q2", "second question")),
                      {"q1": {"d1": 2, "d3": 1, "d5": 0}})


@pytest.fixture()
def log_path(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in LOG) + "\n", encoding="utf-8")
    return path


def _row(run, qid):
    return run.table.set_index("query_id").loc[qid]


def test_exposure_and_relevance_by_hand(tiny, log_path):
    run = audit_rag_log(log_path, tiny, LogAuditConfig(attribution="none", seed=0))
    q1, q2 = _row(run, "q1"), _row(run, "q2")
    # q1: ε = d1 1, d2 .5, d3 .5 → plug-in ‖ε‖²/k = 1.5/2; the exact unbiased value Σc(c−1)/(N(N−1))/k = 16/12/2,
    # and EE-D (bias-corrected, the one shown everywhere) is that unbiased value, inside its interval
    assert q1["ee_d_plug_in"] == pytest.approx(0.75)
    assert q1["ee_d"] == pytest.approx(16 / 12 / 2) and q1["ee_d_low"] <= q1["ee_d"] <= q1["ee_d_high"]
    # target: m = 2 ≤ k → useful 1, others 0; ⟨ε, ε*⟩ / m = (1 + .5) / 2
    assert q1["ee_r"] == pytest.approx(0.75) and q1["m"] == 2 and q1["fairness_question"]
    assert (q1["lines"], q1["providers_reached"], q1["documents_reached"]) == (4, 2, 3)
    # q2: ε = d5 .5, d6 1, d4 .5; no labels
    assert q2["ee_d_plug_in"] == pytest.approx(0.75) and q2["ee_d"] == pytest.approx(2 / 2 / 2) and np.isnan(q2["ee_r"])
    assert q2["query"] == "delta?" and q1["query"] == "first question"  # the log's text, else the collection's
    assert run.sources == ()
    assert run.record.sampled_rankings == run.record.extra["rankings"] == 6  # the log's, not its last query's


def test_logged_citations_by_hand(tiny, log_path):
    run = audit_rag_log(log_path, tiny, LogAuditConfig(seed=0))  # auto → logged: the log has citations
    assert run.record.config.attribution.value == "logged" and run.sources == ("cited",)
    q1, q2 = _row(run, "q1"), _row(run, "q2")
    # q1 cited slots [T,F] [T,T] [F,F] [F,T] → AR .5 1 0 .5; ε^a d1 .5, d2 .25, d3 .25 → ‖ε^a‖²/k = .375/2
    assert q1["ear_cited"] == pytest.approx(0.5) and q1["eae_d_cited"] == pytest.approx(0.1875)
    # q2: only line 5 logged citations: [T, F] → AR .5, ε^a d5 = 1
    assert q2["ear_cited"] == pytest.approx(0.5) and q2["eae_d_cited"] == pytest.approx(0.5)
    assert q2["cited_lines"] == 1
    assert run.lines["cited_outside"].tolist()[3] == ("d6",)
    assert any("outside the top 2" in note for note in run.record.extra["notes"])
    summary = log_summary(run).set_index("metric")
    assert summary.loc["ear_cited", "estimate"] == pytest.approx(0.5)
    assert summary.loc["eae_d_cited", "estimate"] == pytest.approx((0.1875 + 0.5) / 2)
    # the headline EE-D is the mean of the queries' EE-D (bias-corrected, as everywhere; both plug-ins are 0.75)
    assert summary.loc["ee_d", "estimate"] == pytest.approx(run.table["ee_d"].mean())
    assert summary.loc["ee_d", "estimate"] < 0.75
    assert summary.loc["ee_r", "queries"] == 1


def test_judged_and_logged_side_by_side(tiny, log_path):
    judge = SubstringAttributor()  # entails iff the answer occurs in the document
    calls = []
    run = audit_rag_log(log_path, tiny, LogAuditConfig(attribution="both", seed=0), attributor=judge,
                        progress=lambda done, total: calls.append((done, total)))
    assert judge.scored == 8  # distinct (document, answer) pairs: line 4 repeats line 1
    assert calls[0] == (0, 8) and calls[-1] == (8, 8)
    q1, q2 = _row(run, "q1"), _row(run, "q2")
    # entailed slots [T,T] [F,T] [F,T] [T,T] → AR 1 .5 .5 1; ε^a d1 .75, d2 .5, d3 .25 → .875/2
    assert q1["ear_entailed"] == pytest.approx(0.75) and q1["eae_d_entailed"] == pytest.approx(0.4375)
    assert q1["ear_cited"] == pytest.approx(0.5)  # the logged source is unchanged beside it
    assert q2["ear_entailed"] == pytest.approx(0.5) and q2["entailed_lines"] == 1  # line 6 has no answer
    assert run.lines["entailed"].tolist()[:3] == [("d1", "d2"), ("d3",), ("d1",)]
    assert run.record.attributor == "fake-substring" and run.record.extra["judged_pairs"] == 10
    summary = log_summary(run).set_index("metric")
    # slots cited 4 + 1, entailed 6 + 1, both 3 + 1
    assert summary.loc["cited_entailed", "estimate"] == pytest.approx(4 / 5)
    assert summary.loc["entailed_cited", "estimate"] == pytest.approx(4 / 7)
    again = audit_rag_log(log_path, tiny, LogAuditConfig(attribution="judge", seed=0), attributor=judge)
    assert judge.scored == 8 and again.sources == ("entailed",)  # every pair came from the attributor's cache


def test_ledgers_by_hand(tiny, log_path):
    run = audit_rag_log(log_path, tiny, LogAuditConfig(seed=0))
    assert default_ledger_scope(run)  # q1 has labels, q2 not: compare with the target on q1 only
    every = log_ledger(run, tiny, by="provider").set_index("group")
    assert every["retrieval_share"].to_dict() == pytest.approx({"A": 0.375, "B": 0.25, "C": 0.125, "D": 0.25})
    assert every["attributed_share"].to_dict() == pytest.approx({"A": 0.375, "B": 0.125, "C": 0.5, "D": 0.0})
    assert every["target_share"].isna().all()  # q2 has no target: no gap over every query
    labelled = log_ledger(run, tiny, by="provider", labelled_only=True).set_index("group")
    assert labelled.loc[["A", "B"], "retrieval_share"].tolist() == pytest.approx([0.75, 0.25])
    assert labelled.loc[["A", "B"], "target_share"].tolist() == pytest.approx([0.5, 0.5])
    assert labelled.loc[["A", "B"], "share_gap"].tolist() == pytest.approx([0.25, -0.25])
    region = log_ledger(run, tiny, by="region").set_index("group")
    assert region["retrieval_share"].to_dict() == pytest.approx({"north": 0.5, "south": 0.5})
    for ledger in (every, region):
        for name in ("retrieval_share", "attributed_share", "target_share", "share_gap"):
            kept = ledger[ledger[name].notna() & (ledger[name] != 0)]
            assert (kept[f"{name}_low"] <= kept[name] + 1e-12).all()
            assert (kept[name] <= kept[f"{name}_high"] + 1e-12).all()
    # D is never cited: its share is exactly 0 in every query, and has no interval rather than [0, 0]
    assert every.loc["D", ["attributed_share_low", "attributed_share_high"]].isna().all()
    # the labelled ledger holds one query: resampling it would give it back, so it has no interval
    assert labelled.filter(like="_low").isna().all().all() and labelled.filter(like="_high").isna().all().all()
    with pytest.raises(InvalidParameterError, match="source 'entailed' was not measured in this audit"):
        log_ledger(run, tiny, source="entailed")


def test_k_cuts_longer_rankings_and_short_ones_fill_fewer_slots(tiny, tmp_path):
    path = tmp_path / "long.jsonl"
    rows = [{"query_id": "q1", "ranking": ["d1", "d3", "d5"]}, {"query_id": "q1", "ranking": ["d2"]}]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    cut = audit_rag_log(path, tiny, LogAuditConfig(k=2, seed=0))
    # k = 2: ε = d1 .5, d3 .5, d2 .5 → .75 / 2
    assert _row(cut, "q1")["ee_d_plug_in"] == pytest.approx(0.375) and cut.lines["shown"].tolist()[0] == ("d1", "d3")
    whole = audit_rag_log(path, tiny, LogAuditConfig(seed=0))
    assert whole.record.extra["k_used"] == 3 and "rankings hold 1–3 documents" in whole.record.extra["notes"][0]
    assert _row(whole, "q1")["ee_d_plug_in"] == pytest.approx(4 * 0.25 / 3)


def test_bad_settings_name_the_fix(tiny, log_path, tmp_path):
    with pytest.raises(InvalidParameterError, match="needs an NLI attributor; pass attributor=load_attributor"):
        audit_rag_log(log_path, tiny, LogAuditConfig(attribution="judge"))
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"query_id": "q1", "ranking": ["d1"]}), encoding="utf-8")
    with pytest.raises(InvalidParameterError, match="logs no citations; use attribution 'judge'"):
        audit_rag_log(bare, tiny, LogAuditConfig(attribution="logged"))
    with pytest.raises(InvalidParameterError, match="logs no answers to judge; use attribution 'logged' or 'none'"):
        audit_rag_log(bare, tiny, LogAuditConfig(attribution="judge"), attributor=SubstringAttributor())
    with pytest.raises(InvalidParameterError, match="k=7 is larger than the 6 candidate"):
        audit_rag_log(log_path, tiny, LogAuditConfig(k=7))
    with pytest.raises(InvalidParameterError, match="attribution='sometimes' is not one of"):
        LogAuditConfig(attribution="sometimes")


def test_record_reproduces_and_the_store_keeps_it(tiny, log_path, tmp_path):
    run = audit_rag_log(load_rag_log(log_path), tiny, LogAuditConfig(seed=5, n_boot=200),
                        collection_source="/data/tiny")
    record = run.record
    assert record.kind is RunKind.AUDIT_LOG and record.seed == 5 and record.extra["lines"] == 6
    assert record.command() == (f"python -m fairrag_core audit-log {log_path} --collection /data/tiny "
                                "--attribution logged --boot 200 --seed 5")
    assert RunRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    with RunStore(tmp_path / "runs.duckdb") as store:
        run_id = store.save(run, label="log")
        again = store.load(run_id)
        listed = store.list()
    assert again.record == record and listed.loc[0, "kind"] == "audit-log" and listed.loc[0, "n_samples"] is None
    assert again.table["ee_d"].tolist() == pytest.approx(run.table["ee_d"].tolist())
    assert log_summary(again).equals(log_summary(run))  # the headline is rebuilt from the stored table and seed


def test_a_second_user_model_adds_expeval_values_for_labelled_queries(tiny, log_path):
    from fairrag_core.audit.served import evaluate_run

    run = audit_rag_log(log_path, tiny, LogAuditConfig(seed=0, user_model="rbp", patience=0.8))
    expected = evaluate_run(qrels=tiny, run={"q1": [r["ranking"] for r in LOG if r["query_id"] == "q1"]},
                            user_model="rbp", patience=0.8)
    q1 = _row(run, "q1")
    assert q1["expeval_disparity"] == pytest.approx(expected.loc["q1", "disparity"])
    assert q1["expeval_relevance"] == pytest.approx(expected.loc["q1", "relevance"])
    assert np.isnan(_row(run, "q2")["expeval_disparity"])  # no labels
    labels = log_summary(run).set_index("metric")["label"]
    assert labels["expeval_disparity"] == "disparity (rbp, patience 0.8; expeval-normalised)"
    assert "--user-model rbp --patience 0.8" in run.record.command()
    assert "expeval_disparity" not in audit_rag_log(log_path, tiny, LogAuditConfig(seed=0)).table


def test_a_served_run_audits_like_a_log(tiny):
    from fairrag_core.data import RagLog
    from fairrag_core.data.served import ServedRankings

    served = ServedRankings.from_lists({"q1": [["d1", "d2"], ["d1", "d3"], ["d3", "d1"], ["d1", "d2"]]})
    run = audit_rag_log(RagLog.from_served(served), tiny, LogAuditConfig(seed=0))
    assert _row(run, "q1")["ee_d_plug_in"] == pytest.approx(0.75) and run.record.config.attribution.value == "none"


def test_a_judged_audit_stores_the_judge_prompt_digest(tiny, log_path):
    from fakes import FirstDocumentModel

    from fairrag_core.rag.attribution import LLMJudgeAttributor

    judge = LLMJudgeAttributor(FirstDocumentModel("fake-judge"))
    run = audit_rag_log(log_path, tiny, LogAuditConfig(attribution="judge", seed=0), attributor=judge)
    assert run.record.attributor_prompt == judge.prompt_version
    assert RunRecord.from_dict(run.record.to_dict()).attributor_prompt == judge.prompt_version
    assert audit_rag_log(log_path, tiny, LogAuditConfig(seed=0)).record.attributor_prompt is None  # logged only


def test_per_query_intervals_over_lines_contain_their_estimates_and_follow_the_seed():
    collection = load_collection("running-shoes")
    config = LogAuditConfig(seed=3, n_boot=300)
    table = audit_rag_log(DEMO_LOG, collection, config).table
    several = table[table["lines"] > 1]
    assert (several["ee_d_low"] <= several["ee_d"] + 1e-12).all()
    assert (several["ee_d"] <= several["ee_d_high"] + 1e-12).all()
    judged = several[several["ee_r"].notna()]
    assert len(judged) >= 15
    assert ((judged["ee_r_low"] <= judged["ee_r"] + 1e-12) & (judged["ee_r"] <= judged["ee_r_high"] + 1e-12)).all()
    # the corrected estimate moves the biased plug-in down, towards the exact unbiased one
    assert (several["ee_d"] <= several["ee_d_plug_in"] + 1e-12).all()
    once = table[table["lines"] == 1]
    assert (once["ee_d"] == once["ee_d_plug_in"]).all() and once["ee_d_low"].isna().all()  # no interval from one
    again = audit_rag_log(DEMO_LOG, collection, config).table
    pd.testing.assert_frame_equal(table, again)


def test_the_judge_follows_the_citation_rule_and_the_command_keeps_it(tiny, log_path):
    import shlex

    from fairrag_core.cli import build_parser

    judge = SubstringAttributor()  # entails iff the answer occurs in the document
    run = audit_rag_log(log_path, tiny, LogAuditConfig(attribution="judge", seed=0, min_support=1.0,
                                                       skip_degenerate=True), attributor=judge)
    # lexical support 1 only where the answer's word is in the document: alpha d1 d2, beta d3, gamma d1; "delta"
    # answers the question "delta?" with the question's own word: support 0, never judged, cites nothing
    assert judge.scored == 4
    assert _row(run, "q1")["ear_entailed"] == pytest.approx(0.75) and _row(run, "q2")["ear_entailed"] == 0.0
    command = run.record.command()
    assert "--min-support 1 " in command and "--entail-threshold none" in command and "--skip-degenerate" in command
    args = build_parser().parse_args(shlex.split(command)[3:])
    assert (args.min_support, args.entail_threshold, args.skip_degenerate, args.per_claim) == (1.0, None, True, False)
    with pytest.raises(InvalidParameterError, match="no retrieved pool"):
        LogAuditConfig(control_margin=0.2)
    with pytest.raises(InvalidParameterError, match="min_support"):
        LogAuditConfig(min_support=2.0)


class _AskedSubstring(SubstringAttributor):
    """The substring judge, keeping every (document, claim, question) the model is asked, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = []

    def _class_probabilities(self, premises, hypotheses, contexts):
        self.asked.extend(zip(premises, hypotheses, contexts))
        return super()._class_probabilities(premises, hypotheses, contexts)


def test_the_plan_lists_the_pairs_the_judge_is_then_asked_and_the_steps_compose_to_the_audit(tiny, log_path):
    """audit_rag_log is its named steps: the plan lists the distinct pairs the judge will be asked, in the judge's
    order (grouped by document), asking no model; read, plan, judge and finish by hand give the same run."""
    config = LogAuditConfig(attribution="both", seed=0)
    plan = plan_log_audit(read_log(log_path, tiny), tiny, config, judge=True)
    assert plan.k == 2 and plan.seed == 0 and len(plan.judge_items) == len(LOG)
    pairs = plan.judge_pairs()
    judge = _AskedSubstring()
    run = audit_rag_log(log_path, tiny, config, attributor=judge)
    assert pairs == judge.asked and judge.scored == 8
    # line 1 shows d1 d2, line 2 d1 d3, line 3 d3 d1 (line 4 repeats line 1); q2 logs its own question "delta?"
    assert pairs == [("alpha gamma one", "alpha", "first question"), ("alpha gamma one", "beta", "first question"),
                     ("alpha gamma one", "gamma", "first question"), ("alpha two", "alpha", "first question"),
                     ("beta three", "beta", "first question"), ("beta three", "gamma", "first question"),
                     ("delta five", "delta", "delta?"), ("six", "delta", "delta?")]
    by_hand = finish_log_audit(plan, judge_log(plan, SubstringAttributor()), attributor=SubstringAttributor())
    for frame in ("table", "documents", "lines"):
        pd.testing.assert_frame_equal(getattr(by_hand, frame), getattr(run, frame))
    assert by_hand.record.extra == run.record.extra and by_hand.record.config == run.record.config
    # without a judge the plan lists nothing; a judged source still needs one
    assert plan_log_audit(read_log(log_path, tiny), tiny, LogAuditConfig(seed=0), judge=False).judge_pairs() == []
    with pytest.raises(InvalidParameterError, match="needs an NLI attributor"):
        plan_log_audit(read_log(log_path, tiny), tiny, config, judge=False)
