"""The Playground's *Generate answers*: time to the first answer with citations, to all answers, and per call.

Same call as the page (``run_rag`` streaming with ``chunk=1, growing=True``, no oracle), defaults α = 2, N = 20,
k = 5, K = 20 on running-shoes' first query, for each answer preset (or ``--generator``/``--style``). Models are
loaded and warmed before the clock starts (the app keeps them warm); the disk cache is off, so every answer and
judgement is computed. With ``--write`` the measured costs go to ``assets/answer_presets.json``, which the app
shows before Generate is pressed.

    python benchmarks/bench_generate.py --presets fast,quality --write
    python benchmarks/bench_generate.py --generator smollm2-135m --style short --paper-citations
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fairrag_core import BM25Retriever, load_collection  # noqa: E402
from fairrag_core.data import assets_dir  # noqa: E402
from fairrag_core.models.catalog import load_language_model  # noqa: E402
from fairrag_core.rag.attribution import load_attributor  # noqa: E402
from fairrag_core.rag.citations import CitationPolicy  # noqa: E402
from fairrag_core.rag.generation import Generator, build_prompt  # noqa: E402
from fairrag_core.rag.pipeline import AnswerStream, RagConfig, run_rag  # noqa: E402
from fairrag_core.rag.presets import PRESETS  # noqa: E402


def llama_build() -> str:
    """Which SIMD the llama.cpp library was compiled for (the Makefile adds AVX-512 where the CPU has it)."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    return "AVX-512" if "AVX512 = 1" in info else "AVX2" if "AVX2 = 1" in info else "generic"


def measure(generator_name: str, style: str, judge_name: str, citation: CitationPolicy, args) -> dict:
    shoes = load_collection("running-shoes")
    retriever = BM25Retriever(shoes.texts)
    model, judge = load_language_model(generator_name), load_attributor(judge_name)
    generator = Generator(model, style=style)
    for part in (generator.cache, judge):  # measure the models, not the disk cache
        if getattr(part, "disk", None) is not None:
            part.disk = None
    model.generate([build_prompt("warm up", shoes.documents[:1])], max_new_tokens=1)
    judge.probabilities(["warm up"], ["warm up"])
    query = shoes.queries[args.query].text
    answered: list[float] = []
    start = time.perf_counter()
    run = run_rag(shoes, retriever, generator, judge, query,
                  RagConfig(alpha=args.alpha, n_samples=args.samples, k=args.k, seed=args.seed,
                            candidates=args.candidates, oracle=False, per_claim=citation.per_claim,
                            entail_threshold=citation.entail_threshold, control_margin=citation.control_margin,
                            skip_degenerate=citation.skip_degenerate),
                  stream=AnswerStream(chunk=1, growing=True,
                                      on_answer=lambda _: answered.append(time.perf_counter() - start)))
    total = time.perf_counter() - start
    documents = sum(len(a.positions) for a in run.answers)
    result = {"generator": generator_name, "style": style, "judge": judge_name, "citation": citation.to_dict(),
              "query": query, "alpha": args.alpha, "n_samples": args.samples, "k": args.k,
              "candidates": args.candidates, "distinct_lists": len(run.answers),
              "first_answer_seconds": round(answered[0], 1), "all_answers_seconds": round(total, 1),
              "generation_seconds": round(run.timings["generate"], 1),
              "attribution_seconds": round(run.timings["attribute"], 1),
              "seconds_per_answer": round(run.timings["generate"] / len(run.answers), 2),
              "seconds_per_document": round(run.timings["attribute"] / documents, 2),
              "degenerate_share": run.degenerate_share, "ear": run.ear,
              "machine": f"{os.cpu_count()}-core {platform.machine()} CPU ({llama_build()} llama.cpp build)",
              "threads": os.environ.get("FAIRRAG_THREADS") or "all cores"}
    print(f"{generator_name} ({style}) + {judge_name}: {query!r}, α = {args.alpha:g}, N = {args.samples}, "
          f"k = {args.k}, K = {args.candidates}: {len(run.answers)} distinct lists")
    print(f"  first answer with citations after {answered[0]:.1f} s, all after {total:.1f} s "
          f"(generation {run.timings['generate']:.1f} s = {result['seconds_per_answer']} s/answer, "
          f"NLI {run.timings['attribute']:.1f} s = {result['seconds_per_document']} s/document); "
          f"degenerate {run.degenerate_share:.0%}, EAR {run.ear:.2f}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", default="fast,quality", help="answer presets to time (default fast,quality)")
    parser.add_argument("--generator", help="time this generator instead of the presets")
    parser.add_argument("--style", default="grounded")
    parser.add_argument("--judge", default="qwen-judge")
    parser.add_argument("--paper-citations", action="store_true", help="with --generator: the paper's argmax rule")
    parser.add_argument("--alpha", type=float, default=2.0)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--query", type=int, default=0, help="index of running-shoes' query (default the first)")
    parser.add_argument("--write", action="store_true", help="record the presets' costs in assets/answer_presets.json")
    args = parser.parse_args()
    if args.generator:
        rule = CitationPolicy() if args.paper_citations else PRESETS["fast"].citation
        measure(args.generator, args.style, args.judge, rule, args)
        return
    costs = {}
    for name in args.presets.split(","):
        preset = PRESETS[name]
        costs[name] = measure(preset.generator, preset.style, preset.attributor, preset.citation, args)
    if args.write:  # presets not timed in this run keep their recorded costs
        path = assets_dir() / "answer_presets.json"
        recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        path.write_text(json.dumps({**recorded, **costs}, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
