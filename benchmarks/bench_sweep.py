"""Generator calls, judge calls, tokens and wall time of the RAG sweep against the naive loop.

The naive loop does, for every (query, α) run, what the sweep's metrics need without sharing any work:
one generation per sampled ranking and per oracle ranking (for normalised EU), then one NLI judgement per
document of each sampled ranking, in sampled order. The sweep (:class:`fairrag_core.RagSweep`, the code
the CLI and the app run) generates each distinct top-k list once, serves recurring lists from its cache
(across samples, α values and the oracle), judges each (document, answer) pair once, and orders prompts
so that llama-cpp reuses the KV cache of shared prefixes; the judge also keeps each document's KV state
and restores it (~14 ms) instead of evaluating the document again. Both use the same models, prompts
and llama-cpp backend, whose reuse of the previous prompt's common prefix is automatic.

On a CPU a llama-cpp call costs about ``c + prompt_tokens / p + generated_tokens / g`` seconds, so the
benchmark has three parts:

1. **count** — both methods run on *dry* models: the real tokenizers and chat templates, llama-cpp's
   prefix-reuse rule and kept states, no weights. Answers are placeholders of ``--answer-tokens`` tokens, all different
   (real answers sometimes coincide, which only helps the sweep). This gives exact calls and prompt
   tokens for the full configuration (default: 4 α × N = 100 × 10 queries of running-shoes, k = 5).
2. **calibrate** — real SmolLM2 and Qwen calls on this machine give ``c``, ``p`` and ``g`` (least squares).
3. **check** — a small configuration is run for real both ways and timed; its predicted wall times (from
   its own real token counts, and from the dry counts) are printed beside the measured ones.

The predicted wall time of the full configuration is the calibrated cost of its counted tokens.
Run: ``python benchmarks/bench_sweep.py [--alphas 1,2,4,8] [--samples 100] [--queries 10] [--baseline]
[--no-oracle] [--skip-check] [--cost benchmarks/results/sweep_costs.json]``. The real part takes about
15 minutes on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from fairrag_core import BM25Retriever, load_collection
from fairrag_core.models.catalog import load_language_model
from fairrag_core.models.llama_cpp import LlamaCppModel
from fairrag_core.models.llm import Completion, TokenUsage, common_prefix
from fairrag_core.rag.attribution import _JUDGE_OPTIONS, LLMJudgeAttributor, load_attributor
from fairrag_core.rag.generation import Generator, build_prompt
from fairrag_core.rag.pipeline import oracle_rankings
from fairrag_core.rag.sweep import RagSweep, RagSweepConfig
from fairrag_core.ranking import RankingConfig, run_ranking


class DryModel(LlamaCppModel):
    """:class:`LlamaCppModel` with its tokenizer, chat template and KV bookkeeping (prefix reuse, kept document
    states) but no weights: evaluating tokens only records them. Kept states are never evicted here (the real
    budget, 1 GB, holds ~140 of the judge's ~7 MB document states; running-shoes has 92 documents)."""

    def __init__(self, real: LlamaCppModel, answer_tokens: int) -> None:
        super().__init__(real.path, name=real.name, n_ctx=real.n_ctx)
        self.answer_tokens = answer_tokens
        self._answers = 0

    def _load(self):
        if self._llm is None:
            from llama_cpp import Llama
            from llama_cpp._utils import suppress_stdout_stderr

            with suppress_stdout_stderr(disable=False):  # llama.cpp warns about the context of a vocab-only model
                self._llm = Llama(model_path=str(self.path), vocab_only=True, n_ctx=self.n_ctx, verbose=False)
        return self._llm

    def _eval(self, tokens):
        llm = self._llm
        llm.input_ids[llm.n_tokens : llm.n_tokens + len(tokens)] = tokens
        llm.n_tokens += len(tokens)

    def _last_logits(self):
        return np.zeros(self._llm.n_vocab())

    def _keep_state(self, key):
        self._kept[key] = b""

    def _restore_state(self, state, tokens):
        self._llm.input_ids[: len(tokens)] = tokens
        self._llm.n_tokens = len(tokens)

    def complete(self, prompts, decoding=None):
        llm, out = self._load(), [Completion("")] * len(prompts)
        for i in self.prefix_order(prompts):
            tokens = llm.tokenize(self._render(prompts[i]).encode("utf-8"), add_bos=False, special=True)
            reused = common_prefix(llm.input_ids[: llm.n_tokens], tokens)
            self._answers += 1
            answer = f"answer {self._answers} " + "word " * max(0, self.answer_tokens - 4)
            llm.n_tokens = reused
            self._eval(tokens[reused:] + llm.tokenize(answer.encode("utf-8"), add_bos=False))
            self.usage.add(len(tokens) - reused, reused, self.answer_tokens)
            out[i] = Completion(answer.strip(), "stop", self.answer_tokens)
        return out


def make_sweep(collection, retriever, generator, judge, args, alphas, n_samples, queries) -> RagSweep:
    query_ids = tuple(q.query_id for q in collection.queries[:queries])
    return RagSweep(collection, retriever, generator, judge,
                    RagSweepConfig(alphas=tuple(alphas), n_samples=n_samples, k=args.k, seed=args.seed,
                                   candidates=args.candidates, query_ids=query_ids,
                                   deterministic_baseline=args.baseline, oracle=not args.no_oracle))


def run_sweep(sweep: RagSweep) -> None:
    for task in sweep.tasks:
        sweep.run(task)


def run_naive(sweep: RagSweep, generator: Generator, judge: LLMJudgeAttributor, *, timer=None) -> None:
    """Every sampled ranking and every oracle ranking generated, every sampled (document, answer) judged, no sharing."""
    config, collection = sweep.config, sweep.collection
    for task in sweep.tasks:
        query = sweep.queries[task.query_index]
        ranking = run_ranking(collection, sweep.retriever, query.text,
                              RankingConfig(alpha=task.alpha, n_samples=config.n_samples, k=config.k, seed=task.seed,
                                            candidates=config.candidates, min_rel=config.min_rel),
                              useful=sweep.labels[query.query_id], n_boot=1)
        docs = [collection.documents[i] for i in ranking.candidate_indices]
        for row in ranking.rankings:
            shown = [docs[p] for p in row]
            answer = _timed(timer, "generate", generator.model.generate,
                            [build_prompt(query.text, shown, generator.style)],
                            max_new_tokens=generator.max_new_tokens)[0]
            for doc in shown:
                _timed(timer, "judge", judge.model.option_probabilities,
                       judge.prompt(doc.full_text, answer, query.text), _JUDGE_OPTIONS)
        if config.oracle and ranking.labels is not None and ranking.labels.any():
            oracle = oracle_rankings(ranking.labels, config.n_samples, config.k,
                                     np.random.default_rng(task.oracle_seed))
            for row in oracle:
                _timed(timer, "generate", generator.model.generate,
                       [build_prompt(query.text, [docs[p] for p in row], generator.style)],
                       max_new_tokens=generator.max_new_tokens)


def _timed(timer, role, fn, *args, **kwargs):
    if timer is None:
        return fn(*args, **kwargs)
    model = fn.__self__
    before, start = model.usage.snapshot(), time.perf_counter()
    out = fn(*args, **kwargs)
    timer.append((role, model.usage - before, time.perf_counter() - start))
    return out


@dataclass
class Cost:
    """Seconds per call, per prompt token evaluated and per generated token, fitted on this machine."""

    per_call: float
    per_prompt_token: float
    per_generated_token: float

    def seconds(self, usage: TokenUsage) -> float:
        return (self.per_call * usage.calls + self.per_prompt_token * usage.prompt_tokens
                + self.per_generated_token * usage.generated_tokens)


def fit_cost(observations) -> Cost:
    rows = np.array([[1.0, u.prompt_tokens, u.generated_tokens] for u, _ in observations])
    seconds = np.array([s for _, s in observations])
    used = rows[:, 2].any()
    from scipy.optimize import nnls

    coef, _ = nnls(rows if used else rows[:, :2], seconds)
    return Cost(coef[0], coef[1], coef[2] if used else 0.0)


def count(collection, retriever, gen_real, judge_real, args, alphas, n_samples, queries):
    """(sweep usage, naive usage) per role on dry models: exact calls and tokens."""
    out = {}
    for method in ("sweep", "naive"):
        gen = Generator(DryModel(gen_real, args.answer_tokens))
        judge = LLMJudgeAttributor(DryModel(judge_real, 0))
        sweep = make_sweep(collection, retriever, gen, judge, args, alphas, n_samples, queries)
        run_sweep(sweep) if method == "sweep" else run_naive(sweep, gen, judge)
        out[method] = {"generate": gen.model.usage, "judge": judge.model.usage}
    return out


def describe(usage: dict[str, TokenUsage], cost: dict[str, Cost] | None = None) -> str:
    parts = []
    for role, u in usage.items():
        text = f"{role} {u.calls:,} calls, {u.prompt_tokens:,} prompt tokens evaluated ({u.reused_tokens:,} reused)"
        if cost is not None:
            text += f" ≈ {cost[role].seconds(u) / 3600:.2f} h"
        parts.append(text)
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collection", default="running-shoes")
    parser.add_argument("--alphas", default="1,2,4,8")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=None)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--baseline", action="store_true", help="add the deterministic baseline (α = ∞) to both")
    parser.add_argument("--no-oracle", action="store_true", help="no oracle answers (sampled rankings only) in both")
    parser.add_argument("--answer-tokens", type=int, default=30, help="length of the dry placeholder answers")
    parser.add_argument("--generator", default="smollm2-135m")
    parser.add_argument("--judge", default="qwen-judge")
    parser.add_argument("--check-alphas", default="2,8")
    parser.add_argument("--check-samples", type=int, default=10)
    parser.add_argument("--skip-check", action="store_true", help="counts and the calibration only")
    parser.add_argument("--cost", default=None,
                        help="JSON file of the fitted costs: read if it exists (no refit), else fitted and written")
    args = parser.parse_args()
    alphas = [float(a) for a in args.alphas.split(",")]
    collection = load_collection(args.collection)
    retriever = BM25Retriever(collection.texts)
    gen_real = load_language_model(args.generator)
    judge = load_attributor(args.judge)
    if not isinstance(gen_real, LlamaCppModel) or not isinstance(judge.model, LlamaCppModel):
        raise SystemExit("the token model needs llama-cpp models (the offline defaults)")

    start = time.perf_counter()
    counts = count(collection, retriever, gen_real, judge.model, args, alphas, args.samples, args.queries)
    print(f"{args.collection}: {args.queries} queries × α {alphas}{' + deterministic' if args.baseline else ''}"
          f"{'' if args.no_oracle else ' + oracle'} "
          f"× N = {args.samples}, k = {args.k}, candidates = {args.candidates or 'all'} "
          f"(counted on dry models in {time.perf_counter() - start:.0f} s)")
    for method in ("naive", "sweep"):
        print(f"  {method:5}: {describe(counts[method])}")
    for role in ("generate", "judge"):
        n, s = counts["naive"][role], counts["sweep"][role]
        print(f"  {role}: {n.calls / s.calls:.2f}× fewer calls, "
              f"{n.prompt_tokens / s.prompt_tokens:.2f}× fewer prompt tokens")

    # Calibrate on real calls: the naive loop of a small configuration, timed call by call.
    gen = Generator(gen_real)
    small = make_sweep(collection, retriever, gen, judge, args, [float(a) for a in args.check_alphas.split(",")],
                       args.check_samples, 1)
    saved = Path(args.cost) if args.cost else None
    cost = None
    if saved is not None and saved.exists():
        cost = {role: Cost(**values) for role, values in json.loads(saved.read_text()).items()}
        print(f"  costs read from {saved}")
    if cost is None or not args.skip_check:
        gen_real.generate([build_prompt("warm up", collection.documents[:1])])
        judge.model.option_probabilities(judge.prompt("warm up", "warm up"), _JUDGE_OPTIONS)
        observed: list = []
        start = time.perf_counter()
        run_naive(small, gen, judge, timer=observed)
        naive_wall = time.perf_counter() - start
        answer_tokens = np.mean([u.generated_tokens for r, u, _ in observed if r == "generate"])
        print(f"  real answers: {answer_tokens:.1f} tokens on average (dry placeholders: {args.answer_tokens})")
    if cost is None:
        cost = {role: fit_cost([(u, s) for r, u, s in observed if r == role]) for role in ("generate", "judge")}
        if saved is not None:
            saved.write_text(json.dumps({role: asdict(c) for role, c in cost.items()}, indent=1))
    for role, c in cost.items():
        print(f"  cost of a {role} call on this machine: {c.per_call:.3f} s + {1 / c.per_prompt_token:.0f} prompt "
              f"tokens/s" + (f" + {1 / c.per_generated_token:.0f} generated tokens/s" if c.per_generated_token else ""))

    totals = {m: sum(cost[r].seconds(u) for r, u in counts[m].items()) for m in counts}
    print(f"\nPredicted wall time: naive {totals['naive'] / 3600:.1f} h ({describe(counts['naive'], cost)})")
    print(f"                     sweep {totals['sweep'] / 3600:.1f} h ({describe(counts['sweep'], cost)})")
    print(f"  → {totals['naive'] / totals['sweep']:.2f}× less wall time; generator calls "
          f"{counts['naive']['generate'].calls / counts['sweep']['generate'].calls:.2f}× fewer")

    if args.skip_check:
        return
    # Check: the small configuration for real through RagSweep (naive already timed), against both predictions.
    before = {"generate": gen_real.usage.snapshot(), "judge": judge.model.usage.snapshot()}
    start = time.perf_counter()
    run_sweep(small)
    sweep_wall = time.perf_counter() - start
    sweep_real = {"generate": gen_real.usage - before["generate"], "judge": judge.model.usage - before["judge"]}
    naive_real = {role: sum((u for r, u, _ in observed if r == role), TokenUsage()) for role in ("generate", "judge")}
    small_counts = count(collection, retriever, gen_real, judge.model, args,
                         [float(a) for a in args.check_alphas.split(",")], args.check_samples, 1)
    print(f"\nCheck, 1 query × α {args.check_alphas} × N = {args.check_samples}, run for real:")
    for method, wall, real in (("naive", naive_wall, naive_real), ("sweep", sweep_wall, sweep_real)):
        from_real = sum(cost[r].seconds(u) for r, u in real.items())
        from_dry = sum(cost[r].seconds(u) for r, u in small_counts[method].items())
        print(f"  {method}: measured {wall:6.1f} s; predicted {from_real:6.1f} s from its real tokens, "
              f"{from_dry:6.1f} s from the dry count ({describe(real)})")
    print(f"  measured ratio {naive_wall / sweep_wall:.2f}×")


if __name__ == "__main__":
    main()
