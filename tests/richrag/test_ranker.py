"""The ranker's inputs, its encoding cache, and the shipped weights: sha256 pinned, tampering refused, offline
inference on a real pool."""

import json
import shutil

import numpy as np
import pytest

from fairrag_core.errors import InvalidParameterError, ModelUnavailableError
from fairrag_core.richrag.pool import PoolSettings, build_pool
from fairrag_core.richrag.ranker import (
    MANIFEST_FILE,
    SHIPPED_SHA256,
    WEIGHTS_FILE,
    EncodingCache,
    fid_text,
    load_ranker,
    ranker_features,
    sha256_file,
    shipped_ranker_dir,
    verify_weights,
)

SHIPPED = shipped_ranker_dir()


def test_features_have_the_documented_shapes(hash_cache):
    x = ranker_features(hash_cache, "How do I compost?", ["bins", "smells", "browns"],
                        ["Use a lidded bin.", "Bury scraps against smells.", "Dry leaves are browns."],
                        [{0}, {1, 0}, ()], np.array([[1, 0, 0], [2, 1, 0], [0, 0, 0]]))
    assert x.doc_vectors.shape == (3, 16) and x.aspect_vectors.shape == (3, 16)
    assert x.doc_extra.shape == (3, 2) and x.pair.shape == (3, 3, 4)
    assert x.pair[:, :, 2].tolist() == [[1, 0, 0], [1, 1, 0], [0, 0, 0]]  # 1[j ∈ s(d)]
    assert x.pair[1, :, 3].tolist() == [0.5, 1.0, 0.0]  # 1 / rank, 0 = not retrieved
    assert np.allclose(x.doc_extra[:, 0], [1 / 3, 2 / 3, 0])


def test_fid_strings_do_not_depend_on_the_aspect_order(hash_cache):
    ranker_features(hash_cache, "q", ["a", "b"], ["doc"], [{0, 1}])
    before = len(hash_cache)
    ranker_features(hash_cache, "q", ["b", "a"], ["doc"], [{0, 1}])
    assert len(hash_cache) == before  # "q [Q] a [E] b [S] doc" both times: nothing new to encode
    assert fid_text("q", ["a", "b"], "d") == "q [Q] a [E] b [S] d"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"documents": []}, "pool is empty"),
    ({"aspects": []}, "at least one aspect"),
    ({"aspect_sets": [{0}]}, "one each"),
    ({"aspect_sets": [{0}, {5}]}, "outside"),
    ({"aspect_ranks": np.zeros((3, 3))}, "shape"),
])
def test_bad_inputs_name_the_fix(hash_cache, kwargs, message):
    args = {"query": "q", "aspects": ["a", "b"], "documents": ["x", "y"], "aspect_sets": [{0}, {1}],
            "aspect_ranks": None, **kwargs}
    with pytest.raises(InvalidParameterError, match=message):
        ranker_features(hash_cache, **args)


def test_cache_rounds_to_float16_and_round_trips_without_pickle(tmp_path, hash_cache):
    vectors = hash_cache.encode(["alpha beta", "gamma"])
    assert np.array_equal(vectors, vectors.astype(np.float16).astype(np.float32))
    hash_cache.save(tmp_path / "c.npz")
    other = EncodingCache(None)
    assert other.load(tmp_path / "c.npz") == 2
    assert np.array_equal(other.encode(["gamma", "alpha beta"]), vectors[::-1])


def test_verify_refuses_a_wrong_digest_and_a_missing_file(tmp_path):
    path = tmp_path / "w.bin"
    path.write_bytes(b"weights")
    verify_weights(path, sha256_file(path))
    with pytest.raises(ModelUnavailableError, match="refusing"):
        verify_weights(path, "0" * 64)
    with pytest.raises(ModelUnavailableError, match="train-ranker"):
        verify_weights(tmp_path / "absent.bin", "0" * 64)


needs_shipped = pytest.mark.skipif(not (SHIPPED / WEIGHTS_FILE).is_file(), reason="no shipped ranker yet")


@needs_shipped
def test_shipped_weights_match_the_pinned_sha256_and_the_card():
    manifest = json.loads((SHIPPED / MANIFEST_FILE).read_text())
    assert sha256_file(SHIPPED / WEIGHTS_FILE) == SHIPPED_SHA256 == manifest["weights"]["dpo"]["sha256"]
    card = (SHIPPED / "README.md").read_text()
    for entry in manifest["weights"].values():
        assert entry["sha256"] in card
        assert sha256_file(SHIPPED / entry["file"]) == entry["sha256"]
    assert not set(manifest["train_queries"]) & set(manifest["test_queries"])


@needs_shipped
def test_a_tampered_weights_file_is_refused(tmp_path):
    pytest.importorskip("torch")
    folder = tmp_path / "ranker"
    shutil.copytree(SHIPPED, folder)
    load_ranker(folder)  # the untouched copy loads
    data = bytearray((folder / WEIGHTS_FILE).read_bytes())
    data[-5] ^= 0xFF  # one byte of one weight
    (folder / WEIGHTS_FILE).write_bytes(bytes(data))
    with pytest.raises(ModelUnavailableError, match="refusing"):
        load_ranker(folder)
    with pytest.raises(InvalidParameterError, match="stage must be one of"):
        load_ranker(SHIPPED, stage="rl")


def test_a_folder_without_manifest_is_refused(tmp_path):
    with pytest.raises(ModelUnavailableError, match="ranker.json"):
        load_ranker(tmp_path)


@needs_shipped
@pytest.mark.model
@pytest.mark.slow
def test_shipped_ranker_ranks_a_real_pool_offline(multi_faceted, mf_bm25):
    query = multi_faceted.query("mf-q07")
    aspects = [a.aspect for a in query.aspects]
    pool = build_pool(mf_bm25, query.text, aspects, PoolSettings())
    texts = [multi_faceted.documents[int(i)].full_text for i in pool.indices]
    sets = [pool.aspects_of(j) for j in range(len(pool))]
    for stage in ("sft", "dpo"):
        ranker = load_ranker(stage=stage, device="cpu")
        ranking = ranker.rank(query.text, aspects, texts, sets, 5, aspect_ranks=pool.ranks)
        assert len(ranking) == 5 == len(set(ranking)) and all(0 <= j < len(pool) for j in ranking)
    scores = ranker.scores(ranker.features(query.text, aspects, texts, sets, pool.ranks))
    assert scores.shape == (len(pool),) and np.all(np.isfinite(scores))
