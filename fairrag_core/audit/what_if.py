"""What if the deployed system had sampled? Replay its own logged candidates and scores under the fair
Plackett-Luce retriever at each α, and estimate the exposure it would have delivered.

(Long because the replay, its findings and its text are one feature read together; the findings and the text
could move to a module of their own, ``what_if_findings``, if either grows.)

Kim & Diaz (2025), §3.2 (the sampler, Eq. 2) and §3.3.1 / App. C (EE-D, EE-R), on served data instead of a
simulation. Per query of the log:

* **candidates** — what the system chose from, where the log says it: when every line of the query carries
  logged candidates with scores (:attr:`~fairrag_core.data.rag_log.LogEntry.candidates`: a reranker's input, the
  retrieval list it reranked, a retriever's deeper list, a JSONL line's ``candidates``), their union with their
  logged scores (the notes count such queries); else the union of the documents the system served for the query
  (every line, the whole ranking), each with its logged score (a trace's ``document.score``, a TREC run's score
  column). A document logged with different scores on different lines (paraphrases of the query, an index update)
  takes its mean score, and the notes say how many did. A query with a candidate that no line scored is skipped,
  with the reason; a log without any score is refused (:data:`NO_SCORES`);
* **replay** — for each α of the grid, N rankings of depth k (the audit's k: the longest served ranking unless
  set; ``min(k, candidates)`` for a query with fewer candidates) from
  :func:`~fairrag_core.ranking.sampling.sample_rankings_batch` (scores min-max normalised to [1, 2], raised to α;
  α = ∞ is the deterministic ranking by logged score, ties in random order). Queries with the same number of
  candidates are sampled in one batch;
* **per query** — the exposure ε of each candidate (Eq. 5), EE-D = ‖ε‖²/k as everywhere in the package (the
  bias-corrected estimate over the N rankings with its basic interval, as
  :func:`~fairrag_core.metrics.bootstrap.exposure_intervals` computes it; the plug-in named ``ee_d_plug_in``),
  EE-R = ⟨ε, ε*⟩/‖ε*‖² (Eq. 28) where the collection judges the query (ε* over the whole collection, as the log
  audit computes it), and ε summed per provider and per group;
* **over queries** — the mean EE-D and EE-R with the percentile bootstrap interval over queries
  (:func:`~fairrag_core.audit.query_bootstrap.mean_interval`), each share of exposure as a ratio of sums with its
  interval (the ledger's resamples), and each α against the system **as served** (the log audit's own per-query
  values): the paired difference of EE-D and EE-R (:func:`~fairrag_core.metrics.intervals.paired_comparison`:
  percentile interval, sign-flip p-value) and, per provider or group, the change of its share
  (:func:`~fairrag_core.audit.compare.share_differences`: paired interval, swap test, Holm over the groups). With
  the audit's seed, the as-served numbers are the audit's headline and ledger, digit for digit;
* **recommendation** — :func:`~fairrag_core.audit.recommend.recommend_alpha` over the replayed α values with the
  deployment's own quality metric, EE-R, against the system as served (the fairest α whose mean EE-R stays within
  the tolerance); without relevance labels there is no quality metric, and only the curve is reported.

What this estimates, and what it does not (:data:`ESTIMATED`, :data:`NOT_ESTIMATED`): retrieval exposure only.
Answers and citations are not regenerated, so attributed exposure (EAR, EAE-D) and answer quality under sampling
are not estimated; documents the system never logged for a query get no exposure (a real sampler could reach
deeper); logged scores are taken as comparable within a query.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..checks import (
    MAX_RESAMPLES,
    check_alpha,
    check_at_most,
    check_memory,
    check_non_negative,
    check_open_unit,
    check_positive_int,
)
from ..data import Collection
from ..data.rag_log import LogEntry, RagLog
from ..data.served import ServedRankings
from ..errors import InvalidParameterError
from ..integrations import configuration_line
from ..metrics.bootstrap import resample_counts
from ..metrics.exposure import least_ee_disparity, target_exposure
from ..metrics.intervals import ConfidenceInterval, bias_corrected_interval, paired_comparison
from ..metrics.registry import METRICS
from ..options import WHAT_IF_ALPHAS, WHAT_IF_SAMPLES
from ..ranking.sampling import sample_rankings_batch
from ..seeds import check_seed, derive_seed, new_seed
from ..settings import Settings
from . import wording
from .compare import group_matrix, share_differences
from .findings import Direction, Finding, FindingKind, Verdict, harm_severity, noise_verdict
from .log_report import labelled_queries
from .query_bootstrap import mean_interval, percentile_bounds, pooled_shares
from .rag_log import AttributionSource, LogAuditConfig, LogAuditRun, audit_served
from .recommend import AlphaRecommendation, recommend_alpha
from .share_gaps import alpha_of
from .wording import group_noun, interval, num, p_pair, pct, percent, points, share_text

__all__ = ["WhatIf", "WhatIfSettings", "what_if_sampling", "what_if_findings", "what_if_text", "NO_SCORES",
           "NO_QUALITY_METRIC", "ESTIMATED", "NOT_ESTIMATED", "AS_SERVED", "value_text", "p_text"]

#: The error of a log without any score: what to export.
NO_SCORES = ("the log carries no scores: export document.score (traces) or the TREC score column; a what-if replays "
             "the scores the system ranked by")
#: Why the recommender has no answer without relevance labels.
NO_QUALITY_METRIC = ("the recommender has no quality metric: no replayed query has relevance labels (EE-R is "
                     "undefined), so no α is recommended; read the disparity curve")
#: What a what-if estimates.
ESTIMATED = ("retrieval exposure only: per α, the expected exposure of each logged candidate, EE-D, EE-R where the "
             "collection judges the query, and the provider and group shares of exposure")
#: What it does not.
NOT_ESTIMATED = ("answers and citations are not regenerated: attributed exposure (EAR, EAE-D) and answer quality "
                 "under sampling are not estimated; documents never logged for a query get no exposure; logged "
                 "scores are assumed comparable within a query")
#: The label of the system as it served.
AS_SERVED = "as served"

# Independent random streams (derive_seed paths), each keyed by the α's bits, so that α = 2 samples the same rankings
# whatever the rest of the grid.
_SAMPLES, _PER_QUERY, _TESTS = 61, 62, 63
_MAX_FINDINGS = {"provider": 3}  # share findings per grouping; other categories: 2
_CHUNK_ENTRIES = 4_000_000  # float64 entries of the largest work array of one batch (≈ 32 MB)
_CURVE_COLUMNS = ["system", "alpha", "label", "ee_d", "ee_d_low", "ee_d_high", "ee_d_plug_in", "ee_r", "ee_r_low",
                  "ee_r_high", "ee_d_change", "ee_d_change_low", "ee_d_change_high", "ee_d_p", "ee_r_change",
                  "ee_r_change_low", "ee_r_change_high", "ee_r_p", "queries", "judged_queries", "eligible"]


def _alpha_key(alpha: float) -> int:
    return int(np.float64(alpha).view(np.uint64))


def _alpha_json(alpha: float) -> float | str | None:
    if alpha is None or (isinstance(alpha, float) and math.isnan(alpha)):
        return None
    return "inf" if math.isinf(alpha) else float(alpha)


@dataclass(frozen=True)
class _Candidates:
    """One replayed query: its candidates (collection indices) with their mean logged score."""

    query_id: str
    docs: np.ndarray
    scores: np.ndarray


@dataclass(frozen=True, eq=False)
class WhatIf:
    """A what-if replay of a served log (module docstring: the method).

    Attributes:
        curve: one row per system: first the system **as served** (``system = "as served"``, ``alpha`` NaN), then
            each α of the grid, ascending, α = ∞ last (``system = "sampled"``). Columns: ``label``; ``ee_d`` (mean
            over the replayed queries of the bias-corrected per-query EE-D) with ``ee_d_low``/``ee_d_high``
            (percentile bootstrap over queries), ``ee_d_plug_in`` (the mean of the per-query plug-ins); ``ee_r`` with
            its interval over the judged queries (NaN without labels); ``ee_d_change``, ``ee_r_change`` (α − as
            served, paired over queries) with their intervals and sign-flip p-values ``ee_d_p``, ``ee_r_p``;
            ``queries``, ``judged_queries``; ``eligible`` (the recommender kept it; None when it did not run).
        shares: one row per (grouping ``by``, α, group): ``share`` with ``share_low``/``share_high`` at α,
            ``observed_share`` (as served) with its interval, ``change`` (share − observed) with its paired interval,
            ``p_value`` (paired swap test) and ``p_holm`` (Holm over the groups of that α and grouping).
        per_query: one row per (query, α): ``candidates``, ``k``, ``ee_d`` (bias-corrected) with its interval over
            the N rankings, ``ee_d_plug_in``, ``ee_r``, ``m`` (useful documents, NaN when unjudged).
        documents: one row per (query, α, candidate): ``doc_id``, ``score`` (mean logged), ``exposure``.
        observed: the as-served per-query values of the replayed queries (the log audit's ``ee_d``, ``ee_r``, ``m``).
        recommendation: the recommender's result (None without relevance labels or finite α), and
            ``recommendation_text`` its answer in words.
        findings: what the replay found (:func:`what_if_findings`), most useful first.
        skipped: query id → why it was not replayed. ``notes``: what the replay assumed about this log;
            ``estimated`` and ``not_estimated``: what is and is not estimated; ``undefined``: metrics without a
            value and why.
        alphas, k, n_samples, seed, level, n_boot, n_permutations, min_rel, tolerance: the settings (``seed`` the
            one drawn when none was given: pass it again to get the same numbers). ``shares_over``: which queries
            the shares cover (the audit ledger's scope). ``wall_seconds``: how long the replay took.
    """

    curve: pd.DataFrame
    shares: pd.DataFrame
    per_query: pd.DataFrame
    documents: pd.DataFrame
    observed: pd.DataFrame
    alphas: tuple[float, ...]
    k: int
    n_samples: int
    seed: int
    level: float
    n_boot: int
    n_permutations: int
    min_rel: int
    tolerance: float
    shares_over: str
    recommendation: AlphaRecommendation | None = None
    recommendation_text: str = ""
    findings: tuple[Finding, ...] = ()
    skipped: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    estimated: str = ESTIMATED
    not_estimated: str = NOT_ESTIMATED
    undefined: dict[str, str] = field(default_factory=dict)
    wall_seconds: float = math.nan

    @property
    def recommended_alpha(self) -> float | None:
        """The α the recommender picked, or None (no quality metric, or no α good enough)."""
        return None if self.recommendation is None else self.recommendation.alpha

    def to_dict(self, *, details: bool = True) -> dict[str, object]:
        """JSON-ready (NaN → None, α = ∞ → ``"inf"``): settings, ``curve``, ``shares``, the recommendation, the
        findings, the notes and what is (not) estimated; with ``details`` also ``per_query``."""
        def value(key: str, x: object) -> object:
            x = x.item() if isinstance(x, np.generic) else x
            if key == "alpha":
                return _alpha_json(x)
            return None if isinstance(x, float) and not math.isfinite(x) else x

        def records(frame: pd.DataFrame) -> list[dict[str, object]]:
            return [{k: value(k, x) for k, x in row.items()} for row in frame.to_dict(orient="records")]

        out: dict[str, object] = {
            "alphas": [_alpha_json(a) for a in self.alphas], "k": self.k, "n_samples": self.n_samples,
            "seed": self.seed, "level": self.level, "n_boot": self.n_boot, "n_permutations": self.n_permutations,
            "min_rel": self.min_rel, "tolerance": self.tolerance, "shares_over": self.shares_over,
            "curve": records(self.curve), "shares": records(self.shares),
            "recommended_alpha": _alpha_json(self.recommended_alpha),
            "recommendation": self.recommendation_text,
            "findings": [f.to_dict() for f in self.findings],
            "skipped": dict(self.skipped), "notes": list(self.notes), "estimated": self.estimated,
            "not_estimated": self.not_estimated, "undefined": dict(self.undefined),
            "wall_seconds": self.wall_seconds if math.isfinite(self.wall_seconds) else None,
        }
        if details:
            out["per_query"] = records(self.per_query)
        return out


# -- inputs ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class WhatIfSettings(Settings):
    """How a served log is replayed (:func:`what_if_sampling`): the α grid and N, as ``audit-log --what-if-alphas``
    and ``--what-if-samples`` declare them (the log audit's ``what_if_alphas`` and ``what_if_samples`` give them to
    the CLI's what-if), the tests and the recommender.

    ``alphas``: the grid (``math.inf``: the deterministic ranking by logged score), sorted, repeats dropped.
    ``n_samples``: rankings N sampled per query and α (the paper uses 100). ``k``, ``min_rel``, ``n_boot``,
    ``level``, ``seed``: as in :class:`~fairrag_core.audit.rag_log.LogAuditConfig`; None takes the audit's when one
    is given, else the longest served ranking, 1, 1000, 0.95 and a fresh seed (recorded in the result).
    ``n_permutations``: random sign flips and swaps of the paired tests (exact for few queries). ``tolerance``: how
    much mean EE-R the recommender may lose against the system as served (0.05 = 5 %). Checked when made.

    >>> WhatIfSettings(alphas=(2, 0, 2, math.inf)).alphas
    (0.0, 2.0, inf)
    """

    alphas: tuple[float, ...] = WHAT_IF_ALPHAS.field(default=(0.0, 1.0, 2.0, 4.0, 8.0))
    n_samples: int = WHAT_IF_SAMPLES.field(default=100)
    k: int | None = None
    min_rel: int | None = None
    n_boot: int | None = None
    n_permutations: int = 10000
    level: float | None = None
    tolerance: float = 0.05
    seed: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        checked = {
            "alphas": _alphas(self.alphas),
            "n_samples": check_positive_int(self.n_samples, "n_samples",
                                            hint="sampled rankings per query and α; the paper uses 100"),
            "n_permutations": check_at_most(self.n_permutations, "n_permutations", MAX_RESAMPLES,
                                            hint="random swaps, e.g. 10000", fix="10,000 swaps are the usual number"),
            "tolerance": check_non_negative(self.tolerance, "tolerance", hint="0.05 = lose at most 5 % of EE-R"),
            "level": None if self.level is None else check_open_unit(self.level, "level", hint="e.g. 0.95"),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)


def _settings_of(settings: WhatIfSettings | None, fields: dict) -> WhatIfSettings:
    """``settings``, with the fields given as keywords (the earlier keyword form, ``alphas=…, n_samples=…``)."""
    settings = WhatIfSettings() if settings is None else settings
    unknown = sorted(set(fields).difference(settings.to_dict()))
    if unknown:
        raise InvalidParameterError(f"what_if_sampling has no setting(s) {unknown}; pass WhatIfSettings(...) with "
                                    f"some of: {', '.join(settings.to_dict())}")
    return replace(settings, **fields) if fields else settings


def _alphas(alphas: Sequence[float] | float) -> tuple[float, ...]:
    values = [alphas] if np.ndim(alphas) == 0 else list(alphas)
    if not values:
        raise InvalidParameterError("give at least one α to replay, e.g. alphas=(0, 1, 2, 4, 8)")
    checked = dict.fromkeys(check_alpha(a) for a in values)
    return tuple(sorted(checked, key=lambda a: (math.isinf(a), a)))


def _mean_score(values: list[float]) -> float:
    """The mean of a document's finite logged scores, also for finite extremes: ±1e308 logged twice sums to ±inf, so
    such a sum is taken over the values divided first (each |v/n| ≤ max |v|, and so is their sum)."""
    mean = sum(values) / len(values)
    return mean if math.isfinite(mean) else sum(v / len(values) for v in values)


def _logged_candidates(entries: list[LogEntry]) -> bool:
    """Whether a query's lines all carry logged candidates with scores (:attr:`LogEntry.candidates`): then they,
    not the served rankings, are what the replay samples from."""
    return all(e.candidates is not None and e.candidate_scores is not None for e in entries)


def _candidates(log: RagLog, collection: Collection) -> tuple[list[_Candidates], dict[str, str], list[str]]:
    """Per query (order of first appearance): the union of its logged candidates (when every line logs them with
    scores, :func:`_logged_candidates`), else of its served documents, with their mean logged score; the queries
    skipped and why; notes on logged candidates, averaged scores and differing rankings."""
    by_query: dict[str, list[LogEntry]] = {}
    for entry in log.entries:
        by_query.setdefault(entry.query_id, []).append(entry)

    def scored(score: float | None) -> bool:
        return score is not None and math.isfinite(score)

    if not any(any(map(scored, scores)) for e in log.entries for scores in (e.scores, e.candidate_scores)
               if scores is not None):
        raise InvalidParameterError(NO_SCORES)
    replayed, skipped = [], {}
    averaged = differing = from_candidates = 0
    unscored: dict[str, None] = {}  # what the skipped queries lack scores for: served documents, logged candidates
    for qid, entries in by_query.items():
        logged: dict[str, list[float]] = {}  # served (or logged) order: each document's logged scores
        non_finite: dict[str, float] = {}  # a NaN or infinite score, the first logged per document
        unscored_lines = 0
        chosen_from = _logged_candidates(entries)
        what = "logged candidates" if chosen_from else "served documents"
        for entry in entries:
            docs = entry.candidates if chosen_from else entry.ranking
            scores = (entry.candidate_scores if chosen_from else entry.scores) or (None,) * len(docs)
            unscored_lines += not any(map(scored, scores))
            for doc, score in zip(docs, scores):
                logged.setdefault(doc, []).extend([float(score)] if scored(score) else [])
                if score is not None and not scored(score):
                    non_finite.setdefault(doc, score)
        missing = [d for d, values in logged.items() if not values]
        bad = [d for d in missing if d in non_finite]
        if bad:  # finite scores, however extreme, are replayed; NaN and ±inf are no scores
            skipped[qid] = (f"{len(bad)} of its {len(logged)} {what} have only NaN or infinite logged "
                            f"scores (first: {bad[0]!r}, {non_finite[bad[0]]}); fix them in the export")
            unscored[what] = None
            continue
        if missing:
            skipped[qid] = (f"{len(missing)} of its {len(logged)} {what} have no logged score (first: "
                            f"{missing[0]!r}; {unscored_lines} of its {len(entries)} lines carry no score)")
            unscored[what] = None
            continue
        averaged += sum(len(set(values)) > 1 for values in logged.values())
        from_candidates += chosen_from
        differing += not chosen_from and len({e.ranking for e in entries}) > 1
        replayed.append(_Candidates(qid, np.array([collection.index_of(d) for d in logged], dtype=np.int64),
                                    np.array([_mean_score(values) for values in logged.values()])))
    if not replayed:
        first, why = next(iter(skipped.items()))
        raise InvalidParameterError(f"no query can be replayed: every one has served documents without a logged "
                                    f"score (e.g. {first!r}: {why}); export document.score (traces) or the TREC score "
                                    "column for every served document")
    notes = []
    if from_candidates:
        source = ("a reranker's input, or the retrieval list it reranked or cut" if log.format == "otlp" else
                  'the log\'s "candidates"')
        others = (f"; the other {len(replayed) - from_candidates} replay the union of their served rankings"
                  if from_candidates < len(replayed) else "")
        notes.append(f"candidates: the logged candidate sets ({source}) for {from_candidates} of {len(replayed)} "
                     f"replayed queries, with their logged scores{others}; the replay at α = ∞ ranks by those "
                     "scores, so it need not match the system as served")
    if averaged:
        notes.append(f"{averaged} (query, document) pair(s) were logged with different scores on different lines "
                     "(paraphrases of a query, an index update); each takes its mean logged score")
    if differing:
        notes.append(f"{differing} of {len(replayed)} replayed queries were served different rankings on different "
                     "lines; their candidates are the union of what was served, so the replay at α = ∞ (one ranking "
                     "by mean score) need not match the system as served")
    if skipped:
        notes.append(f"{len(skipped)} of {len(by_query)} queries not replayed ({' or '.join(unscored)} without a "
                     f"logged score), e.g. {next(iter(skipped))!r}; the comparison covers the {len(replayed)} replayed "
                     "ones")
    return replayed, skipped, notes


def _resolve_audit(log: RagLog, collection: Collection, audit: LogAuditRun | None, *, k: int | None,
                   min_rel: int | None, n_boot: int | None, level: float | None, seed: int | None
                   ) -> LogAuditRun:
    """The log audit that gives the as-served values: ``audit`` (its settings must agree with the ones given), or
    a fresh one with these settings and no attribution."""
    if audit is None:  # a setting left None takes LogAuditConfig's default
        given = {"k": k, "min_rel": min_rel, "n_boot": n_boot, "level": level}
        return audit_served(log, collection, LogAuditConfig(**{n: v for n, v in given.items() if v is not None},
                                                            seed=new_seed() if seed is None else check_seed(seed),
                                                            attribution=AttributionSource.NONE))
    config, record = audit.record.config, audit.record
    if record.extra.get("log_sha256") and log.sha256 and record.extra["log_sha256"] != log.sha256:
        raise InvalidParameterError("the audit is of another log (its sha256 differs); pass the audit of this log, "
                                    "or leave audit=None")
    given = {"k": (k, record.extra.get("k_used")), "min_rel": (min_rel, config.min_rel),
             "n_boot": (n_boot, config.n_boot), "level": (level, config.level), "seed": (seed, record.seed)}
    for name, (value, used) in given.items():
        if value is not None and value != used:
            raise InvalidParameterError(f"{name}={value!r} differs from the audit's {name}={used!r}; leave {name} "
                                        "None to use the audit's, or audit again with it")
    return audit


# -- the replay --------------------------------------------------------------------------------------------------

def _relevance_weights(collection: Collection, query_id: str, docs: np.ndarray, k: int, min_rel: int
                       ) -> tuple[np.ndarray | None, float]:
    """ε*/‖ε*‖² of the candidates (over the whole collection, as the log audit computes EE-R) and m; (None, NaN)
    for an unjudged query, (None, 0) when no document is useful."""
    if query_id not in collection.qrels:
        return None, math.nan
    useful = collection.useful(query_id, min_rel=min_rel)
    m = int(useful.sum())
    if not m:
        return None, 0.0
    target = target_exposure(useful, k)
    return target[docs] / float(target @ target), float(m)


def _replay(queries: list[_Candidates], collection: Collection, alphas: tuple[float, ...], *, k: int, n_samples: int,
            min_rel: int, n_boot: int, level: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (query, α): EE-D (bias-corrected, with its interval over the N rankings) and EE-R; per (query, α,
    candidate): the exposure. Queries with as many candidates are sampled in one batch (in chunks that keep the
    work arrays near :data:`_CHUNK_ENTRIES`), and their EE-D bootstrapped in one product: the kernel of
    :func:`~fairrag_core.metrics.bootstrap.exposure_intervals` (``counts @ incidence``; the unbiased estimate with
    the basic interval), with one set of resampling counts over the N rankings per α, shared by the queries
    (each query's estimate reads only its own rankings).

    Memory: per α, the counts (B × N) and one batch of at least one query (its incidence N × n, twice, its sampled
    rankings N × k, its resampled exposures B × n, twice); the α values are replayed one after another. That is
    checked against the memory budget (:func:`~fairrag_core.checks.check_memory`) before anything is drawn."""
    most = max(q.docs.size for q in queries)
    check_memory(8 * (n_boot * n_samples + n_samples * (2 * most + k) + 2 * n_boot * most),
                 f"the what-if's {n_boot:,} resamples of N = {n_samples:,} sampled rankings of up to {most:,} "
                 "candidates",
                 fix="lower N (--what-if-samples; the paper uses 100) or the resamples (--boot)")
    weights = [_relevance_weights(collection, q.query_id, q.docs, k, min_rel) for q in queries]
    sizes: dict[int, list[int]] = {}
    for i, q in enumerate(queries):
        sizes.setdefault(q.docs.size, []).append(i)
    doc_ids = np.array(collection.doc_ids, dtype=object)
    rows, docs = [], []
    for alpha in alphas:
        sample_rng = np.random.default_rng(derive_seed(seed, _SAMPLES, _alpha_key(alpha)))
        counts = resample_counts(n_samples, n_boot, derive_seed(seed, _PER_QUERY, _alpha_key(alpha)))
        for n, members in sorted(sizes.items()):
            k_q = min(k, n)
            least = least_ee_disparity(n, k, filled=k_q)  # uniform over the n candidates
            chunk = max(1, _CHUNK_ENTRIES // ((n_boot + n_samples) * n))
            for start in range(0, len(members), chunk):
                part = members[start:start + chunk]
                scores = np.stack([queries[i].scores for i in part])
                ranked = sample_rankings_batch(scores, alpha=alpha, n_samples=n_samples, k=k_q, seed=sample_rng)
                incidence = np.zeros((len(part), n_samples, n))
                np.put_along_axis(incidence, ranked, 1.0, axis=2)
                exposures = incidence.mean(axis=1)  # (queries, n): ε of each candidate (Eq. 5)
                # ε of every resample of every query, in one matrix product: (B, N) @ (N, queries·n)
                draws = (counts @ incidence.transpose(1, 0, 2).reshape(n_samples, -1)) / n_samples
                draws = draws.reshape(n_boot, len(part), n)
                plug_ins = (exposures * exposures).sum(axis=1) / k
                resampled = (draws * draws).sum(axis=2).T / k  # (queries, B)
                # ‖ε‖²'s U-statistic (metrics.bootstrap.unbiased_squared_norm): each ranking shows k_q documents once,
                # so Σ_i ‖x_i‖² = N k_q and the unbiased EE-D is (N ‖ε̂‖² − k_q) / ((N − 1) k)
                unbiased = (n_samples * plug_ins * k - k_q) / ((n_samples - 1) * k) if n_samples > 1 else plug_ins
                for j, i in enumerate(part):
                    w, m = weights[i]
                    ee_d = bias_corrected_interval(float(plug_ins[j]), resampled[j], level=level,
                                                   bounds=(least, 1.0), unbiased=float(unbiased[j]))
                    rows.append((queries[i].query_id, alpha, n, k_q, ee_d.estimate, ee_d.low, ee_d.high,
                                 ee_d.plug_in, float(exposures[j] @ w) if w is not None else math.nan, m))
                ids = doc_ids[np.stack([queries[i].docs for i in part])].ravel()
                docs.append(pd.DataFrame({"query_id": np.repeat([queries[i].query_id for i in part], n),
                                          "alpha": alpha, "doc_id": ids, "score": scores.ravel(),
                                          "exposure": exposures.ravel()}))
    order = {q.query_id: i for i, q in enumerate(queries)}
    per_query = pd.DataFrame(rows, columns=["query_id", "alpha", "candidates", "k", "ee_d", "ee_d_low", "ee_d_high",
                                            "ee_d_plug_in", "ee_r", "m"])
    per_query, documents = (  # α ascending, queries in the log's order, candidates in served order
        frame.assign(_q=frame["query_id"].map(order)).sort_values(["alpha", "_q"], kind="stable").drop(columns="_q")
        .reset_index(drop=True) for frame in (per_query, pd.concat(docs, ignore_index=True)))
    return per_query, documents


def _mean(values: np.ndarray, *, n_boot: int, level: float, seed: int) -> tuple[float, float, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return math.nan, math.nan, math.nan
    ci = mean_interval(finite, n_boot=n_boot, level=level, seed=seed)
    return (float(finite.mean()), math.nan, math.nan) if ci is None else (ci.estimate, ci.low, ci.high)


def _change(a: np.ndarray, b: np.ndarray, *, n_boot: int, n_permutations: int, level: float, seed: int
            ) -> tuple[float, float, float, float]:
    keep = np.isfinite(a) & np.isfinite(b)
    if keep.sum() < 2:
        return float((a[keep] - b[keep]).mean()) if keep.any() else math.nan, math.nan, math.nan, math.nan
    test = paired_comparison(a[keep], b[keep], n_boot=n_boot, n_permutations=n_permutations, level=level, seed=seed)
    return test.difference.estimate, test.difference.low, test.difference.high, test.p_value


def _curve(per_query: pd.DataFrame, observed: pd.DataFrame, alphas: tuple[float, ...], *, n_boot: int,
           n_permutations: int, level: float, seed: int) -> pd.DataFrame:
    judged = int(np.isfinite(observed["ee_r"].to_numpy(float)).sum())
    rows = []
    for system, alpha in [(AS_SERVED, math.nan), *[("sampled", a) for a in alphas]]:
        frame = observed if system == AS_SERVED else per_query[per_query["alpha"] == alpha]
        label = "α = ∞ (deterministic)" if math.isinf(alpha) else f"α = {alpha:g}"
        row = {"system": system, "alpha": alpha, "label": AS_SERVED if system == AS_SERVED else label,
               "queries": len(frame), "judged_queries": judged,
               "ee_d_plug_in": float(np.mean(frame["ee_d_plug_in"].to_numpy(float))), "eligible": None}
        for stream, metric in enumerate(("ee_d", "ee_r")):
            values, base = frame[metric].to_numpy(float), observed[metric].to_numpy(float)
            row.update(zip((metric, f"{metric}_low", f"{metric}_high"),
                           _mean(values, n_boot=n_boot, level=level, seed=seed)))
            change = (math.nan,) * 4 if system == AS_SERVED else _change(
                values, base, n_boot=n_boot, n_permutations=n_permutations, level=level,
                seed=derive_seed(seed, _TESTS, _alpha_key(alpha), stream))
            row.update(zip((f"{metric}_change", f"{metric}_change_low", f"{metric}_change_high", f"{metric}_p"),
                           change))
        rows.append(row)
    return pd.DataFrame(rows, columns=_CURVE_COLUMNS)


def _share_bounds(matrix: np.ndarray, counts: np.ndarray | None, level: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shares (ratio of sums over queries) and their percentile bounds (NaN without resamples), as the ledger
    computes them (:func:`~fairrag_core.audit.query_bootstrap.ledger_intervals`)."""
    point = pooled_shares(matrix.sum(axis=0))
    if counts is None:
        return point, np.full(point.size, np.nan), np.full(point.size, np.nan)
    return (point, *percentile_bounds(point, pooled_shares(counts @ matrix), level))


def _shares_table(documents: pd.DataFrame, observed_docs: pd.DataFrame, collection: Collection, scope: pd.Index,
                  alphas: tuple[float, ...], groupings: Sequence[str], *, n_boot: int, n_permutations: int,
                  level: float, seed: int) -> pd.DataFrame:
    parts = []
    for by in groupings:
        group_of = dict(zip(collection.doc_ids, collection.owners(by)))
        shown = pd.concat([documents.loc[documents["exposure"] > 0, "doc_id"],
                           observed_docs.loc[observed_docs["exposure"] > 0, "doc_id"]])
        groups = pd.Index(sorted(set(shown.map(group_of))))
        observed = group_matrix(observed_docs, "exposure", scope, groups, group_of)
        if scope.size < 1 or observed.sum() <= 0:
            continue
        counts = resample_counts(scope.size, n_boot, seed) if scope.size >= 2 else None
        obs_point, obs_low, obs_high = _share_bounds(observed, counts, level)
        for alpha in alphas:
            matrix = group_matrix(documents[documents["alpha"] == alpha], "exposure", scope, groups, group_of)
            point, low, high = _share_bounds(matrix, counts, level)
            test = (share_differences(matrix, observed, n_boot=n_boot, n_permutations=n_permutations, level=level,
                                      seed=seed) if counts is not None else
                    pd.DataFrame({"difference": point - obs_point, "low": np.nan, "high": np.nan, "p_value": np.nan,
                                  "p_holm": np.nan}))
            part = pd.DataFrame({"by": by, "alpha": alpha, "group": groups, "share": point, "share_low": low,
                                 "share_high": high, "observed_share": obs_point, "observed_low": obs_low,
                                 "observed_high": obs_high})
            parts.append(part.join(test.rename(columns={"difference": "change", "low": "change_low",
                                                        "high": "change_high"})))
    columns = ["by", "alpha", "group", "share", "share_low", "share_high", "observed_share", "observed_low",
               "observed_high", "change", "change_low", "change_high", "p_value", "p_holm"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def _recommend(per_query: pd.DataFrame, observed: pd.DataFrame, alphas: tuple[float, ...], tolerance: float
               ) -> tuple[AlphaRecommendation | None, str]:
    finite = [a for a in alphas if math.isfinite(a)]
    if not np.isfinite(observed["ee_r"].to_numpy(float)).any():
        return None, NO_QUALITY_METRIC[0].upper() + NO_QUALITY_METRIC[1:] + "."
    if not finite:
        return None, ("The grid holds no finite α to recommend (α = ∞ is the deterministic ranking); add some, e.g. "
                      "0,1,2,4,8.")
    question = observed.set_index("query_id")["fairness_question"]
    columns = ["query_id", "system", "alpha", "ee_d", "ee_r"]
    table = pd.concat([observed.assign(system="deterministic", alpha=math.inf)[columns],
                       per_query[per_query["alpha"].isin(finite)].assign(system="stochastic")[columns]],
                      ignore_index=True)
    table["fairness_question"] = table["query_id"].map(question).fillna(False).astype(bool)
    rec = recommend_alpha(table, tolerance=tolerance, metric="ee_r", metric_label=METRICS["ee_r"].label)
    asked = table["fairness_question"].any()
    kept = (table[table["fairness_question"]] if asked else table).dropna(subset=["ee_r"])
    over = (f"over the {kept['query_id'].nunique()} judged queries"
            + (" with a fairness question (m > 1)" if asked else ""))
    if rec.alpha is None:
        return rec, (f"No α of the grid keeps mean EE-R within {percent(tolerance)} of the system as served "
                     f"({rec.baseline_utility:.3f}, {over}): keep serving as now, or widen the tolerance.")
    # the recommender compares with a deterministic baseline, which any α beats on EE-D; a served system may
    # already spread exposure, so an α is only worth recommending when it is fairer than what was served
    served_ee_d = float(kept.loc[kept["system"] == "deterministic", "ee_d"].mean())
    if rec.ee_d >= served_ee_d - 1e-12:
        reason = (f"No α of the grid is fairer than the system as served while keeping its mean EE-R within "
                  f"{percent(tolerance)} ({rec.baseline_utility:.3f}, {over}): the fairest that keeps EE-R, α = "
                  f"{rec.alpha:g}, has mean EE-D {rec.ee_d:.3f} against {served_ee_d:.3f} as served; keep serving as "
                  "now, or widen the tolerance.")
        return replace(rec, alpha=None, ee_d=served_ee_d, utility=rec.baseline_utility, reason=reason), reason
    return rec, (f"α = {rec.alpha:g}: the lowest mean EE-D ({rec.ee_d:.3f}, against {served_ee_d:.3f} as served) "
                 f"among the α values whose mean EE-R ({rec.utility:.3f}) stays within {percent(tolerance)} of the "
                 f"system as served ({rec.baseline_utility:.3f}), {over}. {configuration_line(rec.alpha)}")


def what_if_sampling(served: RagLog | ServedRankings, collection: Collection, settings: WhatIfSettings | None = None,
                     *, audit: LogAuditRun | None = None, groupings: Sequence[str] | None = None,
                     **fields: object) -> WhatIf:
    """Replay a served log under the fair Plackett-Luce retriever at each α (module docstring: the method).

    Args:
        served: what the system served, with scores: a :class:`~fairrag_core.data.rag_log.RagLog` whose entries carry
            ``scores`` (a trace export's), or a :class:`~fairrag_core.data.served.ServedRankings` read from a TREC run
            (its score column).
        collection: the documents' providers, groups and relevance labels (a curated collection, or
            :func:`~fairrag_core.data.traces.documents_from_log`'s ``collection`` for a log audited without one: EE-R
            is then undefined).
        settings: the α grid, N, the tests and the recommender (:class:`WhatIfSettings`; None: its defaults).
        audit: the log audit of ``served`` (:func:`~fairrag_core.audit.rag_log.audit_served`) whose per-query values
            are the as-served side; None runs one (without attribution).
        groupings: the share tables' groupings (default: ``provider`` and each of the collection's categories).
        fields: settings as keywords (``alphas=(0, 2), n_samples=50``), the earlier form: they replace those of
            ``settings``.

    Raises:
        InvalidParameterError: the log carries no scores (:data:`NO_SCORES`), no query can be replayed, a bad α, N,
            level or tolerance, or settings that contradict ``audit``.

    >>> from fairrag_core.data import Collection, Document
    >>> docs = Collection("c", tuple(Document(d, "", provider=p) for d, p in (("a", "A"), ("b", "B"), ("c", "C"))))
    >>> log = RagLog("x", (LogEntry(1, "q1", ("a", "b"), scores=(2.0, 1.0)), LogEntry(2, "q1", ("a", "c"),
    ...                                                                              scores=(2.0, 0.5))))
    >>> result = what_if_sampling(log, docs, WhatIfSettings(alphas=(0, math.inf), n_samples=200, seed=0, n_boot=200))
    >>> result.curve[["label", "queries"]].values.tolist()
    [['as served', 1], ['α = 0', 1], ['α = ∞ (deterministic)', 1]]
    >>> result.per_query.loc[result.per_query["alpha"] == math.inf, "ee_d_plug_in"].tolist()
    [1.0]
    """
    started = time.perf_counter()
    settings = _settings_of(settings, fields)  # checked when made
    grid, n_samples, n_permutations, tolerance = (settings.alphas, settings.n_samples, settings.n_permutations,
                                                  settings.tolerance)
    k, min_rel, n_boot, level, seed = settings.k, settings.min_rel, settings.n_boot, settings.level, settings.seed
    log = RagLog.from_served(served) if isinstance(served, ServedRankings) else served
    if not isinstance(log, RagLog):
        raise InvalidParameterError(f"served must be a RagLog (load_served) or a ServedRankings (load_run), got "
                                    f"{type(served).__name__}")
    log.check_against(collection)  # unknown doc ids: the line and the fix
    queries, skipped, notes = _candidates(log, collection)  # refuses a log without scores before any work
    audit = _resolve_audit(log, collection, audit, k=k, min_rel=min_rel, n_boot=n_boot, level=level, seed=seed)
    config, record = audit.record.config, audit.record
    k_used, min_rel, n_boot, level, seed = (record.extra["k_used"], config.min_rel, config.n_boot, config.level,
                                            record.seed)
    per_query, documents = _replay(queries, collection, grid, k=k_used, n_samples=n_samples, min_rel=min_rel,
                                   n_boot=n_boot, level=level, seed=seed)
    replayed = pd.Index([q.query_id for q in queries])
    observed = audit.table.set_index("query_id").loc[replayed].reset_index()[
        ["query_id", "lines", "labelled", "m", "fairness_question", "ee_d", "ee_d_plug_in", "ee_r"]]
    curve = _curve(per_query, observed, grid, n_boot=n_boot, n_permutations=n_permutations, level=level, seed=seed)
    labelled = labelled_queries(observed)
    labelled_only = 0 < len(labelled) < len(observed)  # the ledger's default scope (default_ledger_scope)
    scope = pd.Index(labelled) if labelled_only else replayed
    shares = _shares_table(documents, audit.documents, collection, scope, grid,
                           list(groupings) if groupings is not None else ["provider", *collection.categories()],
                           n_boot=n_boot, n_permutations=n_permutations, level=level, seed=seed)
    recommendation, text = _recommend(per_query, observed, grid, tolerance)
    if recommendation is not None:
        eligible = dict(zip(recommendation.per_alpha["alpha"].astype(float), recommendation.per_alpha["eligible"]))
        curve["eligible"] = [eligible.get(a) if s == "sampled" else None for s, a in zip(curve["system"],
                                                                                          curve["alpha"])]
    undefined = {} if curve["judged_queries"].iloc[0] else {"ee_r": (  # no query with a finite EE-R as served
        "no replayed query has relevance labels with a useful document in the collection (documents from the log "
        "have none); EE-R needs labels")}
    fewest, most = min(q.docs.size for q in queries), max(q.docs.size for q in queries)
    notes = [f"k = {k_used} (the audit's), N = {n_samples} sampled rankings per query and α; logged candidates per "
             f"query: {fewest}" + (f"–{most}" if most > fewest else ""), *notes]
    shallow = sum(q.docs.size <= k_used for q in queries)
    if shallow:
        notes.append(f"{shallow} of {len(queries)} replayed queries have no more logged candidates than k = {k_used}: "
                     "sampling cannot change their exposure (log deeper candidate lists, e.g. the retriever's top 20 "
                     "with their scores, and set --k to what the generator read)")
    result = WhatIf(curve=curve, shares=shares, per_query=per_query, documents=documents, observed=observed,
                    alphas=grid, k=k_used, n_samples=n_samples, seed=seed, level=level, n_boot=n_boot,
                    n_permutations=n_permutations, min_rel=min_rel, tolerance=tolerance,
                    shares_over="queries with relevance labels" if labelled_only else "every replayed query",
                    recommendation=recommendation, recommendation_text=text, skipped=skipped, notes=tuple(notes),
                    undefined=undefined)
    return replace(result, findings=tuple(what_if_findings(result)), wall_seconds=time.perf_counter() - started)


# -- findings and text -------------------------------------------------------------------------------------------

def value_text(value: float | None, low: float | None = None, high: float | None = None, *,
               signed: bool = False) -> str:
    """A value with its interval as the what-if's text and findings write it ("—" when there is no value): the
    app's table and the report use it, so a number reads the same there as in the CLI. ``None`` (JSON's null) is a
    missing value."""
    value, low, high = (math.nan if x is None else float(x) for x in (value, low, high))
    return num(value, signed=signed) + interval(low, high, signed=signed) if math.isfinite(value) else "—"


def p_text(p: float | None) -> str:
    """A p-value as the what-if's findings write it ("untested" when there is none)."""
    return wording.p_text(math.nan if p is None else float(p), untested="untested", exact_one=False)


def _ci(estimate: float, low: float, high: float, level: float) -> ConfidenceInterval | None:
    if not all(math.isfinite(v) for v in (estimate, low, high)):
        return None
    return ConfidenceInterval(float(estimate), float(min(low, estimate)), float(max(high, estimate)), level)


def _ee_r_clause(row: pd.Series) -> str:
    """``, at an EE-R cost of 0.040 [0.020, 0.060] (0.695 → 0.655)`` (a gain when it rises; "within noise" when its
    interval holds 0); empty without EE-R."""
    change, low, high = row["ee_r_change"], row["ee_r_change_low"], row["ee_r_change_high"]
    if not math.isfinite(change):
        return ""
    cost = change < 0
    size, bounds = (-change, interval(-high, -low)) if cost else (change, interval(low, high))
    within = ", within noise" if low <= 0 <= high else ""
    return (f", {'at' if cost else 'with'} an EE-R {'cost' if cost else 'gain'} of {size:.3f}{bounds} "
            f"({row['ee_r'] - change:.3f} → {row['ee_r']:.3f}{within})")


def _headline_harm(row: pd.Series, less_fair: bool, relative: float):
    """The severity of a what-if headline, of harm: a less fair replay (``less_fair``: beyond noise), or the EE-R it
    costs (its interval clear of 0), the more severe; a fairer replay at no cost is good news (INFO)."""
    change, high = row["ee_r_change"], row["ee_r_change_high"]
    before = row["ee_r"] - change
    cost = harm_severity(math.isfinite(change) and high < 0, True, change / before if before else math.nan)
    return min(harm_severity(less_fair, True, relative), cost, key=lambda s: s.rank)


def _focus(result: WhatIf, served: pd.Series, sampled: pd.DataFrame) -> tuple[float | None, str]:
    """The α the findings describe, and how the headline introduces it: the recommended α; else the fairest finite α
    of the grid (lowest mean EE-D) when it is fairer than the system as served; else None."""
    chosen = result.recommended_alpha
    if chosen is not None:
        return chosen, (f": the recommender's pick, the fairest α whose mean EE-R stays within "
                        f"{percent(result.tolerance)} of the system as served")
    finite = sampled[np.isfinite(sampled["alpha"].astype(float))]
    if finite.empty or finite["ee_d"].min() >= served["ee_d"]:
        return None, ""
    fairest = float(finite.loc[finite["ee_d"].idxmin(), "alpha"])
    why = ("without relevance labels the recommender has no quality metric" if result.recommendation is None else
           f"no α is both fairer than the system as served and within {percent(result.tolerance)} of its EE-R")
    return fairest, f": the fairest α of the grid, not a recommendation ({why})"


def what_if_findings(result: WhatIf) -> list[Finding]:
    """What a what-if found, most useful first, from its tables alone (a stored result finds the same).

    The α described is the recommended one; without a recommendation (no relevance labels, or no α both fairer than
    the system as served and within the EE-R tolerance), the fairest finite α of the grid, so that the reader sees
    what the fairest replay would cost. Then: a headline (EE-D as served → at α, its paired change, the EE-R cost or
    gain), and per grouping the groups whose share would change beyond noise (Holm over the groups; at most three
    providers and two groups of each other category, largest change first), or a line saying that none would. When
    no α of the grid is fairer than the system as served: one line with the recommender's answer and the curve.
    """
    curve, level = result.curve, result.level
    alpha_test = alpha_of(level)
    served = curve[curve["system"] == AS_SERVED].iloc[0]
    sampled = curve[curve["system"] == "sampled"]
    common = {"level": level, "alpha": alpha_test, "n_queries": int(served["queries"]),
              "n_lines": int(result.observed["lines"].sum())}
    chosen, why = _focus(result, served, sampled)
    if chosen is None:
        points_text = "; ".join(f"{row.label}: {row.ee_d:.3f}" for row in sampled.itertuples())
        text = (f"{result.recommendation_text} The disparity curve: EE-D {served['ee_d']:.3f} as served; "
                f"{points_text} ({common['n_queries']} replayed queries, N = {result.n_samples}).")
        return [Finding(FindingKind.HEADLINE, "what if it sampled", "ee_d", text, family="what-if", **common)]
    row = sampled[sampled["alpha"] == chosen].iloc[0]
    change, low, high, p = row["ee_d_change"], row["ee_d_change_low"], row["ee_d_change_high"], row["ee_d_p"]
    significant = math.isfinite(p) and p <= alpha_test
    verdict = noise_verdict(significant, low, high)  # one test, no family: its interval and p are the pair
    noise = "" if verdict is Verdict.BEYOND else f", {verdict.value}"
    ee_r = _ee_r_clause(row)
    text = (f"Sampling at α = {chosen:g} would {'lower' if change < 0 else 'raise'} EE-D from {served['ee_d']:.3f}"
            f"{interval(served['ee_d_low'], served['ee_d_high'])} as served to {row['ee_d']:.3f}"
            f"{interval(row['ee_d_low'], row['ee_d_high'])} ({num(change, signed=True)}"
            f"{interval(low, high, signed=True)}, {p_text(p)}{noise}){ee_r}{why}.")
    relative = change / served["ee_d"] if served["ee_d"] else math.nan
    found = [Finding(FindingKind.HEADLINE, f"α = {chosen:g} vs {AS_SERVED}", "ee_d", text,
                     severity=_headline_harm(row, verdict is Verdict.BEYOND and change > 0, relative),
                     direction=(Direction.BELOW if change < 0 else Direction.ABOVE) if significant else Direction.NONE,
                     estimate=change, low=low, high=high,
                     value=_ci(row["ee_d"], row["ee_d_low"], row["ee_d_high"], level),
                     reference=_ci(served["ee_d"], served["ee_d_low"], served["ee_d_high"], level),
                     relative=relative, p_value=p, test="paired sign-flip test over queries", family="what-if",
                     **common)]
    metric = f"retrieval share (α = {chosen:g} − {AS_SERVED})"
    for by, part in result.shares[result.shares["alpha"] == chosen].groupby("by", sort=False):
        noun = group_noun(by)
        by_size = part.reindex(part["change"].abs().sort_values(ascending=False).index)
        verdicts = [noise_verdict(math.isfinite(p) and p <= alpha_test, lo, hi)
                    for p, lo, hi in zip(by_size["p_holm"], by_size["change_low"], by_size["change_high"])]
        moved = by_size[[v is Verdict.BEYOND for v in verdicts]]
        over = f"over {len(part)} {noun}s"
        correction = f"Holm {over}"
        family = f"what-if α = {chosen:g}: {by} shares"
        for share in moved.head(_MAX_FINDINGS.get(by, 2)).itertuples():
            up = share.change > 0
            relative = share.change / share.observed_share if share.observed_share > 0 else math.nan
            name = share.group if by == "provider" else f"{share.group} ({by})"
            text = (f"Sampling at α = {chosen:g} would {'raise' if up else 'lower'} {name}'s retrieval share from "
                    f"{share_text(share.observed_share, share.observed_low, share.observed_high)} to "
                    f"{share_text(share.share, share.share_low, share.share_high)} "
                    f"({points(share.change, share.change_low, share.change_high)}, "
                    f"{p_pair(share.p_value, share.p_holm, over, p_text)}){ee_r}.")
            found.append(Finding(FindingKind.MORE_EXPOSED if up else FindingKind.LESS_EXPOSED, str(share.group),
                                 # a provider losing exposure is the harm, one gaining it is not
                                 metric, text, severity=harm_severity(True, not up, relative),
                                 direction=Direction.ABOVE if up else Direction.BELOW, estimate=share.change,
                                 low=share.change_low, high=share.change_high,
                                 value=_ci(share.share, share.share_low, share.share_high, level),
                                 reference=_ci(share.observed_share, share.observed_low, share.observed_high, level),
                                 relative=relative, p_value=share.p_value, p_adjusted=share.p_holm,
                                 test="paired permutation test (systems swapped within queries)",
                                 correction=correction, family=family, **common))
        if moved.empty:
            largest = by_size.iloc[0]
            margin = ", at the margin of noise" if verdicts[0] is Verdict.MARGIN else ""
            text = (f"At α = {chosen:g} no {noun}'s retrieval share would change beyond noise ({correction}); the "
                    f"largest change: {largest['group']} "
                    f"{points(largest['change'], largest['change_low'], largest['change_high'])}{margin}.")
            found.append(Finding(FindingKind.NO_DIFFERENCE, f"every {noun}", metric, text, correction=correction,
                                 family=family, detail=by != "provider", **common))
    return found


def _top_changes(shares: pd.DataFrame, alpha: float, level: float, limit: int = 3) -> str:
    part = shares[(shares["by"] == "provider") & (shares["alpha"] == alpha)]
    part = part[part["change"].abs() > 5e-4]  # what prints as 0.0 points is no change
    if part.empty:
        return "none"
    part = part.reindex(part["change"].abs().sort_values(ascending=False).index).head(limit)
    alpha_test = alpha_of(level)
    beyond = [noise_verdict(math.isfinite(r.p_holm) and r.p_holm <= alpha_test, r.change_low, r.change_high)
              is Verdict.BEYOND for r in part.itertuples()]  # * as the findings say it: test and interval agree
    return ", ".join(f"{r.group} {'+' if r.change > 0 else ''}{pct(r.change)}{'*' if star else ''}"
                     for r, star in zip(part.itertuples(), beyond))


def what_if_text(result: WhatIf) -> list[str]:
    """The what-if as text lines (the CLI's "What if it sampled" section): the per-α table (EE-D and EE-R with their
    intervals over queries, the largest provider share changes against the system as served), the recommender's
    answer, the findings and what is and is not estimated."""
    lines = [f"What if it sampled (Plackett-Luce over each query's logged candidates and scores; N = "
             f"{result.n_samples} rankings per query and α, k = {result.k}; {int(result.curve['queries'].iloc[0])} "
             f"queries replayed; {result.level:.0%} intervals over queries; seed {result.seed}):"]
    disparity, relevance = METRICS["ee_d"].label, METRICS["ee_r"].label
    lines.append(f"  {'system':<24} {disparity:>6} {'interval':<16} {relevance:>6} {'interval':<16} largest provider "
                 "share changes (points vs as served; * beyond noise, Holm)")
    for row in result.curve.itertuples():
        ee_d_int = interval(row.ee_d_low, row.ee_d_high).strip() or "—"
        ee_r_int = interval(row.ee_r_low, row.ee_r_high).strip()
        changes = "" if row.system == AS_SERVED else _top_changes(result.shares, row.alpha, result.level)
        mark = " (recommended)" if row.alpha == result.recommended_alpha else ""  # as served: α is NaN
        lines.append(f"  {row.label + mark:<24} {row.ee_d:>6.3f} {ee_d_int:<16} {num(row.ee_r):>6} {ee_r_int:<16} "
                     f"{changes}".rstrip())
    lines.append(f"  (EE-D per query bias-corrected over its N rankings, as everywhere; shares over "
                 f"{result.shares_over})")
    lines += [f"  — {METRICS[metric].label if metric in METRICS else metric}: {reason}"
              for metric, reason in result.undefined.items()]
    lines += [f"Recommender: {result.recommendation_text}", "What-if findings:"]
    lines += [f"  - [{f.severity.value}] {f.text}" for f in result.findings]
    lines += [f"note: {note}" for note in result.notes]
    lines += [f"skipped: {qid}: {reason}" for qid, reason in list(result.skipped.items())[:5]]
    lines.append(f"Estimated: {result.estimated}. Not estimated: {result.not_estimated}.")
    if math.isfinite(result.wall_seconds):
        lines.append(f"Replayed in {result.wall_seconds:.2f} s.")
    return lines
