"""The citation chips of the README tour's 20 answers, judged by the real offline judge under the presets' rule.

Reads ``tests/data/tour_answers.jsonl`` (step 3 of the tour: *best shoes for a first marathon*, α = 2, 20 sampled
lists of k = 5 on running-shoes, each answer with the documents it was shown and its reading), judges every shown
document with ``qwen-judge`` (Qwen2.5-1.5B-Instruct GGUF) under
:data:`~fairrag_core.rag.presets.FITTED_CITATION` — the same step the Playground runs
(:func:`~fairrag_core.rag.judging.judge_answers`, flags from :func:`~fairrag_core.rag.degenerate.answer_flags`) —
and writes one record per answer to ``benchmarks/results/tour_citations.jsonl``: the cited documents, and per shown
document its lexical support and P(supported) (``null`` when the rule did not ask the judge).

Green-chip precision is then counted against the file's ``supports`` field: the shown documents that, by reading,
support the answer *as an answer to the question* (docs/answers.md). Run::

    FAIRRAG_THREADS=2 HF_HUB_OFFLINE=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/tour_citations.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fairrag_core.data import load_collection  # noqa: E402
from fairrag_core.rag.attribution import load_attributor  # noqa: E402
from fairrag_core.rag.degenerate import answer_flags  # noqa: E402
from fairrag_core.rag.judging import JudgeItem, judge_answers  # noqa: E402
from fairrag_core.rag.presets import FITTED_CITATION  # noqa: E402

TOUR = ROOT / "tests" / "data" / "tour_answers.jsonl"
OUT = ROOT / "benchmarks" / "results" / "tour_citations.jsonl"


def main() -> None:
    answers = [json.loads(line) for line in TOUR.read_text(encoding="utf-8").splitlines() if line.strip()]
    collection = load_collection("running-shoes")
    documents = list(collection.documents)
    judge = load_attributor("qwen-judge")
    records, green, green_ok = [], 0, 0
    start = time.perf_counter()
    for row in answers:
        shown = [collection.index_of(d) for d in row["shown"]]
        flags = answer_flags(row["answer"], question=row["question"], titles=[documents[p].title for p in shown],
                             sources=[documents[p].provider for p in shown])
        item = JudgeItem(row["answer"], tuple(shown), question=row["question"], context=row["question"],
                         skip=bool(flags) and FITTED_CITATION.skip_degenerate)
        began = time.perf_counter()
        verdicts = judge_answers(judge, documents, [item], FITTED_CITATION)[0]
        cited = [d for d, v in zip(row["shown"], verdicts) if v.cited]
        supports = set(row.get("supports", []))
        green += len(cited)
        green_ok += sum(d in supports for d in cited)
        records.append({"n": row["n"], "answer": row["answer"], "reading": row["reading"],
                        "flags": [f.value for f in flags], "cited": cited,
                        "documents": [{"doc_id": d, "support": round(v.support, 3),
                                       "p_supported": None if v.p_entail != v.p_entail else round(v.p_entail, 3),
                                       "cited": v.cited} for d, v in zip(row["shown"], verdicts)],
                        "seconds": round(time.perf_counter() - began, 2)})
        print(f"{row['n']:>2} {row['reading']:<10} cited {cited} (supports by reading: {sorted(supports)}) "
              f"{records[-1]['seconds']:.1f} s", flush=True)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    print(f"green chips {green}, supporting by reading {green_ok}"
          f" (precision {green_ok / green:.2f})" if green else "no green chips", flush=True)
    print(f"{time.perf_counter() - start:.0f} s; {judge.model_pairs} pairs judged by the model, "
          f"{judge.disk_hits} from the disk cache", flush=True)


if __name__ == "__main__":
    main()
