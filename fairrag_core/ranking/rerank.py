"""Re-ranking baselines for FAIR-QR's comparison: MMR (diversity) and FA*IR (fair top-k).

FAIR-QR (Chen & Fang, Table 1) compares query refinement with, among others,

* Maximal Marginal Relevance, λ = 0.5 (Carbonell & Goldstein 1998): :func:`mmr`, with :func:`tfidf_cosine`
  as a model-free document similarity;
* FA*IR with k = 400, p = 0.3, α = 0.15 (Zehlike et al. 2017) through the ``fairsearchcore`` package:
  :func:`fair_topk`, which protects one group (:func:`protected_group_mask`).

FA*IR m-tables. ``m(i) = F⁻¹(α; i, p)`` (binomial quantile, floored at 0) is the least number of protected
items the top i must hold. Testing every prefix at level α makes the *overall* chance that a fair random
ranking (each rank protected with probability p) fails some prefix larger than α, so FA*IR adjusts α
downwards until that failure probability is as close to α as the m-tables allow (Zehlike et al. 2017, §4).
``fairsearchcore==1.0.4`` implements this in ``Fair.adjust_alpha()`` / ``create_adjusted_mtable()``, but on this
project's stack (pandas 3, numpy 2) both raise ``TypeError: __hash__ method should return an integer``: a
cache key's ``__hash__`` returns a ``numpy.int64`` taken from a pandas sum. We therefore compute the failure
probability and the α search here (:func:`fair_fail_probability`, :func:`fair_adjusted_alpha`) and use
``fairsearchcore`` for the re-ranking itself (``re_ranker.fair_top_k``).

fairsearchcore's failure probability skips the constraint at the last rank k (its helper that splits the
m-table into blocks stops at rank k − 1), so its adjusted α (and the values in its own test-suite) come from
that slightly smaller failure probability. ``compat=False`` (default) counts every rank, as FA*IR defines it;
``compat=True`` skips rank k and reproduces fairsearchcore's numbers (e.g. its adjusted α 0.0796875 for
k = 30, p = 0.3, α = 0.15, where the full computation gives 0.075).
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import sparse
from scipy.stats import binom

from ..checks import check_binary, check_k, check_open_unit
from ..errors import InvalidParameterError
from ..text import DEFAULT_TOKENIZER

__all__ = [
    "mmr",
    "tfidf_cosine",
    "protected_group_mask",
    "fair_mtable",
    "fair_fail_probability",
    "fair_adjusted_alpha",
    "fair_topk",
]


# -- validation ------------------------------------------------------------------------------------
def _check_scores(scores: object) -> np.ndarray:
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameterError(
            f"scores must be a non-empty vector (one score per candidate), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError("scores must be finite; replace NaN/inf scores (e.g. drop those candidates)")
    return arr




# -- MMR -----------------------------------------------------------------------------------------------
def mmr(scores: np.ndarray, similarity: np.ndarray, k: int, *, lambda_: float = 0.5) -> np.ndarray:
    """Maximal Marginal Relevance re-ranking (Carbonell & Goldstein, SIGIR 1998).

    Greedy: with S the items picked so far, the next pick is

        argmax_{i ∉ S}  λ·rel(i) − (1 − λ)·max_{j ∈ S} sim(i, j)

    (the penalty is 0 for the first pick). ``rel`` is ``scores`` min-max normalised to [0, 1] (all equal → 1):
    BM25 scores are unbounded, and without rescaling λ would trade relevance against similarity on different
    scales. Ties go to the lower candidate position, which is the higher-scored one when candidates come best
    first. λ = 1 gives the score order; λ = 0 ignores scores after the first pick (then candidate 0 under the
    tie rule) and takes, each time, the candidate least similar to those already picked.

    Args:
        scores: ``(n,)`` retrieval scores of the candidates.
        similarity: ``(n, n)`` similarity of candidate pairs, e.g. :func:`tfidf_cosine` or embedding cosines.
        k: how many candidates to pick (1 ≤ k ≤ n).
        lambda_: relevance weight λ in [0, 1]; FAIR-QR used 0.5.

    Returns:
        ``(k,)`` candidate positions in pick order.

    >>> sim = np.array([[1.0, 0.95, 0.1, 0.0], [0.95, 1.0, 0.1, 0.0], [0.1, 0.1, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    >>> mmr(np.array([3.0, 2.9, 2.5, 1.0]), sim, 3).tolist()  # candidate 1 nearly duplicates candidate 0
    [0, 2, 1]
    """
    s = _check_scores(scores)
    n = s.size
    sim = np.asarray(similarity, dtype=np.float64)
    if sim.shape != (n, n):
        raise InvalidParameterError(f"similarity must be ({n}, {n}) for {n} candidates, got shape {sim.shape}")
    if not np.all(np.isfinite(sim)):
        raise InvalidParameterError("similarity must be finite; found NaN or infinity")
    k = check_k(k, n)
    if isinstance(lambda_, bool) or not isinstance(lambda_, numbers.Real) or not (0.0 <= lambda_ <= 1.0):
        raise InvalidParameterError(
            f"lambda_ must be in [0, 1] (1 = pure relevance, 0 = pure diversity), got {lambda_!r}"
        )

    span = s.max() - s.min()
    rel = np.ones(n) if span == 0 else (s - s.min()) / span
    redundancy = np.zeros(n)  # max similarity to the picked items; 0 before the first pick
    available = np.ones(n, dtype=bool)
    picked: list[int] = []
    for step in range(k):
        gain = lambda_ * rel - (1.0 - lambda_) * redundancy
        gain[~available] = -np.inf
        best = int(np.argmax(gain))  # argmax returns the first maximum: the lower position wins ties
        picked.append(best)
        available[best] = False
        # similarities may be negative (dense cosines), so the first pick replaces the 0 instead of max-ing with it
        redundancy = sim[:, best].copy() if step == 0 else np.maximum(redundancy, sim[:, best])
    return np.asarray(picked, dtype=np.int64)


def tfidf_cosine(texts: Sequence[str]) -> np.ndarray:
    """``(n, n)`` cosine similarity of TF-IDF vectors, a model-free similarity for :func:`mmr`.

    Tokens come from :data:`fairrag_core.text.DEFAULT_TOKENIZER` (lower case, stop words removed, Snowball
    stems), the same as BM25. Weight of term t in document d: ``tf(t, d) · idf(t)`` with raw counts and the
    smoothed ``idf(t) = ln((1 + n) / (1 + df(t))) + 1``; rows are L2-normalised, so the product of the (sparse)
    matrix with its transpose is the cosine. The diagonal is exactly 1 (a text is identical to itself, even one
    without content words), values are clipped to [0, 1] against rounding, and the matrix is symmetric.

    >>> tfidf_cosine(["jazz pianist", "jazz piano player", "glacier scientist"]).round(2).tolist()
    [[1.0, 0.29, 0.0], [0.29, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if isinstance(texts, str):
        raise InvalidParameterError("texts must be a sequence of texts, not one string; wrap it in a list")
    docs = list(texts)
    if not docs:
        raise InvalidParameterError("texts is empty; pass the texts of the candidates to compare")
    if not all(isinstance(t, str) for t in docs):
        raise InvalidParameterError("texts must all be strings (use Collection.texts or Document.full_text)")
    n = len(docs)
    vocabulary: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    counts: list[float] = []
    for row, text in enumerate(docs):
        for term, count in Counter(DEFAULT_TOKENIZER(text)).items():
            rows.append(row)
            cols.append(vocabulary.setdefault(term, len(vocabulary)))
            counts.append(float(count))
    if not vocabulary:  # no content words anywhere: nothing is similar to anything else
        return np.eye(n)
    tf = sparse.csr_matrix((counts, (rows, cols)), shape=(n, len(vocabulary)))
    doc_freq = np.bincount(np.asarray(cols), minlength=len(vocabulary))
    idf = np.log((1.0 + n) / (1.0 + doc_freq)) + 1.0
    weights = tf @ sparse.diags(idf)
    norms = np.sqrt(np.asarray(weights.multiply(weights).sum(axis=1)).ravel())
    inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    unit = sparse.diags(inverse) @ weights
    cosine = np.clip((unit @ unit.T).toarray(), 0.0, 1.0)
    cosine = (cosine + cosine.T) / 2  # exact symmetry despite rounding in the sparse product
    np.fill_diagonal(cosine, 1.0)
    return cosine


# -- FA*IR -----------------------------------------------------------------------------------------------
def protected_group_mask(groups: Sequence[str], group: str) -> np.ndarray:
    """Boolean mask of the candidates in ``group``: FA*IR protects one group against all the rest.

    FA*IR is defined for a binary attribute, so a category with several groups (gender: male, female,
    non-binary, Unknown) is reduced to "this group vs the rest". For the FAIR-QR comparison the protected group
    is the target's most under-represented group in the initial ranking
    (:func:`fairrag_core.metrics.group_fairness.most_under_represented`), the group FAIR-QR itself targets.
    A group absent from ``groups`` gives an all-False mask, and :func:`fair_topk` then keeps the score order.

    >>> protected_group_mask(["male", "female", "Unknown"], "female").tolist()
    [False, True, False]
    """
    if not isinstance(group, str) or not group:
        raise InvalidParameterError(f"group must be a non-empty group name (e.g. 'female'), got {group!r}")
    arr = np.asarray(list(groups), dtype=object)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameterError("groups must be a non-empty sequence with one group per candidate")
    return np.array([each == group for each in arr], dtype=bool)


def _mtable(k: int, p: float, alpha: float) -> np.ndarray:
    # binom.ppf(α, i, p) = least m with P(X ≤ m) ≥ α; it is −1 for α = 0, hence the floor at 0
    return np.maximum(binom.ppf(alpha, np.arange(1, k + 1), p), 0).astype(np.int64)


def _fail_probability(mtable: np.ndarray, p: float, compat: bool) -> float:
    """P(a ranking whose ranks are protected i.i.d. with probability p breaks some prefix of the m-table)."""
    ranks = mtable.size - 1 if compat else mtable.size
    # distribution of the protected count among the rankings that have not failed yet
    alive = np.zeros(mtable.size + 1)
    alive[0] = 1.0
    failed = 0.0
    for i in range(ranks):
        step = alive * (1.0 - p)
        step[1:] += alive[:-1] * p
        need = int(mtable[i])
        failed += float(step[:need].sum())  # summing the failures avoids 1 − (1 − ε) cancellation
        step[:need] = 0.0
        alive = step
    return failed


def _check_fair_parameters(k: object, p: object, alpha: object) -> tuple[int, float, float]:
    k = check_k(k)
    p = check_open_unit(p, "p", hint="the minimum share of protected candidates, e.g. 0.3")
    alpha = check_open_unit(alpha, "alpha", hint="FA*IR's significance level, e.g. 0.1")
    return k, p, alpha


def fair_fail_probability(mtable: Sequence[int], p: float, *, compat: bool = False) -> float:
    """Probability that a fair random ranking fails the m-table at some prefix (Zehlike et al. 2017, §4).

    A fair random ranking makes each rank protected independently with probability ``p``; it fails when, for
    some i, its top i holds fewer than ``mtable[i−1]`` protected items. Computed exactly by dynamic programming
    over the protected count (O(k²)). ``compat=True`` skips the last rank like fairsearchcore 1.0.4.

    >>> round(fair_fail_probability([0, 0, 0, 0, 0, 0, 0, 0, 1, 1], 0.2), 6)  # no protected item in the top 9
    0.134218
    """
    table = np.asarray(mtable)
    if table.ndim != 1 or table.size == 0 or not np.issubdtype(table.dtype, np.integer):
        raise InvalidParameterError("mtable must be a non-empty vector of integers (minimum protected counts)")
    if table.min() < 0 or np.any(np.diff(table) < 0) or np.any(table > np.arange(1, table.size + 1)):
        raise InvalidParameterError(
            "mtable must be non-decreasing with 0 ≤ mtable[i−1] ≤ i; build it with fair_mtable(k, p, alpha)"
        )
    p = check_open_unit(p, "p", hint="the minimum share of protected candidates, e.g. 0.3")
    return _fail_probability(table.astype(np.int64), p, bool(compat))


@lru_cache(maxsize=256)
def _adjusted_alpha(k: int, p: float, alpha: float, compat: bool) -> float:
    # Bisection on α' ∈ [lo, hi] = [0, α]. m-tables are step functions of α' and grow with it, and so does
    # their failure probability; stop when the bracket's tables differ by one unit of "mass" (Σ m), i.e. they
    # are neighbours, and keep the one whose failure probability is closer to α (ties: the smaller α').
    # When both ends share one table, any α' in the bracket gives it: return the midpoint. Like fairsearchcore,
    # bisect at least once before stopping; both choices only matter for which α' is reported, not for the
    # m-table, and they make compat=True reproduce fairsearchcore's α' values too.
    lo, hi = 0.0, alpha
    table_lo, table_hi = _mtable(k, p, lo), _mtable(k, p, hi)
    fail_lo, fail_hi = _fail_probability(table_lo, p, compat), _fail_probability(table_hi, p, compat)
    first = True
    while True:
        gap = int(table_hi.sum() - table_lo.sum())
        if gap == 0:
            return (lo + hi) / 2
        if not first and (gap == 1 or hi - lo <= 1e-16):
            return lo if abs(fail_lo - alpha) <= abs(fail_hi - alpha) else hi
        first = False
        mid = (lo + hi) / 2
        table_mid = _mtable(k, p, mid)
        fail_mid = _fail_probability(table_mid, p, compat)
        if fail_mid == alpha:
            return mid
        if fail_mid < alpha:
            lo, table_lo, fail_lo = mid, table_mid, fail_mid
        else:
            hi, table_hi, fail_hi = mid, table_mid, fail_mid


def fair_adjusted_alpha(k: int, p: float, alpha: float, *, compat: bool = False) -> float:
    """FA*IR's adjusted significance α' ≤ α: the m-table at α' fails fair random rankings with probability ≈ α.

    Searches α' in [0, α] by bisection until the two bracketing m-tables are neighbours, and returns the one
    whose :func:`fair_fail_probability` is closer to α (Zehlike et al. 2017, §4; the search fairsearchcore's
    ``Fair.adjust_alpha()`` performs, rewritten because that method fails on numpy 2 / pandas 3). When no
    protected item is ever required (all-zero m-table) there is nothing to adjust and α/2 is returned, as
    fairsearchcore does; the m-table is the same. ``compat=True`` reproduces fairsearchcore's values (module
    docstring).

    >>> round(fair_adjusted_alpha(20, 0.25, 0.1), 6)
    0.078125
    """
    k, p, alpha = _check_fair_parameters(k, p, alpha)
    return _adjusted_alpha(k, p, alpha, bool(compat))


def fair_mtable(k: int, p: float, alpha: float, *, adjust_alpha: bool = True, compat: bool = False) -> np.ndarray:
    """FA*IR m-table: ``m[i−1] = max(0, F⁻¹(α'; i, p))``, the least number of protected items in the top i.

    ``α' =`` :func:`fair_adjusted_alpha` when ``adjust_alpha`` (FA*IR's default), else ``α``. Equals
    fairsearchcore's ``create_unadjusted_mtable()`` / ``create_adjusted_mtable()``.

    >>> fair_mtable(10, 0.2, 0.15).tolist()
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]
    """
    k, p, alpha = _check_fair_parameters(k, p, alpha)
    level = _adjusted_alpha(k, p, alpha, bool(compat)) if adjust_alpha else alpha
    return _mtable(k, p, level)


def fair_topk(
    scores: np.ndarray,
    protected: np.ndarray,
    k: int,
    *,
    p: float,
    alpha: float = 0.1,
    adjust_alpha: bool = True,
    compat: bool = False,
) -> np.ndarray:
    """FA*IR fair top-k re-ranking (Zehlike et al., CIKM 2017) via ``fairsearchcore``.

    Candidates are split into protected and non-protected lists, each by score (ties: lower position first).
    Rank by rank, FA*IR takes the best protected candidate when the top i would otherwise hold fewer protected
    candidates than the m-table's ``m(i)`` (:func:`fair_mtable`), and otherwise the better of the two list heads
    (a protected one on equal scores, as fairsearchcore does). If the protected candidates run out, the rest is
    filled by score, so the result can be unfair only when there are too few protected candidates.

    Args:
        scores: ``(n,)`` retrieval scores.
        protected: ``(n,)`` booleans (or 0/1), e.g. :func:`protected_group_mask`.
        k: length of the re-ranked list (1 ≤ k ≤ n); FAIR-QR used k = 400.
        p: minimum target share of protected candidates, in (0, 1); FAIR-QR used 0.3.
        alpha: significance level in (0, 1); FAIR-QR used 0.15 (fairsearchcore is tested on 0.01–0.15).
        adjust_alpha: correct α for testing every prefix (FA*IR's default, :func:`fair_adjusted_alpha`).
        compat: reproduce fairsearchcore 1.0.4's adjusted α (module docstring).

    Returns:
        ``(k,)`` candidate positions, best first.

    >>> scores = np.arange(12, 0, -1.0)  # candidate 0 has the best score
    >>> protected = np.arange(12) >= 9  # only the three lowest-scored candidates are protected
    >>> fair_topk(scores, protected, 10, p=0.3, alpha=0.1).tolist()
    [0, 1, 2, 3, 4, 5, 9, 6, 7, 8]
    """
    from fairsearchcore.models import FairScoreDoc
    from fairsearchcore.re_ranker import fair_top_k

    s = _check_scores(scores)
    n = s.size
    mask = check_binary(protected, n, name="protected", per="candidate", fix="; build it with protected_group_mask")
    k = check_k(k, n)
    table = fair_mtable(k, p, alpha, adjust_alpha=adjust_alpha, compat=compat)
    order = np.lexsort((np.arange(n), -s))  # score descending, then position
    docs = [FairScoreDoc(int(i), float(s[i]), bool(mask[i])) for i in order]
    ranked = fair_top_k(k, [d for d in docs if d.is_protected], [d for d in docs if not d.is_protected],
                        [int(m) for m in table])
    return np.asarray([d.id for d in ranked], dtype=np.int64)
