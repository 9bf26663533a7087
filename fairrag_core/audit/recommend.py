"""The α recommender: the fairest α whose answers stay as good as the deterministic system's.

It picks the lowest mean EE-D among the α values whose mean utility stays within a tolerance of the
deterministic baseline: the trade-off of Kim & Diaz (2025), Table 2, turned into a decision rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..checks import check_non_negative
from ..errors import InvalidParameterError

__all__ = ["AlphaRecommendation", "recommend_alpha"]


@dataclass(frozen=True)
class AlphaRecommendation:
    """The recommended α (None: keep the deterministic ranker) and the table it was chosen from."""

    alpha: float | None
    ee_d: float
    utility: float
    baseline_utility: float
    threshold: float
    per_alpha: pd.DataFrame  # alpha, ee_d, utility, queries, eligible
    reason: str


def recommend_alpha(table: pd.DataFrame, *, tolerance: float = 0.05, relative: bool = True,
                    metric: str = "eu", metric_label: str | None = None) -> AlphaRecommendation:
    """The fairest α whose mean ``metric`` stays within ``tolerance`` of the deterministic baseline.

    Uses the queries with a fairness question (m > 1) when there are any. The threshold is
    ``baseline × (1 − tolerance)`` when ``relative`` (tolerance 0.05 = "lose at most 5 %") and
    ``baseline − tolerance`` otherwise. Among the stochastic α values whose mean utility reaches the
    threshold, the one with the lowest mean EE-D wins (ties: the larger α, closer to the baseline).

    >>> t = pd.DataFrame({"query_id": ["q"] * 4, "system": ["stochastic"] * 3 + ["deterministic"],
    ...                   "alpha": [0.0, 2.0, 8.0, float("inf")], "fairness_question": [True] * 4,
    ...                   "ee_d": [0.1, 0.3, 0.8, 1.0], "eu": [0.50, 0.78, 0.80, 0.80]})
    >>> recommend_alpha(t, tolerance=0.05).alpha
    2.0
    """
    tolerance = check_non_negative(tolerance, "tolerance", hint="0.05 = lose at most 5 %")
    missing = {"system", "alpha", "ee_d", metric} - set(table.columns)
    if missing:
        raise InvalidParameterError(f"the sweep table lacks {sorted(missing)}; run a sweep with generation")
    kept = table[table["fairness_question"]] if "fairness_question" in table and table["fairness_question"].any() \
        else table
    kept = kept.dropna(subset=[metric])
    baseline = kept[kept["system"] == "deterministic"]
    stochastic = kept[kept["system"] == "stochastic"]
    if baseline.empty or stochastic.empty:
        raise InvalidParameterError("the recommender needs stochastic runs and the deterministic baseline, "
                                    f"both with {metric} values")
    base = float(baseline[metric].mean())
    threshold = base * (1 - tolerance) if relative else base - tolerance
    per_alpha = stochastic.groupby("alpha", as_index=False).agg(
        ee_d=("ee_d", "mean"), utility=(metric, "mean"), queries=("query_id", "nunique"))
    per_alpha["eligible"] = per_alpha["utility"] >= threshold - 1e-12
    eligible = per_alpha[per_alpha["eligible"]].sort_values(["ee_d", "alpha"], ascending=[True, False])
    how = f"{tolerance:.0%} of" if relative else f"{tolerance:g} of"
    over = _over(table, kept)
    name = metric_label or metric
    common = {"baseline_utility": base, "threshold": threshold, "per_alpha": per_alpha}
    if eligible.empty:
        return AlphaRecommendation(
            alpha=None, ee_d=float(baseline["ee_d"].mean()), utility=base, **common,
            reason=f"no α keeps mean {name} within {how} the deterministic baseline ({base:.3f}), {over}; "
                   "widen the tolerance or keep the deterministic ranker.")
    best = eligible.iloc[0]
    return AlphaRecommendation(
        alpha=float(best["alpha"]), ee_d=float(best["ee_d"]), utility=float(best["utility"]), **common,
        reason=f"α = {best['alpha']:g} has the lowest mean EE-D ({best['ee_d']:.3f}) among the α values whose mean "
               f"{name} ({best['utility']:.3f}) stays within {how} the deterministic baseline ({base:.3f}), {over}")


def _over(table: pd.DataFrame, kept: pd.DataFrame) -> str:
    """Which queries the means are over, counted as the figures count them: ``means over the 17 queries with a
    fairness question (at least two useful candidates) of the 18 swept`` — so that the recommender's count and the
    sweep's are one number each, named."""
    n_all = table["query_id"].nunique() if "query_id" in table else len(table)
    n_kept = kept["query_id"].nunique() if "query_id" in kept else len(kept)
    queries = f"quer{'y' if n_kept == 1 else 'ies'}"
    if n_kept < n_all:
        return f"means over the {n_kept} {queries} with a fairness question (at least two useful candidates) " \
               f"of the {n_all} swept"
    return f"means over the {n_kept} {queries} swept"
