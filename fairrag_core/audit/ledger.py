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

A real collection has thousands of providers (Debian's package descriptions: 2,095 maintainers), so every output
shows the first :data:`TOP_PROVIDERS` of them and sums the rest in one "all others" row
(:func:`top_with_others`); the full table stays in JSON, in the CSV downloads and behind ``--all-providers``.
"""

from __future__ import annotations

from collections.abc import Collection as Names
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..data import Collection
from ..errors import InvalidParameterError

if TYPE_CHECKING:  # pandas is imported where a table is made: the CLI reads TOP_PROVIDERS without it
    import pandas as pd

__all__ = ["LEDGER_COLUMNS", "TOP_PROVIDERS", "TopGroups", "exposure_ledger", "ledger_noun", "others_label",
           "ledger_top", "top_with_others"]

#: How many providers (or groups) every text, chart and ledger shows one by one; the rest are summed in one
#: "all others" row. 14: the colours the projector palette keeps apart with normal vision and the common
#: colour-vision deficiencies (fairrag_studio/charts/style.py; "all others" is grey), the providers of the largest
#: demo collection (running-shoes), and bars that stay readable at a projector's type size.
TOP_PROVIDERS = 14

LEDGER_COLUMNS = (
    "group", "documents", "retrieval_exposure", "retrieval_share", "attributed_exposure", "attributed_share",
    "target_exposure", "target_share", "share_gap", "attributed_gap",
)


def _share(values: pd.Series) -> pd.Series:
    import pandas as pd

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

    >>> import pandas as pd
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
    ledger = ledger[list(LEDGER_COLUMNS)].reset_index(drop=True)
    ledger.attrs["by"] = by  # what a group is: charts name "all others (N providers)" or "(N gender groups)"
    return ledger


def ledger_noun(by: str | None) -> str:
    """What a ledger's rows are, by its grouping: ``providers``, ``gender groups``; ``groups`` when unknown.

    >>> ledger_noun("provider"), ledger_noun("section"), ledger_noun(None)
    ('providers', 'section groups', 'groups')
    """
    return "groups" if by is None else "providers" if by == "provider" else f"{by} groups"


def others_label(count: int, noun: str = "providers") -> str:
    """The name of the summed row: ``all others (2,110 providers)``.

    >>> others_label(2110), others_label(1, "groups")
    ('all others (2,110 providers)', 'all others (1 group)')
    """
    return f"all others ({count:,} {noun if count != 1 else noun.removesuffix('s')})"


@dataclass(frozen=True)
class TopGroups:
    """The first rows of a per-provider (or per-group) table and the sum of the rest.

    Attributes:
        shown: the rows shown one by one, in the table's order (a copy; index reset).
        others: the rows left out, summed: one value per summed column (NaN for the others), or None when nothing
            was left out.
        n_others: how many rows ``others`` sums.
        total: rows in the full table.
        rule: the words that say which rows are shown, for a sentence (each output adds how to see every one).
        noun: what a row is (``providers``, ``gender groups``), for the rule and the "all others" row.
    """

    shown: pd.DataFrame
    others: dict[str, float] | None
    n_others: int
    total: int
    rule: str
    noun: str = "providers"

    @property
    def truncated(self) -> bool:
        return self.n_others > 0

    def with_others(self, group: str) -> pd.DataFrame:
        """``shown`` with the "all others (N providers)" row under it (in ``group``), as a chart draws it;
        ``shown`` itself when nothing was left out."""
        import pandas as pd

        if self.others is None:
            return self.shown
        row = dict.fromkeys(self.shown.columns, np.nan) | self.others | {
            group: others_label(self.n_others, self.noun)}
        return pd.concat([self.shown, pd.DataFrame([row])], ignore_index=True)


def top_with_others(table: pd.DataFrame, *, group: str, by: str, summed: Sequence[str],
                    n: int | None = TOP_PROVIDERS, absolute: bool = False, named: Names[str] = (),
                    noun: str = "providers", what: str | None = None) -> TopGroups:
    """The ``n`` rows of ``table`` largest in ``by`` (by ``|by|`` with ``absolute``), plus every row whose
    ``group`` is in ``named`` (the groups a finding names: never hidden), and the other rows summed.

    Ties in ``by`` go to the group name, alphabetical, so which rows are shown does not depend on the table's
    order; the shown rows keep the table's order (a table sorted as its output reads prints as before).
    ``summed`` columns are added over the rows left out
    (``min_count=1``: all-NaN stays NaN): exposures, shares and gaps add up (a share of the whole, so the others'
    share is their total's share). The rest (intervals, ranks) have no meaningful sum and are left out of
    ``others``. ``n=None`` shows every row (``--all-providers``). ``what`` names ``by`` in the rule line.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"provider": list("abcd"), "exposure": [3.0, 1.0, 1.0, 5.0]})
    >>> top = top_with_others(t, group="provider", by="exposure", summed=["exposure"], n=2)
    >>> top.shown["provider"].tolist(), top.others, top.n_others
    (['a', 'd'], {'exposure': 2.0}, 2)
    >>> top.rule
    'the top 2 of 4 providers by exposure, the other 2 summed as “all others”'
    """
    import pandas as pd

    if n is not None and n < 1:
        raise InvalidParameterError(f"show at least one {noun.removesuffix('s')}, got n = {n}; pass n=None for all")
    table = table.reset_index(drop=True)
    key = pd.to_numeric(table[by], errors="coerce").astype(float)
    if absolute:
        key = key.abs()
    order = (table.assign(_key=key.fillna(-np.inf), _name=table[group].astype(str))
             .sort_values(["_key", "_name"], ascending=[False, True], kind="stable"))
    keep = np.zeros(len(order), dtype=bool)
    keep[: len(order) if n is None else n] = True
    by_name = order[group].astype(str).isin({str(g) for g in named}).to_numpy() & ~keep
    keep |= by_name
    chosen = pd.Series(keep, index=order.index).reindex(table.index).to_numpy()
    shown = table[chosen].reset_index(drop=True)
    rest = table[~chosen]
    others = None
    if len(rest):
        others = {c: float(pd.to_numeric(rest[c], errors="coerce").sum(min_count=1)) for c in summed if c in rest}
    what = what or by.replace("_", " ")
    if not len(rest):
        rule = f"all {len(table):,} {noun}"
    else:
        named_text = f" and {int(by_name.sum()):,} more that the findings name" if by_name.any() else ""
        rule = (f"the top {min(n, len(table)):,} of {len(table):,} {noun} by {what}{named_text}, "
                f"the other {len(rest):,} summed as “all others”")
    return TopGroups(shown=shown, others=others, n_others=len(rest), total=len(table), rule=rule, noun=noun)


def ledger_top(ledger: pd.DataFrame, by: str | None = None, *, n: int | None = TOP_PROVIDERS,
               named: Names[str] = ()) -> TopGroups:
    """The rows of a ledger (:func:`exposure_ledger`; grouped ``by``) shown one by one: the ``n`` with the most
    retrieval exposure and those ``named`` (by a finding), the others summed; every column but ``group`` adds up
    (documents, exposures, shares of one whole, gaps between shares), intervals do not."""
    return top_with_others(ledger, group="group", by="retrieval_exposure", summed=LEDGER_COLUMNS[1:], n=n,
                           named=named, noun=ledger_noun(by), what="retrieval exposure")
