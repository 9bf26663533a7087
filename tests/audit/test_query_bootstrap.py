"""Percentile bootstrap over queries: the printed estimate is always inside its interval."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core import InvalidParameterError
from fairrag_core.audit.query_bootstrap import ledger_intervals, mean_interval, ratio_interval


def test_mean_interval_matches_a_direct_percentile_bootstrap():
    values = np.array([0.1, 0.5, 0.2, 0.9, 0.4])
    ci = mean_interval(values, n_boot=4000, seed=3)
    rng = np.random.default_rng(3)
    counts = rng.multinomial(5, np.full(5, 0.2), size=4000)
    low, high = np.quantile(counts @ values / 5, [0.025, 0.975])
    assert (ci.estimate, ci.low, ci.high, ci.level) == pytest.approx((0.42, low, high, 0.95))


def test_nan_queries_are_left_out_and_nothing_gives_none():
    assert mean_interval([np.nan, 0.3, np.nan, 0.5], seed=0).estimate == pytest.approx(0.4)
    assert mean_interval([0.3], seed=0) is None  # one query: no interval (it was a zero-width [0.3, 0.3])
    assert mean_interval([0.3, np.nan], seed=0) is None
    assert ratio_interval([1, 0], [2, 0], seed=0) is None  # one query with a denominator
    assert mean_interval([np.nan], seed=0) is None
    assert ratio_interval([0, 0], [0, 0], seed=0) is None
    with pytest.raises(InvalidParameterError, match="n_boot must be a positive integer"):
        mean_interval([0.1], n_boot=0)
    with pytest.raises(InvalidParameterError, match="level must be strictly between 0 and 1"):
        mean_interval([0.1], level=1.0)
    with pytest.raises(InvalidParameterError, match="one value per query each"):
        ratio_interval([1, 2], [1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.integers(0, 2**16))
def test_the_interval_contains_its_estimate(values, seed):
    ci = mean_interval(values, n_boot=200, seed=seed)
    assert (ci is None) == (len(values) < 2)
    assert ci is None or ci.low <= ci.estimate <= ci.high


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 5)), min_size=1, max_size=20), st.integers(0, 2**16))
def test_the_ratio_interval_contains_its_estimate(pairs, seed):
    num, den = np.array([min(a, b) for a, b in pairs]), np.array([b for _, b in pairs])
    ci = ratio_interval(num, den, n_boot=200, seed=seed)
    assert (ci is None) == (len(pairs) < 2)
    assert ci is None or (ci.low <= ci.estimate <= ci.high and ci.low >= 0 and ci.high <= 1)


def test_ledger_intervals_resample_queries(shoes):
    ids = shoes.doc_ids
    documents = pd.DataFrame({"query_id": ["a", "a", "b", "b"], "doc_id": [ids[0], ids[20], ids[0], ids[40]],
                              "exposure": [1.0, 1.0, 1.0, 1.0], "target_exposure": [1.0, 0.0, 0.5, 0.5]})
    out = ledger_intervals(documents, shoes, by="provider", n_boot=500, seed=1).set_index("group")
    first = shoes.providers[0]
    assert out.loc[first, "retrieval_share_low"] == pytest.approx(0.5)  # every resample: half of the slots
    assert out.loc[first, "retrieval_share_high"] == pytest.approx(0.5)
    assert out["attributed_share_low"].isna().all()  # no attributed column
    assert (out["share_gap_low"] <= out["share_gap_high"]).all()
    with pytest.raises(InvalidParameterError, match="needs the columns query_id and doc_id"):
        ledger_intervals(documents.drop(columns="query_id"), shoes)


def test_ledger_intervals_check_their_resampled_shares_against_the_memory_budget(shoes, monkeypatch):
    """B resamples × G groups of three shares and their gaps: 8 B (Q + 8 G) bytes, refused before they are drawn."""
    ids = shoes.doc_ids
    documents = pd.DataFrame({"query_id": ["a", "a", "b", "b"], "doc_id": [ids[0], ids[20], ids[0], ids[40]],
                              "exposure": [1.0, 1.0, 1.0, 1.0], "target_exposure": [1.0, 0.0, 0.5, 0.5]})
    groups = ledger_intervals(documents, shoes, n_boot=500, seed=1)["group"].size  # the 3 providers shown
    monkeypatch.setenv("FAIRRAG_MAX_MEMORY_MB", "0.1")
    assert groups == 3 and 8 * 450 * (2 + 8 * groups) == 93_600  # fits
    ledger_intervals(documents, shoes, n_boot=450, seed=1)
    with pytest.raises(InvalidParameterError, match=r"^600 resamples of 3 groups' shares over 2 queries needs 0.12 MB, "
                                                    r"more than the 0.1 MB one step may allocate; lower the bootstrap "
                                                    r"resamples n_boot"):
        ledger_intervals(documents, shoes, n_boot=600, seed=1)
