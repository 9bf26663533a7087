"""When a retrieved document counts as cited: the decision rule on top of the NLI judge's probabilities.

Kim & Diaz (2025), §3.3.3: NLI(d, ŷ) = 1 when document d entails the answer ŷ; the paper takes the NLI model's
most probable class. On answers that small generators actually write, that rule cites too much: a vague
answer ("shoes designed to support the demands of running") is "supported" by every on-topic document, which
inflates EAR and makes citations meaningless. The policy here makes three changes, each a setting:

* ``per_claim`` — the answer is split into claims (sentences); a document is cited when it entails at least
  one claim, so a two-sentence answer built from two documents credits both;
* ``threshold`` — P(entailment) must reach τ (instead of being the largest of the three classes);
* ``skip_degenerate`` — a degenerate answer (:mod:`fairrag_core.rag.degenerate`: empty, an echo of the question,
  a loop, a cut fragment, a pointer at "the documents") cites nothing: the judge readily calls a restated
  question "supported";
* ``control_margin`` — specificity: the claim must be supported by the document clearly more than by a
  *control* document, an on-topic candidate from the bottom of the retrieved pool that the generator did not
  see: P(d ⊨ c) − P(control ⊨ c) ≥ δ. A claim that any on-topic text "supports" cites nothing.

τ and δ are chosen on a training split of ``tests/data/nli_generated.jsonl`` (real generated answers labelled
by reading; ``benchmarks/bench_judge.py``) and stored with every run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidParameterError
from ..settings import Settings

__all__ = ["CitationPolicy", "split_claims", "cited"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(\[]?[A-Z0-9])")
_CITATION_MARK = re.compile(r"\s*\[\d+(?:\s*[,–-]\s*\d+)*\]")
_ABBREVIATION = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Prof|St|Mt|No|vs|etc|e\.g|i\.e|approx|Jr|Sr)\.$", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class CitationPolicy(Settings):
    """The citation rule. Defaults reproduce the paper: whole answer, most probable class, no control."""

    per_claim: bool = False
    threshold: float | None = None  # None: entailment must be the most probable class
    control_margin: float | None = None  # None: no specificity check
    skip_degenerate: bool = False

    @property
    def needs_control(self) -> bool:
        return self.control_margin is not None


def split_claims(answer: str, *, max_claims: int = 4) -> list[str]:
    """The sentences of ``answer`` (citation marks like ``[2]`` removed), at most ``max_claims`` (the rest are
    joined to the last); an answer without sentence breaks is one claim.

    >>> split_claims("The Glide suits flat feet [2]. It has a medial post. Try it on.")
    ['The Glide suits flat feet.', 'It has a medial post.', 'Try it on.']
    """
    text = _CITATION_MARK.sub("", answer).strip()
    parts: list[str] = []
    for piece in (p.strip() for p in _SENTENCE_END.split(text)):
        if piece and parts and _ABBREVIATION.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {piece}"  # "Dr. Ortiz" is one sentence
        elif piece:
            parts.append(piece)
    if len(parts) > max_claims:
        parts = parts[: max_claims - 1] + [" ".join(parts[max_claims - 1 :])]
    return parts or [text]


def cited(document: np.ndarray, policy: CitationPolicy, control: np.ndarray | None = None) -> bool:
    """Whether a document is cited, from its class probabilities per claim.

    Args:
        document: ``(claims, 3)`` probabilities of entailment, neutral, contradiction for each claim.
        policy: the rule.
        control: ``(claims,)`` P(entailment) of each claim given the control document (needed when the policy
            has a ``control_margin``).

    >>> cited(np.array([[0.6, 0.3, 0.1]]), CitationPolicy())
    True
    >>> cited(np.array([[0.6, 0.3, 0.1]]), CitationPolicy(threshold=0.7))
    False
    >>> cited(np.array([[0.9, 0.1, 0.0]]), CitationPolicy(control_margin=0.2), control=np.array([0.8]))
    False
    """
    rows = np.atleast_2d(np.asarray(document, dtype=float))
    entail = rows[:, 0]
    ok = entail >= policy.threshold if policy.threshold is not None else rows.argmax(axis=1) == 0
    if policy.control_margin is not None:
        if control is None:
            raise InvalidParameterError("this citation policy compares with a control document; pass its "
                                        "probabilities as control=")
        ok &= entail - np.asarray(control, dtype=float) >= policy.control_margin
    return bool(ok.any())
