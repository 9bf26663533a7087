"""α sweep of the fair stochastic retriever over a query set: EE-D and EE-R per query and α (no generation).

Reproduces the retrieval side of Kim & Diaz (2025), Fig. 3 (EE-D by α) and Fig. 4 (EE-R vs EE-D).
Sampling is batched over queries for each α, and every (α) draw has its own seeded stream, so a
sweep is reproducible from ``(collection, retriever, alphas, N, k, seed, candidates, min_rel)``.

Which queries count where (:func:`left_out`): EE-D needs no relevance labels (Kim & Diaz 2025, Eq. 16: ‖ε‖²/k), so a
sweep runs every query of the collection and EE-D is measured on each. EE-R needs the useful documents (Eq. 28: ε
against the target ε* of the qrels): it is undefined for a query without judgements or without a useful candidate,
and its means keep the queries with at least two useful candidates, as the paper's collections do ("we discarded
entries that have only one useful item", §4: with one useful item there is no fairness question among them).
"""

from __future__ import annotations

import math
from collections.abc import Collection as Ids
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..checks import check_alpha, check_k
from ..data import Collection
from ..errors import InvalidParameterError
from ..metrics.exposure import ee_d_estimate, ee_disparity, ee_relevance, expected_exposure, target_exposure
from ..option_types import alphas_arg, id_list_arg
from ..options import option
from ..record import RunKind, RunRecord, SweepRun
from ..retrieval import Retriever, top_candidates
from ..seeds import new_seed
from ..settings import SamplingSettings
from .sampling import sample_rankings_batch, separation_note

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["SweepConfig", "DEFAULT_ALPHAS", "ExposurePlan", "plan_exposure_sweep", "exposure_alpha",
           "collect_exposure_sweep", "exposure_sweep", "summarise_sweep", "select_queries", "system_of", "left_out",
           "unjudged_queries"]

#: The paper's grid (Kim & Diaz 2025, §4).
DEFAULT_ALPHAS: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True, kw_only=True)
class SweepConfig(SamplingSettings):
    """An exposure sweep: the α grid (``inf`` = the deterministic ranker) over a query set (empty: every query;
    EE-R is measured on those with relevance labels, module docstring), with the shared sampling settings."""

    alphas: tuple[float, ...] = option("--alphas", default=DEFAULT_ALPHAS, parse=alphas_arg,
                                       help="comma-separated α grid (inf = the deterministic ranker)")
    query_ids: tuple[str, ...] = option("--queries", default=(), parse=id_list_arg, default_text="every query",
                                        help="comma-separated query ids")


def select_queries(collection: Collection, query_ids: Sequence[str], *, need_qrels: bool) -> list:
    """The queries a sweep runs over: the given ids, or every query (with qrels when ``need_qrels``)."""
    if query_ids:
        queries = [collection.query(q) for q in query_ids]
    elif need_qrels:
        queries = [q for q in collection.queries if q.query_id in collection.qrels]
    else:
        queries = list(collection.queries)
    if not queries:
        what = "queries with relevance labels; add queries.jsonl and qrels.txt" if need_qrels else \
            "queries; add queries.jsonl"
        raise InvalidParameterError(f"collection {collection.name!r} has no {what}")
    return queries


def unjudged_queries(collection: Collection, query_ids: Sequence[str]) -> tuple[str, ...]:
    """The ids among ``query_ids`` that have no relevance judgements in ``collection``'s qrels."""
    return tuple(q for q in query_ids if q not in collection.qrels)


def left_out(table: pd.DataFrame, unjudged: Ids[str], *, labelled: str = "EE-R", kept_for: str | None = None,
             everyone: str = "EE-D and providers reached", shown: int = 10) -> str:
    """Which queries a sweep's means leave out and why (module docstring), from its per-(query, α) ``table``
    (``query_id``, ``m``: useful candidates) and the swept queries without judgements (``unjudged``). ``labelled``
    names the metrics that need the labels, ``kept_for`` what keeps only the queries with ≥ 2 useful candidates
    (default: ``labelled``), ``everyone`` what is measured on every query; the first ``shown`` ids of each reason
    are named.

    >>> import pandas as pd
    >>> table = pd.DataFrame({"query_id": ["a", "b", "c", "d"], "m": [3, 0, 1, 0]})
    >>> print(left_out(table, {"d"}))
    Swept 4 queries: EE-D and providers reached on all 4 (they need no relevance labels); EE-R on the 1 with ≥ 2 \
useful candidates. Left out of EE-R: 1 of 4 without relevance judgements (EE-R undefined): d; 1 with no useful \
candidate among the first-stage candidates (EE-R undefined): b; 1 with one useful candidate (no fairness question \
among one, as in Kim & Diaz 2025, §4): c.
    """
    useful = table.drop_duplicates("query_id").set_index("query_id")["m"]
    total = len(useful)
    groups = (
        (f"of {total} without relevance judgements ({labelled} undefined)", [q for q in useful.index if q in unjudged]),
        (f"with no useful candidate among the first-stage candidates ({labelled} undefined)",
         [q for q, m in useful.items() if m == 0 and q not in unjudged]),
        ("with one useful candidate (no fairness question among one, as in Kim & Diaz 2025, §4)",
         [q for q, m in useful.items() if m == 1]),
    )
    kept, kept_for = int((useful >= 2).sum()), kept_for or labelled
    text = (f"Swept {total} queries: {everyone} on all {total} (they need no relevance labels); "
            f"{kept_for} on the {kept} with ≥ 2 useful candidates.")
    parts = [f"{len(ids)} {why}: {', '.join(map(str, ids[:shown]))}{', …' if len(ids) > shown else ''}"
             for why, ids in groups if ids]
    return text + (f" Left out of {kept_for}: {'; '.join(parts)}." if parts else f" None left out of {kept_for}.")


def system_of(alpha: float) -> str:
    return "deterministic" if np.isinf(alpha) else "stochastic"


@dataclass(frozen=True)
class ExposurePlan:
    """An exposure sweep planned: the first-stage candidates of every query, ready to be sampled one α at a time.

    Everything a task needs is data (arrays and names), so a plan can be sent to another process or machine; each
    α draws from its own stream ``default_rng([seed, α index])``, so the α tasks can run in any order or place and
    give the same table (issue 14: the Ray backend runs one task per α).
    """

    collection: str
    retriever: str
    config: SweepConfig
    seed: int
    alphas: tuple[float, ...]
    query_ids: tuple[str, ...]
    n_candidates: int
    candidates: np.ndarray  # (queries, n_candidates) collection positions, best first
    scores: np.ndarray  # (queries, n_candidates) first-stage scores
    useful: np.ndarray  # (queries, n_candidates) bool
    providers: np.ndarray  # (documents,) provider of every document
    doc_ids: np.ndarray  # (documents,) object
    unjudged: tuple[str, ...] = ()  # the swept queries without relevance judgements (EE-R undefined)

    @property
    def tasks(self) -> list[int]:
        """One task per α: its index in :attr:`alphas`."""
        return list(range(len(self.alphas)))


def plan_exposure_sweep(collection: Collection, retriever: Retriever, config: SweepConfig) -> ExposurePlan:
    """Score every query once and keep its top candidates: the part of :func:`exposure_sweep` before sampling."""
    if not config.alphas:
        raise InvalidParameterError("give at least one α value, e.g. 0,1,2,4,8")
    alphas = tuple(check_alpha(a) for a in config.alphas)
    queries = select_queries(collection, config.query_ids, need_qrels=False)
    seed = config.seed if config.seed is not None else new_seed()
    scores = retriever.score_batch([q.text for q in queries])
    n_cand = len(collection) if config.candidates is None else min(config.candidates, len(collection))
    check_k(config.k, n_cand)
    cands = [top_candidates(row, n_cand) for row in scores]
    return ExposurePlan(
        collection=collection.source or collection.name, retriever=retriever.name, config=config, seed=seed,
        alphas=alphas,
        query_ids=tuple(q.query_id for q in queries), n_candidates=n_cand,
        candidates=np.stack([c.indices for c in cands]), scores=np.stack([c.scores for c in cands]),
        useful=np.stack([collection.useful(q.query_id, min_rel=config.min_rel)[c.indices]
                         for q, c in zip(queries, cands)]),
        providers=np.asarray(collection.providers), doc_ids=np.array(collection.doc_ids, dtype=object),
        unjudged=unjudged_queries(collection, [q.query_id for q in queries]))


def exposure_alpha(plan: ExposurePlan, a_index: int) -> tuple[list[dict], list[pd.DataFrame]]:
    """One α of a planned sweep: N rankings per query from the α's own stream, the rows and per-document frames."""
    import pandas as pd

    config, alpha, n_cand = plan.config, plan.alphas[a_index], plan.n_candidates
    rankings = sample_rankings_batch(
        plan.scores, alpha=alpha, n_samples=config.n_samples, k=config.k,
        seed=np.random.default_rng([plan.seed, a_index]),
    )
    rows, documents = [], []
    for q_index, query_id in enumerate(plan.query_ids):
        eps = expected_exposure(rankings[q_index], n_cand)
        lab = plan.useful[q_index]
        reached = plan.providers[plan.candidates[q_index][eps > 0]]
        rows.append(
            {
                "query_id": query_id,
                "system": system_of(alpha),
                "alpha": alpha,
                "n": n_cand,
                "m": int(lab.sum()),
                "fairness_question": bool(lab.sum() > 1),
                "ee_d": ee_d_estimate(rankings[q_index], n_cand),
                "ee_d_plug_in": ee_disparity(eps, config.k),
                "ee_r": ee_relevance(eps, lab, config.k) if lab.any() else np.nan,  # m = 0: undefined
                "providers_reached": int(np.unique(reached).size),
            }
        )
        documents.append(pd.DataFrame({
            "query_id": query_id, "alpha": alpha, "doc_id": plan.doc_ids[plan.candidates[q_index]],
            "exposure": eps, "target_exposure": target_exposure(lab, config.k) if lab.any() else np.nan,
        }))
    return rows, documents


def sweep_notes(plan: ExposurePlan) -> list[str]:
    """The separation note (:func:`~fairrag_core.ranking.sampling.separation_note`) at the grid's largest finite α,
    for the first query it holds on, with how many queries it holds on (none: an empty list)."""
    finite = [a for a in plan.alphas if not math.isinf(a)]
    if not finite:
        return []
    notes = [separation_note(row, max(finite)) for row in plan.scores]
    held = [note for note in notes if note is not None]
    if not held:
        return []
    return [f"{held[0]} (in {len(held)} of {len(notes)} queries)"]


def collect_exposure_sweep(plan: ExposurePlan,
                           parts: Sequence[tuple[list[dict], list[pd.DataFrame]]]) -> SweepRun:
    """The α tasks' outputs (in α order) as one :class:`~fairrag_core.record.SweepRun` with its record."""
    import pandas as pd

    rows = [row for part_rows, _ in parts for row in part_rows]
    documents = [frame for _, frames in parts for frame in frames]
    record = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection=plan.collection, retriever=plan.retriever,
                       config=plan.config, seed=plan.seed, query_ids=plan.query_ids,
                       sampled_rankings=len(rows) * plan.config.n_samples,
                       extra={"candidates_used": plan.n_candidates, "unjudged_queries": list(plan.unjudged)} | (
                           {"notes": notes} if (notes := sweep_notes(plan)) else {}))
    return SweepRun(record=record, table=pd.DataFrame(rows), documents=pd.concat(documents, ignore_index=True))


def exposure_sweep(collection: Collection, retriever: Retriever, config: SweepConfig) -> SweepRun:
    """Sample and measure every (query, α) of ``config`` (exposure only, no generation).

    Returns a :class:`~fairrag_core.record.SweepRun` whose ``table`` has one row per (query, α):
    ``query_id, system, alpha, n, m, fairness_question, ee_d, ee_d_plug_in, ee_r, providers_reached``. ``ee_d`` is
    the policy's EE-D as estimated everywhere in the package (bias-corrected over the N rankings,
    :func:`~fairrag_core.metrics.exposure.ee_d_estimate`), ``ee_d_plug_in`` the paper's plug-in. ``m`` is the number
    of useful candidates (qrels ``rel ≥ min_rel``); ``fairness_question`` is False for queries with m ≤ 1,
    which the paper leaves out of fairness analyses. ``alpha = inf`` is the deterministic ranker
    (``system = "deterministic"``). ``documents`` holds every candidate's exposure and target exposure per
    (query, α), e.g. for an exposure ledger; ``record`` holds the settings and the seed actually used.
    Sampling is batched over queries for each α (:func:`plan_exposure_sweep`, :func:`exposure_alpha`,
    :func:`collect_exposure_sweep`; the Ray backend runs the same three steps with the α tasks on its workers).
    """
    plan = plan_exposure_sweep(collection, retriever, config)
    return collect_exposure_sweep(plan, [exposure_alpha(plan, a) for a in plan.tasks])


def summarise_sweep(table: pd.DataFrame) -> pd.DataFrame:
    """Per α: mean EE-D and providers reached over every swept query (``queries``), mean EE-R over the queries
    that carry a fairness question, ≥ 2 useful candidates (``ee_r_queries``; module docstring, :func:`left_out`)."""
    everyone = table.groupby("alpha", as_index=False).agg(
        queries=("query_id", "nunique"), ee_d=("ee_d", "mean"), providers_reached=("providers_reached", "mean"))
    judged = table[table["fairness_question"]].groupby("alpha").agg(
        ee_r_queries=("query_id", "nunique"), ee_r=("ee_r", "mean"))
    summary = everyone.join(judged, on="alpha")
    summary["ee_r_queries"] = summary["ee_r_queries"].fillna(0).astype(int)
    return summary[["alpha", "queries", "ee_d", "ee_r_queries", "ee_r", "providers_reached"]]
