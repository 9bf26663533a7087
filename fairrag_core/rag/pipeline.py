"""One query end to end (Kim & Diaz 2025, Fig. 2): retrieve, sample N rankings at α, generate, attribute, measure.

Metrics of one run (all per query, §3.3 and App. C):

* EE-D, EE-R — fairness and quality of the sampled rankings (:mod:`fairrag_core.metrics.exposure`);
* EU = (1/N) Σ_π μ_u(y, ŷ_π) (Eq. 7). Normalised EU = EU / u_max, where u_max is the best utility seen
  over this run's N outputs and N outputs of the stochastic oracle: useful items first, each block
  in random order (App. C.3, Eq. 29–30);
* EAR and EAE-D — attribution of the answers (Eq. 8–11, :mod:`fairrag_core.metrics.attribution`).

Each distinct top-k list is generated and attributed once (identical lists give identical answers). Lists are
processed most frequent first, optionally in chunks that a caller (the app) receives as they finish
(:class:`AnswerStream`).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..checks import check_positive_int
from ..data import Collection, Document
from ..metrics.attribution import (
    NOTHING_ATTRIBUTED,
    attributed_exposure,
    eae_d_per_cited,
    eae_disparity,
    expected_attribution_rate,
)
from ..metrics.utility import NO_UTILITY_ABOVE_ZERO, UtilityMetric, gold_for, resolve_metric, utility
from ..models.llm import Completion
from ..options import Kind, option
from ..ranking.run import RankingConfig, RankingRun, run_ranking
from ..retrieval import Retriever
from ..seeds import SeedLike, as_generator
from .attribution import Attributor
from .citations import CitationPolicy
from .degenerate import AnswerFlag, answer_flags
from .generation import Generator, build_prompt
from .judging import JudgeItem, judge_answers

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["PromptOrder", "AnswerSettings", "RagConfig", "ListAnswer", "RagRun", "AnswerStream", "run_rag",
           "oracle_rankings", "distinct_lists", "shown_lists"]


class PromptOrder(str, enum.Enum):
    """In which order the generator sees the k retrieved documents.

    ``SAMPLED``: as sampled (the paper). ``RETRIEVAL``: the same k documents in retrieval-score order; under the
    step model MU(i) = 1[i ≤ k] order carries no exposure, and identical *sets* then share one generation (far
    fewer calls at low α).
    """

    SAMPLED = "sampled"
    RETRIEVAL = "retrieval"


@dataclass(frozen=True, kw_only=True)
class AnswerSettings(CitationPolicy):
    """How answers are made and scored, shared by one-query runs and sweeps.

    ``metric``: utility against the gold answers (``auto``: short-answer match where the collection has short
    answers, else ROUGE-L; :func:`~fairrag_core.metrics.utility.resolve_metric`; degenerate answers score 0).
    ``oracle``: also answer the stochastic oracle's lists, so that normalised EU divides by the best answer the
    collection allows (needs usefulness labels); without it,
    u_max is the run's own best answer. ``question_in_hypothesis``: give the NLI judge the question as context
    (short answers are often not claims on their own). ``exclude_degenerate``: leave degenerate answers
    (:mod:`fairrag_core.rag.degenerate`: empty, prompt echo, repetition loop, cut mid-sentence) out of EU and EAR;
    either way their share is reported as ``degenerate_share``. ``per_claim``, ``entail_threshold`` and
    ``control_margin``, ``min_support`` make the citation rule (:mod:`fairrag_core.rag.citations`); the defaults
    are the paper's (the whole answer, entailment the most probable class). The settings *are* a
    :class:`~fairrag_core.rag.citations.CitationPolicy` (the one type of the rule); ``policy.citation_fields()``
    gives a preset's rule as keyword arguments.
    """

    metric: UtilityMetric = option("--metric", default=UtilityMetric.AUTO,
                                   help="utility metric: auto (short-answer match where the collection has short "
                                        "answers, else rougeL), or one named")
    prompt_order: PromptOrder = option(
        "--prompt-order", default=PromptOrder.SAMPLED,
        help="order of the k documents in the prompt: as sampled (paper) or by retrieval score (identical sets then "
             "share one generation)")
    oracle: bool = option("--no-oracle", kind=Kind.OFF, default=True,
                          help="skip the stochastic oracle's answers (fewer generations; normalised EU then divides by "
                               "the best answer of each run itself)")
    question_in_hypothesis: bool = True
    exclude_degenerate: bool = False


@dataclass(frozen=True, kw_only=True)
class RagConfig(RankingConfig, AnswerSettings):
    """Everything that determines a RAG run besides the models and the collection.

    ``oracle_seed`` seeds the oracle's rankings (default: derived from the run's seed). The oracle does not
    depend on α, so a sweep passes one seed per query and the cache serves the oracle's answers at every α.
    """

    n_samples: int = 20
    oracle_seed: int | None = None


@dataclass(frozen=True)
class ListAnswer:
    """One distinct top-k list: how many samples produced it, its answer, and which documents entail it."""

    positions: tuple[int, ...]  # candidate positions, rank order
    count: int
    answer: str
    entails: tuple[bool, ...]
    entail_probability: tuple[float, ...]  # NaN: not judged (degenerate answer, or no claim passed lexical support)
    utility: float | None
    finish_reason: str = "unknown"
    flags: tuple[AnswerFlag, ...] = ()
    cached: bool = False  # the answer came from the answer cache (memory or disk), not from the model this time
    support: tuple[float, ...] = ()  # lexical support of the answer in each document (the largest over its claims)

    @property
    def attribution_rate(self) -> float:
        return float(np.mean(self.entails))

    @property
    def degenerate(self) -> bool:
        return bool(self.flags)


@dataclass(frozen=True)
class RagRun:
    """Everything one query produced; ``ranking`` holds retrieval, sampling and exposure."""

    ranking: RankingRun
    generator: str
    attributor: str
    metric: UtilityMetric
    answers: tuple[ListAnswer, ...]  # one per distinct list, most frequent first
    answer_of_sample: np.ndarray  # (N,) index into ``answers`` for each sampled ranking
    eu: float | None
    eu_normalised: float | None
    u_max: float | None
    oracle_eu: float | None
    ear: float
    attributed_exposure: np.ndarray  # (n_candidates,)
    eae_d: float | None  # None when no answer cites any document: no attributed exposure to be (un)fair about
    degenerate_share: float = 0.0  # share of the N samples whose answer is degenerate
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def eae_d_per_cited(self) -> float | None:
        """EAE-D/cited, comparable with EE-D (:func:`~fairrag_core.metrics.attribution.eae_d_per_cited`); None when
        nothing is cited."""
        return eae_d_per_cited(self.attributed_exposure) if self.attributed_exposure.any() else None

    @property
    def ee_d(self) -> float:
        """EE-D of the N sampled rankings as shown everywhere: bias-corrected, inside its interval (the plug-in of
        the paper's tables is ``ranking.summary.ee_d_plug_in``)."""
        return self.ranking.summary.ee_d_value

    @property
    def ee_r(self) -> float | None:
        """EE-R plug-in; None without relevance labels or when no candidate is useful."""
        return self.ranking.summary.ee_r_plug_in

    @property
    def undefined(self) -> dict[str, str]:
        """Each metric left without a value (None), with the reason."""
        reasons = {k: v for k, v in self.ranking.summary.undefined.items() if k == "ee_r"}
        if self.eae_d is None:
            reasons["eae_d"] = reasons["eae_d_per_cited"] = NOTHING_ATTRIBUTED
        if self.eu is not None and self.eu_normalised is None:
            reasons["eu_normalised"] = NO_UTILITY_ABOVE_ZERO
        return reasons

    def metrics(self) -> dict[str, float | None]:
        return {"ee_d": self.ee_d, "ee_d_plug_in": self.ranking.summary.ee_d_plug_in, "ee_r": self.ee_r,
                "eu": self.eu, "eu_normalised": self.eu_normalised,
                "ear": self.ear, "eae_d": self.eae_d, "eae_d_per_cited": self.eae_d_per_cited,
                "degenerate_share": self.degenerate_share}

    def answers_table(self) -> pd.DataFrame:
        """One row per distinct list: samples, answer, utility, AR, cited (entailing) documents."""
        import pandas as pd

        ids = self.ranking.doc_ids
        return pd.DataFrame([
            {"samples": a.count, "ranking": [ids[p] for p in a.positions], "answer": a.answer, "utility": a.utility,
             "attribution_rate": a.attribution_rate, "flags": [f.value for f in a.flags],
             "citations": [ids[p] for p, e in zip(a.positions, a.entails) if e]}
            for a in self.answers
        ]).sort_values("samples", ascending=False, kind="stable").reset_index(drop=True)


@dataclass(frozen=True, kw_only=True)
class AnswerStream:
    """How :func:`run_rag` hands answers to a caller while it runs (the app's Generate button).

    Distinct lists are processed ``chunk`` at a time (None: all at once): generate their answers, then check each
    document against every answer of the chunk that saw it. With ``growing``, chunks double after the first two
    (1, 1, 2, 4, … × ``chunk``, at most 16 × ``chunk``): the first answers come fast, and fewer, larger chunks
    cost less per-call overhead (the llama-cpp judge keeps each document's KV state across chunks, so a
    document's ~3 s of prompt is paid once either way).

    ``progress(stage, done, total)`` is called once per unit of work, whatever the chunking: ``"generate"`` after
    each answer (``done`` of ``total`` distinct lists generated), ``"judge"`` after each judged document (``done``
    of ``total`` judge calls of the current chunk) and ``"attribute"`` when a chunk's answers have their citations
    (``done`` of ``total`` lists ready). ``on_answer(answer)`` is called as soon as an answer has its citations.
    ``tick()`` is called before every model call (each answer, each judged document), so that a page's Stop button
    takes effect within one call rather than one chunk.
    """

    chunk: int | None = None
    growing: bool = False
    progress: Callable[[str, int, int], None] | None = None
    on_answer: Callable[[ListAnswer], None] | None = None
    tick: Callable[[], None] | None = None

    def sizes(self, n_lists: int) -> Iterator[tuple[int, int]]:
        """``(first, stop)`` index ranges of the chunks over ``n_lists`` lists."""
        chunk = n_lists if self.chunk is None else check_positive_int(self.chunk, "chunk",
                                                                         hint="distinct lists per step")
        steps = [chunk, chunk, *(chunk * 2**i for i in range(1, 5))] if self.growing else [chunk]
        first, step = 0, 0
        while first < n_lists:
            stop = min(first + steps[min(step, len(steps) - 1)], n_lists)
            yield first, stop
            first, step = stop, step + 1


def oracle_rankings(labels: np.ndarray, n_samples: int, k: int, seed: SeedLike) -> np.ndarray:
    """N top-k lists from the stochastic oracle: useful items first, each block shuffled (App. C.3)."""
    useful_mask = np.asarray(labels, dtype=bool)
    rng = as_generator(seed)
    useful, other = np.flatnonzero(useful_mask), np.flatnonzero(~useful_mask)
    rows = [np.concatenate([rng.permutation(useful), rng.permutation(other)])[:k] for _ in range(n_samples)]
    return np.array(rows, dtype=np.int64)


def distinct_lists(rankings: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    """The distinct rows of ``rankings``, most frequent first (ties: first seen first).

    Returns ``(lists, which, counts)``: ``which[i]`` is the index in ``lists`` of row i.

    >>> distinct_lists(np.array([[0, 1], [2, 3], [2, 3]]))
    ([(2, 3), (0, 1)], array([1, 0, 0]), array([2, 1]))
    """
    index: dict[tuple[int, ...], int] = {}
    which = np.array([index.setdefault(tuple(int(i) for i in row), len(index)) for row in rankings])
    counts = np.bincount(which, minlength=len(index))
    order = np.argsort(-counts, kind="stable")
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(order.size)
    keys = list(index)
    return [keys[i] for i in order], rank_of[which], counts[order]


def shown_lists(ranking: RankingRun, config: RagConfig) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    """The distinct lists the generator is shown for ``ranking`` under ``config``'s prompt order (see
    :func:`distinct_lists`): what :func:`run_rag` answers, and what ``warm`` plans and counts before it starts."""
    # candidate positions are in retrieval-score order, so sorting a row gives the retrieval order
    shown = np.sort(ranking.rankings, axis=1) if config.prompt_order is PromptOrder.RETRIEVAL else ranking.rankings
    return distinct_lists(shown)


def _control_position(key: tuple[int, ...], n_candidates: int) -> int | None:
    """The lowest-ranked candidate the list did not show (the control premise of the specificity check)."""
    shown = set(key)
    return next((p for p in range(n_candidates - 1, -1, -1) if p not in shown), None)


def _generate(generator: Generator, question: str, rankings: list[list[Document]], stream: AnswerStream, *,
              done: int, total: int) -> list[Completion]:
    """The chunk's answers. A caller that wants to stop in between (``stream.tick``) or to see each answer counted
    (``stream.progress``) gets them one by one as they are ready (:meth:`Generator.complete_each`: a batching
    backend still decodes the chunk's lists together, and a ``tick`` that raises cancels the rest); ``tick`` runs
    before the first answer is awaited and after each. ``done`` of ``total`` lists were generated before this
    chunk."""
    if stream.tick is None and stream.progress is None:
        return generator.complete_rankings(question, rankings)
    prompts = [build_prompt(question, docs, generator.style) for docs in rankings]
    out: list[Completion | None] = [None] * len(prompts)
    if stream.tick is not None:
        stream.tick()
    answers = generator.complete_each(prompts)
    try:
        for n, (i, completion) in enumerate(answers, start=1):
            out[i] = completion
            if stream.progress is not None:
                stream.progress("generate", done + n, total)
            if stream.tick is not None and n < len(prompts):
                stream.tick()
    finally:
        answers.close()
    return out


def scored_utility(answer: str, gold, metric: UtilityMetric, flags: Sequence[AnswerFlag]) -> float:
    """An answer's utility: 0 by definition when it is degenerate (flagged: empty, an echo of the prompt, the
    question or a document title, a loop, cut off, pointing at the documents), so that a broken answer never scores
    above a correct one; else ``metric`` against ``gold``."""
    return 0.0 if flags else utility(answer, gold, metric)


def _oracle_utilities(ranking: RankingRun, generator: Generator, docs: Sequence[Document], gold,
                      config: RagConfig, metric: UtilityMetric) -> np.ndarray:
    """Utility of the stochastic oracle's N answers (for u_max), one generation per distinct oracle list."""
    oracle_seed = config.oracle_seed if config.oracle_seed is not None else [ranking.seed, 1]
    oracle = oracle_rankings(ranking.labels, config.n_samples, config.k, np.random.default_rng(oracle_seed))
    shown = np.sort(oracle, axis=1) if config.prompt_order is PromptOrder.RETRIEVAL else oracle
    index: dict[tuple[int, ...], int] = {}
    which = np.array([index.setdefault(tuple(int(i) for i in row), len(index)) for row in shown])
    lists = [[docs[p] for p in key] for key in index]
    answers = generator.answer_rankings(ranking.query_text, lists)
    return np.array([scored_utility(a, gold, metric, answer_flags(a, question=ranking.query_text,
                                                                   titles=[d.title for d in shown_docs],
                                                                   sources=[d.provider for d in shown_docs]))
                     for a, shown_docs in zip(answers, lists)])[which]


def run_rag(collection: Collection, retriever: Retriever, generator: Generator, attributor: Attributor, query: str,
            config: RagConfig, *, useful: np.ndarray | None = None, scores: np.ndarray | None = None,
            n_boot: int = 1000, stream: AnswerStream | None = None) -> RagRun:
    """Run the whole pipeline for one query.

    ``useful`` (one bool per collection document) sets the labels for EE-R and the oracle. Without it, the
    collection's qrels are used (``rel ≥ min_rel``) when the query is one of the collection's queries.
    Utility needs the query's gold answer. A free query still gets EE-D, EAR and EAE-D, but EU is None.
    ``stream`` hands answers to the caller as they come (:class:`AnswerStream`). Finished answers and
    entailment judgements stay in the generator's and the attributor's caches, so a run that is interrupted
    between chunks resumes where it stopped.
    """
    stream = stream or AnswerStream()
    timings: dict[str, float] = {}
    start = time.perf_counter()
    ranking = run_ranking(collection, retriever, query, config, scores=scores, useful=useful, n_boot=n_boot)
    timings["retrieve_sample"] = time.perf_counter() - start
    docs = [collection.documents[i] for i in ranking.candidate_indices]
    metric = resolve_metric(config.metric, collection.queries)
    gold = gold_for(ranking.query, metric)
    lists, which, counts = shown_lists(ranking, config)
    context = ranking.query_text if config.question_in_hypothesis else None

    timings["generate"] = timings["attribute"] = 0.0
    answers: list[ListAnswer] = []
    for first, stop in stream.sizes(len(lists)):
        part = lists[first:stop]
        start = time.perf_counter()
        completions = _generate(generator, ranking.query_text, [[docs[p] for p in key] for key in part], stream,
                                done=first, total=len(lists))
        texts = [c.text for c in completions]
        timings["generate"] += time.perf_counter() - start
        flags_of = [answer_flags(t, question=ranking.query_text, finish_reason=c.finish_reason,
                                 titles=[docs[p].title for p in key], sources=[docs[p].provider for p in key])
                    for t, c, key in zip(texts, completions, part)]
        # a degenerate answer cites nothing under skip_degenerate: its pairs are not even judged
        start = time.perf_counter()
        items = [JudgeItem(texts[g], key, question=ranking.query_text, context=context,
                           control=_control_position(key, len(docs)) if config.needs_control else None,
                           skip=bool(flags_of[g]) and config.skip_degenerate) for g, key in enumerate(part)]
        judged = None if stream.progress is None else (lambda done, total: stream.progress("judge", done, total))
        verdicts = judge_answers(attributor, docs, items, config.citation_policy, tick=stream.tick, progress=judged)
        timings["attribute"] += time.perf_counter() - start
        for g, key in enumerate(part):
            block = verdicts[g]
            flags = flags_of[g]
            answer = ListAnswer(
                positions=key, count=int(counts[first + g]), answer=texts[g],
                entails=tuple(v.cited for v in block),
                entail_probability=tuple(v.p_entail for v in block),
                support=tuple(v.support for v in block),
                utility=None if not gold else scored_utility(texts[g], gold, metric, flags),
                finish_reason=completions[g].finish_reason,
                flags=flags,
                cached=completions[g].cached,
            )
            answers.append(answer)
            if stream.on_answer is not None:
                stream.on_answer(answer)
        if stream.progress is not None:
            stream.progress("attribute", stop, len(lists))

    entails = np.array([a.entails for a in answers])
    positions = np.array([a.positions for a in answers], dtype=np.int64)
    weights = np.array([a.count for a in answers], dtype=np.int64)
    attributed = attributed_exposure(positions, entails, ranking.candidate_indices.size, counts=weights)
    degenerate = np.array([a.degenerate for a in answers])
    degenerate_share = float(weights @ degenerate / weights.sum())
    # EAR and EU over the kept answers (all of them unless degenerate ones are excluded and some remain)
    kept = ~degenerate if config.exclude_degenerate and not degenerate.all() else np.ones_like(degenerate)
    ear = expected_attribution_rate(entails[kept], counts=weights[kept])

    eu = eu_norm = u_max = oracle_eu = None
    if gold:
        utils = np.array([answers[w].utility for w in which if kept[w]])
        eu, u_max = float(utils.mean()), float(utils.max())
        if config.oracle and ranking.labels is not None and ranking.labels.any():
            start = time.perf_counter()
            oracle_utils = _oracle_utilities(ranking, generator, docs, gold, config, metric)
            oracle_eu = float(oracle_utils.mean())
            u_max = max(u_max, float(oracle_utils.max()))
            timings["oracle"] = time.perf_counter() - start
        eu_norm = eu / u_max if u_max > 0 else None  # nothing scored above 0: 0/0, undefined
    return RagRun(ranking=ranking, generator=generator.name, attributor=attributor.name, metric=metric,
                  answers=tuple(answers), answer_of_sample=which, eu=eu, eu_normalised=eu_norm, u_max=u_max,
                  oracle_eu=oracle_eu, ear=ear, attributed_exposure=attributed,
                  eae_d=eae_disparity(attributed, config.k) if attributed.any() else None,
                  degenerate_share=degenerate_share, timings=timings)
