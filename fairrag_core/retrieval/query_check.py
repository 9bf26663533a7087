"""Typed queries the collection cannot answer: none of its documents matches, or the query is in another language.

A typed query fills the rankings grid whatever it asks: "how do I bake bread" in running-shoes ranks shoe pages,
because every score is 0 and the sampler still draws k of them (issue 31, What did not 7). Two cheap checks, pure
functions of the query, the lexical scores and the collection's texts, say so before the grid:

* **no match** — no document holds two of the query's terms (one, for a one-term query): a term is held when its
  BM25 score is above :data:`MATCH_FLOOR` (BM25 scores 0 exactly when a term does not occur in a document,
  Robertson & Zaragoza 2009, eq. 3.15). One shared word is chance ("bake" in a shoe-drying tip, "bread dough" in a
  marathon page score 4.2 for "how do I bake bread", above the 5.1 of no own query by much); every own query of
  the four demo collections has a document holding two of its terms. Request words ("tell me about …") are not
  terms (:data:`REQUEST_WORDS`);
* **another language** — the query's language differs from the collection's, each guessed by counting the words
  of a short stop-word list per language (:data:`LANGUAGES`; Grefenstette 1995, "Comparing two language
  identification schemes": short function words identify a language from a dozen words on) plus words with a
  language's own letters (ä, ñ, ç …). No model, no download; a query without two such clues is not guessed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..text import DEFAULT_TOKENIZER, ENGLISH_STOP_WORDS

__all__ = ["LANGUAGES", "MATCH_FLOOR", "REQUEST_WORDS", "Language", "QueryCheck", "check_query",
           "collection_language", "guess_language", "query_terms"]

#: A document holds a query term when the term's BM25 score for it is above this (0: the term occurs in it).
MATCH_FLOOR = 0.0
#: Words that ask rather than say what is sought ("Tell me about volcanoes"): no document need hold them.
REQUEST_WORDS = frozenset("tell explain describe show give list find know want need please".split())

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


@dataclass(frozen=True)
class Language:
    """A language the checks can tell: its name in messages, frequent function words, and letters of its own."""

    name: str
    stop_words: frozenset[str]
    letters: str = ""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The languages :func:`guess_language` tells apart, by ISO 639-1 code. English reuses the tokenizer's stop list.
LANGUAGES: dict[str, Language] = {
    "en": Language("English", ENGLISH_STOP_WORDS),
    "de": Language("German", _words("""der die das den dem des ein eine einen einem einer und oder nicht ist sind
        war mit für auf ich du wir ihr sie es wie was wer wo warum welche welcher welches zu zum zur von bei nach
        aus auch noch nur kann können soll mein meine ihre sich"""), "äöüß"),
    "fr": Language("French", _words("""le la les un une des du de et ou est sont pour dans sur avec sans par pas
        que qui quoi quel quelle quels comment pourquoi où je tu nous vous ils elles mon ma mes ce cette ces au aux
        son sa ses leur très"""), "çœèêëîôûù"),
    "es": Language("Spanish", _words("""el la los las un una unos unas y o es son está están para por con sin en
        del al que qué cómo cuál cuáles dónde por qué yo tú nosotros ellos mi mis su sus muy pero se lo"""), "ñ¿¡"),
    "it": Language("Italian", _words("""il lo la gli le un uno una e o è sono per con su nel nella nei delle degli
        del della di da che chi come perché dove quale quali io tu noi voi loro mio mia molto ma non"""), ""),
    "nl": Language("Dutch", _words("""de het een en of is zijn voor met op aan van bij naar uit ook niet wat wie
        waar waarom hoe welke ik jij wij zij mijn je ze deze dit dat"""), "ĳ"),
    "pt": Language("Portuguese", _words("""o a os as um uma uns umas e ou é são para por com sem em do da dos das
        no na nos nas que como onde porque qual quais eu tu nós eles meu minha muito mas não"""), "ãõ"),
}


def _clues(text: str) -> Counter[str]:
    """Per language: the words of ``text`` in its stop list, plus those written with its own letters."""
    found: Counter[str] = Counter()
    for word in _WORD.findall(text.lower()):
        for code, language in LANGUAGES.items():
            if word in language.stop_words or any(letter in word for letter in language.letters):
                found[code] += 1
    return found


def guess_language(text: str, *, at_least: int = 2) -> str | None:
    """The code of ``text``'s language (:data:`LANGUAGES`), or None when no language has ``at_least`` clues
    (:func:`_clues`) and strictly more than any other: a short query with one function word is not guessed.

    >>> guess_language("how do I bake bread"), guess_language("Wie backe ich ein Brot?")
    ('en', 'de')
    >>> guess_language("les meilleures chaussures pour un marathon"), guess_language("zapatillas para la montaña")
    ('fr', 'es')
    >>> guess_language("jazz pianists") is None
    True
    """
    ranked = _clues(text).most_common(2)
    if not ranked or ranked[0][1] < at_least or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]


def collection_language(texts: Sequence[str], *, sample: int = 200, chars: int = 400) -> str | None:
    """The collection's language: :func:`guess_language` over the first ``chars`` characters of its first
    ``sample`` documents (a collection of many languages gives its most common one, or None on a tie)."""
    return guess_language(" ".join(text[:chars] for text in texts[:sample]))


@dataclass(frozen=True)
class QueryCheck:
    """What a typed query finds in a collection: how many documents match it, the query's and the collection's
    guessed languages; :meth:`messages` says what the Playground shows above the grid."""

    query: str
    collection: str
    matching: int
    query_language: str | None
    collection_language: str | None

    @property
    def matches_nothing(self) -> bool:
        return self.matching == 0

    @property
    def other_language(self) -> bool:
        return None not in (self.query_language, self.collection_language) and \
            self.query_language != self.collection_language

    def messages(self) -> list[str]:
        """One sentence per problem, none for a query the collection can answer."""
        said = []
        if self.matches_nothing:
            said.append(f"No document matches '{self.query}' in {self.collection}: the grid shows the least bad "
                        "matches.")
        if self.other_language:
            said.append(f"This collection is {LANGUAGES[self.collection_language].name}; your query looks "
                        f"{LANGUAGES[self.query_language].name}.")
        return said


def query_terms(query: str) -> list[str]:
    """The query's words that BM25 ranks by, once per stem: not a stop word of the tokenizer
    (:data:`~fairrag_core.text.DEFAULT_TOKENIZER`), not a request word (:data:`REQUEST_WORDS`).

    >>> query_terms("Tell me about the volcanoes and volcano")
    ['volcanoes']
    """
    seen: dict[str, str] = {}
    for word in _WORD.findall(query.lower()):
        stems = DEFAULT_TOKENIZER(word)
        if stems and word not in REQUEST_WORDS:
            seen.setdefault(stems[0], word)
    return list(seen.values())


def check_query(query: str, term_scores: Callable[[str], np.ndarray], *, collection: str, language: str | None,
                floor: float = MATCH_FLOOR) -> QueryCheck:
    """Check ``query`` against a collection named ``collection`` whose language is ``language``
    (:func:`collection_language`). ``term_scores(word)`` gives every document's BM25 score for one word of the
    query (:func:`query_terms`); a dense retriever's similarities are never 0, so the check takes lexical ones
    whatever retriever ranks. ``matching`` counts the documents holding two of the terms (the one term of a
    one-term query).

    >>> def scores(word):  # three documents: d0 holds "bake", d1 "bread"
    ...     return np.array({"bake": [4.2, 0, 0], "bread": [0, 4.1, 0]}.get(word, [0, 0, 0]))
    >>> check_query("how do I bake bread", scores, collection="running-shoes", language="en").messages()
    ["No document matches 'how do I bake bread' in running-shoes: the grid shows the least bad matches."]
    >>> check_query("Wie backe ich ein Brot?", lambda w: np.ones(3), collection="shoes", language="en").messages()
    ['This collection is English; your query looks German.']
    """
    terms = query_terms(query)
    held = sum((np.asarray(term_scores(term), dtype=float) > floor).astype(int) for term in terms)
    matching = int(np.count_nonzero(np.asarray(held) >= min(2, len(terms)))) if terms else 0
    return QueryCheck(query=query.strip(), collection=collection, matching=matching,
                      query_language=guess_language(query), collection_language=language)
