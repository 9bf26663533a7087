"""α sweep of the fair stochastic retriever over a query set: EE-D and EE-R per query and α.

Reproduces the retrieval side of Kim & Diaz (2025), Fig. 3 (EE-D by α) and Fig. 4 (EE-R vs EE-D).
Sampling is batched over queries for each α, and every (α) draw has its own seeded stream, so a
sweep is reproducible from ``(collection, retriever, alphas, N, k, seed, candidates, min_rel)``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .corpus import Collection
from .errors import InvalidParameterError
from .exposure import ee_disparity, ee_relevance, expected_exposure, target_exposure
from .ranking import new_seed
from .retrieval import Retriever, top_candidates
from .sampling import check_alpha, sample_rankings_batch

__all__ = [
    "SweepConfig", "DEFAULT_ALPHAS", "exposure_sweep", "summarise_sweep", "RagSweepConfig", "RagSweep",
    "SweepTask", "SweepResult", "rag_sweep", "disparity_quality_table", "utility_by_disparity_table",
]

#: The paper's grid (Kim & Diaz 2025, §4).
DEFAULT_ALPHAS: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True)
class SweepConfig:
    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    n_samples: int = 100
    k: int = 5
    seed: int | None = None
    candidates: int | None = None
    min_rel: int = 1
    query_ids: tuple[str, ...] = field(default=())  # empty = every query with qrels


def _sweep_queries(collection: Collection, query_ids: Sequence[str], *, need_qrels: bool) -> list:
    """The queries a sweep runs over: the given ids, or every query (with qrels when ``need_qrels``)."""
    if query_ids:
        queries = [collection.query(q) for q in query_ids]
    elif need_qrels:
        queries = [q for q in collection.queries if q.query_id in collection.qrels]
    else:
        queries = list(collection.queries)
    if not queries:
        raise InvalidParameterError(
            f"collection {collection.name!r} has no queries with relevance labels; add queries.jsonl and qrels.txt"
        )
    return queries


def _system(alpha: float) -> str:
    return "deterministic" if np.isinf(alpha) else "stochastic"


def exposure_sweep(collection: Collection, retriever: Retriever, config: SweepConfig, *,
                   documents: list | None = None) -> pd.DataFrame:
    """Tidy table, one row per (query, α): ``query_id, system, alpha, n, m, ee_d, ee_r, providers_reached``.

    ``m`` is the number of useful candidates (qrels ``rel ≥ min_rel``); ``fairness_question`` is False
    for queries with m ≤ 1, which the paper leaves out of fairness analyses. ``alpha = inf`` is the
    deterministic ranker (``system = "deterministic"``). Attributes of the returned frame (``df.attrs``)
    record the configuration and the seed actually used.

    Pass a list as ``documents`` to receive one frame per (query, α) with every candidate's exposure and
    target exposure (``query_id, alpha, doc_id, exposure, target_exposure``), e.g. for an exposure ledger.
    """
    if not config.alphas:
        raise InvalidParameterError("give at least one α value, e.g. 0,1,2,4,8")
    alphas = tuple(check_alpha(a) for a in config.alphas)
    queries = _sweep_queries(collection, config.query_ids, need_qrels=True)
    seed = config.seed if config.seed is not None else new_seed()
    scores = retriever.score_batch([q.text for q in queries])
    n_cand = len(collection) if config.candidates is None else min(config.candidates, len(collection))
    if config.k > n_cand:
        raise InvalidParameterError(f"k={config.k} is larger than the {n_cand} candidate(s); set k ≤ {n_cand}")
    cands = [top_candidates(row, n_cand) for row in scores]
    cand_scores = np.stack([c.scores for c in cands])
    labels = np.stack([collection.useful(q.query_id, min_rel=config.min_rel)[c.indices] for q, c in zip(queries, cands)])
    providers = collection.providers
    doc_ids = np.array(collection.doc_ids, dtype=object)
    rows = []
    for a_index, alpha in enumerate(alphas):
        rankings = sample_rankings_batch(
            cand_scores, alpha=alpha, n_samples=config.n_samples, k=config.k, seed=np.random.default_rng([seed, a_index])
        )
        for q_index, query in enumerate(queries):
            eps = expected_exposure(rankings[q_index], n_cand)
            lab = labels[q_index]
            reached = providers[cands[q_index].indices[eps > 0]]
            rows.append(
                {
                    "query_id": query.query_id,
                    "system": _system(alpha),
                    "alpha": alpha,
                    "n": n_cand,
                    "m": int(lab.sum()),
                    "fairness_question": bool(lab.sum() > 1),
                    "ee_d": ee_disparity(eps, config.k),
                    "ee_r": ee_relevance(eps, lab, config.k),
                    "providers_reached": int(np.unique(reached).size),
                }
            )
            if documents is not None:
                documents.append(pd.DataFrame({
                    "query_id": query.query_id, "alpha": alpha, "doc_id": doc_ids[cands[q_index].indices],
                    "exposure": eps, "target_exposure": target_exposure(lab, config.k) if lab.any() else np.nan,
                }))
    table = pd.DataFrame(rows)
    table.attrs.update(
        collection=collection.name, retriever=retriever.name, alphas=list(alphas), n_samples=config.n_samples,
        k=config.k, seed=seed, candidates=n_cand, min_rel=config.min_rel,
    )
    return table


def summarise_sweep(table: pd.DataFrame) -> pd.DataFrame:
    """Mean EE-D, EE-R and providers reached per α over the queries that carry a fairness question."""
    kept = table[table["fairness_question"]]
    if kept.empty:
        kept = table
    summary = kept.groupby("alpha", as_index=False).agg(
        queries=("query_id", "nunique"),
        ee_d=("ee_d", "mean"),
        ee_r=("ee_r", "mean"),
        providers_reached=("providers_reached", "mean"),
    )
    return summary


# -- the full RAG sweep (Kim & Diaz 2025, §4–5: Tables 1–2, Figures 3–5) ---------------------------------
@dataclass(frozen=True)
class RagSweepConfig:
    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    n_samples: int = 20
    k: int = 5
    seed: int | None = None
    candidates: int | None = None
    min_rel: int = 1
    metric: str = "rougeL"
    labels: str = "utility"  # "utility" (Algorithm 1 qrels of the generator) or "relevance"
    query_ids: tuple[str, ...] = field(default=())
    deterministic_baseline: bool = True
    prompt_order: str = "sampled"  # see RagConfig.prompt_order
    # The stochastic oracle's N answers per query (cached across α) set u_max for normalised EU; without them
    # u_max is the best answer of the run itself, and the sweep makes no oracle generations.
    oracle: bool = True


@dataclass(frozen=True)
class SweepTask:
    """One (query, α) cell of a RAG sweep, with the seeds that make it reproducible on its own."""

    query_id: str
    query_index: int
    alpha: float
    alpha_index: int
    seed: int
    oracle_seed: int


@dataclass(frozen=True)
class SweepResult:
    """What one task produced: the per-run metrics row and the per-candidate exposure frame."""

    task: SweepTask
    row: dict
    documents: pd.DataFrame


class RagSweep:
    """A planned RAG sweep, run one task at a time so that a caller can show progress, stop, and resume.

    ``tasks`` lists every (query, α) cell (the deterministic baseline is ``alpha = inf``). ``run(task)``
    is a pure function of the task and the models: re-running a cell gives the same result, and answers
    come from the generator's cache when a top-k list recurs (across samples, α values and queries).
    """

    def __init__(self, collection: Collection, retriever: Retriever, generator, attributor,
                 config: RagSweepConfig) -> None:
        from .labels import load_utility_labels, useful_vector
        from .metrics.utility import UtilityMetric

        self.metric = UtilityMetric(config.metric)
        if not config.alphas:
            raise InvalidParameterError("give at least one α value, e.g. 0,1,2,4,8")
        alphas = [check_alpha(a) for a in config.alphas]
        if config.deterministic_baseline and not any(np.isinf(a) for a in alphas):
            alphas.append(float("inf"))
        queries = _sweep_queries(collection, config.query_ids, need_qrels=False)
        if config.labels == "utility":
            qrels = load_utility_labels(collection, generator.name)
            self.labels = {q.query_id: useful_vector(collection, qrels, q.query_id) for q in queries}
        elif config.labels == "relevance":
            self.labels = {q.query_id: collection.useful(q.query_id, min_rel=config.min_rel) for q in queries}
        else:
            raise InvalidParameterError(f"labels must be 'utility' or 'relevance', got {config.labels!r}")
        self.collection, self.retriever, self.generator, self.attributor = collection, retriever, generator, attributor
        self.config = config
        self.seed = config.seed if config.seed is not None else new_seed()
        self.queries = queries
        self.alphas = alphas
        self.tasks = [
            SweepTask(query_id=q.query_id, query_index=qi, alpha=a, alpha_index=ai,
                      seed=int(np.random.SeedSequence([self.seed, qi, ai]).generate_state(1)[0]),
                      oracle_seed=int(np.random.SeedSequence([self.seed, qi, 1_000_003]).generate_state(1)[0]))
            for qi, q in enumerate(queries) for ai, a in enumerate(alphas)
        ]
        self._scores: dict[str, np.ndarray] = {}

    def run(self, task: SweepTask) -> SweepResult:
        from .pipeline import RagConfig, run_rag

        config = self.config
        query = self.queries[task.query_index]
        if query.query_id not in self._scores:
            self._scores[query.query_id] = self.retriever.score(query.text)
        run = run_rag(self.collection, self.retriever, self.generator, self.attributor, query.text,
                      RagConfig(alpha=task.alpha, n_samples=config.n_samples, k=config.k, seed=task.seed,
                                candidates=config.candidates, min_rel=config.min_rel, metric=self.metric,
                                prompt_order=config.prompt_order, oracle=config.oracle,
                                oracle_seed=task.oracle_seed),
                      useful=self.labels[query.query_id], scores=self._scores[query.query_id], n_boot=200)
        m = int(run.ranking.labels.sum()) if run.ranking.labels is not None else 0
        row = {"query_id": query.query_id, "system": _system(task.alpha), "alpha": task.alpha, "m": m,
               "fairness_question": m > 1, **run.metrics(), "oracle_eu": run.oracle_eu,
               "distinct_lists": len(run.groups), "seed": run.ranking.seed}
        documents = run.ranking.documents_table()[["doc_id", "exposure", "target_exposure"]]
        documents.insert(0, "alpha", task.alpha)
        documents.insert(0, "query_id", query.query_id)
        documents["attributed_exposure"] = run.attributed_exposure
        return SweepResult(task=task, row=row, documents=documents)

    def table(self, results: Sequence[SweepResult], *, wall_seconds: float | None = None,
              generator_calls: int | None = None) -> pd.DataFrame:
        """The tidy per-(query, α) table of ``results`` (in task order), with the sweep's config in ``attrs``."""
        ordered = sorted(results, key=lambda r: (r.task.query_index, r.task.alpha_index))
        table = pd.DataFrame([r.row for r in ordered])
        config = self.config
        table.attrs.update(
            collection=self.collection.name, retriever=self.retriever.name, generator=self.generator.name,
            attributor=self.attributor.name, alphas=list(config.alphas), n_samples=config.n_samples, k=config.k,
            seed=self.seed, candidates=config.candidates, metric=self.metric.value, labels=config.labels,
            prompt_order=config.prompt_order, oracle=config.oracle, query_ids=[q.query_id for q in self.queries],
            complete=len(ordered) == len(self.tasks),
        )
        if wall_seconds is not None:
            table.attrs["wall_seconds"] = wall_seconds
        if generator_calls is not None:
            table.attrs["generator_calls"] = generator_calls
        table.attrs["sampled_rankings"] = len(ordered) * config.n_samples
        return table

    @staticmethod
    def documents(results: Sequence[SweepResult]) -> pd.DataFrame:
        """Per-candidate exposure of every finished task (``query_id, alpha, doc_id, exposure, ...``)."""
        frames = [r.documents for r in sorted(results, key=lambda r: (r.task.query_index, r.task.alpha_index))]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["query_id", "alpha", "doc_id", "exposure", "target_exposure", "attributed_exposure"])


def rag_sweep(collection: Collection, retriever: Retriever, generator, attributor, config: RagSweepConfig,
              *, progress=None) -> pd.DataFrame:
    """Tidy table, one row per (query, α), with EE-D, EE-R, EU, normalised EU, EAR and EAE-D.

    The deterministic retriever is included as ``alpha = inf`` (``system = "deterministic"``). Answers
    are cached across α values and queries, so a top-k list that recurs is generated once.
    ``df.attrs`` records the configuration, the seed, the model names, timings and generator calls.
    ``progress(done, total)`` is called after each (query, α). See :class:`RagSweep` to run it step by step.
    """
    sweep = RagSweep(collection, retriever, generator, attributor, config)
    calls_before = generator.cache.misses
    start = time.perf_counter()
    results = []
    for task in sweep.tasks:
        results.append(sweep.run(task))
        if progress is not None:
            progress(len(results), len(sweep.tasks))
    return sweep.table(results, wall_seconds=time.perf_counter() - start,
                       generator_calls=generator.cache.misses - calls_before)


def disparity_quality_table(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 of the paper: slope of the linear fit of EE-R on EE-D, and the area under the EE-R–EE-D curve.

    Uses the stochastic runs of queries with a fairness question (m > 1). The curve is the α-wise mean
    (EE-D, EE-R), sorted by EE-D. The AUC is trapezoidal over that EE-D range, divided by its width so
    that it reads as the mean EE-R along the curve.
    """
    runs = table[(table["system"] == "stochastic") & table["fairness_question"]].dropna(subset=["ee_r"])
    if runs.empty or runs["alpha"].nunique() < 2:
        raise InvalidParameterError("Table 1 needs stochastic runs at ≥ 2 α values on queries with ≥ 2 useful items")
    slope = float(np.polyfit(runs["ee_d"], runs["ee_r"], 1)[0])
    curve = runs.groupby("alpha")[["ee_d", "ee_r"]].mean().sort_values("ee_d")
    width = curve["ee_d"].iloc[-1] - curve["ee_d"].iloc[0]
    area = float(np.trapezoid(curve["ee_r"], curve["ee_d"]) / width) if width > 0 else float(curve["ee_r"].mean())
    return pd.DataFrame([{"runs": len(runs), "slope": slope, "auc": area}])


EE_D_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0 + 1e-9)


def utility_by_disparity_table(table: pd.DataFrame, *, column: str = "eu", alpha_level: float = 0.05) -> pd.DataFrame:
    """Table 2 of the paper: mean utility per EE-D interval minus the deterministic baseline, with an unpaired t-test.

    Queries without a fairness question are left out. Each stochastic run falls into one interval
    [0, .2), …, [.8, 1.0]. ``difference`` is the mean of ``column`` in the interval minus the mean over
    the deterministic runs of the same queries. ``p_value`` comes from Welch's unpaired t-test
    (scipy), and ``significant`` means p < ``alpha_level``.
    """
    from scipy import stats

    kept = table[table["fairness_question"]].dropna(subset=[column])
    baseline = kept[kept["system"] == "deterministic"][column]
    stochastic = kept[kept["system"] == "stochastic"]
    if baseline.empty:
        raise InvalidParameterError("Table 2 needs the deterministic baseline runs (deterministic_baseline=True)")
    labels = ["[0.0, 0.2)", "[0.2, 0.4)", "[0.4, 0.6)", "[0.6, 0.8)", "[0.8, 1.0]"]
    bins = pd.cut(stochastic["ee_d"], EE_D_BINS, right=False, labels=labels)
    rows = []
    for label in labels:
        values = stochastic.loc[bins == label, column]
        if len(values) == 0:
            rows.append({"ee_d_interval": label, "runs": 0, "mean": np.nan, "difference": np.nan, "p_value": np.nan,
                         "significant": False})
            continue
        p = float(stats.ttest_ind(values, baseline, equal_var=False).pvalue) if len(values) > 1 else np.nan
        rows.append({"ee_d_interval": label, "runs": len(values), "mean": float(values.mean()),
                     "difference": float(values.mean() - baseline.mean()), "p_value": p,
                     "significant": bool(p < alpha_level) if not np.isnan(p) else False})
    out = pd.DataFrame(rows)
    out.attrs["baseline_mean"] = float(baseline.mean())
    return out
