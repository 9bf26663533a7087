"""Per-query α stops: each step moves EE-D, from uniform to deterministic, reproducibly."""

import numpy as np
import pytest

from fairrag_core import load_collection
from fairrag_core.metrics.exposure import ee_disparity, expected_exposure
from fairrag_core.ranking.sampling import sample_rankings
from fairrag_core.ranking.stops import ALPHA_GRID, alpha_stops
from fairrag_core.retrieval import BM25Retriever, top_candidates


def _ee_d(scores, alpha, k, n=4000, seed=1):
    rankings = sample_rankings(scores, alpha=alpha, n_samples=n, k=k, seed=seed)
    return ee_disparity(expected_exposure(rankings, scores.size), k)


@pytest.mark.parametrize("collection", ["running-shoes", "news", "people"])
def test_every_stop_of_every_demo_query_moves_ee_d(collection):
    coll = load_collection(collection)
    retriever = BM25Retriever(coll.texts)
    for query in coll.queries:
        scores = top_candidates(retriever.score(query.text), 20).scores
        stops = alpha_stops(scores, 5)
        assert stops == alpha_stops(scores, 5)  # reproducible
        assert stops[0] == 0.0 and list(stops) == sorted(stops) and set(stops) <= set(ALPHA_GRID)
        assert len(stops) >= 5, (query.text, stops)
        levels = [_ee_d(scores, a, 5) for a in stops]
        # with many samples each stop's EE-D is above the previous one's by a visible step (one in the 3rd decimal
        # at the very least; the stops aim at equal steps of (max − min)/8)
        steps = np.diff(levels)
        assert (steps > 0.005).all(), (query.text, stops, np.round(levels, 3))


def test_flat_scores_have_one_stop_and_bad_input_is_refused():
    assert alpha_stops(np.ones(10), 3) == (0.0,)
    assert alpha_stops(np.array([2.0, 1.0]), 2) == (0.0,)  # k = n: every ranking shows everything
    with pytest.raises(Exception, match="n_stops"):
        alpha_stops(np.array([3.0, 2.0, 1.0]), 1, n_stops=0)
