"""Fairness groups of a collection and target group distributions ε* (FAIR-QR §2.2; TREC Fair 2022).

* :func:`groups_for` — every document's group for one category, or intersectional groups for several
  (``"female × Europe"``);
* :func:`target_distribution` — the target ε* of a query: the groups of its relevant documents (optionally
  mixed with the corpus distribution, as TREC Fair 2022), uniform, or custom shares.
"""

from __future__ import annotations

import enum
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..data import UNKNOWN_GROUP, Collection
from ..errors import InvalidParameterError
from .group_fairness import as_distribution, group_distribution

__all__ = ["INTERSECTION_SEPARATOR", "TargetKind", "groups_for", "target_distribution"]

#: Joins a document's groups in several categories into one intersectional group, e.g. ``"female × Europe"``.
INTERSECTION_SEPARATOR = " × "


class TargetKind(str, enum.Enum):
    """Where the target distribution ε* comes from (:func:`target_distribution`)."""

    RELEVANT = "relevant"  # groups of the query's relevant documents (FAIR-QR, TREC Fair 2022)
    UNIFORM = "uniform"  # every group that occurs in the corpus gets the same share
    CUSTOM = "custom"  # shares given by the user


def _category_list(collection: Collection, categories: str | Sequence[str]) -> list[str]:
    cats = [categories] if isinstance(categories, str) else list(categories)
    known = collection.categories()
    if not cats:
        raise InvalidParameterError(f"no fairness category given; choose one or more of {known}")
    if len(set(cats)) != len(cats):
        raise InvalidParameterError(f"categories {cats} repeat a category; list each one once")
    unknown = [c for c in cats if c not in known]
    if unknown:
        raise InvalidParameterError(
            f"unknown fairness categor{'y' if len(unknown) == 1 else 'ies'} {unknown} in collection "
            f"{collection.name!r}; known categories: {known or 'none (the corpus has no groups)'}"
        )
    return cats


def groups_for(
    collection: Collection, categories: str | Sequence[str], *, fill: str | None = UNKNOWN_GROUP
) -> np.ndarray:
    """The group of every document in one category, or its intersectional group for several.

    With several categories the groups are joined by :data:`INTERSECTION_SEPARATOR`, e.g.
    ``"female × Europe"``; an unlabelled part stays ``"Unknown"`` on its own (``"female × Unknown"``), so
    partially unknown documents remain distinguishable from fully unknown ones.

    Raises:
        InvalidParameterError: a category the collection does not have (the message lists the known ones).
        MissingGroupLabelError: some documents have no group in a category and ``fill`` is None.

    >>> from fairrag_core import load_collection
    >>> groups_for(load_collection("people"), ["gender", "region"])[0]
    'male × Europe'
    """
    cats = _category_list(collection, categories)
    parts = [collection.group_of(c, fill=fill) for c in cats]
    if len(parts) == 1:
        return parts[0]
    return np.array([INTERSECTION_SEPARATOR.join(each) for each in zip(*parts)], dtype=object)


def target_distribution(
    collection: Collection,
    query_id: str | None,
    categories: str | Sequence[str],
    *,
    kind: TargetKind | str = TargetKind.RELEVANT,
    background_weight: float = 0.0,
    custom: Mapping[str, float] | None = None,
) -> pd.Series:
    """Target group distribution ε* for a query (FAIR-QR §2.2; TREC Fair 2022).

    * ``RELEVANT``: share of each group among the query's documents with grade ≥ 1. With
      ``background_weight = w``, ``ε* = (1 − w)·relevant + w·background`` where background is the corpus-wide
      group distribution; TREC 2022 used w = 0.5. (TREC mixed only the *known* part of the relevant
      distribution, keeping its Unknown share, and used world population or a gender prior as background;
      with no such prior for a demo corpus we use the corpus itself, Unknown included.)
    * ``UNIFORM``: the same share for every group that occurs in the corpus (Unknown included).
    * ``CUSTOM``: the user's ``custom`` shares, validated and normalised; groups not named get 0.

    Returns:
        Series over *all* groups occurring in the corpus for ``categories`` (sorted), summing to 1; its index is
        named after the categories (e.g. ``"gender × region"``).

    Raises:
        InvalidParameterError: naming the fix for: a query without qrels or without a relevant document,
            ``background_weight`` outside [0, 1] (or set for a non-relevant target), ``custom`` missing for
            ``CUSTOM`` (or given for another kind), an unknown group or a negative/NaN/all-zero share in
            ``custom``, an unknown category.

    >>> from fairrag_core import load_collection
    >>> people = load_collection("people")
    >>> target_distribution(people, None, "gender", kind="uniform").to_dict()
    {'Unknown': 0.25, 'female': 0.25, 'male': 0.25, 'non-binary': 0.25}
    """
    try:
        kind = TargetKind(kind)
    except ValueError:
        names = ", ".join(k.value for k in TargetKind)
        raise InvalidParameterError(f"unknown target kind {kind!r}; choose one of: {names}") from None
    if isinstance(background_weight, bool) or not isinstance(background_weight, numbers.Real) or not (
        0.0 <= background_weight <= 1.0
    ):
        raise InvalidParameterError(
            f"background_weight must be in [0, 1] (TREC Fair 2022 used 0.5), got {background_weight!r}"
        )
    if background_weight and kind is not TargetKind.RELEVANT:
        raise InvalidParameterError("background_weight applies to kind='relevant' only; leave it at 0")
    if custom is not None and kind is not TargetKind.CUSTOM:
        raise InvalidParameterError(f"custom shares are used with kind='custom' only, not kind={kind.value!r}")

    cats = _category_list(collection, categories)
    groups = groups_for(collection, cats)
    support = sorted(set(groups.tolist()))
    index_name = INTERSECTION_SEPARATOR.join(cats)

    if kind is TargetKind.UNIFORM:
        shares = pd.Series(1.0 / len(support), index=support)
    elif kind is TargetKind.CUSTOM:
        if custom is None:
            raise InvalidParameterError("kind='custom' needs custom={group: share, ...}")
        wanted = as_distribution(custom, "custom target")
        unknown = sorted(set(wanted.index) - set(support))
        if unknown:
            raise InvalidParameterError(
                f"custom target names unknown group(s) {unknown} for {index_name!r}; known groups: {support}"
            )
        shares = wanted.reindex(support, fill_value=0.0)
    else:
        if query_id is None:
            raise InvalidParameterError("kind='relevant' needs a query_id with qrels; or use kind='uniform'/'custom'")
        judged = collection.qrels.get(query_id)
        if not judged:
            raise InvalidParameterError(
                f"query {query_id!r} has no relevance judgements (qrels) in {collection.name!r}, so the relevant "
                "target is undefined; add qrels for it or use kind='uniform' or kind='custom'"
            )
        relevant = collection.relevance(query_id) >= 1
        if not relevant.any():
            raise InvalidParameterError(
                f"query {query_id!r} has no relevant document (grade ≥ 1) in its qrels, so the relevant target is "
                "undefined; use kind='uniform' or kind='custom'"
            )
        shares = group_distribution(groups[relevant], support=support)
        if background_weight:
            background = group_distribution(groups, support=support)
            shares = (1.0 - background_weight) * shares + background_weight * background
    shares = shares / shares.sum()
    shares.index = pd.Index(support, name=index_name)
    shares.name = "target"
    return shares.astype(np.float64)
