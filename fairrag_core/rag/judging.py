"""The one judging step: which of the documents an answer was shown does it rest on, under the citation rule.

Kim & Diaz (2025), §3.3.3: NLI(d, ŷ) = 1 when document d (premise) entails the answer ŷ (hypothesis), optionally
with the question as context. The decision on top of the judge's probabilities is the citation rule
(:class:`~fairrag_core.rag.citations.CitationPolicy`: claims, threshold, control margin, lexical support,
degenerate answers). The Playground's pipeline (one query, its distinct sampled lists) and the audit of a served
log (many queries, one line each) both judge through :func:`judge_answers`, so "cited" means the same everywhere.

Cost: the judge is the slow step, so every (document, claim, context) is asked once — a log repeats its answers —
and the claims about one document go to the judge together (the LLM judge shares the document's prompt prefix).
A claim is sent only for documents that hold enough of its words under a ``min_support`` rule, and to the control
document only when some shown document was asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..data import Document
from .attribution import Attributor
from .citations import CitationPolicy, cited, lexical_support, split_claims

__all__ = ["JudgeItem", "Verdict", "judge_answers"]


@dataclass(frozen=True)
class JudgeItem:
    """One answer to judge: its text, the documents it was shown (positions into the ``documents`` passed to
    :func:`judge_answers`; ``-1`` for an empty slot), the question (its words do not count as support; it is the
    judge's context when ``context`` is set), an optional control document (the rule's ``control_margin``), and
    ``skip`` for an answer that cites nothing by rule (degenerate, under ``skip_degenerate``)."""

    answer: str
    documents: tuple[int, ...]
    question: str = ""
    context: str | None = None
    control: int | None = None
    skip: bool = False


@dataclass(frozen=True)
class Verdict:
    """One shown document's verdict: cited or not, the largest P(entailment) over the answer's claims (NaN when no
    claim was judged) and the largest lexical support."""

    cited: bool
    p_entail: float
    support: float


_NOT_CITED = Verdict(False, float("nan"), 0.0)


def judge_answers(attributor: Attributor, documents: Sequence[Document], items: Sequence[JudgeItem],
                  policy: CitationPolicy, *, batch: int | None = None, tick: Callable[[], None] | None = None,
                  progress: Callable[[int, int], None] | None = None) -> list[list[Verdict]]:
    """The verdict of every shown document of every item, in slot order.

    Args:
        attributor: the NLI judge (its answers are cached on disk by the attributor).
        documents: the documents the items' positions point into.
        items: the answers with what they were shown.
        policy: the citation rule.
        batch: at most this many claims per attributor call (None: all the claims about a document at once).
        tick: called before every attributor call (raise from it to stop; finished calls stay cached).
        progress: ``progress(done, total)`` over the distinct (document, claim, context) triples judged.
    """
    claims = [[] if item.skip or not item.answer else split_claims(item.answer) if policy.per_claim
              else [item.answer] for item in items]
    support: dict[tuple[int, int, int], float] = {}
    asked: dict[int, dict[tuple[str, str | None], list[tuple[int, int, int]]]] = {}  # doc → (claim, ctx) → slots
    for i, item in enumerate(items):
        for j, p in enumerate(item.documents):
            if p < 0:
                continue
            for c, claim in enumerate(claims[i]):
                share = support[(i, j, c)] = lexical_support(claim, documents[p].full_text, item.question)
                if policy.supported(share):
                    asked.setdefault(p, {}).setdefault((claim, item.context), []).append((i, j, c))
    controls: dict[int, dict[tuple[str, str | None], list[tuple[int, int]]]] = {}
    if policy.needs_control:
        judged_claims = {(i, c) for by_claim in asked.values() for slots in by_claim.values() for i, _, c in slots}
        for i, item in enumerate(items):
            if item.control is not None:
                for c, claim in enumerate(claims[i]):
                    if (i, c) in judged_claims:
                        controls.setdefault(item.control, {}).setdefault((claim, item.context), []).append((i, c))
    total = sum(len(v) for v in asked.values()) + sum(len(v) for v in controls.values())
    done = 0
    if progress is not None:
        progress(0, total)
    rows_of: dict[tuple[int, int, int], np.ndarray] = {}
    control_of: dict[tuple[int, int], float] = {}
    for calls, store in ((asked, rows_of), (controls, control_of)):
        for p, by_claim in calls.items():
            keys = list(by_claim)
            step = batch or len(keys)
            for start in range(0, len(keys), step):
                part = keys[start:start + step]
                if tick is not None:
                    tick()
                contexts = [ctx for _, ctx in part]
                rows = attributor.class_probabilities([documents[p].full_text] * len(part), [c for c, _ in part],
                                                      contexts=None if all(c is None for c in contexts) else contexts)
                for key, row in zip(part, rows):
                    for slot in by_claim[key]:
                        store[slot] = row if store is rows_of else float(row[0])
                done += len(part)
                if progress is not None:
                    progress(done, total)
    unjudged = np.full(3, np.nan)
    out: list[list[Verdict]] = []
    for i, item in enumerate(items):
        if not claims[i]:  # skipped, or no answer: nothing to cite
            out.append([_NOT_CITED] * len(item.documents))
            continue
        control = np.array([control_of.get((i, c), 0.0) for c in range(len(claims[i]))])
        verdicts = []
        for j, p in enumerate(item.documents):
            if p < 0:
                verdicts.append(_NOT_CITED)
                continue
            block = np.stack([rows_of.get((i, j, c), unjudged) for c in range(len(claims[i]))])
            shares = np.array([support[(i, j, c)] for c in range(len(claims[i]))])
            judged = block[~np.isnan(block[:, 0]), 0]
            verdicts.append(Verdict(cited(block, policy, control, shares),
                                    float(judged.max()) if judged.size else float("nan"), float(shares.max())))
        out.append(verdicts)
    return out
