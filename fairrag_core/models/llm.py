"""Language models behind one interface: greedy generation and next-token option probabilities.

This module holds the interface (:class:`LanguageModel`), the prompt type and the token accounting; the
backends live beside it:

* :class:`~fairrag_core.models.llama_cpp.LlamaCppModel` — llama-cpp-python on a GGUF file (the offline SmolLM2 and
  Qwen models:
  0.15–1.4 s to load, 25+ tokens/s on 2 CPU cores; layers offloaded to the GPU when CUDA is there);
* :class:`~fairrag_core.models.transformers_lm.TransformersModel` — any Hugging Face id or folder, causal or
  seq2seq (Flan-T5 of the paper),
  GGUF through ``gguf_file`` (dequantised), batched, fp16 on CUDA, greedy or beam search.

Decoding is deterministic (greedy unless ``num_beams > 1``): in Fair RAG the only randomness is the
retriever's (Kim & Diaz 2025, §3.3.2). Answers stop at the first line break (the prompts ask for a
short answer). Weights load lazily on first use, never at import.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["ChatPrompt", "Decoding", "Completion", "LanguageModel", "TokenUsage", "common_prefix", "softmax_options",
           "check_options"]


@dataclass(frozen=True)
class ChatPrompt:
    """A system instruction and a user message; chat models render them with their own template."""

    system: str
    user: str

    def as_text(self) -> str:
        """Plain rendering for models without a chat template (e.g. Flan-T5)."""
        return f"{self.system}\n\n{self.user}" if self.system else self.user

    def messages(self) -> list[dict[str, str]]:
        out = [{"role": "system", "content": self.system}] if self.system else []
        return out + [{"role": "user", "content": self.user}]


@dataclass(frozen=True)
class Decoding:
    """How a completion is decoded: greedy, at most ``max_new_tokens``, cut at the first of ``stop``, with a
    ``repeat_penalty`` on tokens already in the context (1.0 = none; > 1 discourages repetition loops)."""

    max_new_tokens: int = 48
    stop: tuple[str, ...] = ("\n",)
    repeat_penalty: float = 1.0


@dataclass(frozen=True)
class Completion:
    """A generated text and why it ended: ``"stop"`` (end of turn or a stop string), ``"length"`` (it ran into
    ``max_new_tokens``: the text may be cut mid-sentence) or ``"unknown"`` (the backend does not say)."""

    text: str
    finish_reason: str = "unknown"
    tokens: int | None = None


@dataclass
class TokenUsage:
    """What a llama-cpp model has computed: calls, prompt tokens evaluated and reused, tokens generated.

    On a CPU the time of a call is close to linear in ``prompt_tokens`` and ``generated_tokens``; ``reused_tokens``
    are prompt tokens served from the KV cache of the previous prompt (its longest common prefix) or from a kept
    prefix state (see :meth:`LlamaCppModel.option_probabilities`).
    """

    calls: int = 0
    prompt_tokens: int = 0
    reused_tokens: int = 0
    generated_tokens: int = 0

    def add(self, prompt: int, reused: int, generated: int = 0) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.reused_tokens += reused
        self.generated_tokens += generated

    def snapshot(self) -> TokenUsage:
        return TokenUsage(self.calls, self.prompt_tokens, self.reused_tokens, self.generated_tokens)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.calls + other.calls, self.prompt_tokens + other.prompt_tokens,
                          self.reused_tokens + other.reused_tokens, self.generated_tokens + other.generated_tokens)

    def __sub__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.calls - other.calls, self.prompt_tokens - other.prompt_tokens,
                          self.reused_tokens - other.reused_tokens, self.generated_tokens - other.generated_tokens)


def common_prefix(previous: Sequence[int], tokens: Sequence[int]) -> int:
    """Tokens of ``tokens`` that llama-cpp serves from the KV cache of ``previous``.

    The longest common prefix, at most ``len(tokens) - 1``: the last token is always evaluated again
    because its logits are needed.

    >>> common_prefix([1, 2, 3, 4], [1, 2, 9]), common_prefix([1, 2], [1, 2])
    (2, 1)
    """
    limit = min(len(previous), len(tokens) - 1)
    if limit <= 0:
        return 0
    same = np.asarray(previous[:limit]) == np.asarray(tokens[:limit])
    return int(limit if same.all() else same.argmin())


def softmax_options(logits: np.ndarray) -> np.ndarray:
    shifted = np.asarray(logits, dtype=np.float64) - np.max(logits)
    weights = np.exp(shifted)
    return weights / weights.sum()


class LanguageModel(ABC):
    """What the generator, the NLI judge and the query refiner need from a language model."""

    name: str
    backend: str

    @property
    @abstractmethod
    def device(self) -> str:
        """Where the weights run (``cpu``, ``cuda``, ...)."""

    @abstractmethod
    def complete(self, prompts: Sequence[ChatPrompt], decoding: Decoding | None = None) -> list[Completion]:
        """Deterministic completions, one per prompt, stripped of surrounding whitespace, with their finish reason
        (``decoding`` None: :class:`Decoding`'s defaults)."""

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 64) -> list[str]:
        """The texts of :meth:`complete` with the default decoding (stop at the first line break)."""
        return [c.text for c in self.complete(prompts, Decoding(max_new_tokens=max_new_tokens))]

    @abstractmethod
    def option_probabilities(self, prompt: ChatPrompt, options: Sequence[str], *, keep_prefix: str = "") -> np.ndarray:
        """P(answer starts with option i), renormalised over ``options``, from next-token logits.

        Options must differ in their first token (e.g. ``entailment``/``neutral``/``contradiction``).
        ``keep_prefix`` is a start of ``prompt.user`` that later prompts will repeat (a judged document):
        a backend with a KV cache may keep its state to serve them; others ignore it.
        """


def check_options(first_tokens: Sequence[int], options: Sequence[str]) -> None:
    if len(set(first_tokens)) != len(first_tokens):
        raise InvalidParameterError(f"options {list(options)} share a first token; use options that start differently")
