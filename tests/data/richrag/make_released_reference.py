"""Build the cases of released_reference.json and score them with RichRAG's released metric code.

Not part of the test run: it needs the authors' repository (ShootingWong/RichRAG, commit in the JSON) and its
pinned ``rouge==1.0.1`` in a separate virtual environment, outside this repository. It imports their
``src/diversity_metric_raw.py`` unchanged and records what it returns; ``tests/richrag/test_coverage.py`` checks
that ``fairrag_core.richrag`` gives the same numbers. The exact command is stored in the JSON ("command").

    python3 -m venv /tmp/richrag-ref/venv
    /tmp/richrag-ref/venv/bin/pip install rouge==1.0.1 numpy regex tqdm
    git archive of ShootingWong/RichRAG into /tmp/richrag-ref/release
    /tmp/richrag-ref/venv/bin/python tests/data/richrag/make_released_reference.py \
        --release /tmp/richrag-ref/release --collection assets/collections/multi-faceted \
        --out tests/data/richrag/released_reference.json
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

EDGE_PAIRS = [  # (hypothesis, reference): the package's sentence split, tokens and sets at work
    ("The cat sat on the mat", "the cat sat"),
    ("Keep it moist. Add browns.", "Add browns. Keep it moist."),
    ("e.g. a pile. ", "e.g. a pile. "),
    ("U.S. rules apply. The U.S. rules.", "rules in the U.S. apply"),
    ("run run run fast", "run fast run fast"),
    ("Pace: 5:30/km, about 3.5 km.", "about 3.5 km at 5:30/km pace"),
    ("word", "a much longer reference sentence with many words"),
    ("no overlap here at all", "completely different text"),
    ("Mixed CASE Words", "mixed case words"),
    ("a b c d e f g", "g f e d c b a"),
    ("x y. y x. x y", "x y x y"),
    ("...", "something"),
]

SYNTH_SEEDS = range(40)


def rouge_pairs(get_rouge, pairs):
    return [{"hypothesis": h, "reference": r, "recall": [float(x) for x in get_rouge(h, r)]} for h, r in pairs]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    sys.path.insert(0, args.release)
    from src import diversity_metric_raw as ref  # the released code, unchanged

    def safe_rouge(h, r):
        try:
            return ref.get_rouge(h, r)
        except ValueError:  # the package raises on a text without sentences; the released evaluation scores 0
            return [0.0, 0.0, 0.0]

    folder = Path(args.collection)
    docs = {d["doc_id"]: d for d in map(json.loads, (folder / "corpus.jsonl").read_text().splitlines())}
    queries = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    covering: dict[tuple[str, int], list[str]] = {}
    for line in (folder / "aspect_qrels.tsv").read_text().splitlines()[1:]:
        qid, idx, did = line.split("\t")
        covering.setdefault((qid, int(idx)), []).append(did)

    rng = np.random.default_rng(13)
    doc_ids = sorted(docs)
    text_cases = []
    for q in queries[:: 10]:  # 6 queries
        subas = [a["answer"] for a in q["aspects"]]
        mine = sorted({d for i in range(len(subas)) for d in covering.get((q["query_id"], i), [])})
        others = [d for d in rng.choice(doc_ids, 6, replace=False) if d not in mine]
        pool = (mine + others)[:12]
        texts = [f"{docs[d].get('title', '')} {docs[d]['text']}" for d in pool]  # the released get_doc_str
        scores = np.array(ref.find_doc_scores(subas, texts))  # (aspects, docs)
        k = min(5, len(pool))
        ideal, ideal_score = ref.get_ideal_score(scores, k)
        predictions = np.array([list(range(k)), list(range(len(pool) - 1, len(pool) - 1 - k, -1)),
                                rng.permutation(len(pool))[:k].tolist()])
        ncoms = ref.Div_metric(predictions, np.repeat(scores[None, :, :], len(predictions), axis=0))
        text_cases.append({
            "query_id": q["query_id"], "doc_ids": pool, "documents": texts, "sub_answers": subas,
            "phi": scores.T.tolist(), "k": k, "greedy": [int(i) for i in ideal], "com_greedy": float(ideal_score),
            "predictions": predictions.tolist(), "ncom": [float(x) for x in ncoms],
            "com_rouge": [{"response": r, "value": [float(x) for x in ref.Div_metric_ans_weight(r, subas)]}
                          for r in (q["answer"], texts[0], subas[0], " ".join(texts[:3]), "", "...")],
        })

    synth = []
    for seed in SYNTH_SEEDS:
        g = np.random.default_rng(seed)
        n_docs, n_aspects = int(g.integers(2, 13)), int(g.integers(1, 6))
        if seed % 3 == 0:  # coarse values: ties, and lists that reach the pool's best on every aspect (the reset)
            phi = g.choice([0.0, 0.25, 0.5, 1.0], size=(n_docs, n_aspects))
        else:
            phi = g.random((n_docs, n_aspects)).round(3)
        if phi.max() == 0:
            phi[0, 0] = 0.5
        k = int(g.integers(1, n_docs + 1))
        scores = phi.T  # the released code holds (aspects, documents)
        ideal, ideal_score = ref.get_ideal_score(scores, k)
        predictions = np.array([g.permutation(n_docs)[:k].tolist() for _ in range(4)])
        ncoms = ref.Div_metric(predictions, np.repeat(scores[None, :, :], len(predictions), axis=0))
        synth.append({"seed": seed, "phi": phi.tolist(), "k": k, "greedy": [int(i) for i in ideal],
                      "com_greedy": float(ideal_score), "predictions": predictions.tolist(),
                      "ncom": [float(x) for x in ncoms]})

    out = {
        "source": "ShootingWong/RichRAG src/diversity_metric_raw.py (find_doc_scores, get_rouge, get_ideal_score, "
                  "Div_metric, Div_metric_ans_weight) with rouge==1.0.1",
        "commit": args.commit,
        "command": " ".join([sys.executable, *sys.argv]),
        "rouge_pairs": rouge_pairs(safe_rouge, EDGE_PAIRS),
        "text_cases": text_cases,
        "synthetic": synth,
    }
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
