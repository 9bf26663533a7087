"""When a retrieved document counts as cited: the decision rule on top of the NLI judge's probabilities.

Kim & Diaz (2025), §3.3.3: NLI(d, ŷ) = 1 when document d entails the answer ŷ; the paper takes the NLI model's
most probable class. On answers that small generators actually write, that rule cites too much: a vague
answer ("shoes designed to support the demands of running") is "supported" by every on-topic document, which
inflates EAR and makes citations meaningless. The policy here makes three changes, each a setting:

* ``per_claim`` — the answer is split into claims (sentences); a document is cited when it entails at least
  one claim, so a two-sentence answer built from two documents credits both;
* ``entail_threshold`` — P(entailment) must reach τ (instead of being the largest of the three classes);
* ``skip_degenerate`` — a degenerate answer (:mod:`fairrag_core.rag.degenerate`: empty, an echo of the question,
  a loop, a cut fragment, a pointer at "the documents") cites nothing: the judge readily calls a restated
  question "supported";
* ``control_margin`` — specificity: the claim must be supported by the document clearly more than by a
  *control* document, an on-topic candidate from the bottom of the retrieved pool that the generator did not
  see: P(d ⊨ c) − P(control ⊨ c) ≥ δ. A claim that any on-topic text "supports" cites nothing.
* ``min_support`` — lexical support: the share of the claim's own content words (stemmed, stop words and the
  question's words removed) that occur in the document must reach σ (:func:`lexical_support`). On real answers
  the 1.5B judge calls an answer "supported" by a document that is about the right product or person but does
  not state what the answer says; a claim whose specific words the document does not contain is not cited,
  and is not even sent to the judge (most pairs of a list fail it, which makes citation checks several times
  faster). A claim with no words of its own (a restated question) has support 0.

τ, δ and σ are chosen on a training split of ``tests/data/nli_generated.jsonl`` (real generated answers labelled
by reading; ``benchmarks/bench_judge.py``) and stored with every run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InvalidParameterError
from ..option_types import optional_float
from ..options import Kind, option
from ..settings import Settings
from ..text import DEFAULT_TOKENIZER

__all__ = ["CitationPolicy", "CITATION_FIELDS", "split_claims", "cited", "lexical_support"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(\[]?[A-Z0-9])")
_CITATION_MARK = re.compile(r"\s*\[\d+(?:\s*[,–-]\s*\d+)*\]")
_ABBREVIATION = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Prof|St|Mt|No|vs|etc|e\.g|i\.e|approx|Jr|Sr)\.$", re.IGNORECASE)


#: The fields of the citation rule, as a run's settings store them and the CLI names them (``--per-claim`` …).
CITATION_FIELDS = ("per_claim", "entail_threshold", "control_margin", "skip_degenerate", "min_support")


@dataclass(frozen=True, kw_only=True)
class CitationPolicy(Settings):
    """The citation rule — the one type for it: a preset's rule, a run's stored settings (every config that cites,
    :class:`~fairrag_core.rag.pipeline.RagConfig`, the sweeps' and the log audit's, *is* a citation policy by
    inheritance) and what :func:`cited` and :func:`~fairrag_core.rag.judging.judge_answers` apply.

    Defaults reproduce the paper: the whole answer, entailment the most probable class, no control, no lexical
    check, degenerate answers judged like any other.
    """

    # the command line's defaults are the app's fitted rule (cli.common binds them); a command always prints the rule
    per_claim: bool = option("--per-claim", kind=Kind.TOGGLE, default=False, group="citation", always=True,
                             help="judge each sentence of an answer; a document is cited when it entails one")
    entail_threshold: float | None = option(  # None: entailment must be the most probable class
        "--entail-threshold", default=None, parse=optional_float, group="citation", always=True,
        help="cite when P(entailment) reaches this ('none': entailment is the most likely class, as in the paper)")
    control_margin: float | None = option(  # None: no specificity check
        "--control-margin", default=None, parse=optional_float, group="citation", always=True,
        help="cite only when P(entailment) beats an unseen on-topic control document by this much ('none': no "
             "control document)")
    skip_degenerate: bool = option(
        "--skip-degenerate", kind=Kind.TOGGLE, default=False, group="citation", always=True,
        help="a degenerate answer (empty, echo, loop, cut, pointing at the documents) cites nothing")
    min_support: float | None = option(  # None: no lexical-support check
        "--min-support", default=None, parse=optional_float, group="citation", always=True,
        help="cite only when this share of the answer's own words (not the question's) occurs in the document "
             "('none': no lexical check)")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("entail_threshold", "min_support"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1):
                raise InvalidParameterError(f"{name} must be a number in [0, 1] or None (got {value!r})")
        margin = self.control_margin
        if margin is not None and not (isinstance(margin, int | float) and math.isfinite(margin) and -1 <= margin <= 1):
            raise InvalidParameterError(f"control_margin must be a number in [-1, 1] or None (got {margin!r})")

    @property
    def citation_policy(self) -> CitationPolicy:
        """The rule alone (a config's citation fields, without its other settings)."""
        return CitationPolicy(**self.citation_fields())

    def citation_fields(self) -> dict[str, object]:
        """The rule's fields, to build another config with the same rule (``RagConfig(..., **p.citation_fields())``).

        >>> CitationPolicy(min_support=0.7).citation_fields()["min_support"]
        0.7
        """
        return {name: getattr(self, name) for name in CITATION_FIELDS}

    @property
    def needs_control(self) -> bool:
        return self.control_margin is not None

    @property
    def needs_support(self) -> bool:
        return self.min_support is not None

    def supported(self, support: float) -> bool:
        """Whether a claim with this lexical support may be cited at all (always, without ``min_support``)."""
        return self.min_support is None or support >= self.min_support


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


def lexical_support(claim: str, document: str, question: str = "") -> float:
    """The share of the claim's own content words that occur in ``document``.

    Own content words: the claim's word stems (:data:`~fairrag_core.text.DEFAULT_TOKENIZER`: lower case, English
    stop words removed, Snowball stems) that are not in ``question``, counted once each. A claim with none
    (it only restates the question) has support 0: it says nothing a document could be credited for.

    >>> lexical_support("The Kestrel Spark suits a first marathon.", "Kestrel Spark: a cushioned trainer.",
    ...                 "best shoes for a first marathon")
    0.6666666666666666
    >>> lexical_support("Best shoes for a first marathon.", "anything", "best shoes for a first marathon")
    0.0
    """
    own = _stems(claim) - _stems(question)
    if not own:
        return 0.0
    return len(own & _stems(document)) / len(own)


@lru_cache(maxsize=4096)
def _stems(text: str) -> frozenset[str]:
    # one tokenisation per text: a run checks each retrieved document against many answers (and each answer
    # against its k documents), so documents and questions repeat
    return frozenset(DEFAULT_TOKENIZER(text))


def cited(document: np.ndarray, policy: CitationPolicy, control: np.ndarray | None = None,
          support: np.ndarray | None = None) -> bool:
    """Whether a document is cited, from its class probabilities per claim.

    Args:
        document: ``(claims, 3)`` probabilities of entailment, neutral, contradiction for each claim.
        policy: the rule.
        control: ``(claims,)`` P(entailment) of each claim given the control document (needed when the policy
            has a ``control_margin``).
        support: ``(claims,)`` lexical support of each claim in the document (:func:`lexical_support`; needed
            when the policy has a ``min_support``).

    >>> cited(np.array([[0.6, 0.3, 0.1]]), CitationPolicy())
    True
    >>> cited(np.array([[0.6, 0.3, 0.1]]), CitationPolicy(entail_threshold=0.7))
    False
    >>> cited(np.array([[0.9, 0.1, 0.0]]), CitationPolicy(control_margin=0.2), control=np.array([0.8]))
    False
    >>> cited(np.array([[0.9, 0.1, 0.0]]), CitationPolicy(min_support=0.7), support=np.array([0.5]))
    False
    """
    rows = np.atleast_2d(np.asarray(document, dtype=float))
    entail = rows[:, 0]
    ok = entail >= policy.entail_threshold if policy.entail_threshold is not None else rows.argmax(axis=1) == 0
    if policy.control_margin is not None:
        if control is None:
            raise InvalidParameterError("this citation policy compares with a control document; pass its "
                                        "probabilities as control=")
        ok &= entail - np.asarray(control, dtype=float) >= policy.control_margin
    if policy.min_support is not None:
        if support is None:
            raise InvalidParameterError("this citation policy checks lexical support; pass each claim's "
                                        "lexical_support as support=")
        ok &= np.asarray(support, dtype=float) >= policy.min_support
    # an unjudged claim (NaN: it failed the support check before the judge was asked) is never cited
    return bool((ok & ~np.isnan(entail)).any())
