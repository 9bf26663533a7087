"""nDCG@K and AWRF@K (TREC Fair Ranking 2022) of many sampled rankings at once, as matrix products.

The same measures as :func:`fairrag_core.metrics.group_fairness.ndcg` and :func:`~.group_fairness.awrf`
(fair-trec/trec2022-fair-public, ``wptrec/metrics/awrf.py``; linear gain, ``AWRF = 1 − JSD(ε_L^att, ε*)`` with the
natural log), vectorised over the N samples of a query so that a stochastic run costs a few array operations per
query. A document may belong to several groups: its weight is split equally among them (TREC 2022 uses fractional
alignments the same way).

Two discounts, two names, each giving its reference tool's number:

* ``nDCG@K`` — trec_eval's and ir_measures' (``ir_measures.nDCG@K``): discount ``1/log2(rank + 1)``;
* ``TF22-nDCG@K`` — TREC Fair 2022's evaluation script: discount ``1/log2(max(rank, 2))`` (ranks 1 and 2 weigh 1),
  and ``TF22-nDCG*AWRF@K``, the track's score. They differ by up to a few hundredths on the same run.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.special import rel_entr

from ..checks import check_positive_int
from ..errors import InvalidParameterError

__all__ = ["measure_names", "ndcg_samples", "awrf_samples", "TREC_EVAL", "TREC_FAIR_2022"]

#: nDCG's discount as trec_eval and ir_measures compute it, ``1/log2(rank + 1)``.
TREC_EVAL = "trec_eval"
#: nDCG's discount as TREC Fair 2022's script computes it, ``1/log2(max(rank, 2))``.
TREC_FAIR_2022 = "trec-fair-2022"


def measure_names(cutoff: int) -> tuple[str, str, str, str]:
    """Column names: ``nDCG@K`` (ir_measures), ``TF22-nDCG@K`` (TREC Fair 2022), ``AWRF@K`` and the track's score
    ``TF22-nDCG*AWRF@K``.

    >>> measure_names(20)
    ('nDCG@20', 'TF22-nDCG@20', 'AWRF@20', 'TF22-nDCG*AWRF@20')
    """
    cutoff = check_positive_int(cutoff, "cutoff", hint="ranks to evaluate, e.g. 20")
    return f"nDCG@{cutoff}", f"TF22-nDCG@{cutoff}", f"AWRF@{cutoff}", f"TF22-nDCG*AWRF@{cutoff}"


def _discount(depth: int, kind: str = TREC_FAIR_2022) -> np.ndarray:
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    if kind == TREC_EVAL:
        return 1.0 / np.log2(ranks + 1.0)
    if kind == TREC_FAIR_2022:
        return 1.0 / np.log2(np.maximum(ranks, 2.0))
    raise InvalidParameterError(f"discount {kind!r} is not one of: {TREC_EVAL}, {TREC_FAIR_2022}")


def _cut(positions: np.ndarray, cutoff: int) -> tuple[np.ndarray, np.ndarray]:
    cut = positions[:, : check_positive_int(cutoff, "cutoff", hint="ranks to evaluate, e.g. 20")]
    return cut, cut >= 0


def ndcg_samples(positions: np.ndarray, gains: np.ndarray, judged_gains: np.ndarray, cutoff: int, *,
                 discount: str = TREC_FAIR_2022) -> np.ndarray:
    """nDCG@K of every sample: ``positions`` (N × L, −1 = padding) index ``gains`` (grade of each document,
    0 when unjudged); the ideal DCG uses the query's ``judged_gains`` sorted best first. 0 when IDCG = 0.
    ``discount``: :data:`TREC_FAIR_2022` (``TF22-nDCG``) or :data:`TREC_EVAL` (``nDCG``, as ir_measures).

    >>> ndcg_samples(np.array([[0, 2, 1], [1, 0, -1]]), np.array([2.0, 1.0, 0.0]), np.array([2.0, 1.0]), 3).round(4)
    array([0.877, 1.   ])
    >>> ndcg_samples(np.array([[1, 0]]), np.array([2.0, 1.0]), np.array([2.0, 1.0]), 2, discount=TREC_EVAL).round(4)
    array([0.8597])
    """
    cut, valid = _cut(positions, cutoff)
    if np.any(gains < 0) or np.any(judged_gains < 0):
        raise InvalidParameterError("gains must be ≥ 0; map unjudged (−1) grades to 0 first")
    weights = _discount(cut.shape[1], discount)
    dcg = (np.where(valid, gains[np.where(valid, cut, 0)], 0.0) * weights).sum(axis=1)
    ideal = np.sort(np.asarray(judged_gains, dtype=np.float64))[::-1][:cutoff]
    idcg = float(ideal @ _discount(ideal.size, discount)) if ideal.size else 0.0
    return np.zeros(cut.shape[0]) if idcg == 0 else np.minimum(dcg / idcg, 1.0)


def awrf_samples(positions: np.ndarray, membership: np.ndarray, target: np.ndarray, cutoff: int) -> np.ndarray:
    """AWRF@K of every sample against the ``target`` group distribution.

    Args:
        positions: N × L document indices (−1 = padding).
        membership: V × G, each document's share in each group (rows sum to 1).
        target: G shares (normalised here).
        cutoff: K.

    ``ε_L^att = Σ_{r ≤ K} w_r m_{d_r} / Σ_r w_r`` with ``w_r = 1/log2(max(r, 2))``; AWRF = 1 − JSD(ε_L^att, ε*).

    >>> m = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> awrf_samples(np.array([[0, 1, 2, 3]]), m, np.array([0.5, 0.5]), 4).round(4)  # = group_fairness.awrf
    array([0.9901])
    """
    cut, valid = _cut(positions, cutoff)
    tgt = np.asarray(target, dtype=np.float64)
    if tgt.ndim != 1 or tgt.size != membership.shape[1] or np.any(tgt < 0) or tgt.sum() <= 0:
        raise InvalidParameterError("target must give one non-negative share per group, not all zero")
    weights = np.where(valid, _discount(cut.shape[1]), 0.0)
    rows = np.broadcast_to(np.arange(cut.shape[0])[:, None], cut.shape)
    attention = sparse.csr_matrix((weights[valid], (rows[valid], cut[valid])),
                                  shape=(cut.shape[0], membership.shape[0]))
    dist = np.asarray(attention @ membership)
    dist = dist / dist.sum(axis=1, keepdims=True)
    q = tgt / tgt.sum()
    mid = (dist + q) / 2.0
    jsd = 0.5 * rel_entr(dist, mid).sum(axis=1) + 0.5 * rel_entr(q[None, :], mid).sum(axis=1)
    return 1.0 - np.clip(jsd, 0.0, np.log(2.0))
