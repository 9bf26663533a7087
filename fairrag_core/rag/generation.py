"""Prompting and generation: φ_p(x, π) with numbered documents, deduplicated and cached answers.

Kim & Diaz (2025), §3: each sampled top-k list π becomes a prompt φ_p(x, π) and an answer
ŷ_π = G(φ_p(x, π)). Decoding is deterministic, so identical lists give identical answers: the
:class:`AnswerCache` keys answers by (model, decoding, prompt) and :meth:`Generator.answer_rankings` sends each
distinct list to the model once, however many samples (and α values) produced it. With a
:class:`~fairrag_core.data.disk_cache.DiskCache` (on by default) answers also persist on disk, keyed by the model's
identity (its weights hash, :mod:`fairrag_core.models.identity`), the decoding and the prompt: another run, another
process or a restarted app serves them without the model. Completions served from a cache say so (``cached``).

A :class:`PromptStyle` is a whole answering recipe: the instructions, how much of each document is shown, and
how the answer is decoded (length, stop strings, repetition penalty). :data:`PROMPT_STYLES` names the designs
compared by ``benchmarks/bench_answers.py``; the presets of :mod:`fairrag_core.rag.presets` pick one per model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace

from ..data import Document
from ..data.disk_cache import DiskCache, cache_key, default_disk_cache
from ..errors import InvalidParameterError, StoreError
from ..models.identity import model_identity
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
        system="Answer the question or request in one or two sentences, using the numbered documents. Give the "
               "answer itself: name the product, person, team or place, with the fact that answers the question, "
               "exactly as the documents write it. Do not refer to the documents and do not repeat the question.",
        closed_book_system="Answer the question in one or two sentences. Name the product, person, team or "
                           "place the answer is about. Do not repeat the question."),
    # the grounded answer with document numbers to cite
    "cited": PromptStyle(
        name="cited", max_doc_words=80, max_new_tokens=72, stop=("\n\n", "Question:", "Documents:"),
        repeat_penalty=1.3,
        system="Answer the question or request in one or two sentences, using the numbered documents, and cite "
               "the documents you used as [1], [2]. Give the answer itself: name the product, person, team or "
               "place, with the fact that answers the question, exactly as the documents write it. Do not repeat "
               "the question.",
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


_log = logging.getLogger(__name__)


def answer_key(identity: str, decoding: Decoding, prompt: ChatPrompt) -> str:
    """The disk-cache key of an answer: the model's identity, every decoding setting and the whole prompt."""
    return cache_key("answer", identity, asdict(decoding), prompt.system, prompt.user)


@dataclass
class AnswerCache:
    """Completions keyed by (model name, decoding, prompt) in memory, and on ``disk`` by (model identity,
    decoding, prompt) when the model has an identity (:func:`~fairrag_core.models.identity.model_identity`).

    ``misses`` counts prompts sent to a model (generations); ``hits`` counts answers served without one,
    including repeats inside one request; ``disk_hits`` those of them read from the disk cache. ``disk`` defaults
    to the shared cache file (``None``: memory only; ``FAIRRAG_CACHE_DB=off`` turns the default off). A disk cache
    that cannot be used is logged and skipped: it never stops a run.
    """

    answers: dict[tuple[str, Decoding, ChatPrompt], Completion] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    disk: DiskCache | None = field(default_factory=default_disk_cache)
    disk_hits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get_many(self, model: str, decoding: Decoding, prompts: Sequence[ChatPrompt], *,
                 identity: str | None = None) -> list[Completion | None]:
        """The cached completion of each prompt (``None`` where neither memory nor disk has it); those read from
        disk are kept in memory too."""
        with self._lock:
            found = [self.answers.get((model, decoding, p)) for p in prompts]
        missing = list(dict.fromkeys(p for p, c in zip(prompts, found) if c is None))
        if self.disk is None or identity is None or not missing:
            return found
        keys = {p: answer_key(identity, decoding, p) for p in missing}
        try:
            stored = self.disk.get_many("answer", list(keys.values()))
        except StoreError as err:
            _log.warning("answer cache not read: %s", err)
            return found
        loaded = {p: Completion(**stored[k], cached=True) for p, k in keys.items() if k in stored}
        if loaded:
            with self._lock:
                for prompt, completion in loaded.items():
                    self.answers[(model, decoding, prompt)] = completion
                self.disk_hits += len(loaded)
        return [c if c is not None else loaded.get(p) for p, c in zip(prompts, found)]

    def put(self, model: str, decoding: Decoding, prompt: ChatPrompt, completion: Completion, *,
            identity: str | None = None) -> None:
        self.put_many(model, decoding, [(prompt, completion)], identity=identity)

    def put_many(self, model: str, decoding: Decoding, items: Sequence[tuple[ChatPrompt, Completion]], *,
                 identity: str | None = None) -> None:
        """Keep freshly generated completions (in memory, and on disk in one transaction)."""
        with self._lock:
            for prompt, completion in items:
                self.answers[(model, decoding, prompt)] = completion
            self.misses += len(items)
        if self.disk is None or identity is None or not items:
            return
        values = {answer_key(identity, decoding, p): {"text": c.text, "finish_reason": c.finish_reason,
                                                      "tokens": c.tokens} for p, c in items}
        try:
            self.disk.put_many("answer", values, model=identity)
        except StoreError as err:
            _log.warning("answer cache not written: %s", err)


class Generator:
    """A language model in the generator role, with prompt building, dedupe and caching."""

    def __init__(self, model: LanguageModel, *, style: PromptStyle | str = PromptStyle(),
                 max_new_tokens: int | None = None, cache: AnswerCache | None = None) -> None:
        self.model = model
        style = prompt_style(style)
        self.style = style if max_new_tokens is None else replace(style, max_new_tokens=max_new_tokens)
        self.cache = cache if cache is not None else AnswerCache()
        self._identity: tuple[str | None] | None = None

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def identity(self) -> str | None:
        """The model's identity in the disk cache (weights hash and backend; ``None``: memory cache only)."""
        if self._identity is None:
            self._identity = (model_identity(self.model),)
        return self._identity[0]

    @property
    def max_new_tokens(self) -> int:
        return self.style.max_new_tokens

    def _lookup(self, prompts: Sequence[ChatPrompt], decoding: Decoding | None
                ) -> tuple[Decoding, str | None, list[Completion | None], list[ChatPrompt]]:
        """The decoding (``None``: the style's), the disk identity, each prompt's cached completion and the distinct
        prompts still to generate; the answers found count as cache hits."""
        decoding = decoding or self.style.decoding
        identity = self.identity if self.cache.disk is not None else None
        found = self.cache.get_many(self.name, decoding, prompts, identity=identity)
        todo = list(dict.fromkeys(p for p, a in zip(prompts, found) if a is None))
        self.cache.hits += len(prompts) - len(todo)
        return decoding, identity, found, todo

    def complete_prompts(self, prompts: Sequence[ChatPrompt], *, decoding: Decoding | None = None) -> list[Completion]:
        """Completions for prompts; each distinct uncached prompt reaches the model once, in one batch.

        ``decoding`` overrides the style's (e.g. a long multi-paragraph answer); it is part of the cache key.
        Completions that did not need the model (memory or disk cache) come back with ``cached=True``."""
        decoding, identity, found, todo = self._lookup(prompts, decoding)
        if todo:
            self.cache.put_many(self.name, decoding, list(zip(todo, self.model.complete(todo, decoding))),
                                identity=identity)
        return [replace(a, cached=True) if a is not None else self.cache.answers[(self.name, decoding, p)]
                for p, a in zip(prompts, found)]

    def complete_each(self, prompts: Sequence[ChatPrompt], *, decoding: Decoding | None = None
                      ) -> Iterator[tuple[int, Completion]]:
        """``(index, completion)`` for every prompt as it is ready: cached ones first, then the model's as each
        finishes (:meth:`LanguageModel.complete_each`; a batching backend decodes them together). Each
        generated answer is cached when it arrives, so a caller that stops early keeps what was made; leaving the
        loop cancels the rest."""
        decoding, identity, found, todo = self._lookup(prompts, decoding)
        waiting: dict[ChatPrompt, list[int]] = {}
        for i, (prompt, answer) in enumerate(zip(prompts, found)):
            if answer is not None:
                yield i, replace(answer, cached=True)
            else:
                waiting.setdefault(prompt, []).append(i)
        if not todo:
            return
        answers = self.model.complete_each(todo, decoding)
        try:
            for j, completion in answers:
                self.cache.put(self.name, decoding, todo[j], completion, identity=identity)
                for i in waiting[todo[j]]:
                    yield i, completion
        finally:
            answers.close()  # cancels what the model has not answered yet

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
