"""Findings that need no relevance labels: what a deployment without qrels can still be told about its providers.

A deployment has no relevance labels, so the fair target of Kim & Diaz (2025, Eq. 6) and every share finding
against it (:mod:`fairrag_core.audit.share_findings`) is undefined. Four references need none:

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
* **exposure against presence** (:func:`presence_findings`; demographic parity of exposure, Singh & Joachims 2018,
  "Fairness of Exposure in Rankings", KDD): each provider's share of retrieval exposure against its share of what the
  system chose from, ``y_qg = X_q n_qg / n_q`` with ``n_qg`` the provider's logged candidates of q (a reranker's
  input; :func:`~fairrag_core.audit.log_exposure.with_candidates`) where the query's lines logged them, else its
  documents in the collection when the audit was given one (not one made from the log by ``--provider-from``/
  ``--provider-map``: its documents are only what was served), else no test (one line says why). Under H0 the
  system shows each candidate whatever its provider.
* **exposure against merit from the system's own scores** (:func:`merit_findings`), over the queries whose logged
  candidates all carry scores: the paper's fair target (Kim & Diaz Eq. 6, expected exposure of Diaz et al. 2020)
  with the deployment's scores standing in for relevance, by the user's rule (:mod:`fairrag_core.audit.merit`:
  quantile tiers per query, ``--merit-grades``, or ``--merit-threshold``): ``y_qg = X_q t_qg / T_q`` with ``t_qg``
  the tier target of the provider's candidates. Every sentence says the merit is the system's own estimate.

All use the share test of :mod:`fairrag_core.audit.share_gaps` unchanged: delta-method bootstrap-t over queries
(the symmetric and the equal-tailed p-value must both reject: citations are sparse counts, and so is a provider's
exposure in a question served once), Holm over the testable providers, and its "insufficient evidence (n = …)"
rules. Calibrated by simulation of the issue's deployment (200 requests, 6 providers with 34 % … 6 % of the corpus,
top 5, logged citations, 20 logged candidates with scores): ``benchmarks/calibrate_label_free.py``, figures in
docs/findings.md.
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
from .log_exposure import CANDIDATE_COLUMNS
from .merit import DEFAULT_GRADES, merit_tiers, merit_words, tier_target
from .query_bootstrap import check_share_resamples
from .share_findings import ShareTable, _Family, _group_findings, share_table
from .share_gaps import ATTRIBUTED_TAILS, alpha_of, gap_family, test_streams
from .target_shares import load_target_shares
from .wording import group_noun, share_text

__all__ = ["attribution_findings", "stated_target_findings", "presence_findings", "merit_findings",
           "label_free_findings", "CANDIDATES", "COLLECTION_DOCUMENTS"]

#: The tails of the stated-share test: those of citations (symmetric and equal-tailed must both reject). A deployment
#: serves most questions once, so a provider's exposure per query is a small count (0–k slots), where the symmetric
#: p-value alone exceeded the level (5.1 % [4.2, 6.2] of fair deployments in ``benchmarks/calibrate_label_free.py``).
STATED_TAILS = ATTRIBUTED_TAILS
_CANDIDATE, _SCORE = CANDIDATE_COLUMNS  # the documents' columns of the logged candidates
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


#: What a presence finding compares with, in words: the logged candidates, or the collection's documents.
CANDIDATES, COLLECTION_DOCUMENTS = "the logged candidates", "the collection's documents"


def _presence_family(reference: str) -> _Family:
    """The words of exposure against presence, ``reference`` naming what the system chose from."""
    presence = f"a presence share (of {reference})"
    return _Family("retrieval share − presence share", FindingKind.UNDER_EXPOSED, FindingKind.OVER_EXPOSED,
                   "is under-exposed for its presence", "is over-exposed for its presence", "of retrieval exposure",
                   "retrieval share", f"Retrieval exposure against presence (of {reference})", STATED_TAILS,
                   vs=presence, its=f"its presence share (of {reference})",
                   their=f"their presence share (of {reference})", stake=f"in which it was shown or among {reference}",
                   factor="for its presence", never=f"never shown, though among {reference}")


def _merit_family(words: str) -> _Family:
    """The words of exposure against merit; ``words`` is the rule (:func:`~fairrag_core.audit.merit.merit_words`),
    in every sentence."""
    return _Family("retrieval share − merit share", FindingKind.UNDER_EXPOSED, FindingKind.OVER_EXPOSED,
                   "is under-exposed for its merit", "is over-exposed for its merit", "of retrieval exposure",
                   "retrieval share", "Retrieval exposure against merit", STATED_TAILS,
                   vs=f"a fair share by merit ({words})", its=f"its fair share by merit ({words})",
                   their=f"their fair share by merit ({words})", stake="in which it was shown or has merit",
                   factor="for its merit", never="never shown, though meritorious")


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
                           serious=serious, unit=table.unit)


def _against(table: ShareTable, weights: np.ndarray, fam: _Family, *, untested: str | None = None,
             **test) -> list[Finding]:
    """Retrieval exposure against a reference that spreads each query's exposure by ``weights`` (queries × groups):
    ``y_qg = X_q w_qg / Σ_g w_qg``, over the queries with some exposure and some weight."""
    keep = (table.retrieval.sum(axis=1) > 0) & (weights.sum(axis=1) > 0)
    part, w = _rows(table, keep), weights[keep]
    reference = part.retrieval.sum(axis=1, keepdims=True) * w / w.sum(axis=1, keepdims=True)
    return _family(part.retrieval, reference, part, fam, untested=untested, **test)


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
    tau = np.broadcast_to(np.array([shares.get(g, 0.0) for g in groups]), retrieval.shape)
    found = _against(replace(table, groups=groups, retrieval=retrieval, target=np.zeros_like(retrieval),
                             attributed=None), tau, _STATED, untested=_UNLISTED, level=level, n_boot=n_boot,
                     n_test=n_test, seed=seed, serious=serious)
    if unlisted:
        shown, total = _rows(table, retrieval.sum(axis=1) > 0), table.retrieval.sum()
        named = ", ".join(f"{g} ({share_text(table.retrieval[:, j].sum() / total)})"
                          for j, g in enumerate(table.groups) if g not in shares)
        found.append(Finding(FindingKind.INSUFFICIENT_EVIDENCE, "providers not in the target file", _STATED.metric,
                             f"Not tested against a stated share (not in the target file): {named} of retrieval "
                             "exposure; add a row for each (share 0 if it should have none)", level=level,
                             alpha=alpha_of(level), n_queries=len(shown.query_ids), n_lines=shown.n_lines,
                             family=f"{_STATED.metric}, by provider"))
    return sort_findings(found)


def presence_findings(table: ShareTable, presence: np.ndarray, *, reference: str = CANDIDATES,
                      level: float = 0.95, n_boot: int = 1000, n_test: int | None = None, seed: SeedLike = None,
                      serious: float = SERIOUS_RATIO) -> list[Finding]:
    """Per group, its share of retrieval exposure against its presence in what the system chose from (module
    docstring): ``presence`` (queries × groups) is ``n_qg``, the group's logged candidates of each query (a rate
    when a query's lines differ) or its documents in the collection; ``reference`` names it in every sentence."""
    return sort_findings(_against(table, presence, _presence_family(reference), level=level, n_boot=n_boot,
                                  n_test=n_test, seed=seed, serious=serious))


def merit_findings(table: ShareTable, merit: np.ndarray, *, grades: int = DEFAULT_GRADES,
                   threshold: float | None = None, level: float = 0.95, n_boot: int = 1000, n_test: int | None = None,
                   seed: SeedLike = None, serious: float = SERIOUS_RATIO) -> list[Finding]:
    """Per group, its share of retrieval exposure against its fair share by merit: ``merit`` (queries × groups) is
    ``t_qg``, the tier target (:func:`~fairrag_core.audit.merit.tier_target`) summed over the group's candidates;
    ``grades``/``threshold`` the rule the tiers were made by, stated in every sentence."""
    return sort_findings(_against(table, merit, _merit_family(merit_words(grades=grades, threshold=threshold)),
                                  level=level, n_boot=n_boot, n_test=n_test, seed=seed, serious=serious))


# -- from an audit's documents -----------------------------------------------------------------------------------

def _by_group(documents: pd.DataFrame, values: pd.Series, collection: Collection, table: ShareTable) -> np.ndarray:
    """``values`` (aligned with ``documents``) summed per (query, group) of ``table``; NaN and rows of other queries
    count 0."""
    group_of = dict(zip(collection.doc_ids, collection.owners(table.by)))
    q_index = {q: i for i, q in enumerate(table.query_ids)}
    g_index = {g: j for j, g in enumerate(table.groups)}
    q = documents["query_id"].astype(str).map(q_index)
    g = documents["doc_id"].map(group_of).map(g_index)
    ok = (q.notna() & g.notna() & values.notna()).to_numpy(bool)
    out = np.zeros((len(table.query_ids), len(table.groups)))
    np.add.at(out, (q[ok].to_numpy(int), g[ok].to_numpy(int)), values[ok].to_numpy(float))
    return out


def _widened(table: ShareTable, groups: np.ndarray) -> ShareTable:
    """``table`` with a column of zeros for each of ``groups`` it lacks (a provider of the collection never shown or
    listed)."""
    names = tuple(sorted({*table.groups, *map(str, groups)}))
    if len(names) == len(table.groups):
        return table
    columns = [names.index(g) for g in table.groups]

    def widen(m: np.ndarray | None) -> np.ndarray | None:
        if m is None:
            return None
        out = np.zeros((m.shape[0], len(names)))
        out[:, columns] = m
        return out

    return replace(table, groups=names, retrieval=widen(table.retrieval), target=widen(table.target),
                   attributed=widen(table.attributed))


def _info(table: ShareTable, metric: str, text: str, level: float) -> Finding:
    return Finding(FindingKind.INSUFFICIENT_EVIDENCE, f"every {group_noun(table.by)}", metric, text, level=level,
                   alpha=alpha_of(level), n_queries=len(table.query_ids), n_lines=table.n_lines,
                   family=f"{metric}, by {table.by}")


#: Why there is no presence finding: no candidates logged, and no collection of what the system chose from.
NO_PRESENCE = ("No test of retrieval exposure against presence: the log names no candidate sets (a reranker's input, a "
               "retriever's deeper list) and the providers come from the log itself (--provider-from or "
               "--provider-map), whose documents are only those served; audit with the collection the system "
               "retrieved from (--collection), log the candidates, or state the shares (--target-shares)")


def _presence(documents: pd.DataFrame, collection: Collection, table: ShareTable, *, collection_given: bool,
              **test) -> list[Finding]:
    """Presence against each query's logged candidates, else (``collection_given``) the collection's documents."""
    logged = _CANDIDATE in documents and documents[_CANDIDATE].notna().any()
    if not (logged or collection_given):
        return [_info(table, _presence_family(CANDIDATES).metric, NO_PRESENCE, test["level"])] \
            if table.by == "provider" else []
    if collection_given:
        owners = collection.owners(table.by)
        table = _widened(table, np.unique(owners))
    candidates = (_by_group(documents, documents[_CANDIDATE], collection, table) if logged
                  else np.zeros_like(table.retrieval))
    with_candidates = candidates.sum(axis=1) > 0
    weights = candidates
    if collection_given:
        counts = pd.Series(owners).value_counts().reindex(list(table.groups), fill_value=0).to_numpy(float)
        weights = np.where(with_candidates[:, None], candidates, counts[None, :])
    shown = table.retrieval.sum(axis=1) > 0
    n_logged, n_rest = int((shown & with_candidates).sum()), int((shown & ~with_candidates).sum())
    reference = (CANDIDATES if not (collection_given and n_rest) else COLLECTION_DOCUMENTS if not n_logged
                 else f"{CANDIDATES} ({n_logged} queries), else {COLLECTION_DOCUMENTS} ({n_rest} queries)")
    return presence_findings(table, weights, reference=reference, **test)


def _merit_targets(documents: pd.DataFrame, k: int, grades: int, threshold: float | None) -> pd.Series:
    """Each candidate's tier target (:func:`~fairrag_core.audit.merit.tier_target`) among its query's candidates,
    from their mean logged scores; NaN for the queries whose candidates do not all carry a score."""
    out = pd.Series(np.nan, index=documents.index)
    rows = documents[documents[_CANDIDATE].fillna(0) > 0]
    for _, query in rows.groupby("query_id", sort=False):
        scores = query[_SCORE].to_numpy(float)
        if np.isfinite(scores).all():
            out[query.index] = tier_target(merit_tiers(scores, grades=grades, threshold=threshold), k)
    return out


def _merit(documents: pd.DataFrame, collection: Collection, table: ShareTable, *, k: int | None, grades: int,
           threshold: float | None, **test) -> list[Finding]:
    """Merit from the system's own scores, over the queries whose logged candidates all carry one; one line says
    why when candidates were logged without scores."""
    if _CANDIDATE not in documents or not documents[_CANDIDATE].notna().any():
        return []
    if k is None:  # the served slots: the most exposure a query's lines gave
        k = max(1, int(np.ceil(documents.groupby("query_id")["exposure"].sum().max() - 1e-9)))
    targets = _merit_targets(documents, k, grades, threshold)
    if not targets.notna().any():
        with_candidates = documents.loc[documents[_CANDIDATE].notna(), "query_id"].nunique()
        return [_info(table, _merit_family(merit_words(grades=grades, threshold=threshold)).metric,
                      "No test of retrieval exposure against merit from the system's own scores: the logged "
                      f"candidates of {with_candidates} quer{'y' if with_candidates == 1 else 'ies'} carry no "
                      "scores; log the candidates with the scores the system ranked them by (a reranker's input "
                      "documents with their scores)", test["level"])] if table.by == "provider" else []
    return merit_findings(table, _by_group(documents, targets, collection, table), grades=grades,
                          threshold=threshold, **test)


def label_free_findings(documents: pd.DataFrame, collection: Collection, *, by: str = "provider",
                        lines: int | dict[str, int] | pd.Series | None = None,
                        target_shares: str | os.PathLike | dict[str, float] | None = None, level: float = 0.95,
                        n_boot: int = 1000, n_test: int | None = None, seed: SeedLike = None,
                        serious: float = SERIOUS_RATIO, collection_given: bool = True, k: int | None = None,
                        merit_grades: int = DEFAULT_GRADES, merit_threshold: float | None = None,
                        unit: str = "line") -> list[Finding]:
    """The label-free findings of one system's per-(query, document) table (a log audit's ``run.documents``), over
    every audited query (no fair target needed): citations given exposure when citations were logged (the
    ``cited_exposure`` column; the judge's ``entailed_exposure`` otherwise); for ``by="provider"`` with
    ``target_shares`` (a path or a mapping), retrieval exposure against the stated shares; retrieval exposure
    against presence — the logged candidates (the ``candidate`` column,
    :func:`~fairrag_core.audit.log_exposure.with_candidates`), else the collection's documents when
    ``collection_given`` (False: the collection was made from the log, ``--provider-from``/``--provider-map``); and,
    where the candidates carry scores (``candidate_score``), retrieval exposure against merit by the rule
    ``merit_grades``/``merit_threshold``, the tiers filling ``k`` slots (None: the most exposure a query got).
    ``unit`` names one of ``lines`` in the sentences (``request`` for a trace export)."""
    column = next((c for c in ("attributed_exposure", "cited_exposure", "entailed_exposure")
                   if c in documents and documents[c].notna().any()), None)
    table = share_table(documents, collection, by=by, attributed_column=column, lines=lines, targets_only=False,
                        unit=unit)
    label = "entailing documents" if column == "entailed_exposure" else "citations"
    found = attribution_findings(table, attributed_label=label, level=level, n_boot=n_boot, n_test=n_test,
                                 seed=seed, serious=serious)
    if target_shares is not None and by == "provider":
        shares = target_shares if isinstance(target_shares, dict) else load_target_shares(target_shares)
        if not shares:
            raise InvalidParameterError("the target shares name no provider; list each provider with its share")
        found += stated_target_findings(table, shares, level=level, n_boot=n_boot, n_test=n_test, seed=seed,
                                        serious=serious)
    test = {"level": level, "n_boot": n_boot, "n_test": n_test, "seed": seed, "serious": serious}
    found += _presence(documents, collection, table, collection_given=collection_given, **test)
    found += _merit(documents, collection, table, k=k, grades=merit_grades, threshold=merit_threshold, **test)
    return sort_findings(found)
