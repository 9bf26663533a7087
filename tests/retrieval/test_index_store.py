"""The persistent index store: BM25 round-trips exactly, keys follow the content, concurrent builds leave one index,
HNSW finds what exact search finds, and dense embeddings are stored once per texts and model."""

import json
import multiprocessing
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from fairrag_core import load_collection
from fairrag_core.retrieval import BM25Retriever, build_retriever, top_candidates
from fairrag_core.retrieval.bm25 import _SortedVocab
from fairrag_core.retrieval.dense import DenseRetriever, HnswIndex, exact_top_k
from fairrag_core.retrieval.index_store import (
    HNSW_EF_SEARCH,
    INDEX_ENV,
    MANIFEST,
    RECALL_TARGET,
    IndexStore,
    content_sha256,
    default_index_root,
    default_index_store,
)
from fairrag_core.text import DEFAULT_TOKENIZER

SMALL = ["the quick brown fox jumps", "a lazy dog sleeps all day", "quick quick fox", "dogs and foxes are animals",
         "naïve café über straße", "中文 文本 检索"]


def _all_queries(collection):
    return [q.text for q in collection.queries] + ["marathon", "no word of this query is in the corpus zzzz"]


def test_stored_bm25_scores_equal_a_fresh_index_exactly(tmp_path):
    shoes = load_collection("running-shoes")
    store = IndexStore(tmp_path)
    built = BM25Retriever.cached(shoes.texts, store=store, collection="running-shoes")
    opened = BM25Retriever.cached(shoes.texts, store=store, collection="running-shoes")
    fresh = BM25Retriever(shoes.texts)
    assert isinstance(opened.vocab, _SortedVocab) and opened.manifest["collection"] == "running-shoes"
    assert isinstance(opened._weights, np.memmap)
    assert len(store.entries()) == 1 and opened.n_docs == len(shoes)
    for query in _all_queries(shoes):
        assert np.array_equal(opened.score(query), fresh.score(query))
        assert np.array_equal(built.score(query), fresh.score(query))


def test_stored_bm25_equals_rank_bm25_on_a_small_corpus(tmp_path):
    store = IndexStore(tmp_path)
    BM25Retriever.cached(SMALL, store=store)
    opened = BM25Retriever.cached(SMALL, store=store)
    reference = BM25Okapi([DEFAULT_TOKENIZER(t) for t in SMALL])
    for query in ["quick fox", "dog", "café straße", "中文", "fox fox animals"]:
        np.testing.assert_allclose(opened.score(query), reference.get_scores(DEFAULT_TOKENIZER(query)),
                                   rtol=1e-12, atol=1e-12)
    assert opened.manifest is not None and opened.score("café")[4] > 0


def test_sorted_vocab_finds_every_term_and_nothing_else():
    words = sorted(["b", "a", "ab", "é", "z", "中"])
    arrays = BM25Retriever([words], tokenizer=None).arrays()
    vocab = _SortedVocab(arrays["vocab_bytes"], arrays["vocab_offsets"])
    assert len(vocab) == 6 and vocab.words == words
    assert [vocab[w] for w in words] == list(range(6))
    assert "c" not in vocab and vocab.get("aa") is None and vocab.get("") is None


def test_a_changed_text_is_another_index(tmp_path):
    store = IndexStore(tmp_path)
    changed = [*SMALL[:-1], SMALL[-1] + " more"]
    assert content_sha256(SMALL) != content_sha256(changed)
    assert content_sha256(["ab", "c"]) != content_sha256(["a", "bc"])
    a = BM25Retriever.cached(SMALL, store=store)
    b = BM25Retriever.cached(changed, store=store)
    c = BM25Retriever.cached(SMALL, store=store, k1=1.2)  # other parameters, other key
    assert len({a.manifest["key"], b.manifest["key"], c.manifest["key"]}) == 3
    assert len(store.entries()) == 3


def test_a_tokenizer_without_identity_is_not_stored(tmp_path):
    store = IndexStore(tmp_path)
    retriever = BM25Retriever.cached(SMALL, store=store, tokenizer=str.split)
    assert retriever.manifest is None and store.entries() == []


def _build_in_process(root: str) -> str:
    shoes = load_collection("running-shoes")
    return BM25Retriever.cached(shoes.texts, store=IndexStore(root)).manifest["key"]


def test_concurrent_builds_leave_one_complete_index(tmp_path):
    with multiprocessing.get_context("fork").Pool(4) as pool:
        keys = pool.map(_build_in_process, [str(tmp_path)] * 4)
    assert len(set(keys)) == 1
    assert [p.name for p in tmp_path.iterdir()] == [keys[0]]  # no temporary folder left behind
    manifest = json.loads((tmp_path / keys[0] / MANIFEST).read_text())
    assert sorted(manifest["arrays"]) == sorted(["vocab_bytes", "vocab_offsets", "indptr", "docs", "weights", "idf",
                                                 "lengths"])
    shoes = load_collection("running-shoes")
    opened = BM25Retriever.cached(shoes.texts, store=IndexStore(tmp_path))
    assert np.array_equal(opened.score("trail shoes"), BM25Retriever(shoes.texts).score("trail shoes"))


def test_build_retriever_uses_the_store_unless_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv(INDEX_ENV, str(tmp_path / "idx"))
    assert default_index_root() == tmp_path / "idx"
    r = build_retriever("bm25", SMALL, collection="small")
    assert r.manifest["collection"] == "small" and len(default_index_store().entries()) == 1
    assert build_retriever("bm25", SMALL, store=False).manifest is None
    monkeypatch.setenv(INDEX_ENV, "off")
    assert default_index_store() is None and build_retriever("bm25", SMALL).manifest is None
    monkeypatch.delenv(INDEX_ENV)
    monkeypatch.setenv("FAIRRAG_CACHE", str(tmp_path / "cache"))
    assert default_index_root() == tmp_path / "cache" / "indexes"


def test_a_broken_index_is_rebuilt_not_trusted(tmp_path):
    store = IndexStore(tmp_path)
    key = BM25Retriever.cached(SMALL, store=store).manifest["key"]
    (tmp_path / key / "weights.npy").write_bytes(b"not an array")
    assert store.load(key) is None
    assert np.array_equal(BM25Retriever.cached(SMALL, store=store).score("fox"), BM25Retriever(SMALL).score("fox"))


def test_clear_by_key_prefix_and_all(tmp_path):
    store = IndexStore(tmp_path)
    a = BM25Retriever.cached(SMALL, store=store).manifest["key"]
    BM25Retriever.cached(SMALL[:3], store=store)
    assert store.resolve(a[:8]).key == a
    store.remove(a)
    assert [e.key for e in store.entries()] != [a] and len(store.entries()) == 1
    with pytest.raises(Exception, match="no index"):
        store.resolve(a[:8])
    assert store.clear() == 1 and store.entries() == []


def _unit(n, dim, seed):
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_hnsw_recall_against_exact_search_on_random_vectors():
    vectors = _unit(5_000, 64, 0)
    ann = HnswIndex.build(vectors)
    assert ann.recall(vectors, k=20, n_queries=200) >= 0.95
    queries = _unit(50, 64, 1)
    exact = exact_top_k(vectors, queries, 20)
    found = ann.search(queries, 20)
    recall = np.mean([len(set(a) & set(e)) / 20 for a, e in zip(found.tolist(), exact.tolist())])
    assert recall >= 0.95
    tried = ann.tune(vectors, k=20)  # the smallest beam that reaches the target, every smaller one tried first
    assert list(tried) == list(HNSW_EF_SEARCH[:len(tried)]) and ann.ef_search == list(tried)[-1]
    assert tried[ann.ef_search] >= RECALL_TARGET and all(r < RECALL_TARGET for r in list(tried.values())[:-1])


class _FixedEncoder:
    """Stands in for the embedder: the query's vector is given."""

    def __init__(self, vector):
        self.vector = vector

    def encode(self, text):
        return self.vector


def test_ann_candidates_carry_the_exact_cosine(monkeypatch):
    vectors = _unit(5_000, 64, 2)
    query = _unit(1, 64, 3)[0]
    retriever = DenseRetriever(["x"] * len(vectors), model="minilm")
    retriever._doc_vectors, retriever._ann = vectors, HnswIndex.build(vectors)
    retriever.embedder = _FixedEncoder(query)
    got = retriever.retrieve("any query", 20)
    exact = (vectors @ query).astype(np.float64)
    np.testing.assert_array_equal(got.scores, exact[got.indices])  # re-scored: the exact cosine
    assert np.all(np.diff(got.scores) <= 0)
    truth = top_candidates(exact, 20)
    assert len(set(got.indices.tolist()) & set(truth.indices.tolist())) >= 19
    np.testing.assert_array_equal(retriever.score("any query"), exact)  # score() stays exact
    with pytest.raises(Exception, match="candidates"):
        retriever.retrieve("any query", 0)


@pytest.mark.model
def test_dense_embeddings_are_stored_once_per_texts_and_model(tmp_path, minilm):
    texts = [f"{word} shoes for {use}" for word in ("light", "cushioned", "trail", "waterproof", "racing")
             for use in ("a marathon", "the gym", "hiking", "rain")]
    assert len(texts) == 20
    store = IndexStore(tmp_path)
    first = DenseRetriever(texts, model=minilm, store=store, collection="twenty")
    vectors = np.array(first.doc_vectors)
    np.testing.assert_allclose(vectors, minilm.encode(texts), atol=1e-6)
    second = DenseRetriever(texts, model=minilm, store=store)
    assert isinstance(second.doc_vectors, np.memmap) and second.manifest["collection"] == "twenty"
    assert second.manifest["ann"] is False and second.ann is None
    np.testing.assert_array_equal(np.asarray(second.doc_vectors), vectors)
    np.testing.assert_array_equal(second.score("marathon"), first.score("marathon"))
    assert DenseRetriever(texts[:19], model=minilm, store=store).doc_vectors.shape == (19, 384)
    assert len(store.entries()) == 2 and {e.kind for e in store.entries()} == {"dense"}
    assert os.path.isfile(store.entries()[0].path / "embeddings.npy")


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(st.lists(st.sampled_from("abcdefgh"), min_size=0, max_size=10), min_size=1, max_size=30),
       query=st.lists(st.sampled_from("abcdefghz"), min_size=1, max_size=5), k=st.integers(1, 35),
       epsilon=st.floats(-2, 2))
def test_bm25_top_k_equals_the_top_of_every_score(docs, query, k, epsilon):
    """retrieve_tokens' shortcut (partition only the documents above zero) picks what top_candidates picks over all,
    negative idf floors included."""
    retriever = BM25Retriever(docs, tokenizer=None, epsilon=epsilon)
    got = retriever.retrieve_tokens(query, k)
    want = top_candidates(retriever.score_tokens(query), k)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.scores, want.scores)


@pytest.mark.model
def test_a_large_dense_index_is_searched_through_its_stored_graph(tmp_path, minilm, monkeypatch):
    import fairrag_core.retrieval.dense as dense

    monkeypatch.setattr(dense, "ANN_MIN_DOCS", 10)  # 30 texts count as large here
    texts = [f"document {i} about {topic}" for i in range(10) for topic in ("shoes", "rain", "tax law")]
    store = IndexStore(tmp_path)
    monkeypatch.setattr(HnswIndex, "query_times", lambda self, vectors: (2.0, 1.0))  # the graph answers faster
    assert DenseRetriever(texts, model=minilm, store=store).ann is not None  # built, tuned and stored
    opened = DenseRetriever(texts, model=minilm, store=store)
    assert opened.ann is not None and opened.manifest["ann"] is True
    assert opened.manifest["recall_k"] == 20 and opened.manifest["recall"] >= RECALL_TARGET
    assert opened.ann.ef_search == opened.manifest["hnsw"]["ef_search"]
    got = opened.retrieve("waterproof running shoes", 5)
    exact = opened.score("waterproof running shoes")
    np.testing.assert_allclose(got.scores, exact[got.indices], rtol=1e-6)
    assert set(got.indices.tolist()) == set(top_candidates(exact, 5).indices.tolist())


def test_an_unwritable_store_warns_and_keeps_the_index_in_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = IndexStore(blocker / "indexes")
    with pytest.warns(RuntimeWarning, match="the retrieval index was not stored in .*FAIRRAG_INDEX=off"):
        retriever = BM25Retriever.cached(SMALL, store=store)
    assert retriever.manifest is None
    assert np.array_equal(retriever.score("quick fox"), BM25Retriever(SMALL).score("quick fox"))


@pytest.mark.model
def test_a_graph_slower_than_exact_search_is_not_kept(tmp_path, minilm, monkeypatch):
    import fairrag_core.retrieval.dense as dense

    monkeypatch.setattr(dense, "ANN_MIN_DOCS", 10)
    monkeypatch.setattr(HnswIndex, "query_times", lambda self, vectors: (1.0, 2.0))
    texts = [f"note {i} on {topic}" for i in range(5) for topic in ("shoes", "rain", "tax law")]
    store = IndexStore(tmp_path)
    retriever = DenseRetriever(texts, model=minilm, store=store)
    assert retriever.ann is None and retriever.manifest["ann"] is False
    assert retriever.manifest["exact_ms"] == 1.0 and retriever.manifest["ann_ms"] == 2.0
    assert not (store.entries()[0].path / "hnsw.faiss").exists()
    exact = retriever.score("rain jacket")
    assert retriever.retrieve("rain jacket", 3).indices.tolist() == top_candidates(exact, 3).indices.tolist()


def test_query_times_are_measured():
    vectors = _unit(2_000, 32, 4)
    exact_ms, ann_ms = HnswIndex.build(vectors).query_times(vectors)
    assert exact_ms > 0 and ann_ms > 0
