"""How far could sharing answers across α go? An importance-weighting bound for the 5× question.

The sweep already generates each distinct list once. The only further way to share answers between α
values is to reuse every answer for every α with importance weights: pool n sampled lists per α, and
weigh list π for α_j by P_j(π) / q(π), with q the equal mixture of the four Plackett-Luce policies
(the balance heuristic). The top-k probability of a list is exact:
P(π) = Π_i exp(l_{π_i}) / Σ_{d ∉ π_{<i}} exp(l_d). Kish's effective sample size (Σw)² / Σw² says how
many plain samples of α_j the pool is worth. This prints, for growing n, the distinct lists the pool
needs (generations) and the effective sample size per α, against the naive 4 α × N lists.
Run: ``python benchmarks/bound_answer_reuse.py [--alphas 1,2,4,8] [--queries 10]``
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.special import logsumexp

from fairrag_core import BM25Retriever, load_collection, sample_rankings
from fairrag_core.ranking.sampling import policy_logits
from fairrag_core.retrieval import top_candidates


def log_probability(logits: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """log P(top-k list) under Plackett-Luce with these logits, one value per row."""
    out = np.zeros(len(rows))
    for j, row in enumerate(rows):
        alive = np.ones(logits.size, dtype=bool)
        for p in row:
            out[j] += logits[p] - logsumexp(logits[alive])
            alive[p] = False
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collection", default="running-shoes")
    parser.add_argument("--alphas", default="1,2,4,8")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--pools", default="10,20,30,40,50,60,80")
    args = parser.parse_args()
    alphas = [float(a) for a in args.alphas.split(",")]
    pools = [int(n) for n in args.pools.split(",")]
    collection = load_collection(args.collection)
    retriever = BM25Retriever(collection.texts)
    generations = dict.fromkeys(pools, 0)
    ess = {n: [] for n in pools}
    for qi, query in enumerate(collection.queries[: args.queries]):
        cand = top_candidates(retriever.score(query.text), len(collection))
        logits = [policy_logits(cand.scores, a) for a in alphas]
        samples = [sample_rankings(cand.scores, alpha=a, n_samples=args.samples, k=args.k,
                                   seed=np.random.default_rng([qi, ai])) for ai, a in enumerate(alphas)]
        for n in pools:
            pool = np.concatenate([s[:n] for s in samples])
            logp = np.stack([log_probability(lg, pool) for lg in logits])
            log_mixture = logsumexp(logp, axis=0) - np.log(len(alphas))
            weights = np.exp(logp - log_mixture)
            ess[n].append(weights.sum(axis=1) ** 2 / (weights**2).sum(axis=1))
            generations[n] += len({tuple(r) for r in pool})
    naive = len(alphas) * args.samples * args.queries
    print(f"{args.collection}, {args.queries} queries, α {alphas}, k = {args.k}; naive: {naive} generations")
    for n in pools:
        e = np.array(ess[n])
        print(f"  {n:3} lists per α pooled: {generations[n]:5} generations ({naive / generations[n]:.2f}× fewer), "
              f"effective samples per α: mean {np.round(e.mean(0)).astype(int).tolist()}, "
              f"min {np.round(e.min(0)).astype(int).tolist()} (N = {args.samples})")


if __name__ == "__main__":
    main()
