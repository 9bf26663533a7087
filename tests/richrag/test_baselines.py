"""Pool baselines (RichRAG Table 3 without training): relevance, MMR, per-aspect round robin, greedy oracle."""

import numpy as np
import pytest

import fairrag_core as fr
from fairrag_core import InvalidParameterError
from fairrag_core.richrag.baselines import pool_lists, ranker_list, round_robin
from fairrag_core.richrag.coverage import coverage_matrix, ncom
from fairrag_core.richrag.pool import build_pool


def test_round_robin_takes_turns_skips_listed_documents_and_fills_from_the_pool():
    ranks = np.array([[1, 0, 2], [2, 1, 0], [0, 2, 1], [3, 0, 0], [0, 0, 0]])
    assert round_robin(ranks, 5) == [0, 1, 2, 3, 4]
    assert round_robin(ranks, 2) == [0, 1]
    assert round_robin(np.array([[0], [1]]), 2) == [1, 0]  # exhausted aspects: the rest in pool order
    with pytest.raises(InvalidParameterError, match="larger than"):
        round_robin(ranks, 6)
    with pytest.raises(InvalidParameterError, match="n_aspects"):
        round_robin(np.zeros(3), 1)


def test_every_list_is_k_distinct_pool_positions_and_the_oracle_has_ncom_one():
    collection = fr.load_collection("multi-faceted")
    query = collection.queries[0]
    retriever = fr.BM25Retriever(collection.texts)
    pool = build_pool(retriever, query.text, [a.aspect for a in query.aspects])
    docs = [collection.documents[i] for i in pool.indices]
    phi = coverage_matrix(docs, [a.answer for a in query.aspects])
    lists = pool_lists(pool, retriever.score(query.text)[pool.indices], [d.full_text for d in docs], 5, phi=phi)
    assert list(lists) == ["relevance", "mmr", "round-robin", "oracle"]
    for ranking in lists.values():
        assert len(ranking) == 5 and len(set(ranking)) == 5 and max(ranking) < len(pool)
    assert ncom(phi, lists["oracle"]) == pytest.approx(1.0)
    assert "oracle" not in pool_lists(pool, np.zeros(len(pool)), [""] * len(pool), 3)
    with pytest.raises(InvalidParameterError, match="one score and one text"):
        pool_lists(pool, [1.0], ["x"], 3)


def test_ranker_list_says_why_when_there_is_no_trained_ranker():
    collection = fr.load_collection("multi-faceted")
    pool = build_pool(fr.BM25Retriever(collection.texts), "How do I compost?", ["bins", "smells"])
    ranking, note = ranker_list(pool, [collection.documents[i].full_text for i in pool.indices], 3, stage="none")
    assert ranking is None and "no trained ranker" in note
