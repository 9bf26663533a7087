"""Tokenisation shared by BM25 and the lexical metrics: lower-case words, English stop words, Snowball stems; and
sizes in words (:func:`human_bytes`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

__all__ = ["Tokenizer", "DEFAULT_TOKENIZER", "ENGLISH_STOP_WORDS", "human_bytes"]

_WORD = re.compile(r"[0-9a-zà-ÿ]+(?:['’][a-z]+)?")

#: A compact English stop list (function words only, so that content words like "best" still count).
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t""".split()
)

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


@dataclass(frozen=True)
class Tokenizer:
    """Callable text → tokens. Frozen so it can key caches; the defaults suit English prose."""

    lowercase: bool = True
    stop_words: bool = True
    stem: bool = True

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        words = _WORD.findall(text)
        words = [w.replace("’", "'").split("'")[0] for w in words]
        if self.stop_words:
            words = [w for w in words if w not in ENGLISH_STOP_WORDS]
        if self.stem:
            words = [_stem(w) for w in words]
        return [w for w in words if w]


DEFAULT_TOKENIZER = Tokenizer()


def human_bytes(size: int | float) -> str:
    """A size in bytes as people read it, in SI units (1 kB = 1000 bytes) with two or three significant digits: a
    few kB never reads as "0.0 MB".

    >>> human_bytes(0), human_bytes(812), human_bytes(48_213), human_bytes(1_234_567), human_bytes(16.6e9)
    ('0 bytes', '812 bytes', '48 kB', '1.2 MB', '17 GB')
    """
    size = float(size)
    if size < 1000:
        return f"{size:.0f} bytes"
    for unit in ("kB", "MB", "GB", "TB"):
        size /= 1000
        if size < 999.5 or unit == "TB":
            return f"{size:.1f} {unit}" if size < 9.95 else f"{size:.0f} {unit}"
    raise AssertionError("unreachable")
