"""Fixtures for the ranker's tests: the multi-faceted collection, BM25 over it, and a model-free encoder."""

import hashlib
import re

import numpy as np
import pytest

from fairrag_core import load_collection
from fairrag_core.retrieval import BM25Retriever
from fairrag_core.richrag.ranker import EncodingCache
from fairrag_core.richrag.train import RankerTrainConfig


class HashEncoder:
    """Bag of hashed words → unit vectors of width 16 (texts sharing words get a positive cosine); counts calls."""

    dim = 16

    def __init__(self) -> None:
        self.encoded = 0

    def encode(self, texts):
        self.encoded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


@pytest.fixture(scope="session")
def multi_faceted():
    return load_collection("multi-faceted")


@pytest.fixture(scope="session")
def mf_bm25(multi_faceted):
    return BM25Retriever(multi_faceted.texts)


@pytest.fixture
def hash_cache():
    return EncodingCache(HashEncoder())


#: A ranker small enough to train in seconds on a handful of queries.
TINY = RankerTrainConfig(per_aspect=4, capacity=12, k=3, sft_k=4, augmentations=2, distractors=2, sft_epochs=3,
                         batch_size=8, dpo_views=2, dpo_samples=3, mu=0.01, dpo_epochs=1, hidden=16, layers=1,
                         test_queries=15)


@pytest.fixture
def tiny_config():
    return TINY
