"""The what-if replays what the system chose from when the log says it (issue 29): a reranker's logged input with
its scores, a JSONL line's "candidates", instead of the union of the served rankings; queries without logged
candidates replay as before."""

import io
import json
import math

import pytest
from data.test_trace_candidates import DOCS, reranked_trace  # the reranker traces of tests/data
from data.test_traces import T0, export, write_lines

from fairrag_core.audit.what_if import what_if_sampling
from fairrag_core.cli import main
from fairrag_core.data import Collection, Document, load_rag_log, load_traces
from fairrag_core.data.rag_log import LogEntry, RagLog

SETTINGS = {"n_samples": 40, "seed": 4, "n_boot": 100}


@pytest.fixture(scope="module")
def twenty():
    """d00…d19, providers A (even) and B (odd), no relevance labels."""
    return Collection("twenty", tuple(Document(d, "", provider="AB"[i % 2]) for i, d in enumerate(DOCS)))


def reranked_export(tmp_path, *, inputs, vary=False, name="traces.jsonl"):
    """Three queries, two traces each, the reranker's input (with ``inputs``) the 20 documents, its output five:
    the same five on both lines of a query (``d0q``…), or with ``vary`` another five on the second line."""
    spans = []
    for q in range(3):
        for line in range(2):
            first = q + 5 * line * vary
            spans += reranked_trace(f"t{q}{line}", f"q{q}", DOCS[first:first + 5], inputs=DOCS if inputs else None,
                                    start=T0 + 10 * (2 * q + line))
    return write_lines(tmp_path, [export(*spans)], name)


def test_a_rerankers_logged_input_is_replayed_instead_of_the_served_top_5s(tmp_path, twenty):
    with_inputs = load_traces(reranked_export(tmp_path, inputs=True))
    without = load_traces(reranked_export(tmp_path, inputs=False, name="served.jsonl"))
    result = what_if_sampling(with_inputs, twenty, alphas=(0, math.inf), **SETTINGS)
    before = what_if_sampling(without, twenty, alphas=(0, math.inf), **SETTINGS)
    assert result.k == before.k == 5
    assert result.per_query["candidates"].tolist() == [20] * 6
    assert before.per_query["candidates"].tolist() == [5] * 6
    assert ("candidates: the logged candidate sets (a reranker's input, or the retrieval list it reranked or cut) "
            "for 3 of 3 replayed queries, with their logged scores; the replay at α = ∞ ranks by those scores, so it "
            "need not match the system as served") in result.notes
    assert not any(note.startswith("candidates:") for note in before.notes)
    # α = ∞ ranks the 20 by their logged input scores (20 − i): d00…d04 for every query, whatever was served
    top = result.documents[result.documents["alpha"] == math.inf]
    assert set(top.loc[top["exposure"] == 1.0, "doc_id"]) == set(DOCS[:5])
    assert top.groupby("query_id")["exposure"].sum().tolist() == [5.0] * 3
    at_zero = result.documents[result.documents["alpha"] == 0.0]
    assert at_zero["exposure"].mean() == pytest.approx(5 / 20)  # every ranking fills 5 of the 20 slots


def test_without_logged_candidates_the_union_of_the_served_rankings_is_replayed(tmp_path, twenty):
    result = what_if_sampling(load_traces(reranked_export(tmp_path, inputs=False, vary=True)), twenty, alphas=(0,),
                              **SETTINGS)
    assert result.per_query["candidates"].tolist() == [10, 10, 10]  # q0: d00-d04 and d05-d09, …
    assert any(note.startswith("3 of 3 replayed queries were served different rankings") for note in result.notes)


def test_a_jsonl_log_with_scored_candidates_replays_them(tmp_path, twenty):
    rows = [{"query_id": "q1", "ranking": ["d03", "d01"],
             "candidates": [{"id": d, "score": 20 - i} for i, d in enumerate(DOCS)]},
            {"query_id": "q1", "ranking": ["d00", "d01"],
             "candidates": [{"id": d, "score": 22 - i} for i, d in enumerate(DOCS)]},  # a mean of 21 − i
            {"query_id": "q2", "ranking": ["d05"], "candidates": [{"id": "d05", "score": 1.0},
                                                                  {"id": "d06", "score": 0.5}]}]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = what_if_sampling(load_rag_log(path), twenty, alphas=(math.inf,), **SETTINGS)
    assert result.per_query["candidates"].tolist() == [20, 2]
    scores = result.documents.set_index(["query_id", "doc_id"])["score"]
    assert (scores["q1", "d00"], scores["q1", "d19"], scores["q2", "d06"]) == (21.0, 2.0, 0.5)
    assert any(note.startswith("candidates: the logged candidate sets (the log's \"candidates\") for 2 of 2 ")
               for note in result.notes)
    assert any(note.startswith("20 (query, document) pair(s) were logged with different scores") for note in
               result.notes)


def test_queries_whose_lines_do_not_all_log_scored_candidates_replay_their_served_rankings(twenty):
    log = RagLog("x", (
        LogEntry(1, "q1", ("d00", "d01"), scores=(2.0, 1.0), candidates=tuple(DOCS[:4]),
                 candidate_scores=(4.0, 3.0, 2.0, 1.0)),
        LogEntry(2, "q2", ("d00", "d01"), scores=(2.0, 1.0), candidates=tuple(DOCS[:4]),
                 candidate_scores=(4.0, 3.0, 2.0, 1.0)),
        LogEntry(3, "q2", ("d02", "d01"), scores=(2.0, 1.0)),  # no candidates on this line
        LogEntry(4, "q3", ("d00", "d01"), scores=(2.0, 1.0), candidates=tuple(DOCS[:4])),  # ids without scores
    ))
    result = what_if_sampling(log, twenty, alphas=(0,), **SETTINGS)
    assert result.per_query["candidates"].tolist() == [4, 3, 2]
    assert any(note.startswith("candidates: the logged candidate sets (the log's \"candidates\") for 1 of 3 "
                               "replayed queries, with their logged scores; the other 2 replay the union of their "
                               "served rankings;") for note in result.notes)


def test_a_candidate_without_a_score_skips_its_query_with_the_reason(twenty):
    log = RagLog("x", (LogEntry(1, "q1", ("d00",), candidates=("d00", "d01"), candidate_scores=(1.0, None)),
                       LogEntry(2, "q2", ("d02",), candidates=("d02", "d03"), candidate_scores=(1.0, 0.5))))
    result = what_if_sampling(log, twenty, alphas=(0,), **SETTINGS)
    assert result.skipped == {"q1": "1 of its 2 logged candidates have no logged score (first: 'd01'; 0 of its 1 "
                                    "lines carry no score)"}
    assert result.per_query["candidates"].tolist() == [2]
    assert any(note.startswith("1 of 2 queries not replayed (logged candidates without a logged score), e.g. 'q1'")
               for note in result.notes)


def test_the_cli_replays_a_rerankers_input_without_a_collection(tmp_path):
    out = io.StringIO()
    code = main(["audit-log", str(reranked_export(tmp_path, inputs=True)), "--provider-from", "metadata.source",
                 "--seed", "3", "--no-store", "--boot", "100", "--what-if-alphas", "0,inf", "--what-if-samples", "30",
                 "--json"], out=out)
    assert code == 0
    what_if = json.loads(out.getvalue())["what_if"]
    assert any(note.startswith("candidates: the logged candidate sets (a reranker's input") for note in
               what_if["notes"])
    assert any(note.startswith("k = 5 (the audit's), N = 30 sampled rankings per query and α; logged candidates per "
                               "query: 20") for note in what_if["notes"])
