"""The Playground's *Generate answers* on the offline models: time to the first answer with citations, and to all.

Same call as the page (``run_rag`` streaming with ``chunk=1, growing=True``, no oracle), defaults α = 2, N = 20,
k = 5, K = 20 on running-shoes' first query; models are loaded before the clock starts (the app keeps
them warm). Prints figures only. Run: ``python benchmarks/bench_generate.py [--alpha 2] [--samples 20]``
"""

from __future__ import annotations

import argparse
import time

from fairrag_core import BM25Retriever, load_collection
from fairrag_core.models.catalog import load_language_model
from fairrag_core.rag.attribution import load_attributor
from fairrag_core.rag.generation import Generator, build_prompt
from fairrag_core.rag.pipeline import AnswerStream, RagConfig, run_rag


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alpha", type=float, default=2.0)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    shoes = load_collection("running-shoes")
    retriever = BM25Retriever(shoes.texts)
    model, judge = load_language_model("smollm2-135m"), load_attributor("qwen-judge")
    model.generate([build_prompt("warm up", shoes.documents[:1])], max_new_tokens=1)
    judge.probabilities(["warm up"], ["warm up"])
    query = shoes.queries[0].text
    answered: list[float] = []
    start = time.perf_counter()
    run = run_rag(shoes, retriever, Generator(model), judge, query,
                  RagConfig(alpha=args.alpha, n_samples=args.samples, k=args.k, seed=args.seed,
                            candidates=args.candidates, oracle=False),
                  stream=AnswerStream(chunk=1, growing=True,
                                      on_answer=lambda _: answered.append(time.perf_counter() - start)))
    total = time.perf_counter() - start
    print(f"{query!r}: α = {args.alpha:g}, N = {args.samples}, k = {args.k}, K = {args.candidates}: "
          f"{len(run.answers)} distinct lists")
    print(f"  first answer with citations after {answered[0]:.1f} s, all after {total:.1f} s "
          f"(generation {run.timings['generate']:.1f} s, NLI {run.timings['attribute']:.1f} s); "
          f"judge: {judge.model.usage.calls} calls, {judge.model.usage.prompt_tokens:,} prompt tokens evaluated "
          f"({judge.model.usage.reused_tokens:,} reused)")


if __name__ == "__main__":
    main()
