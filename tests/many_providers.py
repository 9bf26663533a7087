"""A generated collection with thousands of providers (issue 30: Debian's package descriptions have 2,095
maintainers), for the tests and screenshots of the top-N outputs.

Provider ``i`` has ``1 + i % 3`` documents, every one about solar panels (so one query reaches them all with
``--candidates all``); a few long provider names test the ellipsis in the middle of chart labels; one category,
``region``, has 40 groups. Query ``s1`` judges every seventh document useful.
"""

from __future__ import annotations

import json
from pathlib import Path

PROVIDERS = 2000
QUERY = "solar panel kit"


def provider_name(i: int) -> str:
    """``Maintainer 0007``; every 97th a long one (a team with its mailing list), as Debian's are."""
    if i % 97 == 0:
        return f"Debian Solar Packaging Team {i:04d} <pkg-solar-{i:04d}-maintainers@lists.alioth.debian.org>"
    return f"Maintainer {i:04d}"


def write_collection(folder: Path, providers: int = PROVIDERS) -> Path:
    """Write the collection's ``corpus.jsonl``, ``queries.jsonl`` and ``qrels.txt`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = [{"doc_id": f"p{i:04d}-{j}", "title": f"Solar panel kit {i}-{j}",
             "text": f"solar panel kit model {i} variant {j} " + "panel " * (i % 5),
             "provider": provider_name(i), "groups": {"region": f"region {i % 40:02d}"}}
            for i in range(providers) for j in range(1 + i % 3)]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"query_id": "s1", "text": QUERY}) + "\n")
    (folder / "qrels.txt").write_text("".join(f"s1 0 {d['doc_id']} 1\n" for d in docs[::7]))
    return folder


def write_log(path: Path, providers: int = PROVIDERS, lines: int = 300, k: int = 5) -> Path:
    """A served RAG log over :func:`write_collection`'s documents: ``lines`` answers to query ``s1``, each with a
    top ``k`` drawn (seeded) with weight falling in the provider's number, so exposure is skewed, and the first
    document cited."""
    import numpy as np

    rng = np.random.default_rng(0)
    ids = [f"p{i:04d}-{j}" for i in range(providers) for j in range(1 + i % 3)]
    weights = 1.0 / (1 + np.arange(len(ids)))
    weights /= weights.sum()
    rows = []
    for n in range(lines):
        ranking = [ids[i] for i in rng.choice(len(ids), size=k, replace=False, p=weights)]
        rows.append({"query_id": "s1", "query": QUERY, "ranking": ranking, "answer": "A kit.",
                     "citations": ranking[:1], "session": f"s{n}"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
