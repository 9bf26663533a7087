"""Deterministic stand-ins for language models, for plumbing tests of generation, attribution and the pipeline."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np

from fairrag_core.models.llm import ChatPrompt, Completion, LanguageModel
from fairrag_core.rag.attribution import Attributor
from fairrag_core.rag.generation import Generator


class FirstDocumentModel(LanguageModel):
    """Answers with the title of document [1] in the prompt (or "no idea" without documents); counts calls."""

    backend = "fake"

    def __init__(self, name: str = "fake-first-doc") -> None:
        self.name = name
        self.identity = f"tests.fakes.FirstDocumentModel:{name}"  # deterministic: its answers may persist on disk
        self.calls = 0
        self.prompts_seen = 0

    @property
    def device(self) -> str:
        return "cpu"

    def complete(self, prompts, decoding=None):
        self.calls += 1
        self.prompts_seen += len(prompts)
        out = []
        for p in prompts:
            found = re.search(r"^\[1\] (.*?):", p.user, flags=re.M)
            out.append(Completion(found.group(1) if found else "no idea", "stop"))
        return out

    def option_probabilities(self, prompt: ChatPrompt, options, *, keep_prefix: str = ""):
        return np.full(len(options), 1.0 / len(options))


class SlowFirstDocumentModel(FirstDocumentModel):
    """:class:`FirstDocumentModel` taking 50 ms per prompt: slow enough for a test to kill its process midway."""

    def complete(self, prompts, decoding=None):
        time.sleep(0.05 * len(prompts))
        return super().complete(prompts, decoding)


class SubstringAttributor(Attributor):
    """Entailment iff the hypothesis occurs in the premise (case-insensitive); counts pairs scored."""

    name = "fake-substring"
    identity = "tests.fakes.SubstringAttributor"  # deterministic: its judgements may persist on disk

    def __init__(self) -> None:
        super().__init__()
        self.scored = 0

    def _class_probabilities(self, premises, hypotheses, contexts):
        self.scored += len(premises)
        return np.array([[0.9, 0.1, 0.0] if h.lower() in p.lower() else [0.1, 0.8, 0.1]
                         for p, h in zip(premises, hypotheses)])


@dataclass(frozen=True)
class FakeModels:
    """The stand-ins above as a models spec (:class:`fairrag_core.backends.workloads.ModelsSpec`): a Ray actor
    builds them from this picklable recipe, as it builds real models from their catalog names (issue 14)."""

    def generator(self) -> Generator:
        return Generator(FirstDocumentModel())

    def attributor(self) -> Attributor:
        return SubstringAttributor()
