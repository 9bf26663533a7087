import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from fairrag_core import DEMO_COLLECTIONS, InvalidParameterError, load_collection
from fairrag_core.retrieval import BM25Retriever, build_retriever, top_candidates
from fairrag_core.text import DEFAULT_TOKENIZER, Tokenizer


@pytest.mark.parametrize("name", DEMO_COLLECTIONS)
def test_scores_equal_rank_bm25_on_demo_collections(name):
    c = load_collection(name)
    ours = BM25Retriever(c.texts)
    reference = BM25Okapi([DEFAULT_TOKENIZER(t) for t in c.texts])
    for q in c.queries:
        np.testing.assert_allclose(ours.score(q.text), reference.get_scores(DEFAULT_TOKENIZER(q.text)),
                                   rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    # non-empty documents: for an empty one with b = 1, rank_bm25 divides 0 by 0 (NaN); we return 0
    docs=st.lists(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=12), min_size=1, max_size=25),
    query=st.lists(st.sampled_from("abcdefghz"), min_size=1, max_size=6),
    k1=st.floats(0.1, 3), b=st.floats(0, 1),
)
def test_scores_equal_rank_bm25_on_random_token_lists(docs, query, k1, b):
    ours = BM25Retriever(docs, tokenizer=None, k1=k1, b=b)
    reference = BM25Okapi(docs, k1=k1, b=b)
    np.testing.assert_allclose(ours.score_tokens(query), reference.get_scores(query), rtol=1e-10, atol=1e-10)


def test_empty_document_scores_zero():
    r = BM25Retriever([["a"], [], ["b"]], tokenizer=None, b=1.0)
    assert r.score_tokens(["a"])[1] == 0.0


def test_hand_computed_score():
    # N = 2, "x" in one doc: idf = ln(1.5 / 1.5) = 0 → floored to 0.25 · mean(idf); mean over {x: 0, y: 0} = 0.
    # Use 3 docs so idf(x) = ln(2.5 / 1.5).
    docs = [["x", "y"], ["y"], ["y", "y"]]
    r = BM25Retriever(docs, tokenizer=None, k1=1.5, b=0.75)
    idf = np.log(2.5 / 1.5)
    avgdl = 5 / 3
    expected = idf * 1 * 2.5 / (1 + 1.5 * (1 - 0.75 + 0.75 * 2 / avgdl))
    assert r.score_tokens(["x"])[0] == pytest.approx(expected)
    assert r.score_tokens(["x"])[1:].tolist() == [0.0, 0.0]


def test_lucene_idf_is_never_negative():
    docs = [["common", "a"], ["common", "b"], ["common"]]
    r = BM25Retriever(docs, tokenizer=None, idf="lucene")
    assert np.all(r.idf > 0)
    assert np.all(r.score_tokens(["common"]) > 0)


def test_unknown_words_score_zero_and_query_checks():
    r = BM25Retriever(["running shoes for marathons", "trail shoes", "socks"])
    assert r.score("zebra quantum").tolist() == [0.0, 0.0, 0.0]
    assert r.score("marathon")[0] > 0  # stemming: marathons → marathon
    with pytest.raises(InvalidParameterError, match="query is empty"):
        r.score("   ")
    with pytest.raises(InvalidParameterError, match="shorten it"):
        r.score("x" * 5000)


def test_batch_equals_single(shoes, shoes_bm25):
    queries = [q.text for q in shoes.queries[:5]]
    np.testing.assert_array_equal(shoes_bm25.score_batch(queries), np.stack([shoes_bm25.score(q) for q in queries]))


def test_top_candidates_ties_in_index_order():
    cand = top_candidates(np.array([1.0, 3.0, 2.0, 3.0, 2.0]), 3)
    assert cand.indices.tolist() == [1, 3, 2] and cand.scores.tolist() == [3.0, 3.0, 2.0]
    assert top_candidates(np.array([1.0, 2.0]), 10).indices.tolist() == [1, 0]


def test_build_retriever_errors():
    with pytest.raises(InvalidParameterError, match="choose one of: bm25, dense"):
        build_retriever("tfidf", ["a"])
    with pytest.raises(InvalidParameterError, match="BM25 takes no model"):
        build_retriever("bm25", ["a"], model="minilm")
    with pytest.raises(InvalidParameterError, match="at least one document"):
        BM25Retriever([])


def test_tokenizer():
    assert DEFAULT_TOKENIZER("The Runner's shoes, running!") == ["runner", "shoe", "run"]
    assert Tokenizer(stop_words=False, stem=False)("The shoes") == ["the", "shoes"]


def test_marathon_query_ranks_useful_documents_first(shoes, shoes_bm25):
    q = shoes.find_query("best shoes for a first marathon")
    scores = shoes_bm25.score(q.text)
    top = top_candidates(scores, 5).indices
    assert shoes.useful(q.query_id)[top].sum() >= 3
    # the shared-word distractors ("best", "first") keep BM25 honest but imperfect
    rel = shoes.relevance(q.query_id)
    assert scores[rel == 2].mean() > scores[rel == 0].mean()
