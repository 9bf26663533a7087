"""Every prompt RichRAG sends to a language model, in one place: the sub-aspect explorer and the rich answer.

* :func:`explorer_prompt` — the sub-aspect explorer's p_se (Wang et al. §3.2, Eq. 1). The paper fine-tunes
  Llama-2-7B-chat to answer in the format ``[s1] … [sn]`` (the aspects in square brackets, Eq. 2); we prompt an
  offline instruction model for the same format with one demonstration (on a topic the demo collections do not
  hold, so the demonstration cannot leak an answer) and parse the reply robustly (:mod:`.aspects`).
* :func:`rich_answer_prompt` — the generator's prompt for a long answer from the ranked list (§3.4.2: r = G(q, L)),
  asking for one paragraph per aspect and for the claims to rest on the numbered documents.

Document texts and the user's query are data inside the prompt: they are quoted after a label, never used as
instructions; the aspects and the query are flattened to one line each.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models.llm import ChatPrompt

__all__ = ["EXPLORER_SYSTEM", "EXPLORER_DEMO", "explorer_prompt", "ANSWER_SYSTEM", "rich_answer_prompt",
           "one_line"]

EXPLORER_SYSTEM = ("You find the sub-aspects of broad questions: the distinct angles a complete answer has to "
                   "cover. Reply with the aspects only, each in square brackets, on one line.")

#: One worked example of the format (a topic outside the demo collections).
EXPLORER_DEMO = ("Question: How do I choose a used car?\n"
                 "Aspects: [setting a budget] [checking the vehicle history] [test drive and inspection] "
                 "[negotiating the price]")


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (whitespace collapsed), at most ``limit`` characters.

    >>> one_line("How do I\\n  compost?")
    'How do I compost?'
    """
    return " ".join(str(text).split())[:limit]


def explorer_prompt(query: str, *, min_aspects: int = 3, max_aspects: int = 5) -> ChatPrompt:
    """The explorer's prompt: list ``min_aspects``–``max_aspects`` aspects of ``query`` as ``[s1] … [sn]``.

    >>> print(explorer_prompt("How do tides work?").user.splitlines()[-2])
    Question: How do tides work?
    """
    user = (f"List {min_aspects} to {max_aspects} distinct sub-aspects of the question, each a short phrase of "
            "2 to 6 words in square brackets. Do not answer the question.\n\n"
            f"{EXPLORER_DEMO}\n\n"
            f"Question: {one_line(query)}\n"
            "Aspects:")
    return ChatPrompt(EXPLORER_SYSTEM, user)


ANSWER_SYSTEM = ("You write complete, well-organised answers from the documents you are given. Use only facts "
                 "stated in the documents.")


def rich_answer_prompt(query: str, aspects: Sequence[str], documents: Sequence[tuple[str, str]]) -> ChatPrompt:
    """The generator's prompt for a rich answer: numbered documents ``[i] title: text``, then the aspects.

    ``documents`` are ``(title, text)`` pairs in ranked order. With aspects, the answer is asked to give one
    paragraph per aspect, in the order listed; without, a few paragraphs.

    >>> p = rich_answer_prompt("How do I compost?", ["greens and browns", "smells"], [("Bins", "Use a lid.")])
    >>> print(p.user)
    Documents:
    [1] Bins: Use a lid.
    <BLANKLINE>
    Question: How do I compost?
    Write one short paragraph for each of these aspects, in this order:
    1. greens and browns
    2. smells
    Separate the paragraphs with a blank line. Answer:
    """
    lines = ["Documents:"]
    for i, (title, text) in enumerate(documents, start=1):
        head = f"[{i}] {one_line(title, 120)}: " if title.strip() else f"[{i}] "
        lines.append(head + one_line(text, 1500))
    lines += ["", f"Question: {one_line(query)}"]
    if aspects:
        lines.append("Write one short paragraph for each of these aspects, in this order:")
        lines += [f"{i}. {one_line(a, 120)}" for i, a in enumerate(aspects, start=1)]
        lines.append("Separate the paragraphs with a blank line. Answer:")
    else:
        lines.append("Write a complete answer in a few short paragraphs separated by blank lines. Answer:")
    return ChatPrompt(ANSWER_SYSTEM, "\n".join(lines))
