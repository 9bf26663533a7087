"""NLI attribution: does a retrieved document (premise) entail the generated answer (hypothesis)?

Kim & Diaz (2025), §3.3.3–3.3.4: NLI(d, ŷ) = 1 when d entails ŷ. It gives the attribution rate
AR(π) = (1/k) Σ_{d∈π} NLI(d, ŷ_π) and the attributed exposure ε^a. The paper uses a cross-encoder
(roberta-large-mnli). Offline, no NLI cross-encoder installs from PyPI, so the default is an LLM judge:
Qwen2.5-1.5B-Instruct prompted for a 3-way verdict. The class probabilities come from the next-token logits
of the three verdict words.

Both backends share :class:`Attributor`:
- ``entails`` is argmax == entailment;
- ``probabilities`` is P(entailment);
- results are cached by (premise, hypothesis, context), in memory and on disk
  (:class:`~fairrag_core.data.disk_cache.DiskCache`, keyed also by :meth:`Attributor.cache_identity`: the judge's
  weights hash and prompt, or the cross-encoder's weights), so no process judges a pair twice.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from ..data.disk_cache import DiskCache, cache_key, default_disk_cache
from ..errors import InvalidParameterError, StoreError
from ..models import catalog
from ..models.identity import model_identity, source_identity
from ..models.llm import ChatPrompt, LanguageModel
from ..models.nli import NLIClassifier, nli_class_columns

__all__ = [
    "Attributor", "CrossEncoderAttributor", "LLMJudgeAttributor", "default_attributor", "load_attributor",
    "NLI_CLASSES",
]

#: The NLI classes, in the column order of every probability array.
NLI_CLASSES = ("entailment", "neutral", "contradiction")

_JUDGE_SYSTEM = "You check facts strictly against a given document."
# Instruction first, then the document, then the claim: the instruction's tokens are shared by every pair and the
# document's by every claim about it (llama-cpp keeps the KV cache of the common prefix with the previous prompt,
# and LlamaCppModel keeps the state after each document's head for later calls), so a further claim about a
# document costs only its own tokens. On our 44 labelled pairs this order halved the judge's
# time against the question-last layout and kept its entailment accuracy (0.93; 3-way 0.80 vs 0.73).
_JUDGE_HEAD = (
    "Question: Is the statement supported by the document, contradicted by the document, or not mentioned in the "
    "document?\nReply with one word: supported, contradicted, or unmentioned.\n\nDocument:\n{premise}"
)
#: The statement when the pipeline has the question (it always does: ``question_in_hypothesis``): "supported" then
#: means *the document gives this as the answer to this question*, not "the document mentions what the answer names".
#: The earlier statement, "<answer> (an answer to the question: <question>)", was judged "supported" with P 0.87–0.93
#: for carbon racing shoes named as "best shoes for a first marathon" against the racer's own page, and for shoes
#: the document names only as a comparison. Chosen among four question-aware statements on the training split of
#: the labelled pairs (docs/answers.md, "The judge's prompt"); an instruction that explains the definition instead
#: made the 1.5B judge more agreeable, not less.
_JUDGE_TAIL_QUESTION = '\n\nStatement: This document recommends or states "{claim}" as the answer to "{question}".'
#: The statement without a question (a bare claim).
_JUDGE_TAIL = "\n\nStatement: {claim}"
#: The judge's answer words, in NLI_CLASSES order (entailment, neutral, contradiction).
_JUDGE_OPTIONS = ("supported", "unmentioned", "contradicted")
#: Changes whenever the judge's prompt does, so judgements made with an older prompt are not served from disk.
_JUDGE_PROMPT_HASH = hashlib.sha256("\0".join((_JUDGE_SYSTEM, _JUDGE_HEAD, _JUDGE_TAIL, _JUDGE_TAIL_QUESTION,
                                               *_JUDGE_OPTIONS)).encode()).hexdigest()[:16]
_log = logging.getLogger(__name__)


def _claim(hypothesis: str, context: str | None) -> str:
    """The cross-encoder's hypothesis: the answer with the question appended (the LLM judge words it as a statement
    about the document, :data:`_JUDGE_TAIL_QUESTION`)."""
    return f"{hypothesis} (an answer to the question: {context})" if context else hypothesis


class Attributor(ABC):
    """Scores (premise, hypothesis) pairs. Subclasses implement :meth:`_class_probabilities`.

    Rows are cached in memory and, when :meth:`cache_identity` names the model, in ``disk`` (the shared cache
    file by default; set ``disk = None`` for memory only). ``pairs`` counts pairs asked for (repeats included),
    ``model_pairs`` those the model judged, ``disk_hits`` those read from disk.
    """

    name: str

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, str | None], np.ndarray] = {}
        self._lock = threading.Lock()
        self.disk: DiskCache | None = default_disk_cache()
        self.pairs = 0
        self.disk_hits = 0
        self.model_pairs = 0
        self._identity: tuple[str | None] | None = None

    def cache_identity(self) -> str | None:
        """What makes this attributor's judgements what they are (model weights, prompt, truncation), as the disk
        cache's key; ``None`` (the default for unknown subclasses): cache in memory only. A subclass may instead
        set an ``identity`` attribute."""
        own = getattr(self, "identity", None)
        return own if isinstance(own, str) and own else None

    def _disk_identity(self) -> str | None:
        if self.disk is None:
            return None
        if self._identity is None:
            self._identity = (self.cache_identity(),)
        return self._identity[0]

    def _from_disk(self, keys: list[tuple[str, str, str | None]]) -> None:
        """Move the rows of ``keys`` found on disk into the memory cache."""
        identity = self._disk_identity()
        if identity is None or not keys:
            return
        hashed = {cache_key("nli", identity, *k): k for k in keys}
        try:
            stored = self.disk.get_many("nli", list(hashed))
        except StoreError as err:
            _log.warning("judgement cache not read: %s", err)
            return
        with self._lock:
            for h, row in stored.items():
                self._cache[hashed[h]] = np.asarray(row, dtype=np.float64)
            self.disk_hits += len(stored)

    def _to_disk(self, keys: Sequence[tuple[str, str, str | None]], rows: np.ndarray) -> None:
        identity = self._disk_identity()
        if identity is None or not len(keys):
            return
        try:
            self.disk.put_many("nli", {cache_key("nli", identity, *k): [float(v) for v in row]
                                       for k, row in zip(keys, rows)}, model=identity)
        except StoreError as err:
            _log.warning("judgement cache not written: %s", err)

    @abstractmethod
    def _class_probabilities(self, premises: Sequence[str], hypotheses: Sequence[str],
                             contexts: Sequence[str | None]) -> np.ndarray:
        """Rows of P(entailment), P(neutral), P(contradiction) for each pair."""

    def class_probabilities(self, premises: Sequence[str], hypotheses: Sequence[str], *,
                            contexts: Sequence[str | None] | None = None) -> np.ndarray:
        """``(len, 3)`` array of class probabilities in :data:`NLI_CLASSES` order, cached per pair."""
        premises, hypotheses = list(premises), list(hypotheses)
        if len(premises) != len(hypotheses):
            raise InvalidParameterError(
                f"got {len(premises)} premises and {len(hypotheses)} hypotheses; pass one premise per hypothesis"
            )
        ctx = list(contexts) if contexts is not None else [None] * len(premises)
        if len(ctx) != len(premises):
            raise InvalidParameterError("contexts must have one entry per pair (or be None)")
        keys = list(zip(premises, hypotheses, ctx))
        with self._lock:
            self.pairs += len(keys)
            todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if todo and self.disk is not None:
            self._from_disk([k for k in todo if k[0].strip() and k[1].strip()])
            with self._lock:
                todo = [k for k in todo if k not in self._cache]
        if todo:
            # an empty answer or document entails nothing: call it neutral without asking the model
            empty = [k for k in todo if not k[0].strip() or not k[1].strip()]
            asked = [k for k in todo if k[0].strip() and k[1].strip()]
            probs = (self._class_probabilities([k[0] for k in asked], [k[1] for k in asked], [k[2] for k in asked])
                     if asked else np.zeros((0, 3)))
            with self._lock:
                for key, row in zip(asked, probs):
                    self._cache[key] = row
                for key in empty:
                    self._cache[key] = np.array([0.0, 1.0, 0.0])
                self.model_pairs += len(asked)
            self._to_disk(asked, probs)
        return np.stack([self._cache[k] for k in keys]) if keys else np.zeros((0, 3))

    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str], *,
                      contexts: Sequence[str | None] | None = None) -> np.ndarray:
        """P(entailment) for each (premise, hypothesis) pair."""
        return self.class_probabilities(premises, hypotheses, contexts=contexts)[:, 0]

    def entails(self, premises: Sequence[str], hypotheses: Sequence[str], *,
                contexts: Sequence[str | None] | None = None) -> list[bool]:
        """True where entailment is the most probable class."""
        probs = self.class_probabilities(premises, hypotheses, contexts=contexts)
        return [bool(row.argmax() == 0) for row in probs]


class LLMJudgeAttributor(Attributor):
    """A prompted 3-way NLI judge; the class probabilities are the next-token probabilities of the verdict words."""

    def __init__(self, model: LanguageModel, *, max_premise_words: int = 220) -> None:
        super().__init__()
        self.model = model
        self.name = f"judge:{model.name}"
        self.max_premise_words = max_premise_words

    def cache_identity(self) -> str | None:
        """The judge model's identity (weights hash), the judge prompt's hash and the premise cut."""
        model = model_identity(self.model)
        return None if model is None else (f"judge:{model}:prompt-{_JUDGE_PROMPT_HASH}:"
                                           f"premise-words={self.max_premise_words}")

    @property
    def prompt_version(self) -> str:
        """A digest of the judge's prompt templates, stored with every run (a changed prompt is another judge)."""
        return f"judge-prompt-{_JUDGE_PROMPT_HASH}"

    def prompt(self, premise: str, hypothesis: str, context: str | None = None) -> ChatPrompt:
        """The instruction and the document (:meth:`_head`, shared by every claim about it), then the statement: with a
        question (``context``), that the document recommends or states the claim *as the answer to that question*."""
        question = " ".join(context.split()) if context else ""
        tail = (_JUDGE_TAIL_QUESTION.format(claim=hypothesis, question=question) if question
                else _JUDGE_TAIL.format(claim=hypothesis))
        return ChatPrompt(_JUDGE_SYSTEM, self._head(premise) + tail)

    def _head(self, premise: str) -> str:
        """The part of the prompt shared by every claim about ``premise``."""
        words = premise.split()
        if len(words) > self.max_premise_words:  # truncate the premise, never the hypothesis
            premise = " ".join(words[: self.max_premise_words]) + " …"
        return _JUDGE_HEAD.format(premise=premise)

    def _class_probabilities(self, premises, hypotheses, contexts) -> np.ndarray:
        order = sorted(range(len(premises)), key=lambda i: premises[i])  # same document → shared prefix
        out = np.zeros((len(premises), 3))
        for i in order:
            out[i] = self.model.option_probabilities(self.prompt(premises[i], hypotheses[i], contexts[i]),
                                                     _JUDGE_OPTIONS, keep_prefix=self._head(premises[i]))
        return out


class CrossEncoderAttributor(Attributor):
    """A sequence-classification NLI model (e.g. ``FacebookAI/roberta-large-mnli``, the paper's attributor).

    Classes come from ``config.id2label``: the entailment, neutral and contradiction classes are matched
    by name. Two-class models (entailment / not-entailment) map "not" to neutral. The premise is
    truncated to fit ``max_length``; the hypothesis is never cut. The model itself is a
    :class:`~fairrag_core.models.nli.NLIClassifier` (the model layer is where torch lives).
    """

    def __init__(self, source: str, *, device: str | None = None, batch_size: int = 16, max_length: int = 512,
                 model=None, tokenizer=None) -> None:
        super().__init__()
        self.source = source
        self.name = f"nli:{source}"
        self.classifier = NLIClassifier(source, device=device, batch_size=batch_size, max_length=max_length,
                                        model=model, tokenizer=tokenizer)
        self._injected = model is not None

    def cache_identity(self) -> str | None:
        """The NLI model's weights (hub commit or folder fingerprint) and the input cut; ``None`` for a model passed
        in as an object (it cannot be recognised in another process)."""
        if self._injected:
            return None
        return f"nli:{source_identity(self.source)}:max_length={self.classifier.max_length}"

    @staticmethod
    def class_columns(id2label: dict) -> list[int | None]:
        """Model output column of entailment, neutral, contradiction (None where the model lacks one)."""
        return nli_class_columns(id2label)

    def _class_probabilities(self, premises, hypotheses, contexts) -> np.ndarray:
        return self.classifier.class_probabilities(premises, [_claim(h, c) for h, c in zip(hypotheses, contexts)])


def load_attributor(name: str | None = None, *, device: str | None = None) -> Attributor:
    """An NLI attributor by name, shared per process: an LLM-judge name of the catalogue (``qwen-judge``, the
    offline default: the Qwen2.5-1.5B judge), any offline language model of the catalogue as judge, or a
    sequence-classification NLI id or folder (``roberta-large-mnli``: the paper's ``FacebookAI/roberta-large-mnli``).
    """
    name = name or catalog.DEFAULTS["attributor"]

    def build() -> Attributor:
        llm = catalog.language_model_name(name)
        if llm in catalog.OFFLINE_LLMS:
            return LLMJudgeAttributor(catalog.load_language_model(llm, device=device))
        return CrossEncoderAttributor(catalog.HUB_NLI.get(name, name), device=device)

    return catalog.shared((f"attributor:{name}", device), build)


def default_attributor() -> Attributor:
    """The offline default NLI attributor: the Qwen2.5-1.5B LLM judge (loaded on first use)."""
    return load_attributor(catalog.DEFAULTS["attributor"])
