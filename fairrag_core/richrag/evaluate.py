"""Honest evaluation of coverage-aware ranking on held-out queries (RichRAG App. C; issue 13, item 5).

For every held-out query the pool is built as in training (:func:`~fairrag_core.richrag.train.build_query_pools`,
no augmentation), and seven systems pick k of its documents (the first four are :mod:`.baselines`):

* ``relevance`` — the pool sorted by the retriever's (BM25) score for the query alone;
* ``mmr`` — Maximal Marginal Relevance over those scores, λ = 0.5, TF-IDF cosine;
* ``round-robin`` — per-aspect round robin: aspect 1's best document not yet listed, then aspect 2's, …;
* ``ranker-sft`` / ``ranker-dpo`` — the trained list-wise ranker after stage 1 / after both stages (greedy decoding);
* ``cosine-greedy`` — an extra, model-free check we added (not in the paper): the greedy list of Eq. 8 on
  φ̂ = cos(Enc(d), Enc(q ∘ s_j)) of the frozen MiniLM (clipped at 0), i.e. the ranker's strongest input feature with
  no training at all;
* ``oracle`` — the greedy silver list on the true φ (Eq. 8): it reads the sub-answers, so it is an upper bound, not
  a competitor.

NCOM@k (:func:`~fairrag_core.richrag.coverage.ncom`) per query; the table gives the mean with a percentile bootstrap
interval over queries (:func:`~fairrag_core.metrics.intervals.bootstrap_mean`, the estimate is inside), and the
ranker against each system as a paired comparison (mean difference, its interval, the paired randomization test's
p-value). With ``generator``, each system's top k is also written into a rich answer and scored by Com-ROUGE
(Eq. 11) against the sub-answers.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError
from ..metrics.intervals import bootstrap_mean, paired_comparison
from ..models.catalog import DEFAULTS
from ..settings import Settings
from .baselines import BASELINES, pool_lists
from .coverage import greedy_coverage, ncom
from .ranker import ListwiseRanker, RankerFeatures
from .train import QueryPool

__all__ = ["System", "query_scores", "pool_features", "system_lists", "ncom_table", "summarise", "RichEvalConfig",
           "RichEvaluation", "answer_scores", "evaluate_pools", "combine_folds"]


class System(str, enum.Enum):
    """The ranking systems compared (rows of the evaluation table)."""

    RELEVANCE = "relevance"
    MMR = "mmr"
    ROUND_ROBIN = "round-robin"
    RANKER_SFT = "ranker-sft"
    RANKER_DPO = "ranker-dpo"
    COSINE_GREEDY = "cosine-greedy"
    ORACLE = "oracle"


def query_scores(qp: QueryPool, retriever) -> np.ndarray:
    """The retriever's score of every pooled document for the query alone (what ``relevance`` and MMR rank by)."""
    return np.asarray(retriever.score(qp.query), dtype=np.float64)[qp.pool.indices]


def pool_features(ranker: ListwiseRanker, qp: QueryPool) -> RankerFeatures:
    """The ranker's input for an un-augmented pool."""
    return ranker.features(qp.query, qp.aspects, qp.documents, qp.aspect_sets, qp.pool.ranks)


def system_lists(pools: Sequence[QueryPool], retriever, k: int,
                 rankers: Mapping[str, ListwiseRanker] | None = None) -> dict[str, list[list[int]]]:
    """Every system's top-k pool positions for every pool: ``{system: [list per pool]}``."""
    out: dict[str, list[list[int]]] = {name: [] for name in BASELINES}
    for qp in pools:
        for name, ranking in pool_lists(qp.pool, query_scores(qp, retriever), qp.documents, k, phi=qp.phi).items():
            out[name].append(ranking)
    oracle = out.pop(System.ORACLE.value)
    features = None
    for name, ranker in (rankers or {}).items():
        features = [pool_features(ranker, qp) for qp in pools]
        out[name] = ranker.rank_features(features, k)
    if features is not None and hasattr(features[0], "pair"):
        out[System.COSINE_GREEDY.value] = [greedy_coverage(np.clip(x.pair[:, :, 0], 0.0, 1.0), min(k, len(qp.pool)))
                                           for x, qp in zip(features, pools)]
    out[System.ORACLE.value] = oracle
    return out


def ncom_table(pools: Sequence[QueryPool], lists: Mapping[str, Sequence[Sequence[int]]], ks: Sequence[int]
               ) -> pd.DataFrame:
    """Long table: one row per (query, system, k) with NCOM@k of the list's first k picks."""
    rows = [{"query_id": qp.query_id, "system": system, "k": k, "ncom": ncom(qp.phi, ranking[:k])}
            for system, per_pool in lists.items() for qp, ranking in zip(pools, per_pool)
            for k in ks if k <= len(ranking)]
    return pd.DataFrame(rows)


def summarise(per_query: pd.DataFrame, *, value: str = "ncom", reference: str = System.RANKER_DPO.value,
              seed: int = 0, n_boot: int = 2000) -> pd.DataFrame:
    """Mean with a 95% bootstrap interval per (system, k), and ``reference`` − system as a paired comparison."""
    rows = []
    for (system, k), group in per_query.groupby(["system", "k"], sort=False):
        values = group.sort_values("query_id")[value].to_numpy()
        ci = bootstrap_mean(values, n_boot=n_boot, seed=seed)
        row = {"system": system, "k": int(k), "queries": len(values), value: ci.estimate, "low": ci.low,
               "high": ci.high}
        ref = per_query[(per_query.system == reference) & (per_query.k == k)].sort_values("query_id")
        if len(ref) == len(values) and system != reference:
            cmp = paired_comparison(ref[value].to_numpy(), values, n_boot=n_boot, seed=seed)
            row.update({"ranker_minus": cmp.difference.estimate, "diff_low": cmp.difference.low,
                        "diff_high": cmp.difference.high, "p_value": cmp.p_value})
        rows.append(row)
    return pd.DataFrame(rows)




# -- the whole evaluation ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class RichEvalConfig(Settings):
    """What ``rich-eval`` measures: NCOM at ``ks`` (``k`` is the main cut-off), and with ``answers`` the Com-ROUGE
    of a rich answer written by ``generator`` from each system's top ``k``. Answers cost a generation each (about a
    minute on a busy 2-core CPU), so they can be limited to the first ``answer_queries`` evaluated queries (0: all)
    and to ``answer_systems`` (empty: every system); NCOM is always computed on every query and system."""

    k: int = 5
    ks: tuple[int, ...] = (3, 5, 10)
    answers: bool = False
    generator: str = DEFAULTS["rich_writer"]
    max_new_tokens: int = 320
    answer_queries: int = 0
    answer_systems: tuple[str, ...] = ()
    n_boot: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.answer_queries < 0:
            raise InvalidParameterError(f"answer_queries must be 0 (every query) or positive, got "
                                        f"{self.answer_queries}")
        unknown = sorted(set(self.answer_systems) - {s.value for s in System})
        if unknown:
            raise InvalidParameterError(f"unknown systems {unknown} for answers; choose from "
                                        f"{', '.join(s.value for s in System)}")


@dataclass
class RichEvaluation:
    """Per-query values and the summary tables of one evaluation."""

    config: RichEvalConfig
    split: str
    query_ids: list[str]
    per_query: pd.DataFrame
    table: pd.DataFrame
    answers: pd.DataFrame | None = None
    answer_table: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {"config": self.config.to_dict(), "split": self.split, "query_ids": self.query_ids,
               "ncom": json.loads(self.table.to_json(orient="records")), "notes": self.notes}
        if self.answer_table is not None:
            out["com_rouge"] = json.loads(self.answer_table.to_json(orient="records"))
        return out


def answer_scores(pools: Sequence[QueryPool], lists: Mapping[str, Sequence[Sequence[int]]], generator, k: int, *,
                  documents: Callable[[QueryPool, Sequence[int]], list], max_new_tokens: int = 320,
                  progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Com-ROUGE (Eq. 11; R-1, R-2, R-L) of a rich answer written from each system's top k, per query; identical
    lists of one query share one answer (decoding is greedy)."""
    from .answer import RichAnswerSettings, write_rich_answer

    settings = RichAnswerSettings(max_new_tokens=max_new_tokens)
    rows = []
    for q, qp in enumerate(pools):
        written: dict[tuple[int, ...], object] = {}
        for system, per_pool in lists.items():
            top = tuple(per_pool[q][:k])
            if top not in written:
                if progress:
                    progress(f"{qp.query_id} {system}")
                written[top] = write_rich_answer(generator, qp.query, qp.aspects, documents(qp, top),
                                                 sub_answers=qp.sub_answers, settings=settings)
            answer = written[top]
            rows.append({"query_id": qp.query_id, "system": system, "k": len(top), "cr1": answer.com_rouge.rouge1,
                         "cr2": answer.com_rouge.rouge2, "crl": answer.com_rouge.rougeL,
                         "words": len(answer.text.split())})
    return pd.DataFrame(rows)


def evaluate_pools(pools: Sequence[QueryPool], retriever, rankers: Mapping[str, ListwiseRanker],
                   config: RichEvalConfig, *, split: str, generator=None, documents=None,
                   progress: Callable[[str], None] | None = None) -> RichEvaluation:
    """NCOM@ks of every system on ``pools`` (held-out queries), with intervals; Com-ROUGE of answers when asked."""
    ks = sorted({*config.ks, config.k})
    lists = system_lists(pools, retriever, max(ks), rankers)
    per_query = ncom_table(pools, lists, ks)
    table = summarise(per_query, seed=config.seed, n_boot=config.n_boot)
    result = RichEvaluation(config, split, [qp.query_id for qp in pools], per_query, table)
    if config.answers and generator is not None:
        n = config.answer_queries or len(pools)
        chosen = {s: per_pool[:n] for s, per_pool in lists.items()
                  if not config.answer_systems or s in config.answer_systems}
        answers = answer_scores(pools[:n], chosen, generator, config.k, documents=documents,
                                max_new_tokens=config.max_new_tokens, progress=progress)
        result.answers = answers
        result.answer_table = pd.concat(
            [summarise(answers.assign(k=config.k), value=v, seed=config.seed, n_boot=config.n_boot)
             .assign(metric=v) for v in ("cr2", "crl")], ignore_index=True)
    return result


def combine_folds(results: Sequence[RichEvaluation], config: RichEvalConfig, *, split: str) -> RichEvaluation:
    """One evaluation from k folds: per-query values pooled (each query held out once), intervals recomputed."""
    per_query = pd.concat([r.per_query for r in results], ignore_index=True)
    out = RichEvaluation(config, split, [q for r in results for q in r.query_ids], per_query,
                         summarise(per_query, seed=config.seed, n_boot=config.n_boot))
    answers = [r.answers for r in results if r.answers is not None]
    if answers:
        out.answers = pd.concat(answers, ignore_index=True)
        out.answer_table = pd.concat(
            [summarise(out.answers.assign(k=config.k), value=v, seed=config.seed, n_boot=config.n_boot)
             .assign(metric=v) for v in ("cr2", "crl")], ignore_index=True)
    return out
