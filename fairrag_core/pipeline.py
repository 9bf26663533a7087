"""One query end to end (Kim & Diaz 2025, Fig. 2): retrieve, sample N rankings at α, generate, attribute, measure.

Metrics of one run (all per query, §3.3 and App. C):

* EE-D, EE-R — fairness and quality of the sampled rankings (:mod:`fairrag_core.exposure`);
* EU = (1/N) Σ_π μ_u(y, ŷ_π) (Eq. 7). Normalised EU = EU / u_max, where u_max is the best utility seen
  over this run's N outputs and N outputs of the stochastic oracle: useful items first, each block
  in random order (App. C.3, Eq. 29–30);
* AR(π) = (1/k) Σ_{d∈π} NLI(d, ŷ_π) and EAR = mean AR (Eq. 8–9);
* ε^a_d = (1/N) Σ_π NLI(d, ŷ_π)·1[d ∈ π] and EAE-D = ‖ε^a‖² / k (Eq. 10–11, normalised like EE-D, so
  it is directly comparable: EAE-D ≤ EE-D, with equality when every retrieved document is credited).

Each distinct top-k list is generated and attributed once (identical lists give identical answers).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .attribution import Attributor
from .corpus import Collection
from .errors import InvalidParameterError
from .generation import Generator
from .metrics.utility import UtilityMetric, utility
from .ranking import RankingConfig, RankingRun, run_ranking
from .retrieval import Retriever
from .sampling import as_generator

__all__ = ["RagConfig", "AnswerGroup", "RagRun", "run_rag", "oracle_rankings"]


@dataclass(frozen=True)
class RagConfig:
    """Everything that determines a RAG run besides the models and the collection."""

    alpha: float
    n_samples: int = 20
    k: int = 5
    seed: int | None = None
    candidates: int | None = None
    min_rel: int = 1
    metric: UtilityMetric = UtilityMetric.ROUGEL
    oracle: bool = True  # sample the stochastic oracle for normalised EU (needs usefulness labels)
    question_in_hypothesis: bool = True  # give the NLI judge the question as context for short answers
    # "sampled": the generator sees the top k in the sampled order (the paper). "retrieval": the same k
    # documents in retrieval-score order. Under the step model MU(i) = 1[i ≤ k] order carries no exposure,
    # and identical *sets* then share one generation (far fewer calls at low α).
    prompt_order: str = "sampled"
    # Seed of the oracle's rankings (default: derived from the run's seed). The oracle does not depend on α,
    # so a sweep passes one seed per query and the cache serves the oracle's answers at every α.
    oracle_seed: int | None = None


@dataclass(frozen=True)
class AnswerGroup:
    """One distinct top-k list: how many samples produced it, its answer, and which documents entail it."""

    positions: tuple[int, ...]  # candidate positions, rank order
    count: int
    answer: str
    entails: tuple[bool, ...]
    entail_probability: tuple[float, ...]
    utility: float | None

    @property
    def attribution_rate(self) -> float:
        return float(np.mean(self.entails))


@dataclass(frozen=True)
class RagRun:
    """Everything one query produced; ``ranking`` holds retrieval, sampling and exposure."""

    ranking: RankingRun
    generator: str
    attributor: str
    metric: UtilityMetric
    groups: tuple[AnswerGroup, ...]
    sample_group: np.ndarray  # (N,) index into groups for each sampled ranking
    eu: float | None
    eu_normalised: float | None
    u_max: float | None
    oracle_eu: float | None
    ear: float
    attributed_exposure: np.ndarray  # (n_candidates,)
    eae_d: float
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ee_d(self) -> float:
        return self.ranking.summary.ee_d.estimate

    @property
    def ee_r(self) -> float | None:
        return None if self.ranking.summary.ee_r is None else self.ranking.summary.ee_r.estimate

    def metrics(self) -> dict[str, float | None]:
        return {"ee_d": self.ee_d, "ee_r": self.ee_r, "eu": self.eu, "eu_normalised": self.eu_normalised,
                "ear": self.ear, "eae_d": self.eae_d}

    def answers_table(self) -> pd.DataFrame:
        """One row per distinct list: samples, answer, utility, AR, cited (entailing) documents."""
        ids = self.ranking.doc_ids
        return pd.DataFrame([
            {"samples": g.count, "ranking": [ids[p] for p in g.positions], "answer": g.answer, "utility": g.utility,
             "attribution_rate": g.attribution_rate,
             "citations": [ids[p] for p, e in zip(g.positions, g.entails) if e]}
            for g in self.groups
        ]).sort_values("samples", ascending=False, kind="stable").reset_index(drop=True)


def oracle_rankings(labels: np.ndarray, n_samples: int, k: int, seed) -> np.ndarray:
    """N top-k lists from the stochastic oracle: useful items first, each block shuffled (App. C.3)."""
    labels = np.asarray(labels, dtype=bool)
    rng = as_generator(seed)
    useful, other = np.flatnonzero(labels), np.flatnonzero(~labels)
    rows = [np.concatenate([rng.permutation(useful), rng.permutation(other)])[:k] for _ in range(n_samples)]
    return np.array(rows, dtype=np.int64)


def _distinct(rankings: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    keys = [tuple(int(i) for i in row) for row in rankings]
    index: dict[tuple[int, ...], int] = {}
    which = np.array([index.setdefault(key, len(index)) for key in keys])
    counts = np.bincount(which, minlength=len(index))
    return list(index), which, counts


def run_rag(collection: Collection, retriever: Retriever, generator: Generator, attributor: Attributor, query: str,
            config: RagConfig, *, useful: np.ndarray | None = None, scores: np.ndarray | None = None,
            n_boot: int = 1000, progress: Callable[[str, int, int], None] | None = None,
            chunk: int | None = None, growing: bool = False,
            on_answer: Callable[[AnswerGroup], None] | None = None) -> RagRun:
    """Run the whole pipeline for one query.

    ``useful`` (one bool per collection document) sets the labels for EE-R and the oracle. Without it, the
    collection's qrels are used (``rel ≥ min_rel``) when the query is one of the collection's queries.
    Utility needs the query's gold answer. A free query still gets EE-D, EAR and EAE-D, but EU is None.

    Distinct lists are processed ``chunk`` at a time (default: all at once): generate their answers, then
    check each document against every answer of the chunk that saw it. With ``growing``, chunks double
    after the first two (1, 1, 2, 4, … × ``chunk``, at most 16 × ``chunk``): the first answers come fast, and
    fewer, larger chunks cost less per-call overhead (the llama-cpp judge keeps each document's KV state across
    chunks, so a document's ~3 s of prompt is paid once either way). ``progress(stage, done, total)``
    (stage ``"generate"`` or ``"attribute"``, counting distinct lists) is called after each step, and
    ``on_answer(group)`` as soon as an answer has its citations, so a page can show answers as they come. Finished answers and entailment judgements stay in the generator's and the
    attributor's caches, so a run that is interrupted between calls resumes where it stopped.
    """
    timings: dict[str, float] = {}
    metric = UtilityMetric(config.metric)
    start = time.perf_counter()
    ranking = run_ranking(
        collection, retriever, query,
        RankingConfig(alpha=config.alpha, n_samples=config.n_samples, k=config.k, seed=config.seed,
                      candidates=config.candidates, min_rel=config.min_rel),
        scores=scores, useful=useful, n_boot=n_boot,
    )
    timings["retrieve_sample"] = time.perf_counter() - start
    docs = [collection.documents[i] for i in ranking.candidate_indices]
    gold = ranking.query.answer if ranking.query is not None else None

    if config.prompt_order not in ("sampled", "retrieval"):
        raise InvalidParameterError(f"prompt_order must be 'sampled' or 'retrieval', got {config.prompt_order!r}")
    # candidate positions are in retrieval-score order, so sorting a row gives the retrieval order
    shown = np.sort(ranking.rankings, axis=1) if config.prompt_order == "retrieval" else ranking.rankings
    lists, which, counts = _distinct(shown)
    # Most frequent lists first: a caller that shows answers as they come shows the typical ones first.
    order = np.argsort(-counts, kind="stable")
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(order.size)
    lists, counts, which = [lists[i] for i in order], counts[order], rank_of[which]
    chunk = len(lists) if chunk is None else chunk
    if chunk < 1:
        raise InvalidParameterError(f"chunk must be ≥ 1, got {chunk}")
    contexts_for = (lambda n: [ranking.query_text] * n) if config.question_in_hypothesis else (lambda n: None)
    timings["generate"] = timings["attribute"] = 0.0
    groups: list[AnswerGroup] = []
    sizes = [chunk, chunk, *(chunk * 2**i for i in range(1, 5))] if growing else [chunk]
    first, step = 0, 0
    while first < len(lists):
        size = sizes[min(step, len(sizes) - 1)]
        part = lists[first : first + size]
        start = time.perf_counter()
        answers = generator.answer_rankings(ranking.query_text, [[docs[p] for p in key] for key in part])
        timings["generate"] += time.perf_counter() - start
        if progress is not None:
            progress("generate", first + len(part), len(lists))
        start = time.perf_counter()
        # One attributor call per document, over every answer of the chunk that saw it: the LLM judge puts the
        # premise before the claim, so each further answer about a document costs only its own tokens.
        readers: dict[int, list[tuple[int, int]]] = {}
        for g, key in enumerate(part):
            for j, p in enumerate(key):
                readers.setdefault(p, []).append((g, j))
        probs_of: dict[tuple[int, int], np.ndarray] = {}
        for p, pairs in readers.items():
            rows = attributor.label_probabilities([docs[p].full_text] * len(pairs), [answers[g] for g, _ in pairs],
                                                  contexts=contexts_for(len(pairs)))
            probs_of.update(zip(pairs, rows))
        timings["attribute"] += time.perf_counter() - start
        for g, key in enumerate(part):
            block = [probs_of[(g, j)] for j in range(len(key))]
            group = AnswerGroup(
                positions=key, count=int(counts[first + g]), answer=answers[g],
                entails=tuple(bool(row.argmax() == 0) for row in block),
                entail_probability=tuple(float(row[0]) for row in block),
                utility=None if not gold else utility(answers[g], gold, metric),
            )
            groups.append(group)
            if on_answer is not None:
                on_answer(group)
        if progress is not None:
            progress("attribute", first + len(part), len(lists))
        first, step = first + len(part), step + 1

    n_cand = ranking.candidate_indices.size
    attributed = np.zeros(n_cand)
    for g in groups:
        for p, e in zip(g.positions, g.entails):
            attributed[p] += g.count * e
    attributed /= config.n_samples
    ear = float(sum(g.count * g.attribution_rate for g in groups) / config.n_samples)
    eae_d = float(attributed @ attributed / config.k)

    eu = eu_norm = u_max = oracle_eu = None
    if gold:
        utils = np.array([groups[w].utility for w in which])
        eu = float(utils.mean())
        u_max = float(utils.max())
        if config.oracle and ranking.labels is not None and ranking.labels.any():
            start = time.perf_counter()
            oracle_seed = config.oracle_seed if config.oracle_seed is not None else [ranking.seed, 1]
            oracle = oracle_rankings(ranking.labels, config.n_samples, config.k, np.random.default_rng(oracle_seed))
            o_lists, o_which, _ = _distinct(np.sort(oracle, axis=1) if config.prompt_order == "retrieval" else oracle)
            o_answers = generator.answer_rankings(ranking.query_text, [[docs[p] for p in key] for key in o_lists])
            o_utils = np.array([utility(a, gold, metric) for a in o_answers])[o_which]
            oracle_eu = float(o_utils.mean())
            u_max = max(u_max, float(o_utils.max()))
            timings["oracle"] = time.perf_counter() - start
        eu_norm = eu / u_max if u_max > 0 else 0.0  # nothing scored above 0: EU is 0 as well
    return RagRun(ranking=ranking, generator=generator.name, attributor=attributor.name, metric=metric,
                  groups=tuple(groups), sample_group=which, eu=eu, eu_normalised=eu_norm, u_max=u_max,
                  oracle_eu=oracle_eu, ear=ear, attributed_exposure=attributed, eae_d=eae_d, timings=timings)
