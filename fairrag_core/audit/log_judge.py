"""The judge step of the log audit (:func:`~fairrag_core.audit.rag_log.audit_served`): each line's answer judged
against the documents it was shown, under the citation rule — the Playground's judging step
(:func:`~fairrag_core.rag.judging.judge_answers`), so "entailed per the judge" means the same everywhere.

Split in two so that a backend can judge without the audit running twice: :func:`planned_pairs` lists the distinct
(document, claim, question) the judge will be asked, asking no model; a backend judges them in chunks; and
:func:`judge_verdicts` turns the judgements (of the NLI judge, or the backend's served as one) into the ``(lines, k)``
verdicts, once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..rag.attribution import Attributor
from ..rag.citations import CitationPolicy
from ..rag.degenerate import answer_flags
from ..rag.judging import JudgeItem, judge_answers

if TYPE_CHECKING:
    from ..data import Collection, Document
    from ..data.rag_log import RagLog

__all__ = ["Pair", "judge_items", "planned_pairs", "judge_verdicts"]

Pair = tuple[str, str, str | None]  # (document text, claim, question or None): one question to the judge
_BATCH = 8  # claims per attributor call


def judge_items(log: RagLog, collection: Collection, slots: np.ndarray, policy: CitationPolicy
                ) -> tuple[JudgeItem, ...]:
    """One item per line: its answer, its top-k ``slots``' documents, the line's query (else the collection's) as the
    question and the judge's context; a degenerate answer is not judged when the rule ``policy`` skips it."""
    texts = {x.query_id: x.text for x in collection.queries}
    items = []
    for i, entry in enumerate(log.entries):
        question = entry.query or texts.get(entry.query_id) or ""
        skip = bool(entry.answer) and policy.skip_degenerate and bool(answer_flags(entry.answer, question=question))
        items.append(JudgeItem(entry.answer or "", tuple(int(p) for p in slots[i]), question=question,
                               context=question or None, skip=skip))
    return tuple(items)


class _Recorder(Attributor):
    """Asks nothing: records every pair it is asked and calls it neutral (:func:`planned_pairs`)."""

    name = "plan"

    def __init__(self) -> None:
        super().__init__()
        self.disk = None
        self.asked: list[Pair] = []

    def _class_probabilities(self, premises, hypotheses, contexts):
        self.asked.extend(zip(premises, hypotheses, contexts))
        return np.tile([0.0, 1.0, 0.0], (len(premises), 1))


def planned_pairs(documents: Sequence[Document], items: Sequence[JudgeItem], policy: CitationPolicy) -> list[Pair]:
    """The distinct pairs :func:`judge_verdicts` will ask the judge about, in its order (grouped by document): the
    judging step run with a stand-in that records its questions and asks no model (no exposure is computed)."""
    recorder = _Recorder()
    judge_answers(recorder, documents, items, policy, batch=_BATCH)
    return list(dict.fromkeys(recorder.asked))


def judge_verdicts(attributor: Attributor, documents: Sequence[Document], items: Sequence[JudgeItem],
                   policy: CitationPolicy, k: int, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """The slow step: ``(lines, k)`` verdicts, the slot's document supports the line's answer under the citation
    rule ``policy``. ``attributor`` is the NLI judge, or a backend's judgements of :func:`planned_pairs` served as
    one; ``progress(done, total)`` runs over the distinct pairs judged."""
    verdicts = judge_answers(attributor, documents, items, policy, batch=_BATCH, progress=progress)
    return np.array([[v.cited for v in row] for row in verdicts], dtype=bool).reshape(len(items), k)
