import numpy as np
import pandas as pd
import pytest

from fairrag_core import InvalidParameterError
from fairrag_core.audit import recommend_alpha


def _sweep_table(eu_by_alpha, ee_d_by_alpha, baseline=0.8):
    rows = [{"query_id": "q", "system": "stochastic", "alpha": a, "fairness_question": True,
             "ee_d": ee_d_by_alpha[a], "eu": u} for a, u in eu_by_alpha.items()]
    rows.append({"query_id": "q", "system": "deterministic", "alpha": np.inf, "fairness_question": True,
                 "ee_d": 1.0, "eu": baseline})
    return pd.DataFrame(rows)


def test_recommender_picks_fairest_alpha_within_tolerance():
    table = _sweep_table({0.0: 0.5, 1.0: 0.70, 2.0: 0.77, 8.0: 0.80}, {0.0: 0.1, 1.0: 0.2, 2.0: 0.35, 8.0: 0.9})
    rec = recommend_alpha(table, tolerance=0.05)
    assert rec.alpha == 2.0 and rec.threshold == pytest.approx(0.76) and rec.baseline_utility == pytest.approx(0.8)
    assert rec.per_alpha["eligible"].tolist() == [False, False, True, True]
    assert recommend_alpha(table, tolerance=0.15).alpha == 1.0
    assert recommend_alpha(table, tolerance=0.3, relative=False).alpha == 0.0


def test_recommender_keeps_deterministic_when_nothing_qualifies():
    rec = recommend_alpha(_sweep_table({0.0: 0.2, 4.0: 0.5}, {0.0: 0.1, 4.0: 0.6}), tolerance=0.0)
    assert rec.alpha is None and "keep the deterministic ranker" in rec.reason


def test_recommender_rejects_bad_input():
    table = _sweep_table({0.0: 0.5}, {0.0: 0.1})
    with pytest.raises(InvalidParameterError, match="tolerance"):
        recommend_alpha(table, tolerance=float("nan"))
    with pytest.raises(InvalidParameterError, match="tolerance"):
        recommend_alpha(table, tolerance=-0.1)
    with pytest.raises(InvalidParameterError, match=r"lacks \['eu'\]"):
        recommend_alpha(table.drop(columns=["eu"]))
    with pytest.raises(InvalidParameterError, match="deterministic baseline"):
        recommend_alpha(table[table["system"] == "stochastic"])


def test_the_reason_names_the_queries_its_means_are_over():
    """One number per count, named (issue 31): the recommender's means are over the queries with a fairness question,
    which the sweep's figure counts among all it swept."""
    t = pd.DataFrame({"query_id": ["q1"] * 3 + ["q2"] * 3, "system": ["stochastic", "stochastic", "deterministic"] * 2,
                      "alpha": [0.0, 2.0, float("inf")] * 2, "fairness_question": [True] * 3 + [False] * 3,
                      "ee_d": [0.1, 0.3, 1.0] * 2, "eu": [0.7, 0.8, 0.8] * 2})
    rec = recommend_alpha(t, tolerance=0.05)
    assert rec.alpha == 2.0 and rec.reason.endswith(
        "baseline (0.800), means over the 1 query with a fairness question (at least two useful candidates) of the "
        "2 swept")
    assert rec.per_alpha["queries"].tolist() == [1, 1]
