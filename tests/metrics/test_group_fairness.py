import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import entropy

from fairrag_core import InvalidParameterError, MissingGroupLabelError, load_collection
from fairrag_core.data import Collection, Document, Query
from fairrag_core.metrics.group_fairness import (
    attention,
    awrf,
    group_distribution,
    jensen_shannon,
    kl_divergence,
    most_under_represented,
    ndcg,
)
from fairrag_core.metrics.group_targets import TargetKind, groups_for, target_distribution

GENDERS = ["Unknown", "female", "male", "non-binary"]


@pytest.fixture(scope="module")
def people():
    return load_collection("people")


def _shares(counter: Counter, support) -> pd.Series:
    total = sum(counter.values())
    return pd.Series([counter.get(g, 0) / total for g in support], index=support, dtype=float)


# -- attention and distributions ------------------------------------------------------------------------
def test_attention_is_the_trec_2022_discount():
    # 1/log2(max(r, 2)): ranks 1 and 2 both weigh 1, then 1/log2(3), 1/log2(4) = 1/2
    assert attention(4) == pytest.approx([1.0, 1.0, 1 / math.log2(3), 0.5], abs=1e-15)
    with pytest.raises(InvalidParameterError, match="positive integer"):
        attention(0)


def test_group_distribution_counts_weights_and_support():
    dist = group_distribution(["male", "female", "male", "Unknown"])
    assert dist.to_dict() == {"Unknown": 0.25, "female": 0.25, "male": 0.5}
    weighted = group_distribution(["a", "b", "a"], weights=[1.0, 2.0, 1.0])
    assert weighted.to_dict() == {"a": 0.5, "b": 0.5}
    padded = group_distribution(["male"], support=["non-binary", "female", "male"])
    assert padded.index.tolist() == ["non-binary", "female", "male"]  # support's order, missing groups at 0
    assert padded.tolist() == [0.0, 0.0, 1.0]


def test_group_distribution_bad_inputs_name_the_fix():
    with pytest.raises(InvalidParameterError, match="empty"):
        group_distribution([])
    with pytest.raises(InvalidParameterError, match=r"\['other'\] occur in the ranking but not in support"):
        group_distribution(["male", "other"], support=["male", "female"])
    with pytest.raises(InvalidParameterError, match="weights must be non-negative"):
        group_distribution(["a", "b"], weights=[1.0, -0.5])
    with pytest.raises(InvalidParameterError, match="weights are all zero"):
        group_distribution(["a", "b"], weights=[0.0, 0.0])
    with pytest.raises(InvalidParameterError, match="one entry per document"):
        group_distribution(["a", "b"], weights=[1.0])
    with pytest.raises(InvalidParameterError, match="must be strings"):
        group_distribution(["a", None])


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 30))
def test_group_distribution_sums_to_one(data, n):
    groups = data.draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
    weights = data.draw(st.lists(st.floats(0.0, 10.0), min_size=n, max_size=n))
    assume(sum(weights) > 0)
    for dist in (group_distribution(groups), group_distribution(groups, weights=weights)):
        assert dist.sum() == pytest.approx(1.0, abs=1e-12)
        assert (dist >= 0).all()


# -- AWRF ----------------------------------------------------------------------------------------------
def test_awrf_hand_computed_golden_value():
    # Ranking a, b, a, c; target a: 1/2, b: 1/4, c: 1/4.
    # attention = [1, 1, 1/log2 3, 1/2] = [1, 1, 0.6309297536, 0.5], sum 3.1309297536
    # p (attention-weighted) = a: (1 + 0.6309297536) / 3.1309297536 = 0.5209090851
    #                          b: 1 / 3.1309297536 = 0.3193939432,  c: 0.5 / 3.1309297536 = 0.1596969716
    # q = [0.5, 0.25, 0.25];  m = (p + q) / 2 = [0.5104545426, 0.2846969716, 0.2048484858]
    # JSD = ½ Σ p ln(p/m) + ½ Σ q ln(q/m) = 0.0072437623  →  AWRF = 1 − JSD = 0.9927562377
    w = [1.0, 1.0, 1 / math.log2(3), 0.5]
    p = np.array([w[0] + w[2], w[1], w[3]]) / sum(w)
    q = np.array([0.5, 0.25, 0.25])
    m = (p + q) / 2
    jsd = 0.5 * sum(p * np.log(p / m)) + 0.5 * sum(q * np.log(q / m))
    assert jsd == pytest.approx(0.0072437623, abs=1e-10)
    assert awrf(["a", "b", "a", "c"], {"a": 0.5, "b": 0.25, "c": 0.25}) == pytest.approx(1 - jsd, abs=1e-12)


def test_awrf_perfect_match_cutoff_and_unnormalised_target():
    # attention-weighted shares of a, b, a, b: a = (1 + 1/log2 3) / S, b = (1 + 1/2) / S
    w = attention(4)
    target = {"a": w[0] + w[2], "b": w[1] + w[3]}  # raw weights: normalised inside
    assert awrf(["a", "b", "a", "b"], target) == pytest.approx(1.0, abs=1e-12)
    # top 2 only: p = [1/2, 1/2]; the group 'c' of rank 3 does not count
    assert awrf(["a", "b", "c"], {"a": 1, "b": 1}, cutoff=2) == pytest.approx(1.0, abs=1e-12)
    assert awrf(["a", "b"], {"a": 1, "b": 1}, cutoff=20) == pytest.approx(1.0, abs=1e-12)  # cutoff beyond the list
    # disjoint groups: JSD = ln 2, the minimum AWRF
    assert awrf(["a", "a"], {"b": 1.0}) == pytest.approx(1 - math.log(2), abs=1e-12)


def test_awrf_bad_inputs_name_the_fix():
    with pytest.raises(InvalidParameterError, match="cutoff must be a positive integer"):
        awrf(["a"], {"a": 1}, cutoff=0)
    with pytest.raises(InvalidParameterError, match="the ranking is empty"):
        awrf([], {"a": 1})
    with pytest.raises(InvalidParameterError, match="target shares must be non-negative"):
        awrf(["a"], {"a": 1.0, "b": -0.1})
    with pytest.raises(InvalidParameterError, match="target shares must be finite"):
        awrf(["a"], {"a": float("nan")})
    with pytest.raises(InvalidParameterError, match="target shares are all zero"):
        awrf(["a"], {"a": 0.0})
    with pytest.raises(InvalidParameterError, match="target is empty"):
        awrf(["a"], {})


@settings(max_examples=80, deadline=None)
@given(
    ranking=st.lists(st.sampled_from("abcd"), min_size=1, max_size=25),
    shares=st.lists(st.floats(0.0, 5.0), min_size=4, max_size=4),
    cutoff=st.none() | st.integers(1, 30),
)
def test_awrf_is_between_zero_and_one(ranking, shares, cutoff):
    assume(sum(shares) > 0)
    value = awrf(ranking, dict(zip("abce", shares)), cutoff=cutoff)
    assert 1 - math.log(2) - 1e-12 <= value <= 1.0


# -- nDCG ---------------------------------------------------------------------------------------------
def test_ndcg_hand_computed_golden_value():
    # grades in rank order [2, 0, 1, 0, 1], discount 1/log2(max(r, 2)) = [1, 1, 0.6309297536, 0.5, 0.4306765581]
    # DCG  = 2·1 + 0 + 1·0.6309297536 + 0 + 1·0.4306765581 = 3.0616063117
    # IDCG (ideal order 2, 1, 1, 0, 0) = 2·1 + 1·1 + 1·0.6309297536 = 3.6309297536
    # nDCG = 3.0616063117 / 3.6309297536 = 0.8432017471
    expected = (2 + 1 / math.log2(3) + 1 / math.log2(5)) / (3 + 1 / math.log2(3))
    assert expected == pytest.approx(0.8432017471, abs=1e-10)
    assert ndcg([2, 0, 1, 0, 1], [2, 1, 1, 0, 0]) == pytest.approx(expected, abs=1e-12)
    # @3: DCG = 2 + 0 + 0.6309297536, IDCG = 2 + 1 + 0.6309297536
    assert ndcg([2, 0, 1, 0, 1], [2, 1, 1, 0, 0], cutoff=3) == pytest.approx(
        (2 + 1 / math.log2(3)) / (3 + 1 / math.log2(3)), abs=1e-12
    )


def test_ndcg_ideal_order_is_one_and_no_relevant_is_zero():
    assert ndcg([3, 2, 1, 0], [0, 1, 2, 3]) == pytest.approx(1.0, abs=1e-15)
    assert ndcg([2, 1], [2, 1, 0, 0], cutoff=2) == pytest.approx(1.0, abs=1e-15)
    assert ndcg([0, 0, 0], [0, 0, 0, 0]) == 0.0
    # a ranking shorter than the relevant set cannot reach 1 without a cutoff (as in TREC 2022)
    assert ndcg([1], [1, 1]) == pytest.approx(1 / 2)
    # ranks 1 and 2 share the discount 1, so swapping them changes nothing
    assert ndcg([0, 1], [1, 0]) == pytest.approx(1.0)


def test_ndcg_bad_inputs_name_the_fix():
    with pytest.raises(InvalidParameterError, match="cutoff must be a positive integer"):
        ndcg([1], [1], cutoff=0)
    with pytest.raises(InvalidParameterError, match="the ranking is empty"):
        ndcg([], [1, 0])
    with pytest.raises(InvalidParameterError, match="relevance grades must be non-negative"):
        ndcg([-1], [1])
    with pytest.raises(InvalidParameterError, match="all_relevances lacks"):
        ndcg([2, 2], [2, 1])


# -- divergences ----------------------------------------------------------------------------------------
def test_jensen_shannon_matches_entropy_formula():
    p = {"a": 0.6, "b": 0.3, "c": 0.1}
    q = {"a": 0.2, "b": 0.2, "d": 0.6}  # aligned over a, b, c, d
    pa, qa = np.array([0.6, 0.3, 0.1, 0.0]), np.array([0.2, 0.2, 0.0, 0.6])
    m = (pa + qa) / 2
    expected = 0.5 * entropy(pa, m) + 0.5 * entropy(qa, m)
    assert jensen_shannon(p, q) == pytest.approx(expected, abs=1e-12)
    assert jensen_shannon(q, p) == pytest.approx(expected, abs=1e-12)
    assert jensen_shannon(p, p) == 0.0


def test_kl_direction_punishes_missing_wanted_groups():
    target = {"female": 0.5, "male": 0.5}
    lacks_female = {"male": 1.0}
    # smoothed: t = [0.5, 0.5], c = [0.001, 1.001] / 1.002
    t = np.array([0.5, 0.5])
    c = np.array([0.001, 1.001]) / 1.002
    assert kl_divergence(target, lacks_female) == pytest.approx(float(np.sum(t * np.log(t / c))), abs=1e-12)
    # the other direction is much smaller: the ranking's extra mass on male is cheap
    assert kl_divergence(lacks_female, target) < kl_divergence(target, lacks_female) / 3
    assert kl_divergence(target, lacks_female, smoothing=0) == math.inf
    with pytest.raises(InvalidParameterError, match="smoothing must be a finite number"):
        kl_divergence(target, lacks_female, smoothing=-1e-3)


@settings(max_examples=80, deadline=None)
@given(
    t=st.lists(st.floats(0.0, 5.0), min_size=3, max_size=3),
    c=st.lists(st.floats(0.0, 5.0), min_size=3, max_size=3),
)
def test_kl_is_non_negative_and_zero_iff_equal(t, c):
    assume(sum(t) > 0 and sum(c) > 0)
    target, current = dict(zip("xyz", t)), dict(zip("xyz", c))
    assert kl_divergence(target, current) >= 0
    assert kl_divergence(target, target) == pytest.approx(0.0, abs=1e-12)
    tn, cn = np.array(t) / sum(t), np.array(c) / sum(c)
    if np.abs(tn - cn).max() > 1e-3:
        assert kl_divergence(target, current) > 0


def test_most_under_represented_and_its_ties():
    target = {"female": 0.4, "male": 0.4, "non-binary": 0.2}
    assert most_under_represented(target, {"male": 0.9, "female": 0.1}) == "female"
    # female and non-binary both lack 0.2: the larger target share wins
    assert most_under_represented(target, {"female": 0.2, "male": 0.8}) == "female"
    # equal deficit and equal target: alphabetical
    assert most_under_represented({"b": 0.5, "a": 0.5}, {"c": 1.0}) == "a"
    # a perfect match still names a group (all deficits 0): the largest target
    assert most_under_represented(target, target) == "female"


# -- targets on the people collection ----------------------------------------------------------------------
def test_groups_for_one_and_several_categories(people):
    gender = people.group_of("gender", fill="Unknown")
    region = people.group_of("region", fill="Unknown")
    assert groups_for(people, "gender").tolist() == gender.tolist()
    both = groups_for(people, ["gender", "region"])
    assert both.tolist() == [f"{g} × {r}" for g, r in zip(gender, region)]
    with pytest.raises(InvalidParameterError, match=r"unknown fairness category \['colour'\].*gender"):
        groups_for(people, "colour")
    with pytest.raises(InvalidParameterError, match="repeat a category"):
        groups_for(people, ["gender", "gender"])


def test_relevant_target_matches_counts(people):
    gender = people.group_of("gender", fill="Unknown")
    relevant = people.relevance("ppl-q01") >= 1
    expected = _shares(Counter(gender[relevant].tolist()), GENDERS)
    target = target_distribution(people, "ppl-q01", "gender")
    assert target.index.tolist() == GENDERS  # every corpus group, even those without relevant documents
    assert target.index.name == "gender"
    assert target.to_numpy() == pytest.approx(expected.to_numpy(), abs=1e-12)


def test_mixed_target_matches_counts(people):
    gender = people.group_of("gender", fill="Unknown")
    relevant = people.relevance("ppl-q04") >= 1
    rel = _shares(Counter(gender[relevant].tolist()), GENDERS)
    corpus = _shares(Counter(gender.tolist()), GENDERS)
    target = target_distribution(people, "ppl-q04", "gender", background_weight=0.5)
    assert target.to_numpy() == pytest.approx((0.5 * rel + 0.5 * corpus).to_numpy(), abs=1e-12)
    assert target.sum() == pytest.approx(1.0, abs=1e-12)


def test_uniform_and_custom_targets(people):
    uniform = target_distribution(people, None, "region", kind=TargetKind.UNIFORM)
    assert len(uniform) == len(set(people.group_of("region", fill="Unknown"))) == 8
    assert uniform.to_numpy() == pytest.approx(np.full(8, 1 / 8), abs=1e-15)
    custom = target_distribution(people, None, "gender", kind="custom", custom={"female": 2, "male": 1})
    assert custom.to_dict() == pytest.approx({"Unknown": 0.0, "female": 2 / 3, "male": 1 / 3, "non-binary": 0.0})


def test_intersectional_relevant_target_matches_counts(people):
    labels = [f"{g} × {r}" for g, r in zip(people.group_of("gender", fill="Unknown"),
                                            people.group_of("region", fill="Unknown"))]
    support = sorted(set(labels))
    relevant = people.relevance("ppl-q10") >= 1
    expected = _shares(Counter(np.array(labels)[relevant].tolist()), support)
    target = target_distribution(people, "ppl-q10", ["gender", "region"])
    assert target.index.tolist() == support
    assert target.index.name == "gender × region"
    assert target.to_numpy() == pytest.approx(expected.to_numpy(), abs=1e-12)


@pytest.fixture(scope="module")
def tiny():
    docs = (
        Document("d1", "first", groups={"gender": "female"}),
        Document("d2", "second", groups={"gender": "male"}),
        Document("d3", "third"),  # no label: Unknown with the default fill
    )
    queries = (Query("judged", "q"), Query("unjudged", "q"), Query("nothing-relevant", "q"))
    return Collection("tiny", docs, queries, {"judged": {"d1": 1}, "nothing-relevant": {"d2": 0}})


def test_target_distribution_bad_inputs_name_the_fix(people, tiny):
    assert target_distribution(tiny, "judged", "gender").to_dict() == {"Unknown": 0.0, "female": 1.0, "male": 0.0}
    with pytest.raises(InvalidParameterError, match="has no relevance judgements.*kind='uniform'"):
        target_distribution(tiny, "unjudged", "gender")
    with pytest.raises(InvalidParameterError, match="has no relevant document"):
        target_distribution(tiny, "nothing-relevant", "gender")
    with pytest.raises(InvalidParameterError, match="needs a query_id"):
        target_distribution(tiny, None, "gender")
    with pytest.raises(InvalidParameterError, match=r"unknown group\(s\) \['femal'\].*known groups: \['Unknown'"):
        target_distribution(people, None, "gender", kind="custom", custom={"femal": 1.0})
    with pytest.raises(InvalidParameterError, match="custom target shares must be non-negative"):
        target_distribution(people, None, "gender", kind="custom", custom={"female": -1.0, "male": 2.0})
    with pytest.raises(InvalidParameterError, match="custom target shares are all zero"):
        target_distribution(people, None, "gender", kind="custom", custom={"female": 0.0})
    with pytest.raises(InvalidParameterError, match="needs custom="):
        target_distribution(people, None, "gender", kind="custom")
    with pytest.raises(InvalidParameterError, match="kind='custom' only"):
        target_distribution(people, "ppl-q01", "gender", custom={"female": 1.0})
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(InvalidParameterError, match=r"background_weight must be in \[0, 1\]"):
            target_distribution(people, "ppl-q01", "gender", background_weight=bad)
    with pytest.raises(InvalidParameterError, match="applies to kind='relevant' only"):
        target_distribution(people, None, "gender", kind="uniform", background_weight=0.5)
    with pytest.raises(InvalidParameterError, match="unknown target kind 'oracle'; choose one of: relevant"):
        target_distribution(people, None, "gender", kind="oracle")
    with pytest.raises(MissingGroupLabelError, match="fill='Unknown'"):
        groups_for(tiny, "gender", fill=None)
