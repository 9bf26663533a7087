"""The exposure ledger: who gets exposure, per provider or per fairness group, against the fair target.

The ledger sums, per provider or per group, three quantities over a query set:

* retrieval exposure — the expected number of the group's documents in the top k shown to the generator
  (Kim & Diaz 2025, Eq. 5, with the step model MU(i) = 1[i ≤ k]);
* attributed exposure — the expected number of the group's documents that the generated answer is
  entailed by (the citations; Kim & Diaz 2025, §3.4, "attributed exposure");
* target exposure — what the group would get from the ideal stochastic ranker, which spreads the k
  slots equally over the useful items (Eq. 6).

Each is also given as a share of its total, so a reader can compare "share of what the generator saw"
with "share of what the answers cite" and "share under the fairness target".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import Collection
from ..errors import InvalidParameterError

__all__ = ["LEDGER_COLUMNS", "exposure_ledger"]

LEDGER_COLUMNS = (
    "group", "documents", "retrieval_exposure", "retrieval_share", "attributed_exposure", "attributed_share",
    "target_exposure", "target_share", "share_gap", "attributed_gap",
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
        collection: where the documents' providers and groups come from. Documents without a
            group in the category fall in the group ``"Unknown"``.
        by: ``"provider"`` or one of ``collection.categories()``.

    Returns:
        One row per group with the columns of :data:`LEDGER_COLUMNS`, largest retrieval exposure first.
        ``share_gap`` = retrieval share − target share (positive: over-exposed), ``attributed_gap`` = attributed
        share − target share (positive: credited beyond a fair share). Attributed and target
        columns are NaN when the input lacks them.

    >>> from fairrag_core import load_collection
    >>> shoes = load_collection("running-shoes")
    >>> docs = pd.DataFrame({"doc_id": [shoes.doc_ids[0], shoes.doc_ids[1]], "exposure": [0.75, 0.25]})
    >>> exposure_ledger(docs, shoes)["retrieval_share"].round(2).tolist()
    [0.75, 0.25]
    """
    if "doc_id" not in documents or "exposure" not in documents:
        raise InvalidParameterError("the documents table needs the columns doc_id and exposure")
    group_of = dict(zip(collection.doc_ids, collection.owners(by)))
    unknown_ids = set(documents["doc_id"]) - set(collection.doc_ids)
    if unknown_ids:
        raise InvalidParameterError(f"{len(unknown_ids)} doc_id(s) are not in {collection.name!r}, e.g. "
                                    f"{sorted(unknown_ids)[:3]}; audit with the collection the run used")
    frame = documents.assign(group=documents["doc_id"].map(group_of),
                             **{c: np.nan for c in ("attributed_exposure", "target_exposure") if c not in documents})
    ledger = frame.groupby("group", sort=False).agg(
        documents=("doc_id", "nunique"),
        retrieval_exposure=("exposure", "sum"),
        attributed_exposure=("attributed_exposure", lambda s: s.sum(min_count=1)),
        target_exposure=("target_exposure", lambda s: s.sum(min_count=1)),
    ).reset_index()
    for name in ("retrieval", "attributed", "target"):
        ledger[f"{name}_share"] = _share(ledger[f"{name}_exposure"])
    ledger["share_gap"] = ledger["retrieval_share"] - ledger["target_share"]
    ledger["attributed_gap"] = ledger["attributed_share"] - ledger["target_share"]
    ledger = ledger.sort_values(["retrieval_exposure", "group"], ascending=[False, True], kind="stable")
    return ledger[list(LEDGER_COLUMNS)].reset_index(drop=True)
