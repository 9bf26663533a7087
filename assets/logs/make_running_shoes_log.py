"""Regenerate ``assets/logs/running-shoes.jsonl``: 200 served answers of a deterministic BM25 RAG system.

The simulated deployment: a shop's help bot over the running-shoes collection. It retrieves the BM25 top 5 for
what the user typed (deterministic: the same text always gets the same ranking), answers with the offline
SmolLM2-135M generator (greedy decoding), and shows as sources the shown documents whose brand or product
name the answer mentions, or the top document when it names none (a common, naive citation rule).

Users type paraphrases of the collection's 18 queries (written for this log; several per query, so one
``query_id`` gets a few different rankings) and two questions the collection has no relevance labels for
(``rs-x01``, ``rs-x02``). Popular questions come up more often. Sessions of 3–8 questions a minute or two apart,
in the first week of March 2026, until 200 lines (33 sessions). Everything is seeded: the same command writes
the same file (greedy decoding is deterministic for one llama.cpp build).

Run: ``PYTHONPATH=. python assets/logs/make_running_shoes_log.py`` (about five minutes on an idle 2-core CPU).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from fairrag_core import BM25Retriever, load_collection
from fairrag_core.models.catalog import load_language_model
from fairrag_core.rag import generation
from fairrag_core.rag.generation import Generator

OUT = Path(__file__).resolve().parent / "running-shoes.jsonl"
SEED = 2026
K = 5

# What users typed: the collection's wording first, then paraphrases written for this log.
TYPED = {
    "rs-q01": ["best shoes for a first marathon", "what shoe should I wear for my first marathon",
               "first marathon shoe recommendation", "marathon training shoes for a beginner"],
    "rs-q02": ["running shoes for flat feet and overpronation", "I overpronate, which shoe do I need",
               "flat feet running shoe", "stability shoes for flat arches"],
    "rs-q03": ["lightweight shoe for a 5K race", "fast light shoe for a 5k", "racing shoe for short races"],
    "rs-q04": ["waterproof trail running shoes", "trail shoes that keep my feet dry",
               "gore-tex style trail runner for muddy paths"],
    "rs-q05": ["running shoes with a wide toe box", "shoes for wide feet", "roomy toe box running shoe"],
    "rs-q06": ["best running shoes for heavy runners", "running shoes for a 110 kg runner",
               "cushioned shoes for bigger runners"],
    "rs-q07": ["when should I replace my running shoes", "how many miles do running shoes last",
               "how often to buy new running shoes", "my shoes have 400 miles, should I replace them"],
    "rs-q08": ["what does heel-to-toe drop mean", "what is drop in a running shoe", "heel drop explained"],
    "rs-q09": ["are carbon plate shoes worth it for racing", "do carbon plated shoes make you faster",
               "is a carbon plate shoe worth the money"],
    "rs-q10": ["how to clean running shoes", "can I put running shoes in the washing machine",
               "cleaning muddy running shoes"],
    "rs-q11": ["how to transition to minimalist barefoot shoes", "switching to barefoot running shoes safely",
               "how to start running in minimalist shoes"],
    "rs-q12": ["best shoes for plantar fasciitis", "running shoes for heel pain", "plantar fasciitis shoe advice"],
    "rs-q13": ["winter running shoes for snow and ice", "shoes for running on icy roads",
               "what to wear on my feet for winter running"],
    "rs-q14": ["budget running shoes for beginners", "cheap running shoes for a beginner",
               "good running shoes under 100 dollars"],
    "rs-q15": ["how long does it take to break in running shoes", "do new running shoes need breaking in",
               "break-in period for running shoes"],
    "rs-q16": ["how should running shoes fit", "how much room should my running shoes have",
               "running shoe sizing and fit"],
    "rs-q17": ["running shoes for high arches", "best shoe for high arched feet", "high arches cushioned shoe"],
    "rs-q18": ["how to dry wet running shoes", "fastest way to dry soaked running shoes",
               "drying running shoes after rain"],
    "rs-x01": ["running shoes for kids", "what running shoes should my 10 year old wear"],
    "rs-x02": ["are expensive running shoes better", "is a 200 dollar running shoe worth it"],
}
# How often each question comes up (relative).
POPULARITY = {"rs-q01": 9, "rs-q02": 6, "rs-q07": 6, "rs-q14": 6, "rs-q12": 5, "rs-q04": 4, "rs-q05": 4,
              "rs-q09": 4, "rs-q16": 3, "rs-q06": 3, "rs-q13": 3, "rs-q03": 3, "rs-x01": 2, "rs-x02": 2}


def citations(answer: str, shown: list) -> list[str]:
    """The shown documents whose brand or product name (title before ':') the answer mentions; else the top one."""
    text = answer.lower()
    named = [d.doc_id for d in shown
             if d.provider.lower() in text or (d.title and d.title.split(":")[0].lower() in text)]
    return named or [shown[0].doc_id]


def main() -> None:
    shoes = load_collection("running-shoes")
    bm25 = BM25Retriever(shoes.texts)
    style = "grounded" if "grounded" in getattr(generation, "PROMPT_STYLES", {}) else "short"
    generator = Generator(load_language_model("smollm2-135m"), style=style)
    rng = np.random.default_rng(SEED)
    qids = list(TYPED)
    weights = np.array([POPULARITY.get(q, 2) for q in qids], dtype=float)
    start = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    rows, n_session = [], 0
    while len(rows) < 200:
        n_session += 1
        when = start + timedelta(minutes=int(rng.integers(0, 6 * 24 * 60)))
        for _ in range(int(rng.integers(3, 9))):
            if len(rows) == 200:
                break
            qid = qids[rng.choice(len(qids), p=weights / weights.sum())]
            typed = TYPED[qid][int(rng.integers(len(TYPED[qid])))]
            order = np.argsort(-bm25.score(typed), kind="stable")[:K]
            shown = [shoes.documents[i] for i in order]
            answer = re.sub(r"\s+", " ", generator.answer_rankings(typed, [shown])[0]).strip()
            rows.append({"query_id": qid, "query": typed, "ranking": [d.doc_id for d in shown], "answer": answer,
                         "citations": citations(answer, shown), "session": f"s{n_session:02d}",
                         "timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ")})
            when += timedelta(seconds=int(rng.integers(40, 180)))
    rows.sort(key=lambda r: r["timestamp"])
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    distinct = len({(r["query"], tuple(r["ranking"])) for r in rows})
    print(f"wrote {OUT} ({len(rows)} lines, {n_session} sessions, {distinct} distinct prompts, "
          f"generator smollm2-135m, prompt style {style!r}, {generator.cache.misses} generations)")


if __name__ == "__main__":
    main()
