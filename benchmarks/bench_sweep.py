"""Generator calls and wall time of the α sweep: deduplicated and cached vs the naive loop.

The naive loop generates one answer for every sampled ranking: 4 α × N × 10 queries generations. The
sweep generates once per distinct top-k list. A list that recurs across samples, α values or the
oracle is served from the cache, and prompts run in sorted order so that llama-cpp reuses the KV
cache of shared prefixes.

Default figures (4 α × N = 100 × 10 queries of running-shoes, k = 5):

* counted exactly: the distinct lists, with the paper's sampled order and with ``--prompt-order retrieval``;
* timed: the real generator (SmolLM2-135M, llama-cpp) on ``--timed`` randomly chosen naive rankings and
  on as many distinct lists. Run through the Generator in sorted order, those lists extrapolate to
  the totals.

``--full`` generates everything for real instead of extrapolating (hours on a 2-core CPU). Run:
``python benchmarks/bench_sweep.py [--alphas 1,2,4,8] [--samples 100] [--queries 10] [--timed 40]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fairrag_core import BM25Retriever, load_collection, sample_rankings
from fairrag_core.generation import Generator, build_prompt
from fairrag_core.models.catalog import load_language_model
from fairrag_core.retrieval import top_candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collection", default="running-shoes")
    parser.add_argument("--alphas", default="1,2,4,8")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=None)
    parser.add_argument("--generator", default="smollm2-135m")
    parser.add_argument("--timed", type=int, default=40, help="generations timed per method (then extrapolated)")
    parser.add_argument("--full", action="store_true", help="generate everything (slow)")
    args = parser.parse_args()
    alphas = [float(a) for a in args.alphas.split(",")]
    collection = load_collection(args.collection)
    retriever = BM25Retriever(collection.texts)
    queries = collection.queries[: args.queries]

    sampled: list[tuple[str, tuple[str, ...]]] = []  # (question, doc ids in sampled order) per ranking
    for qi, query in enumerate(queries):
        cand = top_candidates(retriever.score(query.text), args.candidates or len(collection))
        for ai, alpha in enumerate(alphas):
            rankings = sample_rankings(cand.scores, alpha=alpha, n_samples=args.samples, k=args.k,
                                       seed=np.random.default_rng([qi, ai]))
            sampled += [(query.text, tuple(int(cand.indices[p]) for p in row)) for row in rankings]
    total = len(sampled)
    distinct = list(dict.fromkeys(sampled))
    distinct_sets = {(q, tuple(sorted(ids))) for q, ids in sampled}
    print(f"{args.collection}: {len(queries)} queries × α {alphas} × N = {args.samples}, k = {args.k}, "
          f"candidates = {args.candidates or 'all'}")
    print(f"  naive loop: {total} generator calls")
    print(f"  deduplicated, sampled order (paper): {len(distinct)} calls → {total / len(distinct):.2f}× fewer")
    print(f"  deduplicated, retrieval order:       {len(distinct_sets)} calls → {total / len(distinct_sets):.2f}× fewer")

    model = load_language_model(args.generator)
    docs = collection.documents
    rng = np.random.default_rng(0)

    def prompts(items):
        return [build_prompt(q, [docs[i] for i in ids]) for q, ids in items]

    naive_items = sampled if args.full else [sampled[i] for i in rng.choice(total, args.timed, replace=False)]
    ours_items = distinct if args.full else [distinct[i] for i in rng.choice(len(distinct), args.timed, replace=False)]
    model.generate(prompts(naive_items[:1]))  # load the weights outside the timings
    start = time.perf_counter()
    for p in prompts(naive_items):  # one call per sampled ranking, in sampled order
        model.generate([p])
    naive_each = (time.perf_counter() - start) / len(naive_items)
    gen = Generator(model)
    start = time.perf_counter()
    gen.answer_prompts(prompts(ours_items))
    ours_each = (time.perf_counter() - start) / len(ours_items)
    naive_total, ours_total = naive_each * total, ours_each * len(distinct)
    how = "measured" if args.full else f"extrapolated from {args.timed} timed generations each"
    print(f"\n{args.generator}: naive {naive_each:.2f} s/call, deduplicated {ours_each:.2f} s/call")
    print(f"  wall time, naive loop:   {naive_total / 60:7.1f} min ({how})")
    print(f"  wall time, deduplicated: {ours_total / 60:7.1f} min → {naive_total / ours_total:.2f}× less")


if __name__ == "__main__":
    main()
