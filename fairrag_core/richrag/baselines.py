"""Ranked lists of a RichRAG pool without a trained ranker: relevance, MMR, per-aspect round robin, greedy oracle.

The baselines of Wang et al.'s Table 3 that need no training, on a :class:`~.pool.Pool` (positions are 0-based pool
positions, i.e. rows of φ):

* ``relevance`` — the pool sorted by the retriever's score for the query alone (BM25 or dense; ties: pool order);
* ``mmr`` — Maximal Marginal Relevance, λ = 0.5, TF-IDF cosine (Carbonell & Goldstein 1998;
  :func:`~fairrag_core.ranking.rerank.mmr`);
* ``round-robin`` — per-aspect round robin (:func:`round_robin`): aspect 1's best pooled document not yet listed,
  then aspect 2's, …; the simplest coverage-aware list, the idea RAG-Fusion's reciprocal-rank fusion smooths;
* ``oracle`` — the greedy silver list on the true φ (Eq. 8): it reads the sub-answers, so it is an upper bound.

:func:`pool_lists` builds all of them for one pool; :func:`ranker_list` adds the trained list-wise ranker
(``richrag/ranker.py``) when one is installed, and says why not otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checks import check_k
from ..errors import InvalidParameterError, ModelUnavailableError
from ..ranking.rerank import mmr, tfidf_cosine
from .coverage import greedy_coverage

__all__ = ["round_robin", "relevance_list", "mmr_list", "oracle_list", "pool_lists", "ranker_list", "BASELINES"]

#: The names of the lists, in the order they are shown.
BASELINES: tuple[str, ...] = ("relevance", "mmr", "round-robin", "oracle")


def round_robin(ranks: np.ndarray, k: int) -> list[int]:
    """Per-aspect round robin over a pool's ``ranks`` (``(M, n_aspects)``, 1-based, 0 = not retrieved).

    Aspects take turns in their order; each adds its best-ranked pooled document not listed yet. When every
    aspect's documents are used up, the rest of the pool follows in pool order.

    >>> round_robin(np.array([[1, 1], [2, 0], [0, 2]]), 3)  # aspect 2's best (row 0) is taken: it adds row 2
    [0, 2, 1]
    """
    ranks = np.asarray(ranks)
    if ranks.ndim != 2:
        raise InvalidParameterError(f"ranks must be (n_documents, n_aspects), got shape {ranks.shape}")
    k = check_k(k, ranks.shape[0])
    queues = [[int(j) for j in np.argsort(np.where(col > 0, col, np.iinfo(np.int64).max), kind="stable")
               if col[j] > 0] for col in ranks.T]
    picked: list[int] = []
    seen: set[int] = set()
    while len(picked) < k and any(queues):
        for queue in queues:
            while queue and queue[0] in seen:
                queue.pop(0)
            if queue and len(picked) < k:
                seen.add(queue[0])
                picked.append(queue.pop(0))
    rest = [j for j in range(ranks.shape[0]) if j not in seen]
    return picked + rest[: k - len(picked)]


def relevance_list(scores: Sequence[float], k: int) -> list[int]:
    """Positions sorted by score, best first (ties: lower position first).

    >>> relevance_list([0.2, 0.9, 0.9, 0.1], 3)
    [1, 2, 0]
    """
    arr = np.asarray(scores, dtype=np.float64)
    return np.argsort(-arr, kind="stable")[: check_k(k, arr.size)].tolist()


def mmr_list(scores: Sequence[float], texts: Sequence[str], k: int, *, lambda_: float = 0.5) -> list[int]:
    """MMR over ``scores`` with TF-IDF cosine between ``texts`` (λ = 0.5)."""
    arr = np.asarray(scores, dtype=np.float64)
    return mmr(arr, tfidf_cosine(list(texts)), check_k(k, arr.size), lambda_=lambda_).tolist()


def oracle_list(phi: np.ndarray, k: int) -> list[int]:
    """The greedy silver list (Eq. 8) on the true φ: an upper bound."""
    return greedy_coverage(phi, k)


def pool_lists(pool, query_scores: Sequence[float], texts: Sequence[str], k: int, *,
               phi: np.ndarray | None = None) -> dict[str, list[int]]:
    """Every baseline's top-k pool positions for one :class:`~.pool.Pool` (``oracle`` only when ``phi`` is given).

    ``query_scores``: the retriever's score of each *pool* document for the query alone; ``texts``: the pooled
    documents' texts (for MMR's similarity). ``k`` is clipped to the pool's size.
    """
    scores = np.asarray(query_scores, dtype=np.float64)
    if scores.shape != (len(pool),) or len(texts) != len(pool):
        raise InvalidParameterError(f"give one score and one text per pooled document ({len(pool)}), got "
                                    f"{scores.shape[0] if scores.ndim else 0} scores and {len(texts)} texts")
    k = min(check_k(k), len(pool))
    out = {"relevance": relevance_list(scores, k), "mmr": mmr_list(scores, texts, k),
           "round-robin": round_robin(pool.ranks, k) if pool.ranks.shape[1] else relevance_list(scores, k)}
    if phi is not None:
        out["oracle"] = oracle_list(phi, k)
    return out


def ranker_list(pool, texts: Sequence[str], k: int, *, stage: str = "dpo") -> tuple[list[int] | None, str]:
    """The trained list-wise ranker's top k for ``pool`` (its shipped weights), or ``(None, why)`` when there is none.

    ``texts``: the pooled documents' texts (``title. text``, as the ranker was trained on).
    """
    try:
        from .ranker import load_ranker

        ranker = load_ranker(stage=stage)
    except (ImportError, ModelUnavailableError, FileNotFoundError, InvalidParameterError) as err:
        return None, f"no trained ranker ({stage}): {err}"
    ranking = ranker.rank(pool.query, pool.aspects, list(texts), [pool.aspects_of(j) for j in range(len(pool))],
                          min(check_k(k), len(pool)), aspect_ranks=pool.ranks)
    return [int(j) for j in ranking], ranker.name
