"""FAIR-QR's query refiners (Chen & Fang, §2.2 step 4 and the Appendix prompt).

A refiner is told the original and current query, the target and current group distributions and the most
under-represented group ĝ, and proposes a few keywords about ĝ to append to the query:

* :class:`LLMRefiner` — the paper's method: the Appendix prompt sent to a language model (offline default the
  Qwen2.5-1.5B GGUF; the paper used GPT-4o), greedy decoding, the reply sanitised by :func:`sanitise_keywords`;
* :class:`CorpusKeywordRefiner` — the transparent ablation and the fallback: the words that best mark ĝ's
  documents among those that match the original query (weighted log-odds with an informative Dirichlet prior,
  Monroe, Colaresi & Quinn 2008); none when no document of ĝ matches it (words from the whole corpus were
  unrelated to the query: "french european poetry" for "award-winning film directors", issue 31).
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..data import Collection
from ..data.disk_cache import DiskCache, cache_key, default_disk_cache
from ..metrics.group_targets import groups_for
from ..retrieval import Retriever, top_candidates
from ..text import DEFAULT_TOKENIZER, ENGLISH_STOP_WORDS

__all__ = [
    "RefinementRequest", "Refinement", "Refiner", "CorpusKeywordRefiner", "LLMRefiner", "KEYWORDS_REFINER",
    "build_refiner", "sanitise_keywords", "refinement_prompt", "refinement_key", "REFINEMENT_KIND",
]


@dataclass(frozen=True)
class RefinementRequest:
    """What a refiner is told: the queries, both distributions, K, and the group to bring in."""

    original_query: str
    current_query: str
    category: str
    target: Mapping[str, float]
    current: Mapping[str, float]
    top_k: int
    group: str
    retrieved: tuple[int, ...]  # collection positions of the current top K


@dataclass(frozen=True)
class Refinement:
    keywords: str  # sanitised words to append ("" = nothing usable)
    raw: str  # what the refiner produced before sanitising
    note: str = ""  # e.g. why a fallback was used


class Refiner(ABC):
    """Proposes keywords that should bring documents of an under-represented group into the top K."""

    name: str

    @abstractmethod
    def refine(self, request: RefinementRequest) -> Refinement: ...


_PREFIX = re.compile(r"^\s*(?:refined\s+)?(?:keywords?|query|queries|phrase|answer)\s*[:：-]\s*", re.IGNORECASE)
_TOKEN = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?", re.UNICODE)


def sanitise_keywords(raw: str, *, current_query: str = "", max_words: int = 6, max_chars: int = 80) -> str:
    """Keywords an LLM (or anyone) proposed, made safe to append to a query.

    Keeps the first non-empty line after dropping code fences and a ``Keywords:``-style prefix; keeps word
    tokens only (no punctuation, markup, URLs or control characters); drops words already in the query,
    stop words, duplicates and tokens over 30 characters; at most ``max_words`` words and ``max_chars``
    characters. Returns "" when nothing usable is left.

    >>> sanitise_keywords('Keywords: "female", <b>women</b> jazz; http://x.io', current_query="jazz pianists")
    'female women'
    """
    text = re.sub(r"```.*?(```|$)", " ", raw or "", flags=re.DOTALL)
    text = re.sub(r"<(script|style)\b.*?(</\1\s*>|$)", " ", text, flags=re.DOTALL | re.IGNORECASE)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    line = _PREFIX.sub("", lines[0]) if lines else ""
    line = re.sub(r"https?://\S+|www\.\S+", " ", line)
    line = re.sub(r"<[^>]*>", " ", line)
    seen = {w.lower() for w in _TOKEN.findall(current_query)}
    words: list[str] = []
    for word in _TOKEN.findall(line):
        low = word.lower()
        if low in seen or low in ENGLISH_STOP_WORDS or len(word) > 30:
            continue
        if len(" ".join([*words, word])) > max_chars or len(words) >= max_words:
            break
        seen.add(low)
        words.append(word)
    return " ".join(words)


def _format_distribution(dist: Mapping[str, float]) -> str:
    return "{" + ", ".join(f"'{g}': {v:.2f}" for g, v in dist.items()) + "}"


def refinement_prompt(request: RefinementRequest) -> str:
    """The query-refinement prompt of Chen & Fang (Appendix), filled in.

    One addition, for small local models: the last sentence asks for the keywords alone on one line.
    """
    return (
        "You are a user who cares about the fairness of a search engine where searched documents are retrieved "
        "from different subgroups.\n\n"
        f"You want to make sure the retrieved documents of query: {request.current_query} are from diverse "
        f"fairness groups quantified by a target distribution: {_format_distribution(request.target)}, which "
        "shows the desired percentage of retrieved documents from each subgroup. The keys in the target "
        "distribution are the unique subgroups. The 'Unknown' subgroup means group information is missing or "
        "not applicable.\n\n"
        f"Now, using the BM25 method, you got results of the first {request.top_k} documents with a fairness "
        f"group distribution of: {_format_distribution(request.current)}. You want to achieve the target by "
        "adding keywords or phrase at the end of the original query with less jeopardize relevance. Therefore, "
        "you must add less keywords as possible to make the current results more align with our fairness "
        "target distribution and remain relevant.\n\n"
        f"Let's try to focus on the subgroup that is most under-represented. In this case, it's the subgroup: "
        f"{request.group}. Show me your refined keywords that can help retrieve a composition of documents from "
        f"different {request.category} group closer to the target distribution. That is, knowing the retrieved "
        f"documents have fewer than desired documents from group {request.group}, you might want to include "
        f"keywords about {request.group}.\n\n"
        "Reply with the added keywords only, on one line, without explanation."
    )


class CorpusKeywordRefiner(Refiner):
    """A transparent, model-free refiner: words that mark the group's documents among those on the topic.

    The pool is the top ``pool_size`` documents for the original query that match it (BM25 score above 0: the
    topic; the current query has drifted with the keywords already added). Words are scored by the weighted
    log-odds ratio with an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008) between the group's
    documents in the pool and the rest of the pool, with the corpus as prior; the ``n_keywords`` best that are
    not already in the query are appended. When the pool holds no document of the group there is no keyword
    to add, and the note says so: words drawn from the whole corpus would be unrelated to the query.
    """

    def __init__(self, collection: Collection, categories: str | Sequence[str], retriever: Retriever, *,
                 n_keywords: int = 3, pool_size: int = 60, prior_strength: float = 0.1) -> None:
        self.name = "corpus-keywords"
        self.collection = collection
        self.groups = groups_for(collection, categories)
        self.retriever = retriever
        self.n_keywords = n_keywords
        self.pool_size = pool_size
        self.prior_strength = prior_strength
        self._words = [self._content_words(d.full_text) for d in collection.documents]
        self._corpus_counts = Counter(w for words in self._words for w in words)

    @staticmethod
    def _content_words(text: str) -> list[str]:
        return [w.lower() for w in _TOKEN.findall(text)
                if w.lower() not in ENGLISH_STOP_WORDS and len(w) > 2 and not w.isdigit()]

    def _log_odds(self, inside: Sequence[int], outside: Sequence[int]) -> pd.Series:
        a = Counter(w for i in inside for w in self._words[i])
        b = Counter(w for i in outside for w in self._words[i])
        vocab = sorted(set(a))
        prior_total = sum(self._corpus_counts.values())
        alpha = np.array([self._corpus_counts[w] for w in vocab], dtype=float) * self.prior_strength
        alpha0 = prior_total * self.prior_strength
        ya = np.array([a[w] for w in vocab], dtype=float)
        yb = np.array([b[w] for w in vocab], dtype=float)
        na, nb = sum(a.values()), sum(b.values())
        delta = (np.log((ya + alpha) / (na + alpha0 - ya - alpha))
                 - np.log((yb + alpha) / (nb + alpha0 - yb - alpha)))
        variance = 1 / (ya + alpha) + 1 / (yb + alpha)
        return pd.Series(delta / np.sqrt(variance), index=vocab).sort_values(ascending=False, kind="stable")

    def refine(self, request: RefinementRequest) -> Refinement:
        scores = self.retriever.score(request.original_query)
        pool = [int(i) for i in top_candidates(scores, min(self.pool_size, len(scores))).indices if scores[i] > 0]
        inside = [i for i in pool if self.groups[i] == request.group]
        outside = [i for i in pool if self.groups[i] != request.group]
        if not inside:
            return Refinement(keywords="", raw="", note=f"no {request.group} document matches the query: no "
                                                        "keyword to add")
        ranked = self._log_odds(inside, outside)
        query_stems = set(DEFAULT_TOKENIZER(request.current_query))
        chosen = [w for w in ranked.index if not set(DEFAULT_TOKENIZER(w)) & query_stems][: self.n_keywords]
        raw = " ".join(chosen)
        return Refinement(keywords=sanitise_keywords(raw, current_query=request.current_query), raw=raw)


_REFUSAL = re.compile(r"\b(?:I\s+(?:cannot|can't|can not|am unable|won't)|I'm\s+(?:sorry|unable)|as an AI)\b",
                      re.IGNORECASE)


_log = logging.getLogger(__name__)

#: The disk-cache kind of the LLM refiner's replies (:class:`~fairrag_core.data.disk_cache.DiskCache`).
REFINEMENT_KIND = "refinement"
_DEFAULT_DISK = object()  # LLMRefiner(disk=…) not given: the shared cache file


def refinement_key(identity: str, max_new_tokens: int, prompt: str) -> str:
    """The disk-cache key of a refiner reply: the model's identity (weights hash), the decoding (greedy, the
    default :class:`~fairrag_core.models.llm.Decoding` with ``max_new_tokens``) and the whole prompt."""
    from ..models.llm import Decoding

    return cache_key(REFINEMENT_KIND, identity, asdict(Decoding(max_new_tokens=max_new_tokens)), "", prompt)


class LLMRefiner(Refiner):
    """The paper's refiner: an instruction-following LLM asked with the Appendix prompt (greedy decoding).

    The paper used GPT-4o at temperature 0.3; we decode greedily so that a trace is reproducible. An empty
    or unusable reply falls back to ``fallback`` (if given; the corpus keywords draw only from the group's
    documents that match the query) with a note saying "the model suggested no keyword".

    Replies are kept in ``disk`` (default: the shared cache file; ``None``: not kept) under
    :func:`refinement_key` when the model has an identity (:func:`~fairrag_core.models.identity.model_identity`),
    as answers are: a cached reply is the model's greedy reply, so it gives the identical refinement without the
    model. ``keys`` lists the keys of the replies asked for (what ``warm --mark-class`` records); ``model_calls``
    counts the replies that needed the model.
    """

    def __init__(self, model, *, fallback: Refiner | None = None, max_new_tokens: int = 32,
                 disk: DiskCache | None = _DEFAULT_DISK) -> None:  # type: ignore[assignment]
        self.model = model
        self.name = f"llm:{model.name}"
        self.fallback = fallback
        self.max_new_tokens = max_new_tokens
        self.disk = default_disk_cache() if disk is _DEFAULT_DISK else disk
        self.keys: list[str] = []
        self.model_calls = 0
        self._identity: tuple[str | None] | None = None

    @property
    def identity(self) -> str | None:
        """The model's identity in the disk cache (``None``: its replies are not kept)."""
        if self._identity is None:
            from ..models.identity import model_identity

            self._identity = (model_identity(self.model),)
        return self._identity[0]

    def _reply(self, prompt: str) -> str:
        from ..errors import StoreError
        from ..models.llm import ChatPrompt

        key = None
        if self.disk is not None and self.identity is not None:
            key = refinement_key(self.identity, self.max_new_tokens, prompt)
            self.keys.append(key)
            try:
                found = self.disk.get_many(REFINEMENT_KIND, [key])
            except StoreError as err:  # an unusable cache costs the model call, never the run
                _log.warning("refiner cache not read: %s", err)
                found = {}
            if key in found:
                return found[key]
        self.model_calls += 1
        reply = self.model.generate([ChatPrompt("", prompt)], max_new_tokens=self.max_new_tokens)[0]
        if key is not None:
            try:
                self.disk.put_many(REFINEMENT_KIND, {key: reply}, model=self.identity)
            except StoreError as err:
                _log.warning("refiner cache not written: %s", err)
        return reply

    def refine(self, request: RefinementRequest) -> Refinement:
        reply = self._reply(refinement_prompt(request))
        refused = _REFUSAL.search(reply or "") is not None  # a refusal's words are not keywords
        keywords = "" if refused else sanitise_keywords(reply, current_query=request.current_query)
        if keywords:
            return Refinement(keywords=keywords, raw=reply)
        if self.fallback is None:
            return Refinement(keywords="", raw=reply, note="the model suggested no keyword")
        backup = self.fallback.refine(request)
        note = f"the model suggested no keyword ({reply[:60]!r}); used {self.fallback.name} instead"
        return Refinement(keywords=backup.keywords, raw=reply, note="; ".join(filter(None, [note, backup.note])))


#: The name of the model-free refiner in :func:`build_refiner` (any other name is a language model).
KEYWORDS_REFINER = "keywords"


def build_refiner(name: str, collection: Collection, categories: str | Sequence[str], retriever: Retriever, *,
                  device: str | None = None) -> Refiner:
    """``"keywords"`` → :class:`CorpusKeywordRefiner`; any other name (catalog name, HF id, local folder) →
    :class:`LLMRefiner` on that model, falling back to the corpus keywords."""
    keywords = CorpusKeywordRefiner(collection, categories, retriever)
    if name == KEYWORDS_REFINER:
        return keywords
    from ..models.catalog import load_language_model

    return LLMRefiner(load_language_model(name, device=device), fallback=keywords)
