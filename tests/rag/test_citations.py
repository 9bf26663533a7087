"""The citation rule: claims, a probability threshold and a specificity check against a control document."""

import numpy as np
import pytest

from fairrag_core import Collection, Document, InvalidParameterError, Query
from fairrag_core.models.llm import Completion, LanguageModel
from fairrag_core.rag.attribution import Attributor
from fairrag_core.rag.citations import CitationPolicy, cited, split_claims
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
    assert not cited(np.array([[0.55, 0.4, 0.05]]), CitationPolicy(threshold=0.6))
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
