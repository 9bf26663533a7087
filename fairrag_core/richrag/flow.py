"""One query through RichRAG's retrieval side: aspects → pool → ranked lists with NCOM (the CLI and the page).

:func:`rich_rank` builds the pool for the given aspects (:mod:`.pool`), ranks it with every baseline
(:mod:`.baselines`) and, when one is installed, the trained list-wise ranker, and scores each list with NCOM@k.
Coverage is always measured against the **collection's sub-answers** of the query (as the paper evaluates
predicted sub-aspects against the golden sub-answers, §4.3): the aspects that drove retrieval may come from the
user or the LLM, the yardstick does not. A query the collection does not hold has no sub-answers, hence no φ, no
oracle and no NCOM (the result says so in ``notes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import check_k
from ..data import Collection, Document
from ..retrieval import Retriever
from .aspects import AspectSet
from .baselines import pool_lists, ranker_list
from .coverage import coverage_matrix, ncom
from .pool import Pool, PoolSettings, build_pool
from .rouge import RougeVariant

__all__ = ["RichRanking", "rich_rank"]


@dataclass(frozen=True)
class RichRanking:
    """A pool, its ranked lists (pool positions) and their NCOM@k; ``phi`` is (pool, gold aspects) or None."""

    query: str
    query_id: str | None
    aspects: AspectSet
    pool: Pool
    documents: tuple[Document, ...]
    gold_aspects: tuple[str, ...]
    sub_answers: tuple[str, ...]
    phi: np.ndarray | None
    k: int
    lists: dict[str, list[int]]
    ncom: dict[str, float]
    notes: tuple[str, ...]

    def ranked_documents(self, name: str) -> list[Document]:
        """The documents of list ``name``, best first."""
        return [self.documents[j] for j in self.lists[name]]

    def to_dict(self) -> dict:
        """JSON-ready summary (doc ids, s(d), NCOM) for ``--json``."""
        return {
            "query": self.query, "query_id": self.query_id, "aspects": list(self.aspects.aspects),
            "aspect_source": self.aspects.source.value, "aspect_note": self.aspects.note, "k": self.k,
            "pool": [{"doc_id": d.doc_id, "aspects": list(self.pool.aspects_of(j)),
                      "ranks": self.pool.ranks[j].tolist()} for j, d in enumerate(self.documents)],
            "pool_settings": self.pool.settings.to_dict(),
            "gold_aspects": list(self.gold_aspects),
            "lists": {name: [self.documents[j].doc_id for j in ranking] for name, ranking in self.lists.items()},
            "ncom": self.ncom, "notes": list(self.notes),
        }


def rich_rank(collection: Collection, retriever: Retriever, aspects: AspectSet, *, k: int = 5,
              settings: PoolSettings | None = None, ranker_stages: Sequence[str] = ("dpo",),
              variant: RougeVariant | str = RougeVariant.RELEASED) -> RichRanking:
    """Pool, rank and score one query (``aspects.query``) whose aspects were found already."""
    k = check_k(k)
    pool = build_pool(retriever, aspects.query, aspects.aspects, settings or PoolSettings())
    documents = tuple(collection.documents[int(i)] for i in pool.indices)
    texts = [d.full_text for d in documents]
    known = collection.find_query(aspects.query)
    notes = []
    gold = tuple(a.aspect for a in known.aspects) if known is not None else ()
    subs = tuple(a.answer for a in known.aspects) if known is not None else ()
    phi = coverage_matrix(documents, subs, variant=variant) if subs and all(subs) else None
    if phi is None:
        notes.append("the collection has no sub-answers for this query: no coverage, oracle or NCOM")
    scores = np.asarray(retriever.score(aspects.query), dtype=np.float64)[pool.indices]
    lists = pool_lists(pool, scores, texts, k, phi=phi)
    for stage in ranker_stages:
        ranking, note = ranker_list(pool, texts, k, stage=stage)
        if ranking is None:
            notes.append(note)
        else:
            lists[f"ranker-{stage}"] = ranking
    scored = {name: ncom(phi, ranking) for name, ranking in lists.items()} if phi is not None else {}
    return RichRanking(aspects.query, known.query_id if known else None, aspects, pool, documents, gold, subs, phi,
                       min(k, len(pool)), lists, scored, tuple(notes))
