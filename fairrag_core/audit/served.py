"""Audit what a deployed system served: expeval-compatible expected exposure per query, and intervals a reviewer
can trust (bootstrap over samples and over queries, paired comparisons); TREC Fair 2022's nDCG/AWRF are in
:mod:`.served_awrf`.

:func:`evaluate_run` reproduces expeval (Diaz et al., CIKM 2020; github.com/diazf/expeval) per query — the same
queries (those of the qrels with at least one judged document), the same values for ``gerr`` and ``rbp``,
normalised or not, graded or binarised, complete or incomplete, individual or group — and adds the step model
of Fair RAG (Kim & Diaz 2025). The formulas, and where expeval is odd, are in
:mod:`fairrag_core.metrics.expeval`. Runs and qrels come as paths, loaded objects (:mod:`fairrag_core.data.served`)
or a :class:`~fairrag_core.data.Collection` (its qrels, groups by provider or one category).

Statistics (:mod:`fairrag_core.metrics.intervals`): :func:`bootstrap_run` gives each query's values with an
interval over its N samples (relevance: plug-in + percentile; disparity and difference: bias-corrected +
basic, since their plug-in is biased upward by a finite N); :func:`summarise_run` the mean over queries with a
percentile bootstrap over queries; :func:`compare_runs` the paired difference of two runs with its interval and
the p-value of a paired randomization test. :func:`evaluate_served` is ``evaluate-run``'s report in one call: the
per-query estimates and their mean over queries, the CLI's headline number for number.

The inputs are taken by name, in the CLI's order (``evaluate_run(qrels=…, run=…)``, as ``evaluate-run QRELS RUN``):
a run and qrels given the wrong way round fail with the call to write instead of evaluating the wrong thing, and
the user model is one :class:`~fairrag_core.metrics.expeval.ExposureSettings` (``settings=``; its field names as
keywords override it, e.g. ``user_model="gerr"``).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..checks import MAX_RESAMPLES, check_at_most
from ..data import Collection, load_collection
from ..data.demo import DEMO_COLLECTIONS
from ..data.judgments import Judgments, judgments_from_collection, load_judgments
from ..data.served import QueryRankings, ServedRankings, load_run
from ..errors import DataFormatError, FairRAGError, InvalidParameterError
from ..metrics.bootstrap import resample_counts, unbiased_squared_norm
from ..metrics.expeval import (
    METRICS,
    ExposureSettings,
    MetricBounds,
    UserModel,
    bounds,
    expected_exposure,
    exposure_matrix,
    group_bounds,
    judged_grades,
    missing_values,
    raw_values,
    resampled_values,
    target_exposure_graded,
)
from ..metrics.intervals import bias_corrected_interval, bootstrap_mean, paired_comparison, percentile_interval
from ..seeds import SeedLike, as_generator, check_seed, new_seed

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["evaluate_run", "evaluate_rows", "rows_table", "bootstrap_run", "summarise_run", "compare_runs",
           "evaluate_served", "ServedEvaluation", "estimates", "inputs_by_name", "with_depth", "as_run",
           "as_judgments", "unjudged_queries", "measured", "DIRECTION"]

#: Which way is better, per metric.
DIRECTION = {"disparity": "lower is fairer", "relevance": "higher is better", "difference": "lower is better"}

RunLike = ServedRankings | str | os.PathLike | Mapping
QrelsLike = Judgments | Collection | str | os.PathLike


def inputs_by_name(*names: str) -> Callable[[Callable], Callable]:
    """Make a function's data inputs ``names`` (qrels first, then the run(s): the CLI's order) keyword-only, with
    one-line errors that give the Python call to write: for inputs passed by position, for a missing one, and, when
    loading fails, for a qrels file given as a run (and a run given as the qrels: "swap them")."""

    def decorate(function: Callable) -> Callable:
        call = f"{function.__name__}({', '.join(f'{name}=…' for name in names)})"

        @functools.wraps(function)
        def by_name(*positional, **kwargs):
            if positional:
                raise InvalidParameterError(f"{function.__name__} takes its inputs by name, in the CLI's order "
                                            f"(qrels first): {call}")
            missing = [name for name in names if name not in kwargs]
            if missing:
                raise InvalidParameterError(f"{function.__name__} needs {', '.join(f'{n}=' for n in missing)}: {call}")
            try:
                return function(**kwargs)
            except DataFormatError as error:
                qrels = kwargs["qrels"]
                for name in names[1:]:
                    if _reads(load_judgments, kwargs[name]) and not _reads(load_run, kwargs[name]):
                        what = (f"qrels={qrels} is a run and {name}={kwargs[name]} is qrels: swap them"
                                if _reads(load_run, qrels) else f"{name}={kwargs[name]} is qrels, not a run: give "
                                f"the run as {name}=")
                        raise InvalidParameterError(f"{what}, {call}") from error
                raise

        return by_name

    return decorate


def _reads(load: Callable, path: object) -> bool:
    """Whether ``load`` reads the file ``path`` (asked only once a load has failed: correct calls read each file
    once)."""
    if not isinstance(path, str | os.PathLike) or not Path(path).is_file():
        return False
    try:
        load(path)
    except (FairRAGError, OSError):
        return False
    return True


def as_run(run: RunLike, *, run_format: str = "auto") -> ServedRankings:
    """A loaded run from a path, a :class:`ServedRankings`, or ``{query_id: [[doc, …] per sample]}``."""
    if isinstance(run, ServedRankings):
        return run
    if isinstance(run, Mapping):
        return ServedRankings.from_lists(run)
    if isinstance(run, str | os.PathLike):
        return load_run(run, format=run_format)
    if isinstance(run, Judgments | Collection):
        raise InvalidParameterError(f"the run is a {type(run).__name__}, which judges runs: pass it as qrels= and "
                                    "the run as run=")
    raise InvalidParameterError(f"run must be a path, a ServedRankings or a dict of rankings, got {type(run).__name__}")


def as_judgments(qrels: QrelsLike, *, groups_by: str = "provider") -> Judgments:
    """Judgments from a qrels path, a :class:`Judgments`, a :class:`Collection`, or a collection's name/folder
    (then every document's group is its provider or its group in the category ``groups_by``)."""
    if isinstance(qrels, Judgments):
        return qrels
    if isinstance(qrels, Collection):
        return judgments_from_collection(qrels, groups_by=groups_by)
    if isinstance(qrels, str | os.PathLike):
        if str(qrels) in DEMO_COLLECTIONS or Path(qrels).is_dir():
            return judgments_from_collection(load_collection(qrels), groups_by=groups_by)
        return load_judgments(qrels)
    if isinstance(qrels, ServedRankings):
        raise InvalidParameterError("the qrels are a ServedRankings, a run: pass it as run= and the qrels as qrels=")
    raise InvalidParameterError(f"qrels must be a path, Judgments or a Collection, got {type(qrels).__name__}")


@dataclass(frozen=True)
class _Query:
    """One query prepared for evaluation: judged documents, target and bounds; when the run ranks it, its rankings
    over the V documents (ranked or judged) and, in group mode, their V × K group membership."""

    query_id: str
    n_judged: int
    n_relevant: int
    n_levels: int
    n_groups: int | None
    target: np.ndarray            # individual: over the V documents; groups: over the K groups
    bounds: dict[str, MetricBounds]
    ranked: QueryRankings | None  # None: not in the run
    relevant: np.ndarray          # V: grade > 0
    member: np.ndarray | None     # V × K in group mode
    settings: ExposureSettings

    @property
    def in_run(self) -> bool:
        return self.ranked is not None

    @property
    def n_samples(self) -> int:
        return 0 if self.ranked is None else self.ranked.n_samples

    @cached_property
    def matrix(self) -> object:
        """N × V per-sample exposure (N × K in group mode): what the bootstraps resample. Built on first use only;
        the point values need just :meth:`exposure`."""
        matrix = exposure_matrix(self.ranked.positions, self.relevant, self.settings)
        return matrix if self.member is None else np.asarray(matrix @ self.member)

    def exposure(self) -> np.ndarray:
        """The expected exposure (mean over samples), summed straight from the positions."""
        mean = expected_exposure(self.ranked.positions, self.relevant, self.settings)
        return mean if self.member is None else mean @ self.member


def _prepare(run: RunLike, qrels: QrelsLike, settings: ExposureSettings, *, run_format: str, groups_by: str
             ) -> tuple[ExposureSettings, list[_Query]]:
    """The run and qrels loaded, ``settings`` with the step user's k resolved (:func:`with_depth`), and the qrels'
    queries prepared."""
    run, judgments = as_run(run, run_format=run_format), as_judgments(qrels, groups_by=groups_by)
    settings = with_depth(settings, run)
    prepared = []
    for qid, judged in judgments.relevance.items():
        docs = list(judged)
        grades = judged_grades(np.fromiter(judged.values(), dtype=np.float64, count=len(docs)), settings)
        keep = ~np.isnan(grades)
        if not keep.any():
            continue  # expeval: a query without judged documents is not evaluated
        docs, grades = [d for d, k in zip(docs, keep) if k], grades[keep]
        target = target_exposure_graded(grades, settings)
        n_levels = int(np.unique(grades).size)
        n_relevant = int((grades > 0).sum())
        ranked = run.queries.get(qid)
        vocab = {d: i for i, d in enumerate(ranked.doc_ids)} if ranked is not None else {}
        for d in docs:
            vocab.setdefault(d, len(vocab))
        where = np.fromiter((vocab[d] for d in docs), dtype=np.int64, count=len(docs))
        relevant = np.zeros(len(vocab), dtype=bool)
        relevant[where] = grades > 0
        if settings.groups:
            names: dict[str, int] = {}
            pairs = [(i, names.setdefault(g, len(names))) for i, d in enumerate(docs)
                     for g in judgments.groups[qid][d]]
            member = np.zeros((len(vocab), len(names)))
            member[where[[i for i, _ in pairs]], [g for _, g in pairs]] = 1.0
            target = target @ member[where]
            query_bounds = group_bounds(target, n_relevant, settings, n_judged=len(docs))
        else:
            member, query_bounds = None, bounds(target, n_levels, settings)
            target = np.bincount(where, weights=target, minlength=len(vocab))  # over the V documents
        prepared.append(_Query(qid, len(docs), n_relevant, n_levels, None if member is None else len(names), target,
                               query_bounds, ranked, relevant, member, settings))
    return settings, prepared


def _settings(settings: ExposureSettings, overrides: Mapping[str, object]) -> ExposureSettings:
    """``settings`` (None: the defaults, the step user) with ``overrides`` (its field names as keywords, e.g.
    ``user_model="gerr"``) applied."""
    settings = ExposureSettings() if settings is None else settings
    if not isinstance(settings, ExposureSettings):
        raise InvalidParameterError(f"settings must be an ExposureSettings (fairrag_core.metrics.expeval), got "
                                    f"{type(settings).__name__}")
    unknown = sorted(set(overrides) - set(ExposureSettings.__dataclass_fields__))
    if unknown:
        known = ", ".join(ExposureSettings.__dataclass_fields__)
        raise InvalidParameterError(f"unknown option(s) {unknown}; the user model takes: {known}")
    return replace(settings, **overrides) if overrides else settings


def _undefined(query: _Query, settings: ExposureSettings) -> str:
    """The metrics whose normalised value is expeval's stand-in because their bounds coincide (e.g. relevance of a
    query with one relevance level: every ranking scores 1), comma-separated; "" when all are measured."""
    if not settings.normalize:
        return ""
    return ",".join(m for m in METRICS if query.bounds[m].low == query.bounds[m].high)


def _values(query: _Query, settings: ExposureSettings) -> dict[str, float]:
    quirk = settings.groups and not settings.corrected  # expeval's util.l2: no mass is +inf (group mode)
    raw = (raw_values(query.exposure(), query.target, zero_disparity_is_inf=quirk) if query.in_run
           else missing_values(query.bounds, query.target, settings))
    if not settings.normalize:
        return raw
    return {m: float(query.bounds[m].normalise(raw[m])) for m in METRICS}


def with_depth(settings: ExposureSettings, *runs: ServedRankings) -> ExposureSettings:
    """``settings`` with the step user's k resolved: when it is None, the longest ranking of ``runs`` (the generator
    reads the whole ranking, as :func:`~fairrag_core.audit.rag_log.audit_served` assumes)."""
    if settings.user_model is not UserModel.STEP or settings.k is not None:
        return settings
    return replace(settings, k=max(q.depth for run in runs for q in run.queries.values()))


@inputs_by_name("qrels", "run")
def evaluate_run(*, qrels: QrelsLike, run: RunLike, settings: ExposureSettings | None = None,
                 run_format: str = "auto", groups_by: str = "provider", **overrides) -> pd.DataFrame:
    """Expected-exposure metrics of a served run, per query, as expeval computes them: the plug-in values (for the
    CLI's headline, the bias-corrected estimates and their mean, see :func:`evaluate_served`).

    Args:
        qrels: path to qrels (``qid gid[|gid…] docno rel``), :class:`~fairrag_core.data.served.Judgments`, or a
            :class:`~fairrag_core.data.Collection` / collection name (groups from ``groups_by``).
        run: path to a run (expeval/TREC with a sample column, or TREC Fair 2022), a loaded
            :class:`~fairrag_core.data.served.ServedRankings`, or ``{query_id: [[doc, …], …]}``.
        settings: the user model, expeval's flags (:class:`~fairrag_core.metrics.expeval.ExposureSettings`, the
            CLI's ``-u -p -r -k -B -C -U -G --bounds``): ``step`` by default (Fair RAG's machine user, the package's
            user model everywhere; ``k`` None means the run's longest ranking), or expeval's ``gerr`` (expeval's
            own default) or ``rbp``.
        overrides: fields of ``settings`` by name (``user_model="gerr"``, ``patience=0.8``, …).

    Returns:
        DataFrame indexed by ``query_id`` (qrels order) with ``disparity``, ``relevance``, ``difference`` and
        ``n_samples``, ``n_judged`` (judged documents as read), ``n_relevant``, ``relevance_levels`` (1 with
        expeval bounds ⇒ normalised relevance is the constant 1), ``in_run`` (False ⇒ expeval's default values for
        a query the run lacks), ``undefined`` (the metrics whose normalised value is only expeval's stand-in, its
        bounds being equal: e.g. "relevance" for a query with a single relevance level; the values are kept for
        parity with expeval, and :func:`summarise_run`, :func:`compare_runs` and the CLI's reports leave them
        out), and ``n_groups`` in group mode. Queries of the run without judged documents are left out, as expeval
        does (:func:`unjudged_queries` lists them).

    >>> from fairrag_core.data.judgments import parse_judgments
    >>> qrels = parse_judgments("q1 0 a 1\\nq1 0 b 1\\nq1 0 c 0\\n")
    >>> run = {"q1": [["a", "b", "c"], ["b", "a", "c"]]}
    >>> table = evaluate_run(qrels=qrels, run=run, settings=ExposureSettings(user_model="rbp", normalize=False))
    >>> table.loc["q1", ["disparity", "relevance", "difference"]].round(4).tolist()
    [1.1875, 1.125, 0.0625]
    """
    settings = _settings(settings, overrides)
    # loaded here, so that an error names this function's call
    loaded, judged = as_run(run, run_format=run_format), as_judgments(qrels, groups_by=groups_by)
    return rows_table(evaluate_rows(qrels=judged, run=loaded, settings=settings), settings)


def rows_table(rows: list[dict], settings: ExposureSettings) -> pd.DataFrame:
    """:func:`evaluate_rows`' rows as :func:`evaluate_run`'s table (indexed by ``query_id``)."""
    import pandas as pd

    columns = ["query_id", *METRICS, "n_samples", "n_judged", "n_relevant", "relevance_levels", "in_run", "undefined"]
    return pd.DataFrame(rows, columns=columns + (["n_groups"] if settings.groups else [])).set_index("query_id")


@inputs_by_name("qrels", "run")
def evaluate_rows(*, qrels: QrelsLike, run: RunLike, settings: ExposureSettings | None = None,
                  run_format: str = "auto", groups_by: str = "provider") -> list[dict]:
    """:func:`evaluate_run`'s rows as plain dicts (``query_id`` first), for callers that print them without pandas
    (``evaluate-run --trec-eval`` on a large run: pandas would add a quarter of a second to its start)."""
    settings, queries = _prepare(run, qrels, _settings(settings, {}), run_format=run_format, groups_by=groups_by)
    return [{"query_id": query.query_id, **_values(query, settings), "n_samples": query.n_samples,
             "n_judged": query.n_judged, "n_relevant": query.n_relevant, "relevance_levels": query.n_levels,
             "in_run": query.in_run, "undefined": _undefined(query, settings),
             **({"n_groups": query.n_groups} if settings.groups else {})} for query in queries]


@inputs_by_name("qrels", "run")
def unjudged_queries(*, qrels: QrelsLike, run: RunLike, settings: ExposureSettings | None = None,
                     run_format: str = "auto", groups_by: str = "provider") -> list[str]:
    """Queries of the run that expeval skips: not in the qrels, or without a judged document there (under
    ``settings``' ``binarize`` and ``complete``)."""
    settings = _settings(settings, {})
    loaded, judged = as_run(run, run_format=run_format), as_judgments(qrels, groups_by=groups_by)
    kept = {qid for qid, grades in judged.relevance.items()
            if not np.isnan(judged_grades(np.array(list(grades.values()), dtype=float), settings)).all()}
    return [q for q in loaded.query_ids if q not in kept]


@inputs_by_name("qrels", "run")
def bootstrap_run(*, qrels: QrelsLike, run: RunLike, settings: ExposureSettings | None = None,
                  n_boot: int = 1000, level: float = 0.95, seed: SeedLike = None, run_format: str = "auto",
                  groups_by: str = "provider", **overrides) -> pd.DataFrame:
    """Each query's metrics with an interval over its N sampled rankings (resampled with replacement).

    ``settings`` and ``overrides``: the user model, as in :func:`evaluate_run`. Returns one row per
    (``query_id``, ``metric``): ``plug_in`` (the :func:`evaluate_run` value), ``estimate`` (the value printed
    with the interval, inside it), ``low``, ``high``, ``level``, ``method``. Relevance is linear in ε: plug-in
    with a percentile interval. Disparity and difference are quadratic: their plug-in is biased upward by
    ``Σ_d Var(ε̂_d)``, so they come bias-corrected — the unbiased estimate from ‖ε‖²'s U-statistic over the samples
    (:func:`~fairrag_core.metrics.bootstrap.unbiased_squared_norm`: the same number for every seed) — with the basic
    interval, floored at the metric's least possible value. A query with one sample, or absent from the run, has no
    interval: ``low`` and ``high`` are NaN and ``estimate`` is the plug-in (resampling one ranking gives it back).
    """
    import pandas as pd

    n_boot = check_at_most(n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                           fix="1,000 resamples are the usual number")
    rng = as_generator(seed)
    settings, queries = _prepare(run, qrels, _settings(settings, overrides), run_format=run_format,
                                 groups_by=groups_by)
    rows = []
    for query in queries:
        point = _values(query, settings)
        if not query.in_run or query.n_samples == 1:
            why = "no interval: not in the run" if not query.in_run else "no interval: one sampled ranking"
            rows.extend({"query_id": query.query_id, "metric": metric, "plug_in": point[metric],
                         "estimate": point[metric], "low": np.nan, "high": np.nan, "level": level, "method": why,
                         "n_samples": query.n_samples} for metric in METRICS)
            continue
        weights = resample_counts(query.n_samples, n_boot, rng) / query.n_samples
        draws = resampled_values(query.matrix, query.target, weights)
        # the quadratic metrics' estimates: unbiased, from ‖ε‖²'s U-statistic (the same for every seed)
        squared = unbiased_squared_norm(query.matrix)
        relevance = float(query.exposure() @ query.target)
        unbiased = {"disparity": squared, "difference": squared - 2.0 * relevance + float(query.target @ query.target)}
        if settings.normalize:
            draws = {m: query.bounds[m].normalise(draws[m]) for m in METRICS}
            unbiased = {m: float(query.bounds[m].normalise(v)) for m, v in unbiased.items()}
        for metric in METRICS:
            if metric == "relevance":
                ci = percentile_interval(point[metric], draws[metric], level=level)
            else:
                floor = float(query.bounds[metric].normalise(0.0)) if settings.normalize else 0.0
                ci = bias_corrected_interval(point[metric], draws[metric], level=level, bounds=(floor, np.inf),
                                             unbiased=unbiased[metric] if math.isfinite(point[metric]) else None)
            rows.append({"query_id": query.query_id, "metric": metric, "plug_in": ci.plug_in, "estimate": ci.estimate,
                         "low": ci.low, "high": ci.high, "level": ci.level, "method": ci.method_text,
                         "n_samples": query.n_samples})
    return pd.DataFrame(rows).set_index(["query_id", "metric"])


def summarise_run(table: pd.DataFrame, *, n_boot: int = 1000, level: float = 0.95,
                  seed: SeedLike = None) -> pd.DataFrame:
    """Mean of each metric over the queries of a per-query table, with a percentile bootstrap interval over
    queries: ``estimate`` (the mean, inside ``[low, high]``), ``low``, ``high``, ``level``, ``method``,
    ``n_queries``, ``direction``.

    The mean is of the values the table holds: over :func:`evaluate_run`'s table, the mean of the plug-in values
    (expeval's); over :func:`estimates`' table, the mean of the bias-corrected estimates — ``evaluate-run``'s
    headline, which :func:`evaluate_served` gives in one call. The two differ by the plug-in's upward bias in
    disparity and difference (``Σ_d Var(ε̂_d)`` per query, larger with fewer samples).

    A metric's mean covers the queries where it is measured (finite, and not one of the query's ``undefined``
    metrics); with a single such query the interval is NaN (no interval over one query), with none the row is
    NaN throughout."""
    import pandas as pd

    rng = as_generator(seed)
    rows = []
    for metric in METRICS:
        if metric not in table.columns:
            raise InvalidParameterError(f"table has no {metric!r} column; pass the output of evaluate_run")
        values = measured(table, metric)
        row = {"metric": metric, "estimate": np.nan, "low": np.nan, "high": np.nan, "level": level,
               "method": "mean over queries; percentile bootstrap over queries", "n_queries": int(values.size),
               "direction": DIRECTION[metric]}
        if values.size:
            row["estimate"] = float(values.mean())
        if values.size > 1:
            ci = bootstrap_mean(values, n_boot=n_boot, level=level, seed=rng)
            row.update(estimate=ci.estimate, low=ci.low, high=ci.high)
        rows.append(row)
    return pd.DataFrame(rows).set_index("metric")


def estimates(table: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """Per query the estimate of each metric (:func:`bootstrap_run`'s, inside its interval: disparity and difference
    bias-corrected, relevance plug-in), ``<metric>_low``, ``<metric>_high`` and ``<metric>_plug_in`` (expeval's
    value, :func:`evaluate_run`'s ``table``); a metric that is only expeval's stand-in for the query (``undefined``)
    is NaN throughout. The table ``evaluate-run`` reports and averages."""
    out = table.drop(columns=list(METRICS)).copy()
    for metric in METRICS:
        part = intervals.xs(metric, level="metric").reindex(table.index)
        stand_in = np.array([metric in str(u).split(",") for u in table["undefined"]], dtype=bool)
        for name, column in ((metric, "estimate"), (f"{metric}_low", "low"), (f"{metric}_high", "high"),
                             (f"{metric}_plug_in", "plug_in")):
            out[name] = part[column].where(~stand_in)
    return out


@dataclass(frozen=True)
class ServedEvaluation:
    """What ``evaluate-run`` reports (its ``--json``), from :func:`evaluate_served`.

    ``mean`` is the headline: per metric the mean over queries of ``queries``' estimates (disparity and difference
    bias-corrected, relevance plug-in) with a percentile bootstrap interval over queries (:func:`summarise_run`'s
    columns); None when no query is judged. ``queries``: per query the estimates with their intervals over the
    query's samples and the plug-in beside them (:func:`estimates`); ``intervals``: :func:`bootstrap_run`'s rows;
    ``table``: :func:`evaluate_run`'s plug-in table (expeval's values) and ``rows`` the same as dicts;
    ``skipped_queries``: the run's queries without a judged document (:func:`unjudged_queries`); ``settings``: the
    user model with the step user's k resolved; ``seed``: the one the bootstraps used (drawn when none was given),
    so ``evaluate_served(…, seed=result.seed)`` gives the same numbers.
    """

    run: ServedRankings
    judgments: Judgments
    settings: ExposureSettings
    seed: int
    rows: list[dict]
    table: pd.DataFrame
    skipped_queries: list[str]
    intervals: pd.DataFrame
    queries: pd.DataFrame
    mean: pd.DataFrame | None


@inputs_by_name("qrels", "run")
def evaluate_served(*, qrels: QrelsLike, run: RunLike, settings: ExposureSettings | None = None,
                    n_boot: int = 1000, level: float = 0.95, seed: int | None = None, run_format: str = "auto",
                    groups_by: str = "provider", **overrides) -> ServedEvaluation:
    """``evaluate-run QRELS RUN --seed S`` in one call: the CLI's headline (``result.mean``, its ``--json``
    ``mean``) and per-query estimates, the same estimator and the same numbers.

    Each query's disparity and difference are the bias-corrected estimates (the unbiased U-statistic over the
    query's samples, :func:`bootstrap_run`), relevance the plug-in; ``mean`` averages these over the queries where
    the metric is measured. :func:`summarise_run` over :func:`evaluate_run`'s table averages the plug-in values
    instead, which a finite number of samples biases upward.

    Args:
        qrels, run, settings, overrides, run_format, groups_by: as :func:`evaluate_run` (the CLI's ``--format``
            and ``--group-by``).
        n_boot, level: the bootstraps' resamples and interval level (``--n-boot``, ``--level``).
        seed: the bootstraps' seed (``--seed``); None draws one, kept in the result.

    >>> from fairrag_core.data.judgments import parse_judgments
    >>> qrels = parse_judgments("q1 0 a 1\\nq1 0 b 0\\nq1 0 c 0\\nq2 0 b 1\\nq2 0 c 0\\n")
    >>> run = {"q1": [["a", "b"], ["b", "a"], ["c", "a"]], "q2": [["b", "c"], ["c", "b"]]}
    >>> result = evaluate_served(qrels=qrels, run=run, settings=ExposureSettings(k=1), n_boot=200, seed=0)
    >>> row = result.mean.loc["disparity"]  # the headline: the mean of the bias-corrected estimates
    >>> float(row.estimate), int(row.n_queries)
    (0.0, 2)
    >>> round(float(summarise_run(result.table, n_boot=200, seed=0).loc["disparity", "estimate"]), 4)  # plug-in
    0.4167
    """
    seed = new_seed() if seed is None else check_seed(seed)
    loaded, judgments = as_run(run, run_format=run_format), as_judgments(qrels, groups_by=groups_by)
    settings = with_depth(_settings(settings, overrides), loaded)
    rows = evaluate_rows(qrels=judgments, run=loaded, settings=settings)
    skipped = unjudged_queries(qrels=judgments, run=loaded, settings=settings)
    table = rows_table(rows, settings)  # the rows above, as a table: not evaluated twice
    intervals = bootstrap_run(qrels=judgments, run=loaded, settings=settings, n_boot=n_boot, level=level, seed=seed)
    # one number per concept: each query's estimate (disparity and difference bias-corrected, inside their interval)
    # is what the means average and what every output shows; expeval's stand-in for equal bounds becomes NaN
    reported = estimates(table, intervals)
    mean = summarise_run(reported, n_boot=n_boot, level=level, seed=seed) if len(table) else None
    return ServedEvaluation(loaded, judgments, settings, seed, rows, table, skipped, intervals, reported, mean)


def measured(table: pd.DataFrame, metric: str) -> np.ndarray:
    """The finite values of ``metric`` in an :func:`evaluate_run` table, without the queries where it is only
    expeval's stand-in (``undefined``)."""
    values = table[metric].to_numpy(dtype=float)
    return values[np.isfinite(values) & (_defined(table, metric) if "undefined" in table else True)]


def _defined(table: pd.DataFrame, metric: str) -> np.ndarray:
    """Per row: ``metric`` is not among the query's ``undefined`` metrics (expeval's stand-ins)."""
    return np.array([metric not in str(u).split(",") for u in table["undefined"]], dtype=bool)


@inputs_by_name("qrels", "run_a", "run_b")
def compare_runs(*, qrels: QrelsLike, run_a: RunLike, run_b: RunLike, settings: ExposureSettings | None = None,
                 n_boot: int = 1000, n_permutations: int = 10000, level: float = 0.95, seed: SeedLike = None,
                 run_format: str = "auto", groups_by: str = "provider", **overrides) -> pd.DataFrame:
    """Did the change help? Per metric, run A − run B over the queries both are judged on (the qrels' queries;
    a query a run lacks gets expeval's defaults, as in :func:`evaluate_run`; ``compare-runs QRELS RUN_A RUN_B``).

    Returns one row per metric: ``mean_a``, ``mean_b``, ``difference`` (mean of A − B, plug-in), ``low``,
    ``high`` (percentile bootstrap over queries), ``p_value`` (paired randomization test, two-sided; exact
    enumeration up to 16 queries), ``p_value_t`` (paired t-test), ``n_queries``, ``test``, ``direction``.
    Queries where a metric is only expeval's stand-in in either run (``undefined`` in :func:`evaluate_run`) are
    left out of that metric's comparison.
    """
    import pandas as pd

    judged = as_judgments(qrels, groups_by=groups_by)
    loaded_a, loaded_b = as_run(run_a, run_format=run_format), as_run(run_b, run_format=run_format)
    settings = with_depth(_settings(settings, overrides), loaded_a, loaded_b)  # one k for both runs
    table_a = evaluate_run(qrels=judged, run=loaded_a, settings=settings)
    table_b = evaluate_run(qrels=judged, run=loaded_b, settings=settings)
    rng = as_generator(seed)
    rows = []
    for metric in METRICS:
        # pairs where either value is only expeval's stand-in (equal bounds) compare nothing: left out
        both = table_a.index[_defined(table_a, metric)].intersection(table_b.index[_defined(table_b, metric)])
        if both.empty:
            raise InvalidParameterError(f"no query has a measured {metric} in both runs (each is expeval's stand-in "
                                        "for equal bounds); use --bounds corrected or -U")
        result = paired_comparison(table_a.loc[both, metric].to_numpy(float), table_b.loc[both, metric].to_numpy(float),
                                   n_boot=n_boot, n_permutations=n_permutations, level=level, seed=rng)
        rows.append({"metric": metric, "mean_a": result.mean_a, "mean_b": result.mean_b,
                     "difference": result.difference.estimate, "low": result.difference.low,
                     "high": result.difference.high, "level": level, "p_value": result.p_value,
                     "p_value_t": result.p_value_t, "n_queries": result.n_queries,
                     "method": "mean of A − B; percentile bootstrap over queries", "test": result.test,
                     "direction": DIRECTION[metric]})
    return pd.DataFrame(rows).set_index("metric")
