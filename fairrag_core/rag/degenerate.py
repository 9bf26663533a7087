"""Degenerate answers: the outputs a reader would not call an answer at all, caught before they are averaged in.

Small generators fail in a few recognisable ways (seen on the demo collections with SmolLM2-135M):

* ``EMPTY`` — no content at all: punctuation, numbering ("1. 1. 2. 3."), or an announcement of an answer that
  never comes ("The answer is:", "The answer to the question … is:");
* ``ECHO`` — the prompt comes back instead of an answer: the question restated (every content word of the
  answer is in the question), a shown document's title given back, alone (:func:`repeats_title`) or as a
  phrase in a sentence (:func:`quotes_title`: "… are the Northmark at Sixty, which …"), the prompt's own
  scaffolding ("Question: …", "Documents:", "[1] …") or its instructions ("A few words or one sentence, no
  explanation." — seen from Qwen2.5-0.5B in the classroom tour), or a question instead of an answer (often a
  document's title copied: "Can You Run a Marathon Barefoot?");
* ``LOOP`` — a repetition loop: a run of six or more words said twice ("designed to help runners with flat
  feet, and it's designed to help runners with flat feet"), four words said three times, or a stutter (one to
  three words three times in a row);
* ``CUT`` — the generator ran into its token limit mid-sentence (finish reason ``length`` and no final
  punctuation);
* ``DEFERS`` — an answer that points at the documents instead of answering: a short one that sends the reader
  to them ("The bridge engineers are described in the first document", "Follow the instructions in each
  document"), or one of any length that names a document by its number in the prompt ("the ones described in
  Document [1], which is Velocore Forge", "Document 4", "[Doc 2]", "the document 3"): the reader never sees the
  prompt's numbering, so such an answer is not one they can use, however right (issue 31).

The checks are deliberately conservative (a short correct answer such as "Kestrel Rovers" is never flagged):
each flag names a failure a reader would agree with. Flagged answers are shown with their flags, counted in the
metrics (``degenerate_share``) and can be left out of EU and EAR.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["AnswerFlag", "answer_flags", "is_degenerate", "quotes_title", "repeats_title"]

_WORD = re.compile(r"[0-9a-zà-ÿ]+(?:['’][a-z]+)?")
_SCAFFOLD = re.compile(r"^\s*(?:question\s*:|documents?\s*:|\[\d+\]\s*\S)", re.IGNORECASE)
_EMPTY_PHRASES = re.compile(r"^\s*(?:the\s+)?(?:short\s+)?answer(?:\s+is)?\s*:?\s*$", re.IGNORECASE)
_ANNOUNCEMENT = re.compile(r":\s*$")  # "… is:" with nothing after it
_YES_NO = re.compile(r"^\s*(?:yes|no)\b", re.IGNORECASE)
# one number as the whole answer: a time "2:17:41", a rate "4.25 %", a year, "$1,200" (numbering such as
# "1. 2. 3." has spaces between its numbers and stays empty)
_NUMBER_ANSWER = re.compile(r"^\s*[$€£]?\d+(?:[:.,/]\d+)*\s*(?:%|percent)?\.?\s*$", re.IGNORECASE)
# a document named by its place in the prompt, in any spelling: "Document 4", "Document [1]", "document #2",
# "the document 3", "[Doc 2]", "doc. 5", "documents 1 and 3", "Document one"
_DOC_NUMBER = re.compile(r"\bdoc(?:ument)?s?\.?\s*(?:\[\s*\d+\s*\]|\(\s*\d+\s*\)|(?:no\.|#)?\s*\d+\b"
                         r"|(?:one|two|three|four|five|six|seven|eight|nine|ten)\b)", re.IGNORECASE)
_DEFERS = re.compile(r"\b(?:in|from|of|see|follow|read)\b[^.]{0,30}\b(?:the|each|all|both|these|those)\b[^.]{0,15}"
                     r"\bdocuments?\b", re.IGNORECASE)
# the words of the answering prompts' instructions ("Reply with the short answer only: a few words or one
# sentence, no explanation."; rag/generation.py): an answer mostly made of them gives the prompt back
# ("answer" itself is left out: "The answer is a few short, easy runs" is an answer)
_INSTRUCTION_WORDS = frozenset("reply short only few words one sentence no explanation".split())
# a numbered list with nothing after the numbers ("1. 1. 2. 3."): empty, unlike "300 to 500" or "40% by 2040"
_NUMBERING = re.compile(r"^\s*(?:\d+[.)]\s*)+$")
_NUMBER_WORDS = frozenset({"percent", "per", "cent"})
#: Numbers written as words: a headline echo that brings one the question lacks ("Nine countries sign …" for "How
#: many countries signed …?") answers the question.
_COUNTING_WORDS = frozenset("""zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
    thousand million billion dozen""".split())
_FUNCTION_WORDS = frozenset(
    """a an the is are was were be been being of in on at to for from by with and or but as that this these those
    it its what which who whom whose how why when where do does did can could should would will shall may might
    i you he she we they my your his her our their me him us them about into over than then so not""".split()
)


class AnswerFlag(str, enum.Enum):
    """Why an answer is degenerate."""

    EMPTY = "empty"
    ECHO = "echo"
    LOOP = "loop"
    CUT = "cut"
    DEFERS = "defers"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _repeats(words: list[str]) -> bool:
    """A loop: a run of six words said twice, or four words said three times. (A four-word phrase said twice is
    ordinary prose: "they should aim to run for 150 minutes … they should aim to run at least 3 days".)"""
    six = Counter(tuple(words[i : i + 6]) for i in range(len(words) - 5))
    four = Counter(tuple(words[i : i + 4]) for i in range(len(words) - 3))
    if any(count > 1 for count in six.values()) or any(count > 2 for count in four.values()):
        return True
    # a stutter: one to three words three times in a row ("Layla Haddad: Layla Haddad: Layla Haddad is …")
    return any(words[i : i + n] == words[i + n : i + 2 * n] == words[i + 2 * n : i + 3 * n]
               for n in (1, 2, 3) for i in range(len(words) - 3 * n + 1))


_TITLE_PARTS = re.compile(r"[:?!|—–]|\s-\s")
_ARTICLES = frozenset({"the", "a", "an"})


def names_a_product(part: str, brands: set[str]) -> bool:
    """Whether a title (or a part of one) is a product's or a person's name, which an answer may rightly say: after
    a leading article it has no function word, and it holds a digit or a word of a shown document's provider
    ("Stridewell Brace 4", "The Hollow Pine Homestead Trainer", "Layla Haddad") — unlike a title that only
    mentions its maker ("Northmark at Sixty", "The Northmark Rule for Retiring a Pair")."""
    words = _words(part)
    while words and words[0] in _ARTICLES:
        words = words[1:]
    return (bool(words) and not any(w in _FUNCTION_WORDS for w in words)
            and any(w.isdigit() or w in brands for w in words))


def _echoes(said: set[str], part: str, asked: set[str]) -> bool:
    """Every content word of the answer is in ``part`` or the question, and it holds ≥ 80 % of ``part``'s (≥ 3)."""
    named = {w for w in _words(part) if w not in _FUNCTION_WORDS}
    return len(named) >= 3 and said <= named | asked and len(said & named) >= 0.8 * len(named)


def repeats_title(answer: str, title: str, question: str = "", *, sources: Sequence[str] = ()) -> bool:
    """Whether ``answer`` gives a document's ``title`` back instead of answering: every content word of the answer
    is in the title or the question, and the answer holds at least 80 % of the title's content words (of at least
    three) — or the same of one part of the title (split at ``:``, ``?``, dashes) that names no product: a part with
    a digit or a name from ``sources`` (the shown documents' providers) is a product ("Stridewell Brace 4: Stability
    Trainer"), and a product named in a longer title ("Sprout Seedling" from "Sprout Seedling: Your First Real
    Running Shoe") is an answer, not an echo.

    >>> repeats_title("First Marathon? Here's Your Shoe, No Jargon", "First Marathon? Here's Your Shoe, No Jargon")
    True
    >>> repeats_title("Sprout Seedling", "Sprout Seedling: Your First Real Running Shoe")
    False
    >>> repeats_title("Fitting Wide Feet", "Fitting Wide Feet: A Wildmere Guide", sources=["Wildmere"])
    True
    >>> repeats_title("Stridewell Brace 4", "Stridewell Brace 4: Stability Trainer", sources=["Stridewell"])
    False
    >>> repeats_title("Ironbark Ridgeback WP", "Ironbark Ridgeback WP", sources=["Ironbark Outfitters"])
    False
    """
    said = {w for w in _words(answer) if w not in _FUNCTION_WORDS}
    if not said:
        return False
    asked = set(_words(question))
    brands = {w for name in sources for w in _words(name)}
    parts = [p for p in _TITLE_PARTS.split(title) if p.strip()]
    if _echoes(said, title, asked) and not (len(parts) == 1 and names_a_product(title, brands)):
        return True  # a title that is only a product's name ("Ironbark Ridgeback WP") is named, not echoed
    return len(parts) > 1 and any(_echoes(said, part, asked) for part in parts if not names_a_product(part, brands))


def quotes_title(answer: str, title: str, question: str = "", *, sources: Sequence[str] = ()) -> bool:
    """Whether ``answer`` says a shown document's ``title`` as a phrase in a sentence, as if the title were the
    answer: the whole title, or its head (the part before ``:``, ``?``, a dash), appears word for word (lower case,
    punctuation dropped) in the answer, is at least three words long after a leading article ("The Salt Road", a
    film's name, is two) with at least two content words, one of them not in the question, and is not a product's
    or person's name (:func:`names_a_product`: naming the product is the answer). A later part quoted as a
    description ("the Loam & Leaf Meadow, which is described as 'a gentler Marathon Trainer'") is not an echo:
    the answer named the product first.

    >>> quotes_title("The best shoes for a first marathon are the Northmark at Sixty, which is a short history.",
    ...              "Northmark at Sixty: A Short History", "best shoes for a first marathon", sources=["Northmark"])
    True
    >>> quotes_title("The Stridewell Cadence 9 is the best shoe.", "Stridewell Cadence 9: Neutral Daily Trainer",
    ...              sources=["Stridewell"])
    False
    >>> quotes_title("Home composting is easy.", "Home composting")  # two words: too common to call an echo
    False
    """
    said = _words(answer)
    asked = set(_words(question))
    brands = {w for name in sources for w in _words(name)}
    parts = [p for p in _TITLE_PARTS.split(title) if p.strip()]
    for phrase in dict.fromkeys([title, *parts[:1]]):
        words = _words(phrase)
        content = [w for w in words if w not in _FUNCTION_WORDS]
        long_enough = len(words) - (words[0] in _ARTICLES if words else 0) >= 3 and len(content) >= 2
        if not long_enough or set(content) <= asked or names_a_product(phrase, brands):
            continue
        if any(said[i : i + len(words)] == words for i in range(len(said) - len(words) + 1)):
            return True
    return False


def answer_flags(answer: str, *, question: str = "", finish_reason: str = "unknown",
                 titles: Sequence[str] = (), sources: Sequence[str] = ()) -> tuple[AnswerFlag, ...]:
    """The degenerate-answer flags of ``answer`` to ``question`` (empty tuple: a real answer); ``titles`` are the
    titles of the documents it was shown and ``sources`` their providers (an answer that repeats a title, or a part
    of one that names no product, is an echo: :func:`repeats_title`).

    >>> answer_flags("The answer is:")
    (<AnswerFlag.EMPTY: 'empty'>,)
    >>> [f.value for f in answer_flags("It is designed to help runners with flat feet and it is designed to help "
    ...                                "runners with flat feet", question="Which shoe for flat feet?")]
    ['loop']
    >>> answer_flags("Which shoe suits flat feet", question="Which shoe suits flat feet?")[0].value
    'echo'
    >>> answer_flags("Kestrel Rovers", question="Who won the cup final?")
    ()
    >>> answer_flags("2:17:41", question="What was the winning time?")
    ()
    >>> [f.value for f in answer_flags("A few words or one sentence, no explanation.", question="Best shoes?")]
    ['echo']
    >>> [f.value for f in answer_flags("First Marathon? Here's Your Shoe, No Jargon", question="best shoes for a first "
    ...                                "marathon", titles=["First Marathon? Here's Your Shoe, No Jargon"])]
    ['echo']
    >>> answer_flags("Nine countries signed the Coral Sea Trade Pact.", question="How many countries signed the "
    ...              "Coral Sea Trade Pact?", titles=["Nine countries sign Coral Sea Trade Pact"])
    ()
    """
    words = _words(answer)
    content = [w for w in words if w not in _FUNCTION_WORDS and not w.isdigit()]
    asked = set(_words(question))
    # a number the question does not contain is an answer ("… Isla Serena was 6.4."), not a restatement
    new_numbers = {w for w in words if w.isdigit()} - asked
    # numbers with only function words between them ("300 to 500", "40% by 2040", "120 000") answer too
    only_numbers = all(w.isdigit() or w in _FUNCTION_WORDS or w in _NUMBER_WORDS for w in words)
    a_number = bool(new_numbers) and (_NUMBER_ANSWER.match(answer) is not None
                                      or (only_numbers and _NUMBERING.match(answer) is None))
    announced = _ANNOUNCEMENT.search(answer) is not None and len(words) <= 15
    if (not content and not a_number) or _EMPTY_PHRASES.match(answer) or announced:
        return (AnswerFlag.EMPTY,)
    flags: list[AnswerFlag] = []
    restated = set(content) <= asked and not new_numbers and len(words) >= 3 and not _YES_NO.match(answer)
    said = set(content) - asked
    instructions = len(said & _INSTRUCTION_WORDS) >= 3 and 2 * len(said & _INSTRUCTION_WORDS) >= len(said)
    asks = answer.rstrip().endswith("?")
    # the question restated with only a number added answers it, even when a headline says the same ("Nine
    # countries signed the Coral Sea Trade Pact." for "How many countries signed …?")
    beyond = said | new_numbers  # every word the answer adds to the question
    counts = bool(beyond) and all(w.isdigit() or w in _COUNTING_WORDS or w in _NUMBER_WORDS for w in beyond)
    title_echo = not counts and any(title and (repeats_title(answer, title, question, sources=sources)
                                              or quotes_title(answer, title, question, sources=sources))
                                    for title in titles)
    if _SCAFFOLD.match(answer) or (question and restated) or instructions or asks or title_echo:
        flags.append(AnswerFlag.ECHO)
    if _repeats(words):
        flags.append(AnswerFlag.LOOP)
    if (len(words) <= 15 and _DEFERS.search(answer)) or _DOC_NUMBER.search(answer):
        flags.append(AnswerFlag.DEFERS)
    if finish_reason == "length" and not re.search(r"[.!?…)\]\"”']\s*$", answer):
        flags.append(AnswerFlag.CUT)
    return tuple(flags)


def is_degenerate(answer: str, *, question: str = "", finish_reason: str = "unknown") -> bool:
    """Whether :func:`answer_flags` finds anything."""
    return bool(answer_flags(answer, question=question, finish_reason=finish_reason))
