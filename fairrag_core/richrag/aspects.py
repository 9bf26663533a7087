"""The sub-aspect explorer (RichRAG §3.2, Eq. 1–2): an LLM lists a query's aspects as ``[s1] … [sn]``.

Wang et al. fine-tune Llama-2-7B-chat to emit the aspects in square brackets. Offline we prompt an instruction
model (the Qwen2.5-1.5B GGUF by default; any catalog model) with the same target format
(:func:`~.prompts.explorer_prompt`), decode greedily, and parse the reply with :func:`parse_aspects`, which also
reads the formats small models drift into: numbered or bulleted lines, JSON lists or objects, ``[s1] text``
markers, code fences, HTML. A reply that still yields fewer than ``min_aspects`` usable aspects (a refusal, an
answer instead of aspects, empty output, or a copy of the prompt's example: :func:`echoes_demo`) is replaced —
with a note saying so — by, in this order, the aspects the collection ships for this query, or keyword aspects
mined from the query's top documents (:func:`keyword_aspects`). Aspects the user gives win over everything
(``source = "user"``).

Every :class:`AspectSet` says where its aspects came from (``source``) and why (``note``), so the app and the CLI
can show it.
"""

from __future__ import annotations

import enum
import html
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import check_positive_int
from ..data import Collection
from ..errors import InvalidParameterError
from ..retrieval import Retriever, check_query, top_candidates
from ..text import DEFAULT_TOKENIZER, ENGLISH_STOP_WORDS, Tokenizer
from .prompts import EXPLORER_DEMO, explorer_prompt

__all__ = ["AspectSource", "AspectSet", "parse_aspects", "clean_aspect", "echoes_demo", "keyword_aspects",
           "AspectExplorer", "user_aspects", "aspect_recall"]


class AspectSource(str, enum.Enum):
    """Where a query's aspects came from."""

    USER = "user"
    LLM = "llm"
    COLLECTION = "collection"
    KEYWORDS = "keywords"


@dataclass(frozen=True)
class AspectSet:
    """A query's aspects, where they came from, the model's raw reply (if any) and a note for the user."""

    query: str
    aspects: tuple[str, ...]
    source: AspectSource
    raw: str = ""
    note: str = ""
    model: str = ""


MAX_ASPECT_WORDS = 12
MAX_ASPECT_CHARS = 100

_SCRIPT = re.compile(r"<(script|style)\b.*?(</\1\s*>|$)", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^<>]{0,200}>")
_FENCE = re.compile(r"```[\w-]*")
_BRACKET = re.compile(r"\[([^\[\]\n]{1,200})\]")
_MARKER = re.compile(r"^\s*(?:s|aspect|sub-?aspect)?\s*#?\d{1,2}\s*$", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*•·+]|\(?\d{1,2}[.):]|\(?[a-zA-Z][.)]|(?:s|aspect)\s*\d{1,2}\s*[:.)-])\s+(.+)$",
                        re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:(?:sub-?)?aspects?|s|facet|query-facet)\s*#?\d{0,2}\s*[:.)-]\s*", re.IGNORECASE)
_REFUSAL = re.compile(r"\b(?:I\s+(?:cannot|can't|can not|am unable|won't)|I'm\s+(?:sorry|unable)|as an AI)\b",
                      re.IGNORECASE)
_HEADER = re.compile(r"^\s*(?:here (?:are|is)|the (?:sub-?)?aspects|aspects?|sub-?aspects|answer|output)\b.*:\s*$",
                     re.IGNORECASE)


_STEMS = Tokenizer(stop_words=False)


def _stem(word: str) -> str:
    found = _STEMS(word)
    return found[0] if found else word


def _key(text: str) -> str:  # what makes two aspects the same: words, case-, punctuation- and "&"-insensitive
    return " ".join(re.findall(r"[0-9a-z]+", text.lower().replace("&", " and ")))


def _demo_keys() -> set[str]:
    return {_key(a) for a in _BRACKET.findall(EXPLORER_DEMO.split("Aspects:", 1)[1])}


def echoes_demo(aspects: Sequence[str]) -> bool:
    """True when two or more aspects are the prompt's demonstration aspects: the model copied the example
    (small models do) instead of reading the question. One shared aspect ("setting a budget") can be genuine.

    >>> echoes_demo(["setting a budget", "checking the vehicle history", "pests"]), echoes_demo(["setting a budget"])
    (True, False)
    """
    demo = _demo_keys()
    return sum(_key(a) in demo for a in aspects) >= 2


def clean_aspect(text: str, *, query: str = "") -> str:
    """One aspect made presentable: labels, markdown, quotes and end punctuation stripped; "" when unusable
    (no letters, longer than 12 words or 100 characters, or the query itself).

    >>> clean_aspect('  **Aspect 2: Balancing greens & browns.** ')
    'Balancing greens & browns'
    >>> clean_aspect("How do I compost?", query="how do I compost")
    ''
    """
    text = html.unescape(_TAG.sub(" ", str(text)))
    text = re.sub(r"[*_`#>]+", " ", text)
    text = _LABEL.sub("", text.strip())
    text = " ".join(text.split()).strip(" \"'“”‘’.,;:!?-–—()")
    if not re.search(r"[^\W\d_]", text) or len(text) > MAX_ASPECT_CHARS or len(text.split()) > MAX_ASPECT_WORDS:
        return ""
    if query and _key(text) == _key(query):
        return ""
    return text


def _from_json(text: str) -> list[str] | None:
    start = min([i for i in (text.find("["), text.find("{")) if i >= 0], default=-1)
    if start < 0:
        return None
    for end in range(len(text), start, -1):
        if text[end - 1] not in "]}":
            continue
        try:
            data = json.loads(text[start:end])
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(data, dict):
            data = next((v for v in data.values() if isinstance(v, list)), list(data.values()))
        if not isinstance(data, list):
            return None
        out = []
        for item in data:
            if isinstance(item, dict):
                item = next((item[k] for k in ("aspect", "query-facet", "facet", "name", "title") if k in item), "")
            if isinstance(item, str):
                out.append(item)
        return out
    return None


def _from_brackets(text: str) -> list[str]:
    pieces = _BRACKET.findall(text)
    if pieces and all(_MARKER.match(p) for p in pieces):  # "[s1] topic [s2] topic": the text between markers
        return list(_BRACKET.split(text)[2::2])
    return [p for p in pieces if not _MARKER.match(p)]


def _from_lines(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip() and not _HEADER.match(line)]
    items = [m.group(1) for m in map(_LIST_ITEM.match, lines) if m]
    if len(items) >= 2:
        return items
    if len(lines) >= 2 and all(len(line.split()) <= MAX_ASPECT_WORDS for line in lines):
        return lines
    if len(lines) == 1 and re.search(r"[;|]", lines[0]):
        return re.split(r"[;|]", lines[0])
    return []


def parse_aspects(raw: str, *, query: str = "", max_aspects: int = 6) -> tuple[list[str], str]:
    """The aspects in an LLM reply and a note on anything dropped (``([], note)`` when none are usable).

    Reads, in order: ``[a] [b]`` brackets (also ``[s1] a [s2] b`` markers), a JSON list or object, numbered or
    bulleted lines, one line split on ``;``. Drops HTML (``<script>`` with its content), code fences, labels,
    duplicates (case- and punctuation-insensitive) and unusable items (:func:`clean_aspect`); keeps at most
    ``max_aspects``. A refusal yields nothing.

    >>> parse_aspects("[what goes in the bin] [greens and browns] [Greens and browns!]")
    (['what goes in the bin', 'greens and browns'], 'dropped 1 repeated aspect')
    >>> parse_aspects("1. Light\\n2. Watering\\n3. Pests")[0]
    ['Light', 'Watering', 'Pests']
    """
    max_aspects = check_positive_int(max_aspects, "max_aspects", hint="aspects kept at most")
    if not str(raw or "").strip():
        return [], "the model returned nothing"
    text = _FENCE.sub("\n", _SCRIPT.sub(" ", str(raw)))
    if _REFUSAL.search(text):
        return [], "the model refused or did not list aspects"
    candidates = _from_brackets(text)
    if len(candidates) < 2:
        candidates = _from_json(text) or _from_lines(text) or candidates
    notes = []
    cleaned, seen, repeated, unusable = [], set(), 0, 0
    for item in candidates:
        aspect = clean_aspect(item, query=query)
        if not aspect:
            unusable += 1
        elif _key(aspect) in seen:
            repeated += 1
        else:
            seen.add(_key(aspect))
            cleaned.append(aspect)
    if repeated:
        notes.append(f"dropped {repeated} repeated aspect{'s' if repeated > 1 else ''}")
    if unusable:
        notes.append(f"dropped {unusable} unusable item{'s' if unusable > 1 else ''}")
    if len(cleaned) > max_aspects:
        notes.append(f"kept the first {max_aspects} of {len(cleaned)} aspects")
        cleaned = cleaned[:max_aspects]
    if not cleaned:
        notes.append("no aspects found in the reply")
    return cleaned, "; ".join(notes)


def user_aspects(aspects: Sequence[str] | str, *, query: str = "", max_aspects: int = 8) -> tuple[str, ...]:
    """Aspects typed by a user: a list, or one text with one aspect per line (or ``;``-separated), cleaned.

    >>> user_aspects("light\\nwatering; pests\\n\\nlight")
    ('light', 'watering', 'pests')
    """
    items = re.split(r"[\n;]", aspects) if isinstance(aspects, str) else list(aspects)
    out: list[str] = []
    for item in items:
        aspect = clean_aspect(item, query=query)
        if aspect and _key(aspect) not in {_key(a) for a in out}:
            out.append(aspect)
    return tuple(out[:max_aspects])


def keyword_aspects(query: str, texts: Sequence[str], retriever: Retriever, *, n_aspects: int = 4,
                    depth: int = 10) -> tuple[str, ...]:
    """Model-free aspects: words shared by the query's top ``depth`` documents but rare in the corpus, one word
    per aspect. A word stem scores ``df_top · ln(N / df)`` (document frequency among the top documents times its
    inverse document frequency), counted when at least two top documents use it and it is not a query word; the
    surface form shown is the most frequent word with that stem.

    >>> from fairrag_core.retrieval import BM25Retriever
    >>> docs = ["compost needs browns and greens", "compost browns: dry leaves", "compost greens smell", "shoes"]
    >>> keyword_aspects("compost", docs, BM25Retriever(docs), n_aspects=2, depth=3)
    ('browns', 'greens')
    """
    query = check_query(query)
    n_aspects = check_positive_int(n_aspects, "n_aspects", hint="keyword aspects to return")
    top = set(top_candidates(retriever.score(query), depth).indices.tolist())
    df_top, df_all, surface = Counter(), Counter(), {}
    for i, text in enumerate(texts):
        words = [w for w in re.findall(r"[a-z]+", text.lower()) if w not in ENGLISH_STOP_WORDS and len(w) > 2]
        stems = {_stem(w) for w in words}
        df_all.update(stems)
        if i in top:
            df_top.update(stems)
            for w in words:
                surface.setdefault(_stem(w), Counter())[w] += 1
    own = set(DEFAULT_TOKENIZER(query))
    n = len(texts)
    score = {s: c * np.log(n / df_all[s]) for s, c in df_top.items() if c >= 2 and s not in own}
    ranked = sorted(score, key=lambda s: (-score[s], s))[:n_aspects]
    return tuple(surface[s].most_common(1)[0][0] for s in ranked)


class AspectExplorer:
    """Finds a query's aspects: the user's, else the LLM's (parsed), else the collection's, else keywords.

    Args:
        model: a :class:`~fairrag_core.models.llm.LanguageModel` (None: skip the LLM).
        collection: its own aspects serve queries it holds when the LLM fails; with ``retriever`` it also feeds
            the keyword fallback.
        retriever: scores ``collection.texts`` for the keyword fallback.
        min_aspects, max_aspects: a reply with fewer usable aspects falls back; more are cut.
        max_new_tokens: the reply's length limit.
    """

    def __init__(self, model=None, *, collection: Collection | None = None, retriever: Retriever | None = None,
                 min_aspects: int = 2, max_aspects: int = 6, max_new_tokens: int = 96) -> None:
        self.model = model
        self.collection = collection
        self.retriever = retriever
        self.min_aspects = check_positive_int(min_aspects, "min_aspects", hint="fewer usable aspects fall back")
        self.max_aspects = check_positive_int(max_aspects, "max_aspects", hint="aspects kept at most")
        if self.min_aspects > self.max_aspects:
            raise InvalidParameterError(f"min_aspects={min_aspects} > max_aspects={max_aspects}; lower min_aspects")
        self.max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens", hint="tokens per reply")

    def ask(self, query: str) -> str:
        """The model's raw reply to the explorer prompt (greedy)."""
        from ..models.llm import Decoding

        prompt = explorer_prompt(query, min_aspects=max(self.min_aspects, 3), max_aspects=max(self.max_aspects - 1, 3))
        decoding = Decoding(max_new_tokens=self.max_new_tokens, stop=("\n\n", "Question:"))
        return self.model.complete([prompt], decoding)[0].text

    def explore(self, query: str, *, given: Sequence[str] | str | None = None, raw: str | None = None) -> AspectSet:
        """The aspects of ``query``. ``given``: the user's aspects (used as they are, cleaned); ``raw``: a reply
        already obtained from the model (parsed instead of asking again)."""
        query = check_query(query)
        if given is not None and (aspects := user_aspects(given, query=query, max_aspects=self.max_aspects)):
            return AspectSet(query, aspects, AspectSource.USER, note="aspects given by the user")
        if self.model is None and raw is None:
            return self._fallback(query, "", "", "")
        model_name = getattr(self.model, "name", "") if self.model is not None else ""
        reply = raw if raw is not None else self.ask(query)
        aspects, parse_note = parse_aspects(reply, query=query, max_aspects=self.max_aspects)
        if echoes_demo(aspects):
            aspects, parse_note = [], "it copied the prompt's example aspects"
        if len(aspects) >= self.min_aspects:
            return AspectSet(query, tuple(aspects), AspectSource.LLM, reply, parse_note, model_name)
        note = f"the model's reply gave {len(aspects)} usable aspect(s) ({parse_note or 'too few'}); "
        return self._fallback(query, note, reply, model_name)

    def _fallback(self, query: str, note: str, raw: str, model_name: str) -> AspectSet:
        known = self.collection.find_query(query) if self.collection is not None else None
        if known is not None and known.aspects:
            return AspectSet(query, tuple(a.aspect for a in known.aspects), AspectSource.COLLECTION, raw,
                             note + f"used the collection's aspects of {known.query_id}", model_name)
        if self.collection is not None and self.retriever is not None:
            words = keyword_aspects(query, self.collection.texts, self.retriever,
                                    n_aspects=min(4, self.max_aspects))
            if words:
                return AspectSet(query, words, AspectSource.KEYWORDS, raw,
                                 note + "used keywords of the top documents as aspects", model_name)
        return AspectSet(query, (), AspectSource.KEYWORDS, raw,
                         note + "no aspects found; the query alone will be retrieved", model_name)


def aspect_recall(similarity: np.ndarray, threshold: float, *, one_to_one: bool = True) -> float:
    """Share of the reference aspects (rows) matched by a predicted aspect (columns) with cosine ≥ ``threshold``.

    ``one_to_one``: a predicted aspect may match one reference aspect only (a maximum matching on the pairs above
    the threshold, so one broad prediction cannot claim several references); otherwise any prediction counts.
    No predictions → 0.

    >>> sim = np.array([[0.9, 0.2], [0.7, 0.1], [0.1, 0.4]])
    >>> aspect_recall(sim, 0.5), aspect_recall(sim, 0.5, one_to_one=False)
    (0.3333333333333333, 0.6666666666666666)
    """
    sim = np.asarray(similarity, dtype=np.float64)
    if sim.ndim != 2 or sim.shape[0] == 0:
        raise InvalidParameterError(f"similarity must be (n_reference ≥ 1, n_predicted), got shape {sim.shape}")
    if sim.shape[1] == 0:
        return 0.0
    hits = sim >= threshold
    if not one_to_one:
        return float(hits.any(axis=1).mean())
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(hits.astype(np.float64), maximize=True)
    return float(hits[rows, cols].sum() / sim.shape[0])
