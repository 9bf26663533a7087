"""The citation rule: claims, a probability threshold and a specificity check against a control document."""

import dataclasses

import numpy as np
import pytest

from fairrag_core import Collection, Document, InvalidParameterError, Query
from fairrag_core.models.llm import Completion, LanguageModel
from fairrag_core.rag.attribution import Attributor
from fairrag_core.rag.citations import CitationPolicy, cited, lexical_support, split_claims
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.pipeline import RagConfig, run_rag
from fairrag_core.retrieval import BM25Retriever


def test_claims_are_sentences_without_citation_marks():
    assert split_claims("Kestrel Rovers won [1]. Ada Okafor scored twice [2, 3].") == [
        "Kestrel Rovers won.", "Ada Okafor scored twice."]
    assert split_claims("a short answer") == ["a short answer"]
    assert split_claims("One. Two. Three. Four. Five.", max_claims=3) == ["One.", "Two.", "Three. Four. Five."]
    assert split_claims("Dr. Ortiz said 3.5 km. Then she left.") == ["Dr. Ortiz said 3.5 km.", "Then she left."]


def test_rule_defaults_to_the_papers_argmax():
    assert cited(np.array([[0.4, 0.35, 0.25]]), CitationPolicy())
    assert not cited(np.array([[0.3, 0.6, 0.1]]), CitationPolicy())
    assert cited(np.array([[0.2, 0.7, 0.1], [0.8, 0.1, 0.1]]), CitationPolicy(per_claim=True))  # one claim is enough
    assert not cited(np.array([[0.55, 0.4, 0.05]]), CitationPolicy(entail_threshold=0.6))
    with pytest.raises(InvalidParameterError, match="control"):
        cited(np.array([[0.9, 0.1, 0.0]]), CitationPolicy(control_margin=0.1))


class TwoFacts(LanguageModel):
    """Always answers with one sentence about document A and one generic sentence."""

    backend, name = "fake", "two-facts"

    @property
    def device(self):
        return "cpu"

    def complete(self, prompts, decoding=None):
        return [Completion("The Glide has a medial post. Shoes help runners.", "stop") for _ in prompts]

    def option_probabilities(self, prompt, options, *, keep_prefix=""):
        return np.full(len(options), 1 / len(options))


class WordJudge(Attributor):
    """Entailment when every word of the claim (ignoring 'the', 'a', 'has') occurs in the premise."""

    name = "word-judge"

    def _class_probabilities(self, premises, hypotheses, contexts):
        rows = []
        for premise, claim in zip(premises, hypotheses):
            words = [w.strip(".").lower() for w in claim.split() if w.lower() not in {"the", "a", "has"}]
            hit = all(w in premise.lower() for w in words)
            rows.append([0.9, 0.05, 0.05] if hit else [0.1, 0.8, 0.1])
        return np.array(rows)


def test_per_claim_credit_and_the_control_document_in_a_run():
    docs = (Document("a", "Glide review: the Glide medial post shoes help runners", provider="A"),
            Document("b", "shoes help runners of every kind, says a coach", provider="B"),
            Document("c", "a forum thread: shoes help runners stay comfy", provider="C"),
            Document("z", "shoes help runners, a general note", provider="Z"))
    collection = Collection("toy", docs, (Query("q", "glide medial post shoes", answer="medial post"),))
    retriever = BM25Retriever(collection.texts)

    def run(**policy):
        config = RagConfig(alpha=float("inf"), n_samples=4, k=3, seed=1, oracle=False, question_in_hypothesis=False,
                           **policy)
        return run_rag(collection, retriever, Generator(TwoFacts()), WordJudge(), "glide medial post shoes", config)

    whole = run()  # the whole two-sentence answer: only document a holds every word
    cited_whole = {whole.ranking.doc_ids[p] for p, e in zip(whole.answers[0].positions, whole.answers[0].entails) if e}
    assert cited_whole == {"a"}
    per_claim = run(per_claim=True)  # the generic sentence is "supported" by every shoe document
    answer = per_claim.answers[0]
    assert all(answer.entails) and per_claim.ear == 1.0
    specific = run(per_claim=True, control_margin=0.3)  # … and by the unseen control document z: not specific
    answer = specific.answers[0]
    ids = specific.ranking.doc_ids
    assert {ids[p] for p, e in zip(answer.positions, answer.entails) if e} == {"a"}
    assert specific.ear == pytest.approx(1 / 3)


def test_a_degenerate_answer_cites_nothing_when_asked():
    class Echo(TwoFacts):
        def complete(self, prompts, decoding=None):
            return [Completion("Glide medial post shoes", "stop") for _ in prompts]  # the question, restated

    docs = (Document("a", "the Glide medial post shoes", provider="A"),
            Document("b", "Glide medial post shoes", provider="B"))
    collection = Collection("toy", docs, (Query("q", "Glide medial post shoes?", answer="x"),))
    config = RagConfig(alpha=float("inf"), n_samples=2, k=2, seed=1, oracle=False, question_in_hypothesis=False)
    judge = WordJudge()
    plain = run_rag(collection, BM25Retriever(collection.texts), Generator(Echo()), judge, "Glide medial post shoes?",
                    config)
    assert all(plain.answers[0].entails) and plain.answers[0].degenerate
    skipping = run_rag(collection, BM25Retriever(collection.texts), Generator(Echo()), WordJudge(),
                       "Glide medial post shoes?", RagConfig(**{**config.to_dict(), "alpha": float("inf"),
                                                                "skip_degenerate": True}))
    assert not any(skipping.answers[0].entails) and skipping.ear == 0.0


def test_lexical_support_counts_the_answers_own_words_found_in_the_document():
    question = "best shoes for a first marathon"
    # own words (stems): kestrel, spark, cushion, trainer → 3 of 4 in the document ("cushioned" stems to "cushion")
    assert lexical_support("The Kestrel Spark, a cushioned trainer.", "Kestrel Spark review: well cushioned.",
                           question) == pytest.approx(3 / 4)
    assert lexical_support("The best shoes for a first marathon.", "anything at all", question) == 0.0  # restated
    assert lexical_support("", "anything", question) == 0.0
    # the question's words do not count for the answer, even when the document has them
    assert lexical_support("Marathon shoes: the Apex Plate.", "marathon shoes of every brand", question) == 0.0
    # stems and case: "Runners" matches "running"? no (Snowball keeps runner ≠ run); plural and case do match
    assert lexical_support("Runners", "a RUNNER", "") == 1.0


def test_support_rule_needs_the_words_and_never_cites_an_unjudged_claim():
    policy = CitationPolicy(min_support=0.7)
    assert cited(np.array([[0.9, 0.1, 0.0]]), policy, support=np.array([0.75]))
    assert not cited(np.array([[0.9, 0.1, 0.0]]), policy, support=np.array([0.5]))
    assert not cited(np.array([[np.nan] * 3]), CitationPolicy(), support=None)  # not judged: not cited
    with pytest.raises(InvalidParameterError, match="support"):
        cited(np.array([[0.9, 0.1, 0.0]]), policy)
    for bad in (float("nan"), -0.1, 1.5):
        with pytest.raises(InvalidParameterError, match="min_support"):
            CitationPolicy(min_support=bad)
    with pytest.raises(InvalidParameterError, match="control_margin"):
        CitationPolicy(control_margin=float("inf"))


class CountingWordJudge(WordJudge):
    def __init__(self):
        super().__init__()
        self.asked = []

    def _class_probabilities(self, premises, hypotheses, contexts):
        self.asked.extend(premises)
        return super()._class_probabilities(premises, hypotheses, contexts)


def test_a_run_sends_only_lexically_supported_pairs_to_the_judge():
    """Under min_support the judge sees only documents holding the answer's words; the rest are not cited, carry
    P = NaN and their support, and a generic answer is cited by no document."""
    docs = (Document("a", "Glide review: the Glide medial post shoes help runners", provider="A"),
            Document("b", "shoes help runners of every kind, says a coach", provider="B"),
            Document("c", "a forum thread: shoes help runners stay comfy", provider="C"))
    collection = Collection("toy", docs, (Query("q", "glide shoes", answer="medial post"),))
    config = RagConfig(alpha=float("inf"), n_samples=2, k=3, seed=1, oracle=False, question_in_hypothesis=False,
                       per_claim=True, min_support=0.7)
    judge = CountingWordJudge()
    run = run_rag(collection, BM25Retriever(collection.texts), Generator(TwoFacts()), judge, "glide shoes", config)
    answer = run.answers[0]
    ids = [run.ranking.doc_ids[p] for p in answer.positions]
    cited_ids = {d for d, e in zip(ids, answer.entails) if e}
    # claim 1 "The Glide has a medial post." (own words: medial, post) is in a only; claim 2 "Shoes help runners."
    # (own words: help, runner) is in all three — the word check alone does not stop a generic sentence, the judge
    # and the threshold do; here WordJudge supports it everywhere, as the 1.5B judge would
    assert cited_ids == {"a", "b", "c"}
    assert dict(zip(ids, answer.support))["a"] == 1.0
    config_whole = dataclasses.replace(config, per_claim=False)
    judge = CountingWordJudge()
    whole = run_rag(collection, BM25Retriever(collection.texts), Generator(TwoFacts()), judge, "glide shoes",
                    config_whole)
    answer = whole.answers[0]
    ids = [whole.ranking.doc_ids[p] for p in answer.positions]
    support = dict(zip(ids, answer.support))
    # whole answer: own words medial, post, help, runner → a has 4/4, b and c 2/4 (below 0.7): only a is judged
    assert support == {"a": 1.0, "b": 0.5, "c": 0.5}
    assert {d.split(":")[0] for d in judge.asked} == {"Glide review"}
    probs = dict(zip(ids, answer.entail_probability))
    assert probs["a"] == pytest.approx(0.9) and np.isnan(probs["b"]) and np.isnan(probs["c"])
    assert {d for d, e in zip(ids, answer.entails) if e} == {"a"}


def test_the_tours_recorded_chips_follow_the_presets_rule_and_its_reading(shoes):
    """benchmarks/tour_citations.py judged the README tour's 20 answers with the real judge. Re-applying the presets'
    rule to its recorded P(supported), with lexical support computed now, gives the recorded chips (so a change of
    rule or of the support measure shows here until the benchmark is run again); and by the reading recorded in
    tests/data/tour_answers.jsonl at most 2 of the 13 green chips do not support the answer (precision 0.85)."""
    import json
    from pathlib import Path

    from fairrag_core.rag.presets import FITTED_CITATION

    root = Path(__file__).parents[2]
    reading = {r["n"]: r for r in map(json.loads, (root / "tests/data/tour_answers.jsonl").read_text().splitlines())}
    records = [json.loads(line) for line in (root / "benchmarks/results/tour_citations.jsonl").read_text().splitlines()]
    assert len(records) == 20
    green = wrong = 0
    for record in records:
        row = reading[record["n"]]
        for shown in record["documents"]:
            text = shoes.documents[shoes.index_of(shown["doc_id"])].full_text
            support = lexical_support(row["answer"], text, row["question"])
            assert support == pytest.approx(shown["support"], abs=1e-3)
            asked = FITTED_CITATION.supported(support) and not record["flags"]
            assert (shown["p_supported"] is not None) == asked
            expected = asked and shown["p_supported"] >= FITTED_CITATION.entail_threshold
            assert shown["cited"] == expected, (record["n"], shown)
            green += expected
            wrong += expected and shown["doc_id"] not in row["supports"]
    assert (green, wrong) == (13, 2)
