"""Expected exposure of served rankings under browsing models, computed the way expeval computes it.

Diaz, Mitra, Ekstrand, Biega & Carterette, "Evaluating Stochastic Rankings with Expected Exposure", CIKM 2020
(§3–4), and its reference code github.com/diazf/expeval (read, not copied; commit 69ab070). Pure numpy kernels;
:func:`fairrag_core.audit.served.evaluate_run` applies them to a run and qrels.

**User models** (exposure of rank i, 0-based, in one sampled ranking π; Eq. 3–5 of the paper):

* ``rbp`` (Moffat & Zobel 2008): ``e_i = p^i`` — the user moves on with probability p (the *patience*);
* ``gerr`` (Chapelle et al. 2009, §7.2): ``e_i = p^i (1 − u)^{r_i}``, r_i = number of relevant (grade > 0)
  documents above rank i — the user also stops with probability u (the *utility*) after a relevant document;
* ``step``: ``e_i = 1[i < k]`` — the machine user of Fair RAG (Kim & Diaz 2025, Eq. 4) reads the top k.

**Expected exposure** of document d over the N samples: ``ε_d = (1/N) Σ_π e_{rank_π(d)}`` (0 when unranked).

**Target exposure** ε* (expeval ``exposure.target``): an oracle ranks judged documents by grade, documents of one
grade in random order. With the grades sorted high to low, a grade shared by m documents below b documents of
higher grades gets the mean exposure of ranks b … b+m−1: rbp ``(p^b − p^{b+m}) / (m(1 − p))``; gerr, grade > 0,
``(q^b − q^{b+m}) / (m(1 − q))`` with q = p(1 − u); gerr, grade ≤ 0, ``(1 − u)^b (p^b − p^{b+m}) / (m(1 − p))``;
step ``(min(b+m, k) − min(b, k)) / m``. With incomplete judgments (the default) only documents with grade > 0
are judged at all (target 0 elsewhere); with ``complete`` every qrels line counts, grade 0 and −1 included.

**Metrics** (Eq. 7–9): EE-D ``‖ε‖²`` (disparity), EE-R ``⟨ε, ε*⟩`` (relevance), EE-L ``‖ε − ε*‖²``
(difference = EE-D − 2 EE-R + ‖ε*‖²). Normalised: ``(v − lo) / (hi − lo)`` with expeval's bounds
(:func:`bounds`), or the metric's default when ``lo == hi`` (disparity 0, relevance 1, difference 0).
Group mode (``groups``) sums ε and ε* over the judged documents of each group (a document in several groups
counts fully in each) and uses expeval's group bounds (:func:`group_bounds`).

**Where expeval is odd** (``bounds="expeval"``, the default, reproduces it to the last digit;
``bounds="corrected"`` applies the fixes listed):

1. relevance with one relevance level: expeval sets both bounds to 0, so normalised relevance is the constant 1.
   With incomplete binary qrels (TREC's usual case) every query scores 1. *Corrected*: only with complete
   judgments (where any ranking is then ideal); otherwise ``lo = 0, hi = ‖ε*‖²``.
2. gerr bounds use a decay ``p·u`` where the model continues with ``p(1 − u)`` (identical at u = 0.5, the
   default). *Corrected*: ``p(1 − u)``.
3. with ``complete``, grade −1 ("unjudged, same as 0" per its help) forms a level of its own below 0, and gerr's
   grade ≤ 0 target discounts by (1 − u)^b although only relevant documents above stop the user. *Corrected*:
   −1 joins grade 0 and the discount is (1 − u)^{#relevant}.
4. a query in the qrels but absent from the run gets the worst disparity and relevance, but *difference* is set to
   relevance's upper bound — 0 (a perfect score) when item 1 zeroed it. *Corrected*: ``‖ε*‖²`` (nothing shown).
5. group relevance: the upper bound accumulates ``v * ub`` from 0 (a typo for ``v * v``), so it is 0 and
   normalised group relevance is the constant 1. *Corrected*: ``hi = ‖ε*_G‖²``.
6. group disparity: the lower bound ("all groups get equal exposure") is coded ``K·S²`` (not ``S²/K``) for K
   groups and total exposure S, which equals the upper bound ``K·S_p²`` under rbp and step (normalised group
   disparity is the constant 0) and exceeds reachable values under gerr (negative normalised values, even for a
   run that matches the target). Even ``S²/K`` is not a bound: a run can put less than S on the judged documents.
   *Corrected*: ``lo = 0`` (no exposure on the judged documents, as the individual metric's incomplete-judgment
   bound) and ``hi = K·S_p(n)²`` over the n judged documents (every group gets all the exposure they can get), so
   every run lands in [0, 1].
7. group disparity of a run that exposes none of the query's judged documents is +inf (``util.l2`` returns inf
   for a vector without mass), normalised +inf too unless the bounds coincide. *Corrected*: 0, the true ``‖0‖²``.

Unnormalised values are the same under both, except items 3, 4 and 7.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # scipy.sparse is imported where a matrix is built: the point values need none
    from scipy import sparse

from ..checks import check_open_unit, check_positive_int
from ..errors import InvalidParameterError
from ..option_types import positive_arg, unit_arg
from ..options import Kind, option
from ..settings import Settings

__all__ = [
    "UserModel", "Bounds", "ExposureSettings", "MetricBounds", "METRICS",
    "position_exposure", "exposure_matrix", "expected_exposure", "judged_grades", "target_exposure_graded", "bounds",
    "group_bounds",
    "missing_values", "raw_values", "resampled_values",
]

#: The three expected-exposure metrics, in expeval's output order.
METRICS = ("disparity", "relevance", "difference")


class UserModel(str, enum.Enum):
    """Browsing model of the user who reads a ranking."""

    GERR = "gerr"
    RBP = "rbp"
    STEP = "step"


class Bounds(str, enum.Enum):
    """Normalisation bounds: expeval's own, or with its oddities corrected (module docstring, items 1–6)."""

    EXPEVAL = "expeval"
    CORRECTED = "corrected"


@dataclass(frozen=True, kw_only=True)
class ExposureSettings(Settings):
    """How to evaluate a run (expeval's flags, plus ``step`` with its depth ``k`` and the ``bounds`` choice).

    >>> ExposureSettings(user_model="rbp", patience=0.8).to_dict()["user_model"]
    'rbp'
    """

    user_model: UserModel = option("-u", "--user-model", default=UserModel.STEP,
                                   help="browsing model: step (Fair RAG's machine user, the package's default "
                                        "everywhere), or expeval's gerr (expeval's own default) or rbp")
    patience: float = option("-p", "--patience", default=0.5, parse=unit_arg,
                             help="patience p: probability of reading on to the next rank (gerr, rbp)")
    utility: float = option("-r", "--utility", default=0.5, parse=unit_arg,
                            help="utility u: probability of stopping after a relevant document (gerr)")
    k: int | None = option("-k", default=None, parse=positive_arg,
                           help="documents the step user reads (--user-model step; default: the run's longest "
                                "ranking, as audit-log)")
    binarize: bool = option("-B", "--binarize", kind=Kind.ON, default=False, help="binary relevance (grade > 0 → 1)")
    complete: bool = option("-C", "--complete", kind=Kind.ON, default=False,
                            help="complete judgments (every qrels line is judged, grade 0 and -1 too); use for "
                                 "re-ranking")
    normalize: bool = option("-U", "--unnormalized", kind=Kind.OFF, default=True, help="unnormalised metrics")
    groups: bool = option("-G", "--groups", kind=Kind.ON, default=False, help="group exposure (the qrels' group ids)")
    bounds: Bounds = option("--bounds", default=Bounds.EXPEVAL,
                            help="normalisation bounds: expeval's (identical numbers) or corrected (fixes expeval's "
                                 "constant/negative values; see fairrag_core.metrics.expeval)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.user_model is UserModel.STEP:
            if self.k is not None:  # None: the run's longest ranking, resolved by the evaluation
                check_positive_int(self.k, "k", hint="documents the step user reads")
        else:
            check_open_unit(self.patience, "patience", hint="probability of moving on to the next rank, e.g. 0.5")
        if isinstance(self.utility, bool) or not isinstance(self.utility, int | float) or not 0 <= self.utility <= 1:
            raise InvalidParameterError(f"utility must be between 0 and 1 (probability of stopping after a relevant "
                                        f"document, gerr), got {self.utility!r}")
        for name in ("binarize", "complete", "normalize", "groups"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidParameterError(f"{name} must be True or False, got {getattr(self, name)!r}")

    @property
    def corrected(self) -> bool:
        return self.bounds is Bounds.CORRECTED


def position_exposure(relevant: np.ndarray, valid: np.ndarray, settings: ExposureSettings) -> np.ndarray:
    """Exposure ``e[s, i]`` of rank i (0-based) in sample s; ``relevant[s, i]``: the document there has grade > 0;
    ``valid`` masks the padding of shorter samples (exposure 0).

    >>> s = ExposureSettings(user_model="gerr", patience=0.5, utility=0.5)
    >>> position_exposure(np.array([[True, False, True]]), np.ones((1, 3), bool), s).tolist()
    [[1.0, 0.25, 0.125]]
    """
    n, depth = relevant.shape
    ranks = np.arange(depth, dtype=np.float64)
    if settings.user_model is UserModel.STEP:
        e = np.broadcast_to((ranks < settings.k).astype(np.float64), (n, depth))
    else:
        e = np.broadcast_to(settings.patience ** ranks, (n, depth))
        if settings.user_model is UserModel.GERR:
            above = np.cumsum(relevant, axis=1) - relevant
            e = e * (1.0 - settings.utility) ** above
    return np.where(valid, e, 0.0)


def exposure_matrix(positions: np.ndarray, relevant_doc: np.ndarray, settings: ExposureSettings) -> sparse.csr_matrix:
    """Per-sample exposure ``X[s, d]`` (N × V sparse) from ``positions`` (N × L indices into the V documents,
    −1 = padding); ``relevant_doc[d]``: grade > 0. The expected exposure ε is the mean of the rows.

    >>> X = exposure_matrix(np.array([[0, 1], [1, -1]]), np.zeros(2, bool), ExposureSettings(user_model="rbp"))
    >>> X.toarray().tolist(), np.asarray(X.mean(axis=0)).ravel().tolist()
    ([[1.0, 0.5], [0.0, 1.0]], [0.5, 0.75])
    """
    valid = positions >= 0
    safe = np.where(valid, positions, 0)
    e = position_exposure(relevant_doc[safe] & valid, valid, settings)
    rows = np.broadcast_to(np.arange(positions.shape[0])[:, None], positions.shape)
    from scipy import sparse

    return sparse.csr_matrix((e[valid], (rows[valid], positions[valid])),
                             shape=(positions.shape[0], relevant_doc.size))


def expected_exposure(positions: np.ndarray, relevant_doc: np.ndarray, settings: ExposureSettings) -> np.ndarray:
    """The expected exposure ε over the V documents: the mean of :func:`exposure_matrix`'s rows, summed straight
    from the positions (no N × V matrix; what a point estimate needs).

    >>> expected_exposure(np.array([[0, 1], [1, -1]]), np.zeros(2, bool), ExposureSettings(user_model="rbp")).tolist()
    [0.5, 0.75]
    """
    valid = positions >= 0
    safe = np.where(valid, positions, 0)
    e = position_exposure(relevant_doc[safe] & valid, valid, settings)
    return np.bincount(safe[valid], weights=e[valid], minlength=relevant_doc.size) / positions.shape[0]


def judged_grades(grades: np.ndarray, settings: ExposureSettings) -> np.ndarray:
    """Which qrels lines count as judged, and their grades, as expeval reads them (``data.read_qrels``).

    Returns the grades with ``binarize`` applied (grade > 0 → 1), NaN where a line does not count: with
    incomplete judgments only grade > 0 counts; with ``complete`` every line does (−1 joins 0 when corrected).

    >>> judged_grades(np.array([2, 0, -1]), ExposureSettings()).tolist()
    [2.0, nan, nan]
    """
    g = np.asarray(grades, dtype=np.float64)
    if settings.binarize:
        g = np.where(g > 0, 1.0, g)
    if settings.complete:
        return np.where(g < 0, 0.0, g) if settings.corrected else g
    return np.where(g > 0, g, np.nan)


def target_exposure_graded(grades: np.ndarray, settings: ExposureSettings) -> np.ndarray:
    """Target exposure ε* of judged documents with these ``grades`` (expeval ``exposure.target``; formulas in the
    module docstring). Documents of one grade share the mean exposure of the ranks their grade occupies.

    >>> t = target_exposure_graded(np.array([2, 1, 1]), ExposureSettings(user_model="rbp", patience=0.5))
    >>> t.tolist()  # grade 2 at rank 0; grade 1 shares ranks 1 and 2: (0.5 + 0.25) / 2
    [1.0, 0.375, 0.375]
    """
    g = np.asarray(grades, dtype=np.float64)
    levels, counts = np.unique(g, return_counts=True)
    levels, counts = levels[::-1], counts[::-1]
    above = np.concatenate([[0], np.cumsum(counts)[:-1]])
    n_relevant = int(counts[levels > 0].sum())
    p, u = settings.patience, settings.utility
    per_level = np.empty(levels.size)
    for j, (grade, m, b) in enumerate(zip(levels, counts, above)):
        if settings.user_model is UserModel.STEP:
            k = settings.k
            per_level[j] = (min(b + m, k) - min(b, k)) / m
        elif settings.user_model is UserModel.RBP:
            per_level[j] = (p ** b - p ** (b + m)) / (m * (1.0 - p))
        elif grade > 0:
            q = p * (1.0 - u)
            per_level[j] = (q ** b - q ** (b + m)) / (m * (1.0 - q))
        else:
            stops = n_relevant if settings.corrected else b
            per_level[j] = ((1.0 - u) ** stops * (p ** b - p ** (b + m))) / (m * (1.0 - p))
    return per_level[np.searchsorted(-levels, -g)]


@dataclass(frozen=True)
class MetricBounds:
    """Bounds of one metric and its value when they coincide (expeval ``metrics.Metric``)."""

    low: float
    high: float
    default: float

    def normalise(self, value: float | np.ndarray) -> float | np.ndarray:
        """``(v − low) / (high − low)``, or ``default`` when ``low == high`` (as expeval, exactly)."""
        if self.low == self.high:
            return np.full_like(value, self.default, dtype=np.float64) if np.ndim(value) else self.default
        return (value - self.low) / (self.high - self.low)


def _series(q: float, n: float) -> float:
    """``Σ_{i<n} q^i`` (expeval ``util.geometricSeries``), n may be infinite."""
    return 1.0 / (1.0 - q) if n == math.inf else (1.0 - q ** n) / (1.0 - q)


def _bound_series(settings: ExposureSettings, n: float) -> float:
    """Total exposure of the first n ranks in the bounds' decay (``p``, ``p·u`` or ``p(1 − u)``, or the step)."""
    if settings.user_model is UserModel.STEP:
        return float(min(settings.k, n))
    return _series(_decay(settings), n)


def _decay(settings: ExposureSettings) -> float:
    if settings.user_model is UserModel.RBP:
        return settings.patience
    return settings.patience * ((1.0 - settings.utility) if settings.corrected else settings.utility)


def _bound_weights(settings: ExposureSettings, n: int) -> np.ndarray:
    if settings.user_model is UserModel.STEP:
        return (np.arange(n) < settings.k).astype(np.float64)
    return _decay(settings) ** np.arange(n, dtype=np.float64)


def _l2(x: np.ndarray) -> float:
    total = float(np.dot(x, x))
    return math.inf if x.size == 0 or total <= 0 else total  # expeval util.l2(x, False)


def bounds(target: np.ndarray, n_levels: int, settings: ExposureSettings) -> dict[str, MetricBounds]:
    """Normalisation bounds of disparity, relevance and difference for one query (expeval ``metrics.py``).

    ``target``: ε* of the judged documents; ``n_levels``: distinct judged grades. With n = #judged when
    ``complete`` (else n = ∞) and S(n) the total exposure of n ranks in the bounds' decay w (``p`` for rbp,
    ``p·u`` for gerr — ``p(1 − u)`` corrected — and ``1[i < k]`` for step):

    * disparity: hi = ``Σ_{i<n} p^{2i}`` (one static ranking; ``min(k, n)`` for step), lo = ``S(n)² / n``
      (uniformly random ranking; 0 when n = ∞);
    * relevance: hi = ``‖ε*‖²``, lo = ``Σ_i w_i ε*_(i)`` over ε* sorted ascending (the reverse ranking; 0 when
      n = ∞); both 0 with a single level (module docstring, item 1);
    * difference: lo = 0, hi = ``‖ε*‖² + S(∞)`` (n = ∞) or ``Σ_i (w_i − ε*_(i))²``.

    >>> b = bounds(np.array([1.0, 0.375, 0.375]), 2, ExposureSettings(user_model="rbp"))
    >>> round(b["disparity"].high, 4), round(b["relevance"].high, 4), round(b["difference"].high, 4)
    (1.3333, 1.2812, 3.2812)
    """
    n = target.size if settings.complete else math.inf
    if settings.user_model is UserModel.STEP:
        disparity_high = float(min(settings.k, n))
    else:
        disparity_high = _series(settings.patience * settings.patience, n)
    disparity_low = 0.0 if n == math.inf else _bound_series(settings, n) ** 2 / n
    relevance_high, relevance_low = _l2(target), 0.0
    ascending = np.sort(target)
    weights = _bound_weights(settings, ascending.size)
    if n != math.inf:
        relevance_low = float(weights @ ascending)
    if n_levels <= 1 and (settings.complete or not settings.corrected):
        relevance_high = relevance_low = 0.0
    if n == math.inf:
        difference_high = float(np.dot(target, target)) + _bound_series(settings, math.inf)
    else:
        difference_high = float(np.sum((weights - ascending) ** 2))
    return {"disparity": MetricBounds(disparity_low, disparity_high, 0.0),
            "relevance": MetricBounds(relevance_low, relevance_high, 1.0),
            "difference": MetricBounds(0.0, difference_high, 0.0)}


def group_bounds(group_target: np.ndarray, n_relevant: int, settings: ExposureSettings, *,
                 n_judged: int | None = None) -> dict[str, MetricBounds]:
    """Bounds in group mode (expeval ``metrics.Group*``), for K = ``group_target.size`` groups and r relevant
    judged documents, with ``S_p(r) = Σ_{i<r} p^i`` (``min(k, r)`` for step) and S(r) in the bounds' decay:

    * disparity: hi = ``S_p(r)²·K``, lo = ``K·S(r)²``; both 0 when K = 1. Corrected: lo = 0, hi = ``K·S_p(n)²``
      with n = ``n_judged`` (default r), so that every run lands in [0, 1] (module docstring, item 6);
    * relevance: lo = 0, hi = 0 (expeval; item 5) or ``‖ε*_G‖²`` (corrected);
    * difference: lo = 0, hi = ``max(‖ε*_G‖², Σ_g (S_p(r) − ε*_g)²)``.

    >>> b = group_bounds(np.array([0.6, 0.4]), 2, ExposureSettings(user_model="rbp"))
    >>> b["disparity"].low == b["disparity"].high, b["relevance"].high  # expeval: constant 0 and constant 1
    (True, 0.0)
    """
    k_groups, r = group_target.size, n_relevant

    def reach(n: int) -> float:  # the most exposure n documents can get
        return float(min(settings.k, n)) if settings.user_model is UserModel.STEP else _series(settings.patience, n)

    mass = reach(r)
    if k_groups == 1:
        disparity = MetricBounds(0.0, 0.0, 0.0)
    elif settings.corrected:
        most = reach(r if n_judged is None else n_judged)
        disparity = MetricBounds(0.0, most * most * k_groups, 0.0)
    else:
        spread = _bound_series(settings, r)
        disparity = MetricBounds(k_groups * spread * spread, mass * mass * k_groups, 0.0)
    relevance_high = float(np.dot(group_target, group_target)) if settings.corrected else 0.0
    difference_high = max(float(np.dot(group_target, group_target)), float(np.sum((mass - group_target) ** 2)))
    return {"disparity": disparity, "relevance": MetricBounds(0.0, relevance_high, 1.0),
            "difference": MetricBounds(0.0, difference_high, 0.0)}


def missing_values(query_bounds: dict[str, MetricBounds], target: np.ndarray,
                   settings: ExposureSettings) -> dict[str, float]:
    """The raw values of a query the run does not rank (expeval ``expeval.main``): the worst disparity
    (``hi``), the worst relevance (``lo``) and a difference of relevance's ``hi`` (expeval; item 4) or ``‖ε*‖²``
    (corrected: the difference of showing nothing).

    >>> s = ExposureSettings(user_model="rbp")
    >>> missing_values(bounds(np.array([0.5, 0.5]), 1, s), np.array([0.5, 0.5]), s)["difference"]
    0.0
    """
    difference = float(np.dot(target, target)) if settings.corrected else query_bounds["relevance"].high
    return {"disparity": query_bounds["disparity"].high, "relevance": query_bounds["relevance"].low,
            "difference": difference}


def raw_values(exposure: np.ndarray, target: np.ndarray, *, zero_disparity_is_inf: bool = False) -> dict[str, float]:
    """Unnormalised EE-D ``‖ε‖²``, EE-R ``⟨ε, ε*⟩`` and difference ``‖ε − ε*‖²`` (aligned vectors).

    ``zero_disparity_is_inf``: expeval's ``util.l2`` returns +inf for a vector without mass, so a run that exposes
    none of a query's judged documents gets disparity +inf in group mode (module docstring, item 7).

    >>> raw_values(np.array([1.0, 0.5, 0.0]), np.array([0.75, 0.75, 0.0]))
    {'disparity': 1.25, 'relevance': 1.125, 'difference': 0.125}
    """
    disparity = float(np.dot(exposure, exposure))
    if zero_disparity_is_inf and disparity <= 0:
        disparity = math.inf
    return {"disparity": disparity, "relevance": float(np.dot(exposure, target)),
            "difference": float(np.sum((exposure - target) ** 2))}


def resampled_values(matrix: sparse.spmatrix | np.ndarray, target: np.ndarray, weights: np.ndarray) -> dict[str,
                                                                                                        np.ndarray]:
    """Raw metric values for resampled exposures ``ε^b = W_b X`` (one row of ``weights`` per resample, summing
    to 1), without forming ε^b: with the Gram matrix G = X Xᵀ (N × N), ``‖ε^b‖² = W_b G W_bᵀ``,
    ``⟨ε^b, ε*⟩ = W_b (X ε*)`` and ``‖ε^b − ε*‖² = ‖ε^b‖² − 2⟨ε^b, ε*⟩ + ‖ε*‖²``. Cost B·N², whatever the
    number of documents.

    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> resampled_values(X, np.array([0.5, 0.5]), np.array([[0.5, 0.5], [1.0, 0.0]]))["disparity"].tolist()
    [0.5, 1.0]
    """
    gram = matrix @ matrix.T
    gram = gram.toarray() if hasattr(gram, "toarray") else np.asarray(gram)
    projected = np.asarray(matrix @ target).ravel()
    disparity = np.einsum("bn,bn->b", weights @ gram, weights)
    relevance = weights @ projected
    return {"disparity": disparity, "relevance": relevance,
            "difference": disparity - 2.0 * relevance + float(np.dot(target, target))}
