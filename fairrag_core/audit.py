"""Audit helpers: who gets exposure (the exposure ledger) and which α to recommend.

The **exposure ledger** sums, per provider or per group, three quantities over a query set:

* retrieval exposure — the expected number of the group's documents in the top k shown to the generator
  (Kim & Diaz 2025, Eq. 5, with the step model MU(i) = 1[i ≤ k]);
* attributed exposure — the expected number of the group's documents that the generated answer is
  entailed by (the citations; Kim & Diaz 2025, §3.4, "attributed exposure");
* target exposure — what the group would get from the ideal stochastic ranker, which spreads the k
  slots equally over the useful items (Eq. 6).

Each is also given as a share of its total, so a reader can compare "share of what the generator saw"
with "share of what the answers cite" and "share under the fairness target".

The **α recommender** picks the fairest α (lowest mean EE-D) whose mean utility stays within a tolerance
of the deterministic baseline: the trade-off of Kim & Diaz (2025), Table 2, turned into a decision rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .corpus import UNKNOWN_GROUP, Collection
from .errors import InvalidParameterError

__all__ = ["LEDGER_COLUMNS", "exposure_ledger", "AlphaRecommendation", "recommend_alpha"]

LEDGER_COLUMNS = (
    "group", "documents", "retrieval_exposure", "retrieval_share", "attributed_exposure", "attributed_share",
    "target_exposure", "target_share", "share_gap",
)


def _share(values: pd.Series) -> pd.Series:
    total = values.sum(min_count=1)
    if pd.isna(total) or total == 0:
        return pd.Series(np.nan, index=values.index)
    return values / total


def exposure_ledger(documents: pd.DataFrame, collection: Collection, *, by: str = "provider") -> pd.DataFrame:
    """Exposure per provider (``by="provider"``) or per group of a category (``by="gender"``, ...).

    Args:
        documents: one row per (query, α, candidate) with ``doc_id``, ``exposure`` and optionally
            ``attributed_exposure`` and ``target_exposure`` (as produced by the sweeps). Rows are summed
            over queries, so pass one α at a time to read a single system.
        collection: where the documents' providers and group labels come from. Documents without a
            label in the category fall in the group ``"Unknown"``.
        by: ``"provider"`` or one of ``collection.categories()``.

    Returns:
        One row per group with the columns of :data:`LEDGER_COLUMNS`, largest retrieval exposure first.
        ``share_gap`` = retrieval share − target share (positive: over-exposed). Attributed and target
        columns are NaN when the input lacks them.

    >>> from fairrag_core import load_collection
    >>> shoes = load_collection("running-shoes")
    >>> docs = pd.DataFrame({"doc_id": [shoes.doc_ids[0], shoes.doc_ids[1]], "exposure": [0.75, 0.25]})
    >>> exposure_ledger(docs, shoes)["retrieval_share"].round(2).tolist()
    [0.75, 0.25]
    """
    if "doc_id" not in documents or "exposure" not in documents:
        raise InvalidParameterError("the documents table needs the columns doc_id and exposure")
    if by == "provider":
        labels = collection.providers
    elif by in collection.categories():
        labels = collection.group_labels(by, fill=UNKNOWN_GROUP)
    else:
        raise InvalidParameterError(
            f"unknown grouping {by!r}; use 'provider' or one of {collection.categories() or 'no categories'}"
        )
    unknown_ids = set(documents["doc_id"]) - set(collection.doc_ids)
    if unknown_ids:
        raise InvalidParameterError(f"{len(unknown_ids)} doc_id(s) are not in {collection.name!r}, e.g. "
                                    f"{sorted(unknown_ids)[:3]}; audit with the collection the run used")
    group_of = dict(zip(collection.doc_ids, labels))
    frame = documents.assign(group=documents["doc_id"].map(group_of))
    for column in ("attributed_exposure", "target_exposure"):
        if column not in frame:
            frame[column] = np.nan
    ledger = frame.groupby("group", sort=False).agg(
        documents=("doc_id", "nunique"),
        retrieval_exposure=("exposure", "sum"),
        attributed_exposure=("attributed_exposure", lambda s: s.sum(min_count=1)),
        target_exposure=("target_exposure", lambda s: s.sum(min_count=1)),
    ).reset_index()
    ledger["retrieval_share"] = _share(ledger["retrieval_exposure"])
    ledger["attributed_share"] = _share(ledger["attributed_exposure"])
    ledger["target_share"] = _share(ledger["target_exposure"])
    ledger["share_gap"] = ledger["retrieval_share"] - ledger["target_share"]
    ledger = ledger.sort_values(["retrieval_exposure", "group"], ascending=[False, True], kind="stable")
    return ledger[list(LEDGER_COLUMNS)].reset_index(drop=True)


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
    if not np.isfinite(tolerance) or tolerance < 0:
        raise InvalidParameterError(f"tolerance must be a finite number ≥ 0, got {tolerance!r}")
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
    name = metric_label or metric
    if eligible.empty:
        det_ee_d = float(baseline["ee_d"].mean())
        return AlphaRecommendation(
            alpha=None, ee_d=det_ee_d, utility=base, baseline_utility=base, threshold=threshold, per_alpha=per_alpha,
            reason=f"no α keeps mean {name} within {how} the deterministic baseline ({base:.3f}); "
                   "widen the tolerance or keep the deterministic ranker")
    best = eligible.iloc[0]
    return AlphaRecommendation(
        alpha=float(best["alpha"]), ee_d=float(best["ee_d"]), utility=float(best["utility"]), baseline_utility=base,
        threshold=threshold, per_alpha=per_alpha,
        reason=f"α = {best['alpha']:g} has the lowest mean EE-D ({best['ee_d']:.3f}) among the α values whose mean "
               f"{name} ({best['utility']:.3f}) stays within {how} the deterministic baseline ({base:.3f})")
