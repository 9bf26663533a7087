"""Prompting and generation: φ_p(x, π) with numbered documents, deduplicated and cached answers.

Kim & Diaz (2025), §3: each sampled top-k list π becomes a prompt φ_p(x, π) and an answer
ŷ_π = G(φ_p(x, π)). Decoding is deterministic, so identical lists give identical answers: the
:class:`AnswerCache` keys answers by (model, decoding, prompt) and :meth:`Generator.answer_rankings` sends each
distinct list to the model once, however many samples (and α values) produced it.

A :class:`PromptStyle` is a whole answering recipe: the instructions, how much of each document is shown, and
how the answer is decoded (length, stop strings, repetition penalty). :data:`PROMPT_STYLES` names the designs
compared by ``benchmarks/bench_answers.py``; the presets of :mod:`fairrag_core.rag.presets` pick one per model.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..data import Document
from ..errors import InvalidParameterError
from ..models.llm import ChatPrompt, Completion, Decoding, LanguageModel
from ..settings import Settings

__all__ = ["PromptStyle", "PROMPT_STYLES", "prompt_style", "build_prompt", "build_closed_book_prompt", "AnswerCache",
           "Generator"]

_SYSTEM_RAG = (
    "You answer questions using the numbered documents. Reply with the short answer only: a few words "
    "or one sentence, no explanation."
)
_SYSTEM_CLOSED = "Answer the question. Reply with the short answer only: a few words or one sentence."


@dataclass(frozen=True, kw_only=True)
class PromptStyle(Settings):
    """How documents enter the prompt and how the answer is decoded.

    Long documents are cut to ``max_doc_words`` words. ``cite`` asks for document numbers in brackets.
    Decoding is greedy with at most ``max_new_tokens`` tokens, cut at the first of ``stop``, with
    ``repeat_penalty`` (1.0 = none) against repetition loops.
    """

    name: str = "short"
    max_doc_words: int = 120
    system: str = _SYSTEM_RAG
    closed_book_system: str = _SYSTEM_CLOSED
    max_new_tokens: int = 48
    stop: tuple[str, ...] = ("\n",)
    repeat_penalty: float = 1.0

    @property
    def decoding(self) -> Decoding:
        return Decoding(max_new_tokens=self.max_new_tokens, stop=self.stop, repeat_penalty=self.repeat_penalty)


#: Prompt designs compared in ``benchmarks/bench_answers.py`` (docs/answers.md has the measured table).
PROMPT_STYLES: dict[str, PromptStyle] = {
    # the original design: a few words or one sentence, full documents, stop at the first line break
    "short": PromptStyle(),
    # one or two sentences that name what the answer is about, trimmed documents, a repetition penalty
    "grounded": PromptStyle(
        name="grounded", max_doc_words=80, max_new_tokens=64, stop=("\n\n", "Question:", "Documents:"),
        repeat_penalty=1.3,
        system="Answer the question in one or two sentences, using only the numbered documents. Name the "
               "product, person, team or place the answer is about, exactly as the documents write it. "
               "Do not repeat the question. If the documents do not say, reply: The documents do not say.",
        closed_book_system="Answer the question in one or two sentences. Name the product, person, team or "
                           "place the answer is about. Do not repeat the question."),
    # the grounded answer with document numbers to cite
    "cited": PromptStyle(
        name="cited", max_doc_words=80, max_new_tokens=72, stop=("\n\n", "Question:", "Documents:"),
        repeat_penalty=1.3,
        system="Answer the question in one or two sentences, using only the numbered documents, and cite the "
               "documents you used as [1], [2]. Name the product, person, team or place the answer is about, "
               "exactly as the documents write it. Do not repeat the question.",
        closed_book_system="Answer the question in one or two sentences. Name the product, person, team or "
                           "place the answer is about. Do not repeat the question."),
}


def prompt_style(name: str | PromptStyle) -> PromptStyle:
    """A prompt style by name (see :data:`PROMPT_STYLES`), or the style itself."""
    if isinstance(name, PromptStyle):
        return name
    try:
        return PROMPT_STYLES[name]
    except KeyError:
        raise InvalidParameterError(f"unknown prompt style {name!r}; use one of {', '.join(PROMPT_STYLES)}") from None


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
    """Completions keyed by (model name, decoding, prompt).

    ``misses`` counts prompts sent to a model (generations); ``hits`` counts answers served without one,
    including repeats inside one request.
    """

    answers: dict[tuple[str, Decoding, ChatPrompt], Completion] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get_many(self, model: str, decoding: Decoding, prompts: Sequence[ChatPrompt]) -> list[Completion | None]:
        with self._lock:
            return [self.answers.get((model, decoding, p)) for p in prompts]

    def put(self, model: str, decoding: Decoding, prompt: ChatPrompt, completion: Completion) -> None:
        with self._lock:
            self.answers[(model, decoding, prompt)] = completion
            self.misses += 1


class Generator:
    """A language model in the generator role, with prompt building, dedupe and caching."""

    def __init__(self, model: LanguageModel, *, style: PromptStyle | str = PromptStyle(),
                 max_new_tokens: int | None = None, cache: AnswerCache | None = None) -> None:
        self.model = model
        style = prompt_style(style)
        self.style = style if max_new_tokens is None else replace(style, max_new_tokens=max_new_tokens)
        self.cache = cache if cache is not None else AnswerCache()

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def max_new_tokens(self) -> int:
        return self.style.max_new_tokens

    def complete_prompts(self, prompts: Sequence[ChatPrompt]) -> list[Completion]:
        """Completions for prompts; each distinct uncached prompt reaches the model once, in one batch."""
        decoding = self.style.decoding
        found = self.cache.get_many(self.name, decoding, prompts)
        todo = list(dict.fromkeys(p for p, a in zip(prompts, found) if a is None))
        self.cache.hits += len(prompts) - len(todo)
        if todo:
            for prompt, completion in zip(todo, self.model.complete(todo, decoding)):
                self.cache.put(self.name, decoding, prompt, completion)
        return [a if a is not None else self.cache.answers[(self.name, decoding, p)] for p, a in zip(prompts, found)]

    def answer_prompts(self, prompts: Sequence[ChatPrompt]) -> list[str]:
        """Answer texts for prompts (see :meth:`complete_prompts`)."""
        return [c.text for c in self.complete_prompts(prompts)]

    def complete_rankings(self, question: str, rankings: Sequence[Sequence[Document]]) -> list[Completion]:
        """One completion per ranking (a list of documents in rank order)."""
        return self.complete_prompts([build_prompt(question, docs, self.style) for docs in rankings])

    def answer_rankings(self, question: str, rankings: Sequence[Sequence[Document]]) -> list[str]:
        """One answer per ranking (a list of documents in rank order)."""
        return [c.text for c in self.complete_rankings(question, rankings)]

    def answer_closed_book(self, question: str) -> str:
        return self.answer_prompts([build_closed_book_prompt(question, self.style)])[0]
