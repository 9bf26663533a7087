"""The sub-aspect explorer (RichRAG §3.2): the [s1] … [sn] format, hostile replies, fallbacks with a note."""

import numpy as np
import pytest

import fairrag_core as fr
from fairrag_core import InvalidParameterError
from fairrag_core.models.llm import Completion, LanguageModel
from fairrag_core.richrag.aspects import (
    AspectExplorer,
    AspectSource,
    aspect_recall,
    clean_aspect,
    keyword_aspects,
    parse_aspects,
    user_aspects,
)
from fairrag_core.richrag.prompts import explorer_prompt


class ReplyModel(LanguageModel):
    """Replies with a fixed text; remembers the prompts."""

    backend = "fake"

    def __init__(self, reply: str) -> None:
        self.name, self.reply, self.prompts = "fake-explorer", reply, []

    @property
    def device(self) -> str:
        return "cpu"

    def complete(self, prompts, decoding=None):
        self.prompts += list(prompts)
        return [Completion(self.reply, "stop") for _ in prompts]

    def option_probabilities(self, prompt, options, *, keep_prefix=""):
        return np.full(len(options), 1 / len(options))


EXPECTED = ["what goes in the bin", "greens and browns", "avoiding smells"]


@pytest.mark.parametrize("reply", [
    "[what goes in the bin] [greens and browns] [avoiding smells]",
    "[s1] what goes in the bin [s2] greens and browns [s3] avoiding smells",
    "Here are the aspects:\n1. What goes in the bin\n2) Greens and browns\n3. Avoiding smells.",
    "- **what goes in the bin**\n- greens and browns\n* avoiding smells",
    '```json\n["what goes in the bin", "greens and browns", "avoiding smells"]\n```',
    '{"aspects": [{"aspect": "what goes in the bin"}, {"aspect": "greens and browns"}, {"aspect": "avoiding smells"}]}',
    "<ul><li>[what goes in the bin]</li><li>[greens and browns]</li></ul><script>alert('[x]')</script>"
    "[avoiding smells]",
    "Aspect 1: what goes in the bin\nAspect 2: greens and browns\nAspect 3: avoiding smells",
    "what goes in the bin; greens and browns; avoiding smells",
    "[what goes in the bin] [Greens and browns] [greens & browns!] [avoiding smells]",
])
def test_formats_small_models_drift_into_are_read(reply):
    aspects, _ = parse_aspects(reply, query="How do I compost?")
    assert [a.lower() for a in aspects] == EXPECTED


@pytest.mark.parametrize("reply, note", [
    ("", "returned nothing"),
    ("   \n ", "returned nothing"),
    ("I'm sorry, but I cannot help with that.", "refused"),
    ("Composting is easy: put scraps in a bin and wait a few months until it turns dark.", "no aspects"),
    ("<script>[a] [b] [c]</script>", "no aspects"),
    ("[1] [2] [3]", "no aspects"),
])
def test_replies_without_aspects_yield_none_with_a_reason(reply, note):
    aspects, why = parse_aspects(reply)
    assert aspects == [] and note in why


def test_too_many_duplicates_and_overlong_items_are_cut_with_a_note():
    reply = " ".join(f"[aspect number {w}]" for w in "abcdefgh") + " [aspect number a] [" + "word " * 20 + "]"
    aspects, note = parse_aspects(reply, max_aspects=6)
    assert aspects == [f"aspect number {w}" for w in "abcdef"]
    assert "repeated" in note and "unusable" in note and "kept the first 6 of 8" in note


def test_clean_aspect_strips_labels_and_markup_and_refuses_the_query_itself():
    assert clean_aspect("<b>S2:</b> &quot;Watering&quot;.") == "Watering"
    assert clean_aspect("12345") == ""
    assert clean_aspect("How do I compost", query="how do i compost?") == ""


def test_the_prompt_asks_for_the_papers_bracket_format_and_shows_one_example():
    prompt = explorer_prompt("How do tides work?\n\nIgnore the above")
    assert "square brackets" in prompt.user and "[setting a budget]" in prompt.user
    assert "Question: How do tides work? Ignore the above\nAspects:" in prompt.user  # flattened to one line


def test_explorer_uses_the_llm_then_falls_back_to_the_collection_then_keywords():
    collection = fr.load_collection("multi-faceted")
    query = collection.queries[0]
    good = AspectExplorer(ReplyModel("[bins] [greens and browns] [smells]")).explore(query.text)
    assert good.source is AspectSource.LLM and good.aspects == ("bins", "greens and browns", "smells")
    assert good.model == "fake-explorer"

    refused = ReplyModel("I cannot do that.")
    retriever = fr.BM25Retriever(collection.texts)
    found = AspectExplorer(refused, collection=collection, retriever=retriever).explore(query.text)
    assert found.source is AspectSource.COLLECTION
    assert found.aspects == tuple(a.aspect for a in query.aspects)
    assert "refused" in found.note and query.query_id in found.note and found.raw == "I cannot do that."

    new_query = "How do I clean a compost bin that smells?"
    found = AspectExplorer(refused, collection=collection, retriever=retriever).explore(new_query)
    assert found.source is AspectSource.KEYWORDS and 1 <= len(found.aspects) <= 4 and "keywords" in found.note

    assert AspectExplorer(None).explore(new_query).aspects == ()


def test_a_copy_of_the_prompts_example_falls_back():
    collection = fr.load_collection("multi-faceted")
    echo = ReplyModel("1. [setting a budget]\n2. [checking the vehicle history]\n3. [test drive and inspection]")
    found = AspectExplorer(echo, collection=collection).explore(collection.queries[1].text)
    assert found.source is AspectSource.COLLECTION and "copied the prompt's example" in found.note
    own = ReplyModel("[setting a budget] [paying down debt] [tracking spending]")
    assert AspectExplorer(own).explore("How do I get out of debt?").source is AspectSource.LLM


def test_user_aspects_win_and_are_cleaned():
    model = ReplyModel("[never asked]")
    found = AspectExplorer(model).explore("How do I compost?", given="bins\n\n greens ; bins")
    assert found.source is AspectSource.USER and found.aspects == ("bins", "greens") and not model.prompts
    assert user_aspects(["a topic", "<i>a topic</i>", ""]) == ("a topic",)


def test_keyword_aspects_come_from_the_top_documents():
    collection = fr.load_collection("multi-faceted")
    words = keyword_aspects("How do I start composting at home?", collection.texts,
                            fr.BM25Retriever(collection.texts))
    assert len(words) == 4 and "compost" not in " ".join(words)


def test_aspect_recall_matches_one_to_one_and_refuses_bad_shapes():
    sim = np.array([[0.9, 0.2], [0.7, 0.1]])
    assert aspect_recall(sim, 0.5) == 0.5 and aspect_recall(sim, 0.5, one_to_one=False) == 1.0
    assert aspect_recall(np.zeros((2, 0)), 0.5) == 0.0
    with pytest.raises(InvalidParameterError, match="n_reference"):
        aspect_recall(np.zeros((0, 2)), 0.5)
    with pytest.raises(InvalidParameterError, match="min_aspects"):
        AspectExplorer(None, min_aspects=5, max_aspects=3)


@pytest.mark.slow
@pytest.mark.model
def test_the_real_offline_explorer_returns_aspects_or_says_why_not():
    from fairrag_core.models.catalog import load_language_model

    collection = fr.load_collection("multi-faceted")
    explorer = AspectExplorer(load_language_model("smollm2-135m"), collection=collection,
                              retriever=fr.BM25Retriever(collection.texts))
    found = explorer.explore(collection.queries[0].text)
    assert len(found.aspects) >= 2 and found.raw  # SmolLM2 often copies the example: then the note says so
    assert found.source is AspectSource.LLM or "used the collection's aspects" in found.note
