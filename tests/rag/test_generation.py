import pytest
from fakes import FirstDocumentModel

from fairrag_core import Document, InvalidParameterError
from fairrag_core.rag.generation import AnswerCache, Generator, PromptStyle, build_closed_book_prompt, build_prompt

DOCS = [Document(f"d{i}", f"text number {i} " * 3, title=f"Title {i}") for i in range(6)]


def test_prompt_numbers_documents_in_rank_order():
    prompt = build_prompt("What?", [DOCS[2], DOCS[0]])
    assert "[1] Title 2: text number 2" in prompt.user and "[2] Title 0:" in prompt.user
    assert prompt.user.endswith("Question: What?\nAnswer:")
    assert "numbered documents" in prompt.system


def test_long_documents_are_clipped():
    long_doc = Document("x", "word " * 500)
    prompt = build_prompt("q", [long_doc], PromptStyle(max_doc_words=10))
    assert prompt.user.count("word") == 10 and "…" in prompt.user


def test_closed_book_prompt_and_empty_question():
    assert "Documents" not in build_closed_book_prompt("Why?").user
    with pytest.raises(InvalidParameterError, match="question is empty"):
        build_prompt("  ", DOCS[:1])


def test_identical_lists_are_generated_once_and_cached():
    model = FirstDocumentModel()
    gen = Generator(model)
    rankings = [[DOCS[0], DOCS[1]]] * 50 + [[DOCS[1], DOCS[0]]] * 30 + [[DOCS[2], DOCS[3]]] * 20
    answers = gen.answer_rankings("q?", rankings)
    assert answers[:1] == ["Title 0"] and answers[50] == "Title 1" and answers[-1] == "Title 2"
    assert model.prompts_seen == 3 and model.calls == 1  # three distinct lists, one batched call
    again = gen.answer_rankings("q?", rankings[::-1])  # e.g. the same lists at another α
    assert again == answers[::-1] and model.prompts_seen == 3
    assert gen.cache.misses == 3 and gen.cache.hits == 197


def test_cache_is_keyed_by_model():
    cache = AnswerCache()
    a, b = Generator(FirstDocumentModel("m1"), cache=cache), Generator(FirstDocumentModel("m2"), cache=cache)
    a.answer_rankings("q", [[DOCS[0]]])
    b.answer_rankings("q", [[DOCS[0]]])
    assert cache.misses == 2
