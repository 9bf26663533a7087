"""The multi-faceted retriever (RichRAG §3.3): top N per q ∘ s_i, merged, de-duplicated, capacity M, s(d)."""

import numpy as np
import pytest

import fairrag_core as fr
from fairrag_core import InvalidParameterError
from fairrag_core.retrieval.base import Retriever
from fairrag_core.richrag.pool import PoolSettings, aspect_query, build_pool


class TableRetriever(Retriever):
    """Scores looked up by query text; remembers the queries it was asked."""

    name = "table"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.asked: list[str] = []

    @property
    def n_docs(self) -> int:
        return len(next(iter(self.table.values())))

    def score(self, query: str) -> np.ndarray:
        self.asked.append(query)
        return np.array(self.table[query], dtype=float)


Q = "how to compost"
TABLE = {
    aspect_query(Q, "greens"): [9, 8, 1, 0, 0, 7],   # top 3: 0, 1, 5
    aspect_query(Q, "smells"): [0, 7, 9, 8, 0, 0],   # top 3: 2, 3, 1
    Q: [1, 2, 3, 4, 5, 6],
}


def test_each_aspect_is_retrieved_with_the_query_and_documents_are_kept_once_with_their_aspects():
    retriever = TableRetriever(TABLE)
    pool = build_pool(retriever, Q, ["greens", "smells"], PoolSettings(per_aspect=3, capacity=10))
    assert retriever.asked == ["how to compost greens", "how to compost smells"]
    # merge order: rank-1 documents (aspect order), then rank 2, then rank 3
    assert pool.indices.tolist() == [0, 2, 1, 3, 5]
    assert pool.ranks.tolist() == [[1, 0], [0, 1], [2, 3], [0, 2], [3, 0]]
    assert pool.aspects_of(2) == (0, 1) and pool.aspect_texts_of(1) == ("smells",)
    assert pool.membership.sum(axis=0).tolist() == [3, 3]
    assert pool.scores[2].tolist() == [8.0, 7.0] and np.isnan(pool.scores[0, 1])
    assert pool.best_rank().tolist() == [1, 1, 2, 2, 3]
    assert [c.indices.tolist() for c in pool.per_aspect] == [[0, 1, 5], [2, 3, 1]]


def test_capacity_cuts_by_best_rank_so_every_aspect_keeps_its_top_documents():
    pool = build_pool(TableRetriever(TABLE), Q, ["greens", "smells"], PoolSettings(per_aspect=3, capacity=3))
    assert pool.indices.tolist() == [0, 2, 1]
    assert len(pool) == 3


def test_without_aspects_the_query_alone_fills_the_pool():
    pool = build_pool(TableRetriever(TABLE), Q, [], PoolSettings(per_aspect=2))
    assert pool.indices.tolist() == [5, 4]
    assert pool.ranks.shape == (2, 0) and pool.aspects == ()


def test_real_bm25_pool_on_the_multi_faceted_collection_covers_the_aspects():
    shoes = fr.load_collection("multi-faceted")
    query = shoes.queries[0]
    pool = build_pool(fr.BM25Retriever(shoes.texts), query.text, [a.aspect for a in query.aspects])
    assert 10 <= len(pool) <= 40 and len(set(pool.indices.tolist())) == len(pool)
    assert pool.membership.any(axis=1).all()


def test_settings_round_trip_and_bad_input_names_the_fix():
    settings = PoolSettings(per_aspect=5, capacity=20)
    assert PoolSettings.from_dict(settings.to_dict()) == settings
    with pytest.raises(InvalidParameterError, match="per_aspect"):
        PoolSettings(per_aspect=0)
    with pytest.raises(InvalidParameterError, match="capacity"):
        PoolSettings(capacity=-1)
    with pytest.raises(InvalidParameterError, match="not one string"):
        build_pool(TableRetriever(TABLE), Q, "greens")
    with pytest.raises(InvalidParameterError, match="non-empty text"):
        build_pool(TableRetriever(TABLE), Q, ["greens", " "])
    with pytest.raises(InvalidParameterError, match="query is empty"):
        build_pool(TableRetriever(TABLE), "  ", ["greens"])
