"""The Playground's sentences computed from data agree with the data (issue 31, Must have 3): under the tiles,
"EE-R rose / fell / is the same as the deterministic retriever's", and each "so" that explains it, for every query
of every demo collection at three of its α stops (the Playground's sampling settings)."""

from __future__ import annotations

import re

import pytest

from fairrag_core import RankingConfig, load_collection, run_ranking
from fairrag_core.data.demo import DEMO_COLLECTIONS
from fairrag_core.ranking.stops import alpha_stops
from fairrag_core.retrieval import BM25Retriever, top_candidates
from fairrag_core.settings import PLAYGROUND_SAMPLING as PLAYGROUND
from fairrag_studio.views.explain import EE_R_SAME, ee_r_direction


def _check(sentence: str, ranking, alpha: float) -> None:
    now, det = ranking.summary.ee_r_plug_in, ranking.deterministic_summary.ee_r_plug_in
    labels = ranking.labels
    m, in_top = int(labels.sum()), int(labels[ranking.deterministic].sum())
    same = abs(now - det) < EE_R_SAME
    assert ("is the same as" in sentence) == same, sentence
    assert ("EE-R rose" in sentence) == (not same and now > det), sentence
    assert ("EE-R fell" in sentence) == (not same and now < det), sentence
    if "so spreading exposure reaches" in sentence:  # a rise, explained by useful candidates left out
        assert "EE-R rose" in sentence and in_top < m, sentence
        assert f"reaches the {m - in_top} useful ones it leaves out" in sentence
    if "so spreading exposure moves" in sentence:  # a fall, explained by the useful ones already shown
        assert "EE-R fell" in sentence, sentence
    counted = re.search(r"(\d+) of the (\d+) useful candidate", sentence)
    assert counted and (int(counted[1]), int(counted[2])) == (in_top, m), sentence  # counts name what they count
    assert f"at α = {alpha:g}" in sentence


@pytest.mark.parametrize("name", DEMO_COLLECTIONS)
def test_the_ee_r_sentence_agrees_with_every_query(name):
    collection = load_collection(name)
    retriever = BM25Retriever(collection.texts)
    checked = 0
    for query in collection.queries:
        if query.query_id not in collection.qrels:
            continue
        scores = retriever.score(query.text)
        shown = top_candidates(scores, min(PLAYGROUND.candidates, scores.size)).scores
        stops = alpha_stops(shown, PLAYGROUND.k)
        for alpha in dict.fromkeys((stops[0], stops[len(stops) // 2], stops[-1])):
            config = RankingConfig(alpha=alpha, n_samples=PLAYGROUND.n_samples, k=PLAYGROUND.k,
                                   seed=PLAYGROUND.seed, candidates=PLAYGROUND.candidates)
            ranking = run_ranking(collection, retriever, query.text, config, scores=scores, n_boot=10)
            sentence = ee_r_direction(ranking, alpha)
            if ranking.labels is None or not sentence:
                continue
            _check(sentence, ranking, alpha)
            checked += 1
    assert checked >= 10


def test_the_recommender_context_counts_the_queries_the_recommender_uses():
    """'Over the N queries with a fairness question, U gain … and D lose it': N is the recommender's count (queries
    with m > 1, as its reason says), U and D are counted from the table, and no 'so' claims what the means decide."""
    import pandas as pd

    from fairrag_studio.views.explain import recommendation_context

    rows = []
    for q, (det, low, question) in enumerate([(0.6, 0.7, True), (0.6, 0.5, True), (0.6, 0.4, True), (0.5, 0.9, False)]):
        rows += [{"query_id": f"q{q}", "system": system, "alpha": alpha, "ee_r": value, "fairness_question": question}
                 for system, alpha, value in (("deterministic", float("inf"), det), ("stochastic", 0.0, low),
                                              ("stochastic", 2.0, det))]
    text = recommendation_context(pd.DataFrame(rows), 5, "ee_r")
    assert text.startswith("Over the 3 queries with a fairness question, 1 gain EE-R at the lowest α and 2 lose it")
    assert "majority" not in text
