"""Degenerate answers are caught (empty, prompt echo, repetition loop, cut) and real short answers are not."""

import numpy as np
import pytest
from fakes import SubstringAttributor

from fairrag_core import Collection, Document, Query
from fairrag_core.models.llm import Completion, LanguageModel
from fairrag_core.rag.degenerate import AnswerFlag, answer_flags
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.pipeline import RagConfig, run_rag
from fairrag_core.retrieval import BM25Retriever

Q = "Which shoe suits runners with flat feet?"


@pytest.mark.parametrize("answer, flags", [
    ("", {AnswerFlag.EMPTY}),
    ("   …  ", {AnswerFlag.EMPTY}),
    ("The answer is:", {AnswerFlag.EMPTY}),
    ("Answer:", {AnswerFlag.EMPTY}),
    ("1. 1. 2. 3.", {AnswerFlag.EMPTY}),
    ('The answer to the question "What does heel-to-toe drop mean" is:', {AnswerFlag.EMPTY}),
    ("Which shoe suits runners with flat feet", {AnswerFlag.ECHO}),
    ("Question: Which shoe suits runners", {AnswerFlag.ECHO}),
    ("[1] Stride Pro: a shoe for flat feet", {AnswerFlag.ECHO}),
    ("This shoe is designed to help runners with flat feet, and it's designed to help runners with flat feet",
     {AnswerFlag.LOOP}),
    ("The bridge engineers are described in the first document.", {AnswerFlag.DEFERS}),
    ("To clean running shoes, follow the instructions in each document.", {AnswerFlag.DEFERS}),
    # a document named by its number, in any spelling and at any length (issue 31)
    ("According to document 2, the Glide has a medial post.", {AnswerFlag.DEFERS}),
    ("The Glide has a medial post [Doc 2].", {AnswerFlag.DEFERS}),
    ("The document 3 recommends the Northmark Glide, a stability shoe with a medial post that keeps the arch up.",
     {AnswerFlag.DEFERS}),
    ("Documents 1 and 3 both recommend the Northmark Glide.", {AnswerFlag.DEFERS}),
    ("The Northmark Glide, as Document #4 says.", {AnswerFlag.DEFERS}),
])
def test_each_failure_is_named(answer, flags):
    assert set(answer_flags(answer, question=Q)) == flags


def test_a_cut_answer_needs_the_length_finish_reason():
    text = "The Northmark Glide is a stable shoe with a firm medial post that"
    assert answer_flags(text, question=Q, finish_reason="length") == (AnswerFlag.CUT,)
    assert answer_flags(text, question=Q, finish_reason="stop") == ()
    assert answer_flags(text + " helps.", question=Q, finish_reason="length") == ()


@pytest.mark.parametrize("answer", ["Kestrel Rovers", "The Northmark Glide.", "Yes", "42 km",
                                    "No, shoes that suit runners with flat feet do not exist.",
                                    "The Stride Pro, a stability shoe with a medial post [2].",
                                    "Runners with flat feet should pick the Northmark Glide, a stability shoe."])
def test_real_answers_are_not_flagged(answer):
    assert answer_flags(answer, question=Q) == ()


class ScriptModel(LanguageModel):
    """Answers 'The answer is:' when document [1] is d0, else the title of document [1]."""

    backend, name = "fake", "script"

    @property
    def device(self):
        return "cpu"

    def complete(self, prompts, decoding=None):
        out = []
        for p in prompts:
            first = p.user.split("[1] ", 1)[1].split(":", 1)[0]
            out.append(Completion("The answer is:" if first == "Brand0" else first, "stop"))
        return out

    def option_probabilities(self, prompt, options, *, keep_prefix=""):
        return np.full(len(options), 1 / len(options))


def test_degenerate_answers_are_counted_and_can_be_left_out():
    docs = tuple(Document(f"d{i}", f"shoe review {'flat feet ' * (6 - i)}", title=f"Brand{i}") for i in range(6))
    collection = Collection("toy", docs, (Query("q", "flat feet shoe", answer="Brand1"),), {"q": {"d0": 1, "d1": 1}})
    retriever = BM25Retriever(collection.texts)
    config = RagConfig(alpha=1.0, n_samples=60, k=2, seed=4, oracle=False)
    run = run_rag(collection, retriever, Generator(ScriptModel()), SubstringAttributor(), "flat feet shoe", config)
    share = sum(a.count for a in run.answers if a.degenerate) / 60
    assert run.degenerate_share == pytest.approx(share) and 0 < share < 1
    assert all(a.flags == (AnswerFlag.EMPTY,) for a in run.answers if a.answer == "The answer is:")
    kept = run_rag(collection, retriever, Generator(ScriptModel()), SubstringAttributor(), "flat feet shoe",
                   RagConfig(alpha=1.0, n_samples=60, k=2, seed=4, oracle=False, exclude_degenerate=True))
    good = [a for a in run.answers if not a.degenerate]
    assert kept.eu == pytest.approx(sum(a.count * a.utility for a in good) / sum(a.count for a in good))
    assert kept.eu > run.eu and kept.degenerate_share == run.degenerate_share


@pytest.mark.parametrize("answer, question, flagged", [
    # real generated answers from tests/data/nli_generated.jsonl
    ("The magnitude of the earthquake that hit Isla Serena was 6.4.",
     "What magnitude was the earthquake that hit Isla Serena?", False),  # a new number is an answer, not an echo
    ("A complete beginner should start running with a mix of walking and running. They should aim to run for at "
     "least 150 minutes of moderate aerobic activity per week, and they should aim to run at least 3 days a week.",
     "How should a complete beginner start running?", False),  # a phrase said twice is prose, not a loop
    ("Layla Haddad: Layla Haddad: Layla Haddad is a Lebanese architect.", "Who is Layla Haddad?", True),  # stutter
    ("What magnitude was the earthquake that hit Isla Serena", "What magnitude was the earthquake that hit Isla "
     "Serena?", True),
    # Qwen-0.5B's short answers: a bare number is an answer (it was flagged empty before), numbering is not
    ("2:17:41", "What was the winning time in the women's race of the Lisbon Riverside Marathon?", False),
    ("4.25 percent", "What rate did the Bank of Valdoria set?", False),
    ("$1,200.", "How much does the Halcyon Fold 2 cost?", False),
    ("1999", "In which year was the bridge in 1999 opened?", True),  # the question's own number
    ("1. 2. 3.", "How many steps?", True),
    # the classroom tour (Qwen-0.5B, short): the prompt's instruction and a document title given back
    ("A few words or one sentence, no explanation.", "best shoes for a first marathon", True),
    ("Can You Run a Marathon Barefoot?", "best shoes for a first marathon", True),
    ("Northmark Harbor 12", "best shoes for a first marathon", False),
    ("One of them.", "How many of the shoes are waterproof?", False),  # one instruction word is not an echo
    ("Use a cushioned trainer with one size of room.", "best shoes for a first marathon", False),
])
def test_real_answers(answer, question, flagged):
    assert bool(answer_flags(answer, question=question)) is flagged


@pytest.mark.parametrize("name", ["running-shoes", "news", "people"])
def test_every_title_given_back_is_an_echo_and_no_short_answer_is(name):
    """Every answer that repeats a shown document's title is flagged (issue: one of three title echoes of the tour
    was not); the collection's own correct short answers never are, even shown beside every title."""
    from fairrag_core import load_collection
    from fairrag_core.rag.degenerate import AnswerFlag, answer_flags

    collection = load_collection(name)
    titles = [d.title for d in collection.documents if d.title]
    sources = sorted({d.provider for d in collection.documents})
    import re

    def product_only(doc):  # a title that is only a product's name ("Ironbark Ridgeback WP") is named, not echoed
        words = set(re.findall(r"\w+", doc.title.lower()))
        brand = set(re.findall(r"\w+", doc.provider.lower()))
        return not re.search(r"[:?!|—–]", doc.title) and (words & brand or any(w.isdigit() for w in words))

    for query in collection.queries:
        for doc in collection.documents:
            if len(set(doc.title.lower().split())) >= 3 and not product_only(doc):
                assert AnswerFlag.ECHO in answer_flags(doc.title, question=query.text, titles=[doc.title],
                                                       sources=[doc.provider]), (query.text, doc.title)
        for short in query.short_answers:
            assert answer_flags(short, question=query.text, titles=titles, sources=sources) == (), (query.text, short)
            sentence = f"The answer is {short}."
            assert answer_flags(sentence, question=query.text, titles=titles, sources=sources) == (), \
                (query.text, sentence)


def _tour_rows():
    import json
    from pathlib import Path

    text = (Path(__file__).parents[1] / "data" / "tour_answers.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _tour_flags(row):
    from fairrag_core import load_collection

    collection = load_collection("running-shoes")
    shown = [collection.documents[collection.index_of(d)] for d in row["shown"]]
    return answer_flags(row["answer"], question=row["question"], titles=[d.title for d in shown],
                        sources=[d.provider for d in shown])


def test_the_issues_three_answers_are_flagged():
    """Issue 31, What did not 5: 'Document [1], which is Velocore Forge' scored 1.00 unflagged; 'Document 4' and
    the echoed article title 'Northmark at Sixty' were not flagged either."""
    rows = {row["n"]: row for row in _tour_rows()}
    assert "Document [1], which is Velocore Forge" in rows[2]["answer"]
    assert "Document 4" in rows[20]["answer"] and "Northmark at Sixty" in rows[9]["answer"]
    assert _tour_flags(rows[2]) == (AnswerFlag.DEFERS,)
    assert _tour_flags(rows[20]) == (AnswerFlag.DEFERS,)
    assert _tour_flags(rows[9]) == (AnswerFlag.ECHO,)


def test_the_tours_other_answers_are_not_flagged():
    """The tour's answers that neither name a document's number nor echo a title (every correct one but the
    'Document [1]' one, with its partly right and wrong ones) stay unflagged: 17 of 20."""
    unflagged = [row["n"] for row in _tour_rows() if _tour_flags(row) == ()]
    assert unflagged == [n for n in range(1, 21) if n not in (2, 9, 20)]
    assert {row["reading"] for row in _tour_rows() if row["n"] in unflagged} == {"correct", "partly", "wrong"}


@pytest.mark.parametrize("name", ["running-shoes", "news", "people", "multi-faceted"])
def test_every_title_quoted_in_a_sentence_is_an_echo(name):
    """Every title of every demo collection, said in a sentence as the answer, is flagged; a title that is only a
    product's or person's name (names_a_product: 'Ironbark Ridgeback WP', 'Layla Haddad') is an answer, as is a
    title under three words ('Home composting') or one made of the question's own words."""
    from fairrag_core import load_collection
    from fairrag_core.rag.degenerate import _words, names_a_product

    collection = load_collection(name)
    question = collection.queries[0].text
    checked = 0  # titles checked, of 92, 132, 124 and 402
    for doc in collection.documents:
        brands = set(_words(doc.provider))
        words = _words(doc.title)
        content = {w for w in words if w not in {"the", "a", "an", "of", "in", "on", "to", "for", "and", "at"}}
        if words and words[0] in ("the", "a", "an"):
            words = words[1:]
        if names_a_product(doc.title, brands) or len(words) < 3 or content <= set(_words(question)):
            continue
        for sentence in (f"The answer is {doc.title}.", f"Here it is: {doc.title.lower()}, as the text says.",
                         f"They recommend “{doc.title}” for this."):
            flags = answer_flags(sentence, question=question, titles=[doc.title], sources=[doc.provider])
            assert AnswerFlag.ECHO in flags, (sentence, flags)
        checked += 1
    assert checked == {"running-shoes": 71, "news": 120, "people": 0, "multi-faceted": 355}[name]
    if name == "people":  # every title is the person's own name: naming them answers
        assert all(answer_flags(f"It is {d.title}.", question=question, titles=[d.title], sources=[d.provider]) == ()
                   for d in collection.documents)
