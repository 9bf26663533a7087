"""The Audit page's exposure-only audit, step by step, on a large collection: time and peak memory of each step.

    python benchmarks/audit_at_scale.py COLLECTION [--candidates all|K] [--alphas 0,2,8] [--samples 20]

runs what the page runs when **Run the audit** is pressed (the sidebar's K, N, seed; α values 0, 2, 8 and the
deterministic retriever): the exposure sweep over the labelled queries, the findings (paired tests per α, then each
system's providers against their fair share), and the provider ledger with intervals at α = 2. Each step's wall time
and the process's peak resident memory after it are printed. Issue 28: at K = all over a 63,666-document collection
the findings once allocated 130,000 × 4,196 floats (4 GiB per array) and the kernel killed the server; every step now
consults the one memory budget (``$FAIRRAG_MAX_MEMORY_MB``), so it is bounded or refused, never killed.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from fairrag_core import load_collection
from fairrag_core.audit.comparison_findings import sweep_findings
from fairrag_core.checks import parse_alphas
from fairrag_core.errors import FairRAGError
from fairrag_core.option_types import candidates_arg
from fairrag_core.ranking import SweepConfig, exposure_sweep
from fairrag_core.retrieval import BM25Retriever
from fairrag_core.settings import PLAYGROUND_SAMPLING
from fairrag_studio.views.audit import ledger_for


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection")
    parser.add_argument("--candidates", type=candidates_arg, default=PLAYGROUND_SAMPLING.candidates)
    parser.add_argument("--alphas", default="0,2,8")
    parser.add_argument("--samples", type=int, default=PLAYGROUND_SAMPLING.n_samples)
    args = parser.parse_args(argv)

    def step(name: str, work):
        start = time.perf_counter()
        try:
            value = work()
        except FairRAGError as err:
            print(f"{name:<34} refused in {time.perf_counter() - start:6.1f} s: {err}", flush=True)
            return None
        print(f"{name:<34} {time.perf_counter() - start:6.1f} s   peak RSS {_peak_mb():7.0f} MB", flush=True)
        return value

    collection = step("load the collection", lambda: load_collection(args.collection))
    bm25 = step("index BM25", lambda: BM25Retriever(collection.texts))
    labelled = tuple(q.query_id for q in collection.queries if q.query_id in collection.qrels)
    config = SweepConfig(alphas=(*parse_alphas(args.alphas), float("inf")), n_samples=args.samples,
                         k=PLAYGROUND_SAMPLING.k, seed=PLAYGROUND_SAMPLING.seed, candidates=args.candidates,
                         query_ids=labelled)
    print(f"{len(collection):,} documents, {len(set(collection.providers)):,} providers, {len(labelled)} labelled "
          f"queries, K = {args.candidates or 'all'}, N = {args.samples}", flush=True)
    sweep = step("exposure sweep", lambda: exposure_sweep(collection, bm25, config))
    if sweep is None:
        return 1
    for note in sweep.record.extra.get("notes", ()):
        print(f"note: {note}")
    found = step("findings", lambda: sweep_findings(sweep, collection))
    if found is not None:
        print(f"  {len(found)} findings, e.g. {found[0].text[:160] if found else '—'}")
    step("provider ledger with intervals", lambda: ledger_for(sweep.documents, collection, 2.0, "provider",
                                                              intervals=True, seed=config.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
