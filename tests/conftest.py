import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# No persistent answer/judgement cache unless a test passes its own DiskCache: counts of model calls must not depend
# on what an earlier test run left in ~/.cache/fairrag/cache.sqlite.
os.environ.setdefault("FAIRRAG_CACHE_DB", "off")
# Commands that save their run by default (exposure-sweep, sweep, audit-log) save into a store of this test session,
# never into ~/.cache/fairrag/runs.duckdb.
os.environ.setdefault("FAIRRAG_RUNS", str(Path(tempfile.mkdtemp(prefix="fairrag-test-runs-")) / "runs.duckdb"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/exact.py

from otel_helpers import receiver  # noqa: F401  (the fixture of the OTel tests: a loopback `collect` receiver)

from fairrag_core import load_collection
from fairrag_core.retrieval import BM25Retriever


@pytest.fixture(scope="session")
def shoes():
    return load_collection("running-shoes")


@pytest.fixture(scope="session")
def shoes_bm25(shoes):
    return BM25Retriever(shoes.texts)


@pytest.fixture(scope="session")
def minilm():
    from fairrag_core.models.embedder import Embedder

    return Embedder("minilm", device="cpu")
