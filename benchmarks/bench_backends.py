"""The two backends on the same offline generator (SmolLM2-135M GGUF): load time and seconds per answer.

llama-cpp runs the Q4_1 GGUF as is; transformers dequantises it to fp32 (``gguf_file``) and batches.
Prints figures only. Run: python benchmarks/bench_backends.py [--answers 8]
"""

from __future__ import annotations

import argparse
import time

from fairrag_core import load_collection
from fairrag_core.models.catalog import load_language_model
from fairrag_core.rag.generation import build_prompt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answers", type=int, default=8)
    args = parser.parse_args()
    shoes = load_collection("running-shoes")
    query = shoes.find_query("best shoes for a first marathon")
    prompts = [build_prompt(query.text, shoes.documents[i : i + 5]) for i in range(0, 5 * args.answers, 5)]
    for name in ("smollm2-135m", "smollm2-135m-hf"):
        model = load_language_model(name)
        start = time.perf_counter()
        model.generate(prompts[:1], max_new_tokens=1)  # forces the weights to load
        load = time.perf_counter() - start
        start = time.perf_counter()
        answers = model.generate(prompts)
        each = (time.perf_counter() - start) / len(prompts)
        print(f"{name:<16} backend {model.backend:<12} load {load:5.1f} s   {each:5.2f} s/answer   "
              f"first answer: {answers[0][:70]!r}")


if __name__ == "__main__":
    main()
