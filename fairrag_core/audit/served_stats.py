"""Statistics of a served run's expeval metrics (:mod:`.served`) that a reviewer can trust, from
:mod:`fairrag_core.metrics.intervals`, and ``evaluate-run``'s headline in one call.

:func:`bootstrap_run` gives each query's values with an interval over its N samples (relevance: plug-in +
percentile; disparity and difference: bias-corrected + basic, since their plug-in is biased upward by a finite N);
:func:`summarise_run` the mean over queries with a percentile bootstrap over queries; :func:`compare_runs` the
paired difference of two runs with its interval and the p-value of a paired randomization test.
:func:`evaluate_served` is ``evaluate-run``'s report in one call: the per-query estimates (:func:`estimates`) and
their mean over queries, the CLI's headline number for number. Inputs are taken by name, qrels first
(:func:`~.served.inputs_by_name`), the user model as one :class:`~fairrag_core.metrics.expeval.ExposureSettings`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..checks import MAX_RESAMPLES, check_at_most
from ..data.judgments import Judgments
from ..data.served import ServedRankings
from ..errors import InvalidParameterError
from ..metrics.bootstrap import resample_counts, unbiased_squared_norm
from ..metrics.expeval import METRICS, ExposureSettings, resampled_values
from ..metrics.intervals import bias_corrected_interval, bootstrap_mean, paired_comparison, percentile_interval
from ..seeds import SeedLike, as_generator, check_seed, new_seed
from .served import (
    QrelsLike,
    RunLike,
    _prepare,
    _settings,
    _values,
    as_judgments,
    as_run,
    evaluate_rows,
    evaluate_run,
    inputs_by_name,
    rows_table,
    unjudged_queries,
    with_depth,
)

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["bootstrap_run", "summarise_run", "estimates", "evaluate_served", "ServedEvaluation", "compare_runs",
           "measured", "DIRECTION"]

#: Which way is better, per metric.
DIRECTION = {"disparity": "lower is fairer", "relevance": "higher is better", "difference": "lower is better"}


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
