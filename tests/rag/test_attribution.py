"""The LLM judge's prompt layout and the order in which it sends pairs (no real model needed)."""

import numpy as np

from fairrag_core.models.llm import ChatPrompt, LanguageModel
from fairrag_core.rag.attribution import LLMJudgeAttributor


class RecordingModel(LanguageModel):
    """Says "supported" when the statement's first word occurs in the document; records every prompt."""

    backend = "fake"
    name = "recording"

    def __init__(self) -> None:
        self.prompts: list[ChatPrompt] = []

    @property
    def device(self) -> str:
        return "cpu"

    def complete(self, prompts, decoding=None):
        raise AssertionError("the judge never generates")

    def option_probabilities(self, prompt, options, *, keep_prefix: str = ""):
        self.prompts.append(prompt)
        document = prompt.user.split("Document:\n", 1)[1].split("\n\nStatement:", 1)[0]
        claim = prompt.user.split("Statement: ", 1)[1]
        hit = claim.split()[0].lower() in document.lower()
        return np.array([0.8, 0.15, 0.05]) if hit else np.array([0.1, 0.8, 0.1])


def test_instruction_then_document_then_statement():
    judge = LLMJudgeAttributor(RecordingModel())
    user = judge.prompt("Cushioned shoe.", "Cushioned, yes.", "Which shoe?").user
    assert user.index("Reply with one word") < user.index("Document:\nCushioned shoe.") < user.index("Statement:")
    # everything before the document is the same for every pair: it is the shared KV-cache prefix
    other = judge.prompt("Another text.", "No.").user
    assert user[: user.index("Document:")] == other[: other.index("Document:")]
    assert user.endswith("Statement: Cushioned, yes. (an answer to the question: Which shoe?)")


def test_the_premise_is_truncated_never_the_hypothesis():
    judge = LLMJudgeAttributor(RecordingModel(), max_premise_words=5)
    long_answer = " ".join(f"a{i}" for i in range(300))
    user = judge.prompt(" ".join(f"w{i}" for i in range(50)), long_answer).user
    assert "w4 …" in user and "w5" not in user
    assert user.endswith(long_answer)


def test_pairs_about_one_document_are_judged_back_to_back_and_cached():
    model = RecordingModel()
    judge = LLMJudgeAttributor(model)
    premises = ["beta doc", "alpha doc", "beta doc", "alpha doc", "beta doc"]
    hypotheses = ["beta one", "alpha one", "gamma", "other", "beta one"]
    assert judge.entails(premises, hypotheses) == [True, True, False, False, True]
    documents = [p.user.split("Document:\n", 1)[1].split("\n\n", 1)[0] for p in model.prompts]
    assert documents == ["alpha doc", "alpha doc", "beta doc", "beta doc"]  # the repeated pair is asked once
    judge.entails(premises, hypotheses)
    assert len(model.prompts) == 4


def test_the_judge_asks_to_keep_each_documents_head():
    kept = []

    class KeepingModel(RecordingModel):
        def option_probabilities(self, prompt, options, *, keep_prefix: str = ""):
            kept.append(keep_prefix)
            assert prompt.user.startswith(keep_prefix) and prompt.user[len(keep_prefix):].startswith("\n\nStatement: ")
            return super().option_probabilities(prompt, options)

    judge = LLMJudgeAttributor(KeepingModel(), max_premise_words=3)
    judge.entails(["one two three four", "other doc"], ["one", "two"])
    assert [k.rsplit("Document:\n", 1)[1] for k in kept] == ["one two three …", "other doc"]
