"""The LLM judge's prompt layout and the order in which it sends pairs (no real model needed)."""

import numpy as np

from fairrag_core.models.llm import ChatPrompt, LanguageModel
from fairrag_core.rag.attribution import Attributor, CrossEncoderAttributor, LLMJudgeAttributor

_ASKED = 'This document recommends or states "'


def _claim_of(user: str) -> str:
    statement = user.split("Statement: ", 1)[1]
    return statement[len(_ASKED):].split('" as the answer to "', 1)[0] if statement.startswith(_ASKED) else statement


class RecordingModel(LanguageModel):
    """Says "supported" when the claim's first word occurs in the document; records every prompt."""

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
        hit = _claim_of(prompt.user).split()[0].lower() in document.lower()
        return np.array([0.8, 0.15, 0.05]) if hit else np.array([0.1, 0.8, 0.1])


def test_instruction_then_document_then_statement():
    judge = LLMJudgeAttributor(RecordingModel())
    user = judge.prompt("Cushioned shoe.", "Cushioned, yes.", "Which shoe?").user
    assert user.index("Reply with one word") < user.index("Document:\nCushioned shoe.") < user.index("Statement:")
    # everything before the document is the same for every pair: it is the shared KV-cache prefix
    other = judge.prompt("Another text.", "No.").user
    assert user[: user.index("Document:")] == other[: other.index("Document:")]


def test_with_a_question_the_statement_is_that_the_document_gives_this_answer_to_it():
    # "supported" must mean "the document gives this as the answer to this question", not "it mentions the thing"
    user = LLMJudgeAttributor(RecordingModel()).prompt("Doc.", "The Apex Plate", "best shoes for a first marathon").user
    assert user.endswith('Statement: This document recommends or states "The Apex Plate" as the answer to '
                         '"best shoes for a first marathon".')
    assert "(an answer to the question" not in user


def test_without_a_question_the_statement_is_the_claim_itself():
    judge = LLMJudgeAttributor(RecordingModel())
    assert judge.prompt("Doc.", "The sky is blue.").user.endswith("\n\nStatement: The sky is blue.")
    assert judge.prompt("Doc.", "The sky is blue.", "  ").user == judge.prompt("Doc.", "The sky is blue.").user


def test_a_changed_prompt_is_another_judge():
    judge = LLMJudgeAttributor(RecordingModel())
    # judgements made with the earlier prompt ("<answer> (an answer to the question: …)") are not served from disk
    assert judge.prompt_version.startswith("judge-prompt-")
    assert judge.prompt_version != "judge-prompt-321d5fc9960fb04c"


def test_the_premise_is_truncated_never_the_hypothesis():
    judge = LLMJudgeAttributor(RecordingModel(), max_premise_words=5)
    long_answer = " ".join(f"a{i}" for i in range(300))
    user = judge.prompt(" ".join(f"w{i}" for i in range(50)), long_answer).user
    assert "w4 …" in user and "w5" not in user
    assert user.endswith(long_answer)
    assert f'"{long_answer}" as the answer to "Which one?"' in judge.prompt("w0", long_answer, "Which one?").user


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


def test_the_question_is_part_of_the_cached_pair():
    model = RecordingModel()
    judge = LLMJudgeAttributor(model)
    judge.disk = None
    judge.probabilities(["alpha doc"] * 2, ["alpha one"] * 2, contexts=["first question?", "second question?"])
    assert [p.user.rsplit('as the answer to "', 1)[1] for p in model.prompts] == ['first question?".',
                                                                                  'second question?".']


def test_the_judge_asks_to_keep_each_documents_head():
    kept = []

    class KeepingModel(RecordingModel):
        def option_probabilities(self, prompt, options, *, keep_prefix: str = ""):
            kept.append(keep_prefix)
            assert prompt.user.startswith(keep_prefix) and prompt.user[len(keep_prefix):].startswith("\n\nStatement: ")
            return super().option_probabilities(prompt, options)

    judge = LLMJudgeAttributor(KeepingModel(), max_premise_words=3)
    judge.entails(["one two three four", "other doc"], ["one", "two"], contexts=["Which?", None])
    assert [k.rsplit("Document:\n", 1)[1] for k in kept] == ["one two three …", "other doc"]


def test_the_cross_encoder_gets_the_question_with_the_answer():
    class FakeClassifier:
        def __init__(self):
            self.claims = []

        def class_probabilities(self, premises, claims):
            self.claims.extend(claims)
            return np.tile([0.1, 0.8, 0.1], (len(claims), 1))

    attributor = CrossEncoderAttributor.__new__(CrossEncoderAttributor)
    Attributor.__init__(attributor)
    attributor.disk, attributor.name, attributor._injected = None, "nli:fake", True
    attributor.classifier = FakeClassifier()
    attributor.probabilities(["doc", "doc"], ["Apex Plate", "Forge"], contexts=["best shoe?", None])
    assert attributor.classifier.claims == ["Apex Plate (an answer to the question: best shoe?)", "Forge"]
