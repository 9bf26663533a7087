"""Fairness-aware stochastic retrieval: Plackett-Luce sampling of top-k rankings with the knob α.

Kim & Diaz, "Towards Fair RAG", ICTIR 2025, §3.2 (after Diaz et al. 2020, Oosterhuis 2021):

* retrieval scores ``s`` are min-max normalised and shifted to ``s̄ ∈ [1, 2]`` (all-equal → all 1);
* the sampling policy is Plackett-Luce with ``p(d | L_{1:i-1}) ∝ exp(s̄_d^α)`` (Eq. 2);
* a ranking is sampled by sorting ``s̄^α + G`` with i.i.d. Gumbel noise ``G = −log(−log U)``,
  truncated to the top ``k``.

α = 0 is uniform (maximum item-fairness); large α approaches the deterministic ranking, but items
with *equal* scores keep equal chances at any α (ties stay random).

Numerics: ``exp(2**α)`` overflows float64 for α ≳ 9.5, so probabilities are never exponentiated;
only Gumbel keys ``s̄^α + G`` are compared (finite up to α = 1000). When a key is so large that the
noise is absorbed by rounding, items whose keys become equal are ordered by their noise, which is
the exact Gumbel order for equal logits (ties stay random at any α). ``alpha = inf`` (and any α > 1000,
where even 1-ulp score differences dominate the noise) gives the deterministic limit: sorted by
score, ties in random order.

Speed: only the top k of each sample matters. The sampler draws Gumbel keys for a *head* of the
``H ≈ 2·sqrt(k·n)`` highest logits, takes the k-th best key ``T`` per sample, and then finds the
tail items whose key could exceed ``T`` without drawing noise for all of them: candidates come from
a Bernoulli process (geometric gaps) at the bound ``p_max = P(l_max_tail + G > T)``, are thinned to
their own ``P(l_d + G > T)`` and get a Gumbel key truncated to ``> T``. This is exact (thinning of
independent exceedance events) and costs ``O(n)`` once plus ``O(sqrt(k·n))`` per sample instead of
``O(n log n)`` per sample.
"""

from __future__ import annotations

import math

import numpy as np

from ..checks import MAX_SAMPLES, check_alpha, check_at_most, check_k, check_work
from ..errors import InvalidParameterError
from ..seeds import SeedLike, as_generator
from ..settings import DEFAULT_CANDIDATES

__all__ = [
    "normalise_scores",
    "policy_logits",
    "sample_rankings",
    "sample_rankings_batch",
    "deterministic_ranking",
    "top_mass",
    "separation_note",
]

#: Above this α, ``s̄^α`` overflows float64 and the policy equals its deterministic limit anyway.
ALPHA_DETERMINISTIC = 1000.0
# Work arrays are processed in chunks of about this many float64 entries (≈ 64 MB).
_CHUNK_ENTRIES = 8_000_000


def _check_scores(scores: object, *, ndim: int) -> np.ndarray:
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != ndim:
        shape = "(n,)" if ndim == 1 else "(n_queries, n)"
        raise InvalidParameterError(f"scores must have shape {shape}, got shape {arr.shape}")
    if arr.shape[-1] == 0:
        raise InvalidParameterError("scores is empty; retrieve at least one candidate before sampling")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError("scores contain NaN or infinity; drop or fix those candidates before sampling")
    return arr


def normalise_scores(scores: np.ndarray) -> np.ndarray:
    """Min-max normalise along the last axis into ``[1, 2]`` (rows of equal scores become all 1).

    Works for negative scores (dense retrievers) and is exact for the extremes: min → 1, max → 2.

    >>> normalise_scores(np.array([-3.0, -1.0, 1.0])).tolist()
    [1.0, 1.5, 2.0]
    """
    s = np.asarray(scores, dtype=np.float64)
    lo = s.min(axis=-1, keepdims=True)
    hi = s.max(axis=-1, keepdims=True)
    with np.errstate(over="ignore"):
        span = hi - lo
    if not np.all(np.isfinite(span)):  # e.g. scores near ±1e308: rescale first, the order is what matters
        s = s / np.abs(s).max(axis=-1, keepdims=True)
        lo = s.min(axis=-1, keepdims=True)
        span = s.max(axis=-1, keepdims=True) - lo
    safe = np.where(span > 0, span, 1.0)
    out = 1.0 + (s - lo) / safe
    out = np.where(span > 0, out, 1.0)
    return np.minimum(out, 2.0)


def policy_logits(scores: np.ndarray, alpha: float) -> np.ndarray:
    """Plackett-Luce logits ``s̄^α`` along the last axis (Eq. 2), finite for α ≤ 1000.

    They are deliberately *not* shifted by their maximum: ``s̄^α`` keeps distinct scores distinct in
    relative precision, whereas ``s̄^α − 2^α`` would round 1.5^500 and 1^500 to the same number.

    >>> policy_logits(np.array([0.0, 1.0, 2.0]), 2).tolist()
    [1.0, 2.25, 4.0]
    """
    alpha = check_alpha(alpha)
    if alpha > ALPHA_DETERMINISTIC:
        raise InvalidParameterError(f"alpha={alpha} has no finite logits; use sample_rankings, which handles it")
    return normalise_scores(scores) ** alpha


#: The separation check (:func:`separation_note`): how many top candidates it follows, and the share of the sampler's
#: first draw under which α is said no longer to separate them from the rest.
SEPARATION_TOP = 10
SEPARATION_MIN_MASS = 0.05


def top_mass(scores: np.ndarray, alpha: float, top: int = SEPARATION_TOP) -> float:
    """The probability that the sampler's first draw is one of the ``top`` highest-scored candidates at ``α``:
    ``Σ_{i ≤ top} exp(s̄_i^α) / Σ_j exp(s̄_j^α)`` (Eq. 2's Plackett-Luce, by log-sum-exp; 1.0 at α = ∞ and when
    there are at most ``top`` candidates).

    >>> round(top_mass(np.array([3.0, 2.0, 1.0, 0.0]), 0, top=1), 6)
    0.25
    """
    s = _check_scores(scores, ndim=1)
    if s.size <= top or check_alpha(alpha) > ALPHA_DETERMINISTIC:
        return 1.0
    logits = policy_logits(s, alpha)
    order = np.argsort(-s, kind="stable")
    shift = logits.max()
    weights = np.exp(logits - shift)
    return float(weights[order[:top]].sum() / weights.sum())


def separation_note(scores: np.ndarray, alpha: float) -> str | None:
    """A sentence when ``α`` hardly separates the top candidates from the rest, else None.

    Over many candidates, scores min-maxed into [1, 2] give ``exp(s̄^α)`` weights within a small factor of one another
    (e^4/e at α = 2), so the thousands of weak candidates together take nearly all of the first draw and the sampled
    rankings are close to random over the collection (EE-D near 0 whatever α). The note fires when the top
    :data:`SEPARATION_TOP` hold less than :data:`SEPARATION_MIN_MASS` of the first draw, and names the fix: a smaller
    first-stage cut-off K.
    """
    mass = top_mass(scores, alpha)
    if mass >= SEPARATION_MIN_MASS:
        return None
    n = int(np.asarray(scores).size)
    return (f"α = {alpha:g} hardly separates the top documents among K = {n:,} candidates: the top {SEPARATION_TOP} "
            f"get {mass:.2%} of the sampler's first draw (uniform {SEPARATION_TOP / n:.2%}), so the rankings are "
            f"close to random; sample among fewer candidates (K = {DEFAULT_CANDIDATES}, the default, or 100)")


def deterministic_ranking(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the top ``k`` scores, highest first; ties keep collection order (a fixed retriever)."""
    s = _check_scores(scores, ndim=1)
    k = check_k(k, s.size)
    return np.argsort(-s, kind="stable")[:k]


def _top_k(keys: np.ndarray, tiebreak: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest ``keys`` per row, best first; equal keys ordered by larger ``tiebreak``."""
    rows, m = keys.shape
    if m > k:
        part = np.argpartition(-keys, k - 1, axis=1)[:, :k]
        chosen = np.take_along_axis(keys, part, axis=1)
        kth = chosen.min(axis=1, keepdims=True)
        # A row is ambiguous when the k-th key is shared with an item left outside the selection.
        ambiguous = np.flatnonzero((keys == kth).sum(axis=1) != (chosen == kth).sum(axis=1))
        for r in ambiguous:
            order = np.lexsort((-tiebreak[r], -keys[r]))[:k]
            part[r] = order
    else:
        part = np.broadcast_to(np.arange(m), (rows, m)).copy()
    sub_keys = np.take_along_axis(keys, part, axis=1)
    sub_tb = np.take_along_axis(tiebreak, part, axis=1)
    order = np.lexsort((-sub_tb, -sub_keys), axis=1)
    return np.take_along_axis(part, order, axis=1)


def _truncated_gumbel(lower: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw ``G ~ Gumbel(0, 1)`` conditioned on ``G > lower``, accurately in both tails."""
    tail_mass = -np.expm1(-np.exp(-lower))  # 1 − F(lower), F(x) = exp(−exp(−x))
    v = rng.random(lower.shape)
    neg_log_u = -np.log1p(-tail_mass * (1.0 - v))  # −log U with U ~ Uniform(F(lower), 1)
    with np.errstate(divide="ignore"):
        return -np.log(neg_log_u)


def _head_size(n: int, k: int) -> int:
    return min(n, max(4 * k, 64, int(2.0 * math.sqrt(k * n))))


def _sample_chunk(logits: np.ndarray, n_samples: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Exact Gumbel top-k for each row of ``logits`` (Q, n), ``n_samples`` times → (Q, N, k) indices."""
    q, n = logits.shape
    h = _head_size(n, k)
    if h >= n:
        noise = rng.gumbel(size=(q, n_samples, n))
        keys = (logits[:, None, :] + noise).reshape(q * n_samples, n)
        pos = _top_k(keys, noise.reshape(q * n_samples, n), k)
        return pos.reshape(q, n_samples, k)

    part = np.argpartition(-logits, h - 1, axis=1)
    head_idx, tail_idx = part[:, :h], part[:, h:]
    head_l = np.take_along_axis(logits, head_idx, axis=1)
    tail_l = np.take_along_axis(logits, tail_idx, axis=1)
    tail_max = tail_l.max(axis=1)
    rows = q * n_samples
    qrow = np.repeat(np.arange(q), n_samples)

    head_noise = rng.gumbel(size=(q, n_samples, h)).reshape(rows, h)
    head_keys = head_l[qrow] + head_noise
    head_pos = _top_k(head_keys, head_noise, k)
    top_keys = np.take_along_axis(head_keys, head_pos, axis=1)
    top_noise = np.take_along_axis(head_noise, head_pos, axis=1)
    top_idx = np.take_along_axis(head_idx[qrow], head_pos, axis=1)
    threshold = top_keys[:, -1]

    # Tail items that could beat the threshold: Bernoulli(p_max) candidates via geometric gaps, drawn in one
    # flat array (each row gets its own length, about its expected count plus 8 standard deviations).
    m = n - h
    p_max = -np.expm1(-np.exp(np.minimum(tail_max[qrow] - threshold, 700.0)))
    empty = p_max <= 0.0
    lam = m * p_max
    widths = np.where(empty, 0, np.minimum(m, np.ceil(lam + 8.0 * np.sqrt(lam) + 16.0))).astype(np.int64)
    row_of = np.repeat(np.arange(rows), widths)
    # a gap past the end means "no more candidates": clip so the cumulative sum cannot overflow
    gaps = np.minimum(rng.geometric(np.where(empty, 1.0, p_max)[row_of]), m + 1)
    ends = np.cumsum(widths)
    csum = np.cumsum(gaps)
    base = np.concatenate([[0], csum])[ends - widths]  # sum of all gaps before each row's segment
    pos = csum - np.repeat(base, widths) - 1
    has = widths > 0
    last = np.full(rows, m, dtype=np.int64)
    last[has] = pos[ends[has] - 1]
    short = np.flatnonzero(has & (last < m - 1))
    if short.size:  # rare: continue the same Bernoulli process past the drawn gaps (exact, memoryless)
        extra = [np.flatnonzero(rng.random(m - 1 - last[r]) < p_max[r]) + last[r] + 1 for r in short]
        row_of = np.concatenate([row_of, *[np.full(e.size, r) for r, e in zip(short, extra)]])
        pos = np.concatenate([pos, *extra])
    keep = pos < m
    row_of, pos = row_of[keep], pos[keep]
    cand_q = qrow[row_of]
    cand_l = tail_l[cand_q, pos]
    thr = threshold[row_of]
    p_item = -np.expm1(-np.exp(np.minimum(cand_l - thr, 700.0)))
    accept = rng.random(pos.size) * p_max[row_of] < p_item
    row_of, pos, cand_q, cand_l, thr = row_of[accept], pos[accept], cand_q[accept], cand_l[accept], thr[accept]
    cand_noise = _truncated_gumbel(thr - cand_l, rng)

    # Merge each row's head top-k with its accepted tail items; best k by (key, then noise) per row.
    all_rows = np.concatenate([np.repeat(np.arange(rows), k), row_of])
    all_keys = np.concatenate([top_keys.ravel(), cand_l + cand_noise])
    all_noise = np.concatenate([top_noise.ravel(), cand_noise])
    all_idx = np.concatenate([top_idx.ravel(), tail_idx[cand_q, pos]])
    order = np.lexsort((-all_noise, -all_keys, all_rows))
    starts = np.concatenate([[0], np.cumsum(np.bincount(all_rows, minlength=rows))[:-1]])
    best = order[starts[:, None] + np.arange(k)]
    return all_idx[best].reshape(q, n_samples, k)


def _sample_deterministic_limit(s_bar: np.ndarray, n_samples: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """The α → ∞ limit: sorted by score, each group of equal scores in uniformly random order.

    Only the documents that can reach the top k get random numbers: those scoring above the k-th score (ties among
    them shuffled per sample, fewer than k of them) and the boundary group scoring exactly the k-th score, from
    which the remaining slots take a uniformly random ordered subset (the exact Gumbel top-k of equal logits, so
    the boundary group costs ``O(sqrt(k·t))`` per sample, not ``O(t)``).
    """
    q, n = s_bar.shape
    out = np.empty((q, n_samples, k), dtype=np.int64)
    for r in range(q):
        s = s_bar[r]
        kth = np.partition(s, n - k)[n - k]  # the k-th largest score
        above = np.flatnonzero(s > kth)
        above = above[np.lexsort((rng.random((n_samples, above.size)), np.broadcast_to(-s[above], (n_samples,
                                                                                           above.size))), axis=1)]
        out[r, :, : above.shape[1]] = above
        tied = np.flatnonzero(s == kth)
        slots = k - above.shape[1]
        picks = _sample_chunk(np.zeros((1, tied.size)), n_samples, slots, rng)[0]
        out[r, :, above.shape[1]:] = tied[picks]
    return out


def _sample(scores: np.ndarray, alphas: np.ndarray, n_samples: int, k: int, rng: np.random.Generator) -> np.ndarray:
    q, n = scores.shape
    out = np.empty((q, n_samples, k), dtype=np.int64)
    s_bar = normalise_scores(scores)
    finite = alphas <= ALPHA_DETERMINISTIC
    per_query = n_samples * 3 * _work_width(n, k)
    chunk = max(1, _CHUNK_ENTRIES // per_query)
    for mask, deterministic in ((finite, False), (~finite, True)):
        rows = np.flatnonzero(mask)
        for start in range(0, rows.size, chunk):
            sel = rows[start : start + chunk]
            if deterministic:
                out[sel] = _sample_deterministic_limit(s_bar[sel], n_samples, k, rng)
            else:
                out[sel] = _sample_chunk(s_bar[sel] ** alphas[sel, None], n_samples, k, rng)
    return out


def _work_width(n: int, k: int) -> int:
    """Columns of the largest per-sample work array for ``n`` candidates: all of them when the head covers them,
    else the head (the tail costs about as much again, in flat candidate arrays). The deterministic limit's
    boundary group is sampled the same way, so the same bound holds for it."""
    head = _head_size(n, k)
    return n if head >= n else head


def _check_n_samples(n_samples: object, n: int, k: int) -> int:
    """N as an int, refused when N or the largest work array of one query (N × :func:`_work_width`) would not fit
    in memory: for n = 10⁶ candidates and k = 5 that is N × 4,472, not N × 10⁶."""
    n_samples = check_at_most(n_samples, "n_samples", MAX_SAMPLES, hint="sampled rankings; the paper uses 100",
                              fix="lower N (the paper uses 100)")
    width = _work_width(n, k)
    check_work(n_samples * width, f"N × {'candidates' if width == n else 'sampled head of the candidates'} "
               f"({n_samples:,} × {width:,})",
               fix="lower N, or sample among fewer candidates (the first-stage cut-off K, --candidates)")
    return n_samples


def sample_rankings(
    scores: np.ndarray,
    *,
    alpha: float,
    n_samples: int,
    k: int,
    seed: SeedLike = None,
) -> np.ndarray:
    """Sample ``n_samples`` top-``k`` rankings from the fair Plackett-Luce retriever (Eq. 2).

    Args:
        scores: retrieval scores of the ``n`` candidates, any real values (negative ones too).
        alpha: fairness knob ≥ 0. 0 → uniform over candidates; larger → closer to the deterministic
            ranking; ``math.inf`` → the deterministic limit (ties still random).
        n_samples: number of rankings ``N`` (the paper uses 100).
        k: ranking length (the top-k passed to the generator), ``1 ≤ k ≤ n``.
        seed: ``None``, an ``int`` or a ``numpy.random.Generator`` (pass one to chain draws).

    Returns:
        ``int64`` array of shape ``(n_samples, k)``: row ``i`` holds the indices (into ``scores``) of the
        i-th sampled ranking, best first. Indices within a row are distinct.

    Raises:
        InvalidParameterError: NaN/negative α, NaN/inf scores, empty scores, k > n, n_samples < 1.

    >>> sample_rankings(np.array([3.0, 1.0, 2.0]), alpha=2000, n_samples=2, k=2, seed=0).tolist()
    [[0, 2], [0, 2]]
    """
    s = _check_scores(scores, ndim=1)
    alpha = check_alpha(alpha)
    k = check_k(k, s.size)
    n_samples = _check_n_samples(n_samples, s.size, k)
    return _sample(s[None, :], np.array([alpha]), n_samples, k, as_generator(seed))[0]


def sample_rankings_batch(
    scores: np.ndarray,
    *,
    alpha: float | np.ndarray,
    n_samples: int,
    k: int,
    seed: SeedLike = None,
) -> np.ndarray:
    """Sample rankings for many queries at once.

    Args:
        scores: array of shape ``(n_queries, n)``: one row of candidate scores per query.
        alpha: one α for all queries, or an array of shape ``(n_queries,)``.
        n_samples, k, seed: as in :func:`sample_rankings`.

    Returns:
        ``int64`` array of shape ``(n_queries, n_samples, k)``.
    """
    s = _check_scores(scores, ndim=2)
    q = s.shape[0]
    if np.ndim(alpha) == 0:
        alphas = np.full(q, check_alpha(alpha))
    else:
        raw = np.asarray(alpha)
        if raw.shape != (q,):
            raise InvalidParameterError(f"alpha must be a number or have shape ({q},), got shape {raw.shape}")
        alphas = np.array([check_alpha(float(a)) for a in raw])
    k = check_k(k, s.shape[1])
    n_samples = _check_n_samples(n_samples, s.shape[1], k)
    return _sample(s, alphas, n_samples, k, as_generator(seed))
