"""Findings that need no relevance labels: what a deployment without qrels can still be told about its providers.

A deployment has no relevance labels, so the fair target of Kim & Diaz (2025, Eq. 6) and every share finding
against it (:mod:`fairrag_core.audit.share_findings`) is undefined. Two references need none:

* **attribution given exposure** (:func:`attribution_findings`): each provider's share of citations against its
  share of retrieval exposure, over the queries whose answers were attributed. Under H0 the generator cites a shown
  document whatever its provider, so the two shares are equal; a provider "cited 1.2 % of citations, shown 8.4 % of
  retrieval exposure" is 7.0× under-cited for how often it is shown. The gap is ``s^a_g − s_g`` (x = attributed ε^a,
  y = retrieval ε in :func:`~fairrag_core.audit.share_gaps.gap_family`).
* **exposure against a stated target** (:func:`stated_target_findings`): each provider's share of retrieval
  exposure against a share the user states (a contract, a policy, a population; TREC Fair's targets are such a
  file), read by :func:`~fairrag_core.audit.target_shares.load_target_shares` (``audit-log --target-shares FILE``).
  The stated share enters the test as ``y_qg = τ_g X_q`` (X_q the query's retrieval exposure), whose share is τ_g
  exactly in every resample, so the contributions reduce to ``Q (x_qg − τ_g X_q)/ΣX`` (a one-sample test of the
  share against τ).

Both use the share test of :mod:`fairrag_core.audit.share_gaps` unchanged: delta-method bootstrap-t over queries
(the symmetric and the equal-tailed p-value must both reject: citations are sparse counts, and so is a provider's
exposure in a question served once), Holm over the testable providers, and its "insufficient evidence (n = …)"
rules. Calibrated by simulation of the issue's deployment (200 requests, 6 providers with 34 % … 6 % of the corpus,
top 5, logged citations): ``benchmarks/calibrate_label_free.py``, figures in docs/findings.md.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pandas as pd

from ..data import Collection
from ..errors import InvalidParameterError
from ..metrics.bootstrap import resample_counts
from ..seeds import SeedLike
from .findings import SERIOUS_RATIO, Finding, FindingKind, sort_findings
from .query_bootstrap import check_share_resamples
from .share_findings import ShareTable, _Family, _group_findings, share_table
from .share_gaps import ATTRIBUTED_TAILS, alpha_of, gap_family, test_streams
from .target_shares import load_target_shares
from .wording import group_noun, share_text

__all__ = ["attribution_findings", "stated_target_findings", "label_free_findings"]

#: The tails of the stated-share test: those of citations (symmetric and equal-tailed must both reject). A deployment
#: serves most questions once, so a provider's exposure per query is a small count (0–k slots), where the symmetric
#: p-value alone exceeded the level (5.1 % [4.2, 6.2] of fair deployments in ``benchmarks/calibrate_label_free.py``).
STATED_TAILS = ATTRIBUTED_TAILS
_UNLISTED = "\x00 providers not in the target file"  # a column of their exposure; never a provider's name



def _attribution_family(label: str = "citations") -> _Family:
    """The words of attribution given exposure; ``label`` is what the attributed exposure is ("citations", or
    "entailing documents" for the NLI judge)."""
    cited = "cited" if label == "citations" else "entailing"
    return _Family(f"{label[:-1] if label == 'citations' else 'attributed'} share − retrieval share",
                   FindingKind.UNDER_CITED, FindingKind.OVER_CITED, "is under-cited for how often it is shown",
                   "is over-cited for how often it is shown", f"of {label}", f"share of {label}",
                   f"{label[:1].upper()}{label[1:]} given exposure", ATTRIBUTED_TAILS, vs="a retrieval share",
                   its="its retrieval share", their="their retrieval share", stake="in which it was shown or cited",
                   factor="for how often it is shown", never=f"never {cited}, though shown")
_STATED = _Family("retrieval share − stated share", FindingKind.UNDER_EXPOSED, FindingKind.OVER_EXPOSED,
                  "is under-exposed against its stated share", "is over-exposed against its stated share",
                  "of retrieval exposure", "retrieval share", "Retrieval exposure against the stated shares",
                  STATED_TAILS, vs="a stated share", its="its stated share", their="their stated share",
                  stake="in which it has a stated share or was shown")


# -- the findings ----------------------------------------------------------------------------------------------

def _rows(table: ShareTable, keep: np.ndarray) -> ShareTable:
    return replace(table, query_ids=tuple(q for q, k in zip(table.query_ids, keep) if k),
                   retrieval=table.retrieval[keep], target=table.target[keep],
                   attributed=None if table.attributed is None else table.attributed[keep],
                   lines=None if table.lines is None else table.lines[keep])


def _family(x: np.ndarray, y: np.ndarray, table: ShareTable, fam: _Family, *, level: float, n_boot: int,
            n_test: int | None, seed: SeedLike, serious: float, untested: str | None = None) -> list[Finding]:
    """``untested``: a column that counts in the totals (its exposure fills slots) but is not reported."""
    n_q = x.shape[0]
    if n_q < 2:
        why = "no query" if n_q == 0 else "one query: no test over queries (audit two or more queries)"
        return [Finding(FindingKind.INSUFFICIENT_EVIDENCE, f"every {group_noun(table.by)}", fam.metric,
                        f"Insufficient evidence to test any {group_noun(table.by)}'s {fam.share} against "
                        f"{fam.its}: {why}", level=level, alpha=alpha_of(level), n_queries=n_q,
                        n_lines=table.n_lines, family=f"{fam.metric}, by {table.by}")]
    check_share_resamples(n_boot, n_q, x.shape[1])  # the same budget as the share findings, before drawing
    boot_seed, test_rng = test_streams(seed)
    counts = resample_counts(n_q, n_boot, boot_seed)
    results = gap_family(x, y, table.groups, counts=counts, test_rng=test_rng, lines=table.lines, level=level,
                         n_test=n_test, tails=fam.tails)
    results = [r for r in results if r.group != untested]
    return _group_findings(results, fam, by=table.by, level=level, n_queries=n_q, n_lines=table.n_lines,
                           serious=serious)


def attribution_findings(table: ShareTable, *, attributed_label: str = "citations", level: float = 0.95,
                         n_boot: int = 1000, n_test: int | None = None, seed: SeedLike = None,
                         serious: float = SERIOUS_RATIO) -> list[Finding]:
    """Per group, its share of citations (``attributed_label``) against its share of retrieval exposure, over the
    queries with some attributed exposure (module docstring); [] when nothing was attributed."""
    if table.attributed is None or table.attributed.sum() <= 0:
        return []
    part = _rows(table, table.attributed.sum(axis=1) > 0)
    return sort_findings(_family(part.attributed, part.retrieval, part, _attribution_family(attributed_label),
                                 level=level, n_boot=n_boot,
                                 n_test=n_test, seed=seed, serious=serious))


def stated_target_findings(table: ShareTable, shares: dict[str, float], *, level: float = 0.95, n_boot: int = 1000,
                           n_test: int | None = None, seed: SeedLike = None,
                           serious: float = SERIOUS_RATIO) -> list[Finding]:
    """Per provider, its share of retrieval exposure against the stated share (``shares``, e.g. from
    :func:`load_target_shares`; a listed provider never shown is a column of zeros). Providers shown but not listed
    are not tested (a stated share of 0 has no test over queries: its absence is the target); their exposure still
    counts in every share, and one finding names them with the fix."""
    unlisted = [g for g in table.groups if g not in shares]
    groups = (*sorted(shares), *([_UNLISTED] if unlisted else []))
    column = {g: j for j, g in enumerate(groups)}
    retrieval = np.zeros((table.retrieval.shape[0], len(groups)))
    for j, g in enumerate(table.groups):
        retrieval[:, column[g if g in shares else _UNLISTED]] += table.retrieval[:, j]
    part = _rows(replace(table, groups=groups, retrieval=retrieval, target=np.zeros_like(retrieval), attributed=None),
                 retrieval.sum(axis=1) > 0)
    tau = np.array([shares.get(g, 0.0) for g in groups])
    stated = part.retrieval.sum(axis=1, keepdims=True) * tau
    found = _family(part.retrieval, stated, part, _STATED, level=level, n_boot=n_boot, n_test=n_test, seed=seed,
                    serious=serious, untested=_UNLISTED)
    if unlisted:
        total = table.retrieval.sum()
        named = ", ".join(f"{g} ({share_text(table.retrieval[:, j].sum() / total)})"
                          for j, g in enumerate(table.groups) if g not in shares)
        found.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, "providers not in the target file", _STATED.metric,
                             f"Not tested against a stated share (not in the target file): {named} of retrieval "
                             "exposure; add a row for each (share 0 if it should have none)", level=level,
                             alpha=alpha_of(level), n_queries=len(part.query_ids), n_lines=part.n_lines,
                             family=f"{_STATED.metric}, by provider"))
    return sort_findings(found)


def label_free_findings(documents: pd.DataFrame, collection: Collection, *, by: str = "provider",
                        lines: int | dict[str, int] | pd.Series | None = None,
                        target_shares: str | os.PathLike | dict[str, float] | None = None, level: float = 0.95,
                        n_boot: int = 1000, n_test: int | None = None, seed: SeedLike = None,
                        serious: float = SERIOUS_RATIO) -> list[Finding]:
    """The label-free findings of one system's per-(query, document) table (a log audit's ``run.documents``), over
    every audited query (no fair target needed): citations given exposure when citations were logged (the
    ``cited_exposure`` column; the judge's ``entailed_exposure`` otherwise), and, for ``by="provider"`` with
    ``target_shares`` (a path or a mapping), retrieval exposure against the stated shares."""
    column = next((c for c in ("attributed_exposure", "cited_exposure", "entailed_exposure")
                   if c in documents and documents[c].notna().any()), None)
    table = share_table(documents, collection, by=by, attributed_column=column, lines=lines, targets_only=False)
    label = "entailing documents" if column == "entailed_exposure" else "citations"
    found = attribution_findings(table, attributed_label=label, level=level, n_boot=n_boot, n_test=n_test,
                                 seed=seed, serious=serious)
    if target_shares is not None and by == "provider":
        shares = target_shares if isinstance(target_shares, dict) else load_target_shares(target_shares)
        if not shares:
            raise InvalidParameterError("the target shares name no provider; list each provider with its share")
        found += stated_target_findings(table, shares, level=level, n_boot=n_boot, n_test=n_test, seed=seed,
                                        serious=serious)
    return sort_findings(found)
