"""Prompting and generation: φ_p(x, π) with numbered documents, deduplicated and cached answers.

Kim & Diaz (2025), §3: each sampled top-k list π becomes a prompt φ_p(x, π) and an answer
ŷ_π = G(φ_p(x, π)). Decoding is deterministic, so identical lists give identical answers: the
:class:`AnswerCache` keys answers by (model, prompt) and :meth:`Generator.answer_rankings` sends each
distinct list to the model once, however many samples (and α values) produced it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..data import Document
from ..errors import InvalidParameterError
from ..models.llm import ChatPrompt, LanguageModel

__all__ = ["PromptStyle", "build_prompt", "build_closed_book_prompt", "AnswerCache", "Generator"]

_SYSTEM_RAG = (
    "You answer questions using the numbered documents. Reply with the short answer only: a few words "
    "or one sentence, no explanation."
)
_SYSTEM_CLOSED = "Answer the question. Reply with the short answer only: a few words or one sentence."


@dataclass(frozen=True)
class PromptStyle:
    """How documents enter the prompt. Long documents are cut to ``max_doc_words`` words."""

    max_doc_words: int = 120
    system: str = _SYSTEM_RAG
    closed_book_system: str = _SYSTEM_CLOSED


def _clip(text: str, words: int) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " …"


def build_prompt(question: str, documents: Sequence[Document], style: PromptStyle = PromptStyle()) -> ChatPrompt:
    """φ_p(x, π): the question with the ranked documents numbered [1] … [k] in rank order.

    >>> from fairrag_core.data import Document
    >>> print(build_prompt("Why?", [Document("a", "Because.", title="T")]).user)
    Documents:
    [1] T: Because.
    <BLANKLINE>
    Question: Why?
    Answer:
    """
    if not question.strip():
        raise InvalidParameterError("question is empty; a prompt needs the user's question")
    lines = ["Documents:"]
    for i, doc in enumerate(documents, 1):
        head = f"{doc.title}: " if doc.title else ""
        lines.append(f"[{i}] {head}{_clip(doc.text, style.max_doc_words)}")
    lines += ["", f"Question: {question.strip()}", "Answer:"]
    return ChatPrompt(style.system, "\n".join(lines))


def build_closed_book_prompt(question: str, style: PromptStyle = PromptStyle()) -> ChatPrompt:
    """The prompt without documents: the baseline u_0 of Algorithm 1."""
    if not question.strip():
        raise InvalidParameterError("question is empty; a prompt needs the user's question")
    return ChatPrompt(style.closed_book_system, f"Question: {question.strip()}\nAnswer:")


@dataclass
class AnswerCache:
    """Answers keyed by (model name, prompt).

    ``misses`` counts prompts sent to a model (generations); ``hits`` counts answers served without one,
    including repeats inside one request.
    """

    answers: dict[tuple[str, ChatPrompt], str] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get_many(self, model: str, prompts: Sequence[ChatPrompt]) -> list[str | None]:
        with self._lock:
            return [self.answers.get((model, p)) for p in prompts]

    def put(self, model: str, prompt: ChatPrompt, answer: str) -> None:
        with self._lock:
            self.answers[(model, prompt)] = answer
            self.misses += 1


class Generator:
    """A language model in the generator role, with prompt building, dedupe and caching."""

    def __init__(self, model: LanguageModel, *, style: PromptStyle = PromptStyle(), max_new_tokens: int = 48,
                 cache: AnswerCache | None = None) -> None:
        self.model = model
        self.style = style
        self.max_new_tokens = max_new_tokens
        self.cache = cache if cache is not None else AnswerCache()

    @property
    def name(self) -> str:
        return self.model.name

    def answer_prompts(self, prompts: Sequence[ChatPrompt]) -> list[str]:
        """Answers for prompts; each distinct uncached prompt reaches the model once, in one batch."""
        found = self.cache.get_many(self.name, prompts)
        todo = list(dict.fromkeys(p for p, a in zip(prompts, found) if a is None))
        self.cache.hits += len(prompts) - len(todo)
        if todo:
            for prompt, answer in zip(todo, self.model.generate(todo, max_new_tokens=self.max_new_tokens)):
                self.cache.put(self.name, prompt, answer)
        return [a if a is not None else self.cache.answers[(self.name, p)] for p, a in zip(prompts, found)]

    def answer_rankings(self, question: str, rankings: Sequence[Sequence[Document]]) -> list[str]:
        """One answer per ranking (a list of documents in rank order)."""
        return self.answer_prompts([build_prompt(question, docs, self.style) for docs in rankings])

    def answer_closed_book(self, question: str) -> str:
        return self.answer_prompts([build_closed_book_prompt(question, self.style)])[0]
