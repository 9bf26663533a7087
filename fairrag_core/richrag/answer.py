"""Rich answers (RichRAG §3.4.2, r = G(q, L)): a multi-paragraph answer from the ranked list, cited per sentence.

The generator (any catalog LLM through :class:`~fairrag_core.rag.generation.Generator`; Qwen2.5-1.5B writes
better, SmolLM2-135M faster) gets the ranked documents and the aspects (:func:`~.prompts.rich_answer_prompt`) and
is asked for one paragraph per aspect in order. The reply is split into paragraphs (blank lines; numbered or
bulleted lines when the model writes no blank line) and sentences (:func:`split_sentences`), and every
(document, sentence) pair goes to the NLI attributor (``rag/attribution.py``), as on the playground: a sentence
cites the documents whose most probable class is *entailment*. With the sub-answers (the collection's own
queries) Com-ROUGE (Eq. 11) scores the answer, per aspect and δ-weighted (:func:`~.coverage.com_rouge`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..data import Document
from ..errors import InvalidParameterError
from ..settings import Settings
from .coverage import ComRouge, com_rouge
from .prompts import rich_answer_prompt

__all__ = ["RichAnswerSettings", "CitedSentence", "RichAnswer", "split_sentences", "split_paragraphs",
           "write_rich_answer"]


@dataclass(frozen=True, kw_only=True)
class RichAnswerSettings(Settings):
    """Decoding of a rich answer: at most ``max_new_tokens`` (greedy, with ``repeat_penalty``), documents cut to
    ``max_doc_words`` words each in the prompt."""

    max_new_tokens: int = 320
    max_doc_words: int = 120
    repeat_penalty: float = 1.1


@dataclass(frozen=True)
class CitedSentence:
    """One sentence of the answer: its paragraph, the ranked positions (0-based) of the documents that entail it,
    and P(entailment) for every ranked document."""

    paragraph: int
    text: str
    cited: tuple[int, ...]
    entailment: tuple[float, ...]


@dataclass(frozen=True)
class RichAnswer:
    """The answer, its paragraphs and cited sentences, and Com-ROUGE when sub-answers were given."""

    query: str
    aspects: tuple[str, ...]
    doc_ids: tuple[str, ...]
    text: str
    paragraphs: tuple[str, ...]
    sentences: tuple[CitedSentence, ...]
    com_rouge: ComRouge | None
    model: str
    attributor: str
    finish_reason: str
    seconds: float

    @property
    def cited_share(self) -> float:
        """Share of the sentences that at least one document entails."""
        return float(np.mean([bool(s.cited) for s in self.sentences])) if self.sentences else 0.0


_ABBREVIATIONS = {"e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "st", "no", "approx", "fig", "u.s", "jr",
                  "sr", "prof", "inc", "ltd", "co", "mt", "ca"}
_END = re.compile(r"([.!?…]+[\"'”’)\]]*)\s+(?=[\"'“‘(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: a break after ``.``, ``!``, ``?`` or ``…`` (with closing quotes or brackets) followed
    by a space and a capital or a digit, except after common abbreviations (e.g., Dr., U.S.) and single initials.

    >>> split_sentences("Mix greens, e.g. scraps. Keep it moist! Dr. Lee says 2.5 kg is fine. Why? Air.")
    ['Mix greens, e.g. scraps.', 'Keep it moist!', 'Dr. Lee says 2.5 kg is fine.', 'Why?', 'Air.']
    """
    text = " ".join(str(text).split())
    out, start = [], 0
    for m in _END.finditer(text):
        words = text[start:m.start(1)].split()
        last = words[-1].lower().rstrip(".") if words else ""
        if m.group(1).startswith(".") and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        out.append(text[start:m.end(1)].strip())
        start = m.end()
    tail = text[start:].strip()
    return [s for s in [*out, tail] if s]


_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+")
_HEADING = re.compile(r"^\s*#*\s*[^.!?\n]{1,80}:\s*$")


def split_paragraphs(text: str) -> list[str]:
    """Paragraphs of a reply: blank-line separated blocks; a block of numbered or bulleted lines gives one
    paragraph per item. Markdown emphasis and bare heading lines ("Watering:") are dropped.

    >>> split_paragraphs("First part. More.\\n\\n1. Second part.\\n2. Third part.")
    ['First part. More.', 'Second part.', 'Third part.']
    """
    paragraphs: list[str] = []
    for block in re.split(r"\n\s*\n", str(text).replace("\r", "")):
        lines = [line for line in block.split("\n")
                 if line.strip() and not _HEADING.match(re.sub(r"\*\*|__", "", line))]
        if len(lines) > 1 and sum(bool(_ITEM.match(line)) for line in lines) >= 2:
            parts = [_ITEM.sub("", line) for line in lines]
        else:
            parts = [" ".join(_ITEM.sub("", line) for line in lines)]
        for part in parts:
            cleaned = " ".join(re.sub(r"\*\*|__|`", "", part).split())
            if cleaned:
                paragraphs.append(cleaned)
    return paragraphs


def _clip(text: str, words: int) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " …"


def write_rich_answer(generator, query: str, aspects: Sequence[str], documents: Sequence[Document], *,
                      attributor=None, sub_answers: Sequence[str] | None = None,
                      settings: RichAnswerSettings = RichAnswerSettings(),
                      progress: Callable[[float, str], None] | None = None) -> RichAnswer:
    """Write, split, cite and score a rich answer from the ranked ``documents`` (best first).

    ``generator``: a :class:`~fairrag_core.rag.generation.Generator`; ``attributor``: an
    :class:`~fairrag_core.rag.attribution.Attributor` (None: no citations); ``sub_answers``: one per aspect, for
    Com-ROUGE (None: not scored); ``progress(fraction, message)`` is told how far it got.
    """
    from ..models.llm import Decoding

    if not documents:
        raise InvalidParameterError("a rich answer needs at least one ranked document; rank the pool first")
    if sub_answers is not None and len(sub_answers) != len(aspects):
        raise InvalidParameterError(f"got {len(sub_answers)} sub-answers for {len(aspects)} aspects; give one each")
    report = progress or (lambda fraction, message: None)
    report(0.0, f"writing the answer with {generator.name}")
    start = time.perf_counter()
    prompt = rich_answer_prompt(query, list(aspects),
                                [(d.title, _clip(d.text, settings.max_doc_words)) for d in documents])
    decoding = Decoding(max_new_tokens=settings.max_new_tokens, stop=("Question:", "Documents:"),
                        repeat_penalty=settings.repeat_penalty)
    completion = generator.model.complete([prompt], decoding)[0]
    paragraphs = split_paragraphs(completion.text)
    pieces = [(p, s) for p, paragraph in enumerate(paragraphs) for s in split_sentences(paragraph)]
    sentences: list[CitedSentence] = []
    if attributor is not None and pieces:
        premises = [d.full_text for d in documents]
        for n, (p, sentence) in enumerate(pieces):
            report(0.3 + 0.7 * n / len(pieces), f"checking sentence {n + 1} of {len(pieces)} with {attributor.name}")
            classes = attributor.class_probabilities(premises, [sentence] * len(premises),
                                                     contexts=[query] * len(premises))
            cited = tuple(int(i) for i in np.flatnonzero(classes.argmax(axis=1) == 0))
            sentences.append(CitedSentence(p, sentence, cited, tuple(float(x) for x in classes[:, 0])))
    else:
        sentences = [CitedSentence(p, s, (), ()) for p, s in pieces]
    scored = com_rouge(completion.text, list(sub_answers)) if sub_answers else None
    report(1.0, "done")
    return RichAnswer(query, tuple(aspects), tuple(d.doc_id for d in documents), completion.text, tuple(paragraphs),
                      tuple(sentences), scored, generator.name, getattr(attributor, "name", ""),
                      completion.finish_reason, time.perf_counter() - start)
