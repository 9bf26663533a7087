"""Group fairness of a ranked list: group distributions, AWRF, nDCG, KL and JS divergences (pure functions).

These are the measures of FAIR-QR (Chen & Fang, "FAIR-QR: Enhancing Fairness-aware Information Retrieval
through Query Refinement"), which evaluates with the TREC Fair Ranking 2022 metric code
(fair-trec/trec2022-fair-public, ``wptrec/metrics/awrf.py`` and ``common.py``):

* every document belongs to one group per fairness category (gender, region, ...); ``"Unknown"`` is a group;
* the *current* distribution ε_L is the share of each group in the top-K list (optionally weighted by the
  position discount, which gives the attention-weighted ε_L^att of AWRF);
* the *target* ε* is the group distribution of the query's relevant documents (optionally mixed with a
  background distribution), uniform, or given by the user (:mod:`fairrag_core.metrics.group_targets`);
* FAIR-QR's refinement loop measures Δ = KL(ε* ‖ ε_L) (:func:`kl_divergence`) and refines the query for
  the most under-represented group (:func:`most_under_represented`);
* evaluation reports nDCG@20, AWRF@20 = 1 − JSD(ε_L^att, ε*) and their product.

Distributions are ``pandas.Series`` indexed by group. Functions that compare two distributions align
them over the union of their groups (a group missing on one side has share 0 there) and normalise each to
sum to 1, so counts work as well as shares.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

from ..checks import check_non_negative, check_positive_int
from ..errors import InvalidParameterError

__all__ = [
    "Distribution",
    "attention",
    "group_distribution",
    "awrf",
    "ndcg",
    "kl_divergence",
    "jensen_shannon",
    "most_under_represented",
]

#: A distribution over groups: a mapping or Series from group to a non-negative weight.
Distribution = Mapping[str, float] | pd.Series


# -- validation helpers ------------------------------------------------------------------------------
def _check_cutoff(cutoff: object) -> int | None:
    return None if cutoff is None else check_positive_int(cutoff, "cutoff", hint="ranks to evaluate, e.g. 20")


def _check_groups(groups: Sequence[str], what: str) -> np.ndarray:
    found = np.asarray(list(groups), dtype=object)
    if found.ndim != 1:
        raise InvalidParameterError(f"{what} must be a flat sequence of groups (one per document), got {found.shape}")
    if found.size == 0:
        raise InvalidParameterError(f"{what} is empty; pass at least one document's group")
    bad = [g for g in found if not isinstance(g, str)]
    if bad:
        raise InvalidParameterError(
            f"groups must be strings, got {bad[0]!r}; use Collection.group_of(category, fill='Unknown')"
        )
    return found


def _check_weights(values: object, name: str, *, allow_all_zero: bool = False) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise InvalidParameterError(f"{name} must be a vector, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} must be finite; found NaN or infinity")
    if np.any(arr < 0):
        raise InvalidParameterError(f"{name} must be non-negative; found {arr[arr < 0][0]!r}")
    if not allow_all_zero and arr.size and not np.any(arr > 0):
        raise InvalidParameterError(f"{name} are all zero; give at least one positive weight")
    return arr


def as_distribution(dist: Distribution, name: str) -> pd.Series:
    """Validate a group → weight mapping and normalise it to sum to 1 (index = groups as given)."""
    if isinstance(dist, pd.Series):
        series = dist.copy()
    elif isinstance(dist, Mapping):
        series = pd.Series(dict(dist), dtype=np.float64)
    else:
        raise InvalidParameterError(
            f"{name} must map groups to shares (a dict or a pandas Series), got {type(dist).__name__}"
        )
    if series.empty:
        raise InvalidParameterError(f"{name} is empty; give a share for at least one group")
    if not series.index.is_unique:
        raise InvalidParameterError(f"{name} lists a group twice; give each group one share")
    try:
        values = series.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} shares must be numbers") from None
    values = _check_weights(values, f"{name} shares")
    index = pd.Index([str(g) for g in series.index], name=series.index.name or "group")
    return pd.Series(values / values.sum(), index=index, name=series.name)


def _aligned(first: Distribution, second: Distribution, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray,
                                                                                         pd.Index]:
    """Both distributions normalised and aligned over the sorted union of their groups."""
    p = as_distribution(first, names[0])
    q = as_distribution(second, names[1])
    support = pd.Index(sorted(set(p.index) | set(q.index)), name="group")
    return (p.reindex(support, fill_value=0.0).to_numpy(), q.reindex(support, fill_value=0.0).to_numpy(), support)


def _js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    # scipy returns the JS *distance* sqrt(JSD) (natural log); rounding can leave the sum a hair below 0 for
    # (near-)equal inputs, where sqrt gives NaN, so treat that as 0.
    with np.errstate(invalid="ignore"):
        distance = float(jensenshannon(p, q))
    return 0.0 if math.isnan(distance) else min(distance**2, math.log(2))


# -- position weights and distributions ------------------------------------------------------------------
def attention(n: int) -> np.ndarray:
    """Position weights ``1 / log2(max(rank, 2))`` for ranks 1..n, the discount of TREC Fair 2022.

    Ranks 1 and 2 both get weight 1 (``wptrec.metrics.common.discount``; computed here in float64).

    >>> attention(4).round(4).tolist()
    [1.0, 1.0, 0.6309, 0.5]
    """
    n = check_positive_int(n, "n", hint="ranks")
    return 1.0 / np.log2(np.maximum(np.arange(1, n + 1, dtype=np.float64), 2.0))


def group_distribution(
    groups: Sequence[str],
    *,
    weights: Sequence[float] | None = None,
    support: Sequence[str] | None = None,
) -> pd.Series:
    """Share of each group among ``groups`` (one label per document), optionally weighted per document.

    ``share(g) = Σ_{i: groups[i] = g} w_i / Σ_i w_i`` with ``w_i = 1`` by default; with the weights of
    :func:`attention` this is the attention-weighted distribution ε_L^att of AWRF (Sapiezynski et al. 2019).

    Args:
        groups: group of each document (e.g. ``collection.group_of("gender", fill="Unknown")``).
        weights: one non-negative weight per document (not all zero).
        support: the groups to report, in this order; groups of ``support`` that do not occur get 0. A label
            outside ``support`` is an error (it would silently drop mass).

    Returns:
        Series indexed by group (sorted, unless ``support`` gives the order), summing to 1.

    >>> group_distribution(["female", "male", "male", "Unknown"]).to_dict()
    {'Unknown': 0.25, 'female': 0.25, 'male': 0.5}
    >>> group_distribution(["male", "male"], support=["female", "male"]).to_dict()
    {'female': 0.0, 'male': 1.0}
    """
    found = _check_groups(groups, "groups")
    if weights is None:
        w = np.ones(found.size)
    else:
        w = _check_weights(weights, "weights")
        if w.size != found.size:
            raise InvalidParameterError(
                f"weights must have one entry per document: got {w.size} weights for {found.size} groups"
            )
    names, inverse = np.unique(found.astype(str), return_inverse=True)
    mass = np.bincount(inverse, weights=w, minlength=names.size)
    share = pd.Series(mass / mass.sum(), index=pd.Index(names.tolist(), name="group"), name="share")
    if support is None:
        return share
    wanted = [str(g) for g in support]
    if len(set(wanted)) != len(wanted):
        raise InvalidParameterError("support lists a group twice; list each group once")
    outside = sorted(set(share.index) - set(wanted))
    if outside:
        raise InvalidParameterError(
            f"group(s) {outside} occur in the ranking but not in support {wanted}; add them to support"
        )
    return share.reindex(pd.Index(wanted, name="group"), fill_value=0.0)


# -- ranking metrics ---------------------------------------------------------------------------------
def awrf(groups_in_rank_order: Sequence[str], target: Distribution, cutoff: int | None = None) -> float:
    """Attention-Weighted Rank Fairness (AWRF) of a ranking against a target group distribution.

    ``AWRF@K = 1 − JSD(ε_L^att, ε*)``, where ε_L^att is the group distribution of the top K weighted by
    ``attention(K)`` (rank r gets ``1 / log2(max(r, 2))``), ε* is the normalised ``target``, both are aligned
    over the union of their groups, and JSD is the Jensen-Shannon divergence with the natural log, computed
    as ``scipy.spatial.distance.jensenshannon(p, q) ** 2``. AWRF lies in [1 − ln 2, 1]; 1 means the
    ranking's attention-weighted distribution equals the target.

    This follows TREC Fair Ranking 2022 (Ekstrand et al. 2023; ``AWRFMetric.qr_awrf`` in
    fair-trec/trec2022-fair-public), after Sapiezynski et al. (2019) and Raj & Ekstrand (2022), as used by
    FAIR-QR (AWRF@20). TREC drops documents without alignment data; here every document has a label
    (``"Unknown"`` is a group), so none is dropped.

    Args:
        groups_in_rank_order: group of each ranked document, best first.
        target: target share per group (normalised here; need not sum to 1).
        cutoff: evaluate the top ``cutoff`` only; ``None`` (or a cutoff beyond the ranking) uses it all.

    >>> round(awrf(["a", "a", "b", "b"], {"a": 0.5, "b": 0.5}), 4)
    0.9901
    """
    cutoff = _check_cutoff(cutoff)
    ranked = _check_groups(groups_in_rank_order, "the ranking")
    if cutoff is not None:
        ranked = ranked[:cutoff]
    current = group_distribution(ranked, weights=attention(ranked.size))
    p, q, _ = _aligned(current, target, ("ranking distribution", "target"))
    return 1.0 - _js_divergence(p, q)


def ndcg(relevance_in_rank_order: Sequence[float], all_relevances: Sequence[float], cutoff: int | None = None) -> float:
    """Normalised discounted cumulative gain with the TREC Fair 2022 discount and linear gains.

    ``DCG@K = Σ_{r ≤ K} rel_r / log2(max(r, 2))`` and ``nDCG@K = DCG@K / IDCG@K``, where IDCG@K is the DCG of
    the best ordering of ``all_relevances`` (the judged grades of all the query's documents) cut at K.

    What we followed: ``AWRFMetric.qr_ndcg`` and ``discount`` in fair-trec/trec2022-fair-public (checked in
    ``wptrec/metrics/awrf.py`` and ``common.py``): same discount (ranks 1 and 2 weigh 1), gain = relevance,
    ideal run = the relevant documents first. TREC 2022 qrels are binary, so its gain is ``1[relevant]``; we use
    the grade itself (linear gain), which is identical for 0/1 grades and extends to graded qrels. With
    ``cutoff=None`` neither list is cut, so (as in TREC, whose ideal run has ``min(500, #relevant)`` entries) a
    ranking shorter than the number of relevant documents cannot reach 1.

    Returns:
        A value in [0, 1]; **0 when the query has no relevant document** (IDCG = 0), rather than NaN.

    >>> round(ndcg([2, 0, 1, 0, 1], [2, 1, 1, 0, 0]), 4)
    0.8432
    """
    cutoff = _check_cutoff(cutoff)
    ranked = _check_weights(relevance_in_rank_order, "relevance grades", allow_all_zero=True)
    if ranked.size == 0:
        raise InvalidParameterError("the ranking is empty; pass the relevance grade of at least one ranked document")
    judged = _check_weights(all_relevances, "all_relevances", allow_all_zero=True)
    ideal = np.sort(judged)[::-1]
    if cutoff is not None:
        ranked, ideal = ranked[:cutoff], ideal[:cutoff]
    dcg = float(ranked @ attention(ranked.size))
    idcg = float(ideal @ attention(ideal.size)) if ideal.size else 0.0
    if dcg > idcg * (1 + 1e-9) + 1e-12:
        raise InvalidParameterError(
            "the ranking holds grades that all_relevances lacks (its DCG exceeds the ideal DCG); pass the grades "
            "of all judged documents of the query, e.g. collection.relevance(query_id)"
        )
    return 0.0 if idcg == 0 else min(dcg / idcg, 1.0)


# -- divergences ---------------------------------------------------------------------------------------
def kl_divergence(target: Distribution, current: Distribution, *, smoothing: float = 1e-3) -> float:
    """Kullback-Leibler divergence ``KL(target ‖ current) = Σ_g t_g ln(t_g / c_g)``: FAIR-QR's Δ.

    Direction: the **target comes first**, so the sum runs over what the target asks for. A group the target
    wants but the ranking lacks (``t_g > 0``, ``c_g ≈ 0``) costs ``t_g ln(t_g / smoothing)``, a lot; a group the
    ranking has but the target does not want costs little. That is what FAIR-QR's refinement loop needs to
    detect (Chen & Fang, §2.2: "some groups are underrepresented than expected").

    Both distributions are normalised, aligned over the union of their groups, then smoothed additively,
    ``x'_g = (x_g + smoothing) / (1 + G·smoothing)`` over the G groups, so that a missing group gives a large
    but finite Δ; ``smoothing=0`` gives the plain KL (``inf`` when the ranking misses a wanted group). Computed
    with ``scipy.stats.entropy`` (natural log). KL ≥ 0, with 0 iff the distributions are equal.

    >>> round(kl_divergence({"female": 0.5, "male": 0.5}, {"male": 1.0}), 4)
    2.7622
    """
    smoothing = check_non_negative(smoothing, "smoothing", hint="default 1e-3")
    t, c, _ = _aligned(target, current, ("target", "current"))
    t = (t + smoothing) / (1 + t.size * smoothing)
    c = (c + smoothing) / (1 + c.size * smoothing)
    return max(float(entropy(t, c)), 0.0)


def jensen_shannon(p: Distribution, q: Distribution) -> float:
    """Jensen-Shannon divergence with the natural log: ``jensenshannon(p, q) ** 2`` (scipy), in [0, ln 2].

    ``JSD(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m)`` with ``m = ½ (p + q)``, over the union of groups. Symmetric and
    finite even when a group is missing on one side; it is the divergence inside :func:`awrf`.

    >>> round(jensen_shannon({"a": 1.0}, {"b": 1.0}), 4)  # disjoint supports: ln 2
    0.6931
    """
    a, b, _ = _aligned(p, q, ("p", "q"))
    return _js_divergence(a, b)


def most_under_represented(target: Distribution, current: Distribution) -> str:
    """The group whose share falls furthest below its target: ``argmax_g (t_g − c_g)``.

    This is FAIR-QR's ĝ, the group the refined query should bring in. Ties go to the group with the larger
    target share, then to the alphabetically first group, so the choice is deterministic. When the ranking
    matches the target exactly, every deficit is 0 and the rule still returns a group (the tie-break winner).

    >>> most_under_represented({"female": 0.5, "male": 0.5}, {"female": 0.2, "male": 0.8})
    'female'
    """
    t, c, support = _aligned(target, current, ("target", "current"))
    deficit = t - c
    order = sorted(range(support.size), key=lambda i: (-deficit[i], -t[i], support[i]))
    return str(support[order[0]])
