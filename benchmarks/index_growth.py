"""Persistent indexes as collections grow (issue 30): BM25 against bm25s, dense exact against HNSW, `rank` end to end.

    python benchmarks/index_growth.py [--sizes 10000,100000,1000000] [--dense-sizes 10000,100000,1000000]
                                      [--debian /tmp/debian] [--markdown docs/scale_table.md]

* **BM25** over synthetic corpora (a Zipf vocabulary: token rank r drawn with probability ∝ r^-1.1 over 200,000
  types, document lengths Poisson(30)) of each size and over the public Debian corpus (63,666 package descriptions,
  tokenised once by :data:`~fairrag_core.text.DEFAULT_TOKENIZER`), ours (:class:`~fairrag_core.retrieval.BM25Retriever`,
  ``idf="lucene"``) and ``bm25s`` (``method="lucene"``) on the same tokens: index build time, peak resident memory
  the build added, index size on disk, open time of the stored index, per-query top-K time (K = 20, the default
  candidates; 100 queries of 3 tokens drawn from the same Zipf law).
* **Dense** over random unit vectors of 384 dimensions: exact per-query top-K time (one matrix-vector product over the
  memory-mapped embeddings) against the HNSW graph the store builds at ≥ 50,000 documents (FAISS, the store's
  parameters), its build time and recall@K against exact search (documents as queries). Embedding 10⁶ documents with
  MiniLM is out of reach on this CPU (about 20 documents/s under load: 14 hours), so the model's encode rate is timed
  on 1,000 Debian documents instead.
* **`rank` end to end** on the Debian collection: a fresh index folder (cold: reads, tokenises and builds), then warm
  (the stored index is memory-mapped), and with ``FAIRRAG_INDEX=off`` (the behaviour before the store).

Each measurement runs in its own process, so that its peak resident memory (``ru_maxrss``) is its own. The corpus is
generated once per size into ``--work`` and reused. ``FAIRRAG_MAX_MEMORY_MB`` is raised for the 10⁶ runs (the build
states its memory to the budget, see :data:`fairrag_core.retrieval.bm25.BUILD_BYTES_PER_TOKEN`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
VOCAB, ZIPF_S, MEAN_LEN, N_QUERIES, QUERY_LEN, K, DIM = 200_000, 1.1, 30, 100, 3, 20, 384
DEBIAN_QUERIES = ("text editor for programmers", "python library for web development", "real-time strategy game",
                  "network monitoring tool", "pdf viewer")


def _rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# -- corpora -----------------------------------------------------------------------------------------------------
def _zipf_p() -> np.ndarray:
    p = 1.0 / np.arange(1, VOCAB + 1) ** ZIPF_S
    return p / p.sum()


def _word(rank: int) -> str:
    letters = "bcdfghjklmnpqrstvwxz"  # no vowels: never an English stop word
    text = ""
    rank += 1
    while rank:
        rank, digit = divmod(rank, len(letters))
        text += letters[digit]
    return "w" + text


def synthetic_tokens(n: int, work: Path, seed: int = 0) -> tuple[list[list[str]], list[list[str]]]:
    """``n`` documents and the queries, as token lists (generated once into ``work``)."""
    path = work / f"zipf-{n}.npz"
    if not path.exists():
        rng = np.random.default_rng(seed)
        lengths = np.maximum(rng.poisson(MEAN_LEN, size=n), 1)
        ids = rng.choice(VOCAB, size=int(lengths.sum()), p=_zipf_p()).astype(np.int32)
        queries = np.random.default_rng(seed + 1).choice(VOCAB, size=(N_QUERIES, QUERY_LEN), p=_zipf_p())
        work.mkdir(parents=True, exist_ok=True)
        np.savez(path, lengths=lengths, ids=ids, queries=queries)
    data = np.load(path)
    words = np.array([_word(r) for r in range(VOCAB)], dtype=object)
    flat = words[data["ids"]]
    docs = [part.tolist() for part in np.split(flat, np.cumsum(data["lengths"])[:-1])]
    return docs, words[data["queries"]].tolist()


def build_debian(folder: Path) -> None:
    """corpus.jsonl from ``apt-cache dumpavail`` (one document per package: "name: short description", maintainer
    as provider, section and priority as groups), as the issue's corpus was made."""
    text = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True, check=True).stdout
    folder.mkdir(parents=True, exist_ok=True)
    seen = set()
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for block in text.split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line[0].isspace())
            name, desc = fields.get("Package"), fields.get("Description")
            if not name or not desc or name in seen:
                continue
            seen.add(name)
            out.write(json.dumps({"doc_id": name, "title": desc, "text": f"{name}: {desc}",
                                  "provider": fields.get("Maintainer", "unknown").split(" <")[0],
                                  "groups": {"section": fields.get("Section", "unknown"),
                                             "priority": fields.get("Priority", "unknown")}}) + "\n")


def debian_tokens(folder: Path) -> tuple[list[list[str]], list[list[str]]]:
    from fairrag_core.text import DEFAULT_TOKENIZER

    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for line in handle]
    return [DEFAULT_TOKENIZER(t) for t in texts], [DEFAULT_TOKENIZER(q) for q in DEBIAN_QUERIES]


def _corpus(name: str, work: Path, debian: Path):
    return debian_tokens(debian) if name == "debian" else synthetic_tokens(int(name), work)


# -- workers (one process each) ----------------------------------------------------------------------------------
def worker_ours(name: str, work: Path, debian: Path) -> dict:
    from fairrag_core.retrieval import BM25Retriever, top_candidates
    from fairrag_core.retrieval.index_store import IndexStore, content_sha256

    docs, queries = _corpus(name, work, debian)
    before = _rss_mb()
    start = time.perf_counter()
    built = BM25Retriever(docs, tokenizer=None, idf="lucene")
    build_s = time.perf_counter() - start
    peak = _peak_mb()
    store = IndexStore(work / "store-ours")
    shutil.rmtree(store.root, ignore_errors=True)
    start = time.perf_counter()
    folder = store.save("bench", built.arrays(), {"kind": "bm25", "n_docs": built.n_docs, "avgdl": built.avgdl,
                                                  "params": built._params()})
    save_s = time.perf_counter() - start
    texts = [" ".join(d) for d in docs]
    start = time.perf_counter()
    content_sha256(texts)
    hash_s = time.perf_counter() - start
    start = time.perf_counter()
    opened = BM25Retriever._from_arrays(*store.load("bench"), tokenizer=None)
    open_s = time.perf_counter() - start
    assert np.array_equal(opened.score_tokens(queries[0]), built.score_tokens(queries[0]))
    times = {}
    for label, index in (("memory", built), ("mmap", opened)):
        for q in queries[:5]:  # warm
            index.retrieve_tokens(q, K)
        start = time.perf_counter()
        for q in queries:
            got = index.retrieve_tokens(q, K)
        times[label] = (time.perf_counter() - start) / len(queries)
    assert np.array_equal(got.indices, top_candidates(built.score_tokens(queries[-1]), K).indices)
    return {"impl": "ours", "corpus": name, "docs": len(docs), "tokens": int(sum(map(len, docs))),
            "build_s": build_s, "build_mb": peak - before, "disk_mb": _size(folder) / 1e6, "save_s": save_s,
            "open_s": open_s, "hash_s": hash_s, "query_ms": times["memory"] * 1e3, "query_mmap_ms": times["mmap"] * 1e3}


def worker_bm25s(name: str, work: Path, debian: Path) -> dict:
    import bm25s

    docs, queries = _corpus(name, work, debian)
    before = _rss_mb()
    start = time.perf_counter()
    index = bm25s.BM25(method="lucene")
    index.index(docs, show_progress=False)
    build_s = time.perf_counter() - start
    peak = _peak_mb()
    folder = work / "store-bm25s"
    shutil.rmtree(folder, ignore_errors=True)
    index.save(str(folder))
    start = time.perf_counter()
    opened = bm25s.BM25.load(str(folder), mmap=True)
    open_s = time.perf_counter() - start
    for q in queries[:5]:  # warm
        index.retrieve([q], k=K, show_progress=False, n_threads=1)
    start = time.perf_counter()
    for q in queries:
        index.retrieve([q], k=K, show_progress=False, n_threads=1)
    per_query = (time.perf_counter() - start) / len(queries)
    del opened
    return {"impl": "bm25s", "corpus": name, "docs": len(docs), "build_s": build_s, "build_mb": peak - before,
            "disk_mb": _size(folder) / 1e6, "open_s": open_s, "query_ms": per_query * 1e3}


def worker_dense(name: str, work: Path, debian: Path) -> dict:
    from fairrag_core.retrieval.dense import HnswIndex, exact_top_k
    from fairrag_core.retrieval.index_store import HNSW_EF_CONSTRUCTION, HNSW_M

    n = int(name)
    path = work / f"unit-{n}.npy"
    if not path.exists():
        rng = np.random.default_rng(7)
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, DIM))
        for start in range(0, n, 100_000):
            block = rng.standard_normal((min(100_000, n - start), DIM), dtype=np.float32)
            out[start:start + block.shape[0]] = block / np.linalg.norm(block, axis=1, keepdims=True)
        out.flush()
        del out
    vectors = np.load(path, mmap_mode="r")
    queries = np.random.default_rng(8).standard_normal((N_QUERIES, DIM), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    _ = float(np.asarray(vectors).sum())  # pages in: timings are of a warm (page-cached) index
    before = _rss_mb()
    start = time.perf_counter()
    for q in queries[:20]:
        scores = vectors @ q
        np.argpartition(-scores, K - 1)[:K]
    exact_ms = (time.perf_counter() - start) / 20 * 1e3
    graph, built = work / f"hnsw-{n}.faiss", work / f"hnsw-{n}.json"
    if not (graph.exists() and built.exists()):  # the graph is built once per size and reused by later runs
        start = time.perf_counter()
        ann = HnswIndex.build(vectors)
        build = {"hnsw_build_s": time.perf_counter() - start, "hnsw_build_mb": _peak_mb() - before}
        ann.write(graph)
        built.write_text(json.dumps(build))
        del ann
    build = json.loads(built.read_text())
    ann = HnswIndex.read(graph)
    start = time.perf_counter()
    tried = ann.tune(vectors, k=K)  # what the store does at build: the smallest beam reaching the recall target
    tune_s = time.perf_counter() - start
    for q in queries[:5]:
        ann.search(q[None, :], K)
    start = time.perf_counter()
    for q in queries:
        ids = ann.search(q[None, :], K)[0]
        ids = np.unique(ids[ids >= 0])
        exact = np.asarray(vectors[ids]) @ q  # the retriever re-scores the candidates exactly
        np.argsort(-exact)
    ann_ms = (time.perf_counter() - start) / len(queries) * 1e3
    random_recall = float(np.mean([len(set(a.tolist()) & set(e.tolist())) / K for a, e in
                                   zip(ann.search(queries, K), exact_top_k(vectors, queries, K))]))
    return {"impl": "dense", "corpus": name, "docs": n, "exact_ms": exact_ms, **build,
            "hnsw_mb": graph.stat().st_size / 1e6, "embeddings_mb": path.stat().st_size / 1e6, "ann_ms": ann_ms,
            "ef_search": ann.ef_search, "recall": tried[ann.ef_search], "recall_by_ef": tried,
            "recall_random_queries": random_recall, "tune_s": tune_s,
            "params": {"M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION}}


def worker_encode(name: str, work: Path, debian: Path) -> dict:
    from fairrag_core.models.embedder import Embedder

    with open(debian / "corpus.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for _, line in zip(range(1000), handle)]
    embedder = Embedder("minilm", device="cpu")
    embedder.encode(texts[:8])
    start = time.perf_counter()
    embedder.encode(texts)
    seconds = time.perf_counter() - start
    return {"impl": "encode", "corpus": "debian[:1000]", "docs": len(texts), "seconds": seconds,
            "docs_per_s": len(texts) / seconds}


WORKERS = {"ours": worker_ours, "bm25s": worker_bm25s, "dense": worker_dense, "encode": worker_encode}


def _spawn(kind: str, name: str, args) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, "--corpus", name, "--work", str(args.work),
           "--debian", str(args.debian)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAIRRAG_MAX_MEMORY_MB": "16000", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        return {"impl": kind, "corpus": name, "error": done.stderr.strip().splitlines()[-1:]}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["peak_rss_mb"] = result.get("peak_rss_mb")
    return result


def rank_end_to_end(args) -> dict:
    """Wall time of `python -m fairrag_core rank` on the Debian collection: cold, warm ×3, and with the store off."""
    folder = args.work / "rank-index"
    shutil.rmtree(folder, ignore_errors=True)
    cmd = [sys.executable, "-m", "fairrag_core", "rank", "--collection", str(args.debian), "--query",
           DEBIAN_QUERIES[0], "--json", "--seed", "1"]
    out = {}
    for label, index in (("cold", str(folder)), ("warm", str(folder)), ("warm2", str(folder)),
                         ("warm3", str(folder)), ("store_off", "off")):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "FAIRRAG_INDEX": index, "FAIRRAG_CACHE_DB": "off"}
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
        out[label] = time.perf_counter() - start
    return out


def _searched(row: dict) -> str:
    """What the store would search for this collection (dense.py: a graph from ANN_MIN_DOCS documents, kept only
    where it answers faster than exact search)."""
    from fairrag_core.retrieval.index_store import ANN_MIN_DOCS

    if row["docs"] < ANN_MIN_DOCS:
        return "exact (below the HNSW threshold)"
    return "HNSW" if row["ann_ms"] < row["exact_ms"] else "exact (HNSW slower at the beam its recall needs)"


def _table(results: list[dict], rank: dict | None, load: str) -> str:
    lines = [f"Load average while measuring: {load}. One process per row; `peak+` is the peak resident memory the "
             "build added.", "",
             "| corpus | docs | tokens | ours build s | bm25s build s | ours peak+ MB | bm25s peak+ MB | ours disk MB "
             "| bm25s disk MB | ours open s | ours top-20 ms (mmap) | bm25s top-20 ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    by = {(r["impl"], r["corpus"]): r for r in results}
    corpora = list(dict.fromkeys(r["corpus"] for r in results if r["impl"] == "ours"))
    for name in corpora:
        o, b = by.get(("ours", name), {}), by.get(("bm25s", name), {})
        if "error" in o or "error" in b:
            lines.append(f"| {name} | failed: {o.get('error') or b.get('error')} |")
            continue
        lines.append(f"| {name} | {o['docs']:,} | {o['tokens']:,} | {o['build_s']:.2f} | {b['build_s']:.2f} | "
                     f"{o['build_mb']:,.0f} | {b['build_mb']:,.0f} | {o['disk_mb']:,.1f} | {b['disk_mb']:,.1f} | "
                     f"{o['open_s'] + o['hash_s']:.3f} | {o['query_ms']:.2f} ({o['query_mmap_ms']:.2f}) | "
                     f"{b['query_ms']:.2f} |")
    dense = [r for r in results if r["impl"] == "dense"]
    if dense:
        lines += ["", "| vectors (dim 384) | exact top-20 ms | HNSW top-20 ms (re-scored) | efSearch "
                  "| recall@20 (docs as queries) | recall@20 (random queries) | HNSW build s | build peak+ MB "
                  "| graph MB | embeddings MB | the store searches |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in dense:
            if "error" in r:
                lines.append(f"| {r['corpus']} | failed: {r['error']} |")
                continue
            lines.append(f"| {r['docs']:,} | {r['exact_ms']:.1f} | {r['ann_ms']:.2f} | {r['ef_search']} | "
                         f"{r['recall']:.3f} | "
                         f"{r['recall_random_queries']:.3f} | {r['hnsw_build_s']:.0f} | {r['hnsw_build_mb']:,.0f} | "
                         f"{r['hnsw_mb']:,.0f} | {r['embeddings_mb']:,.0f} | {_searched(r)} |")
    enc = next((r for r in results if r["impl"] == "encode" and "error" not in r), None)
    if enc:
        lines += ["", f"MiniLM encode rate (CPU, 1,000 Debian documents): {enc['docs_per_s']:.0f} documents/s."]
    if rank:
        lines += ["", "`rank` on Debian (63,666 documents, default K = 20), wall seconds end to end: "
                  f"cold (first build) {rank['cold']:.2f}; warm {rank['warm']:.2f}, {rank['warm2']:.2f}, "
                  f"{rank['warm3']:.2f}; store off (FAIRRAG_INDEX=off) {rank['store_off']:.2f}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--dense-sizes", default="10000,100000,1000000")
    parser.add_argument("--debian", type=Path, default=Path("/tmp/debian"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/index-growth"))
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    parser.add_argument("--json", type=Path, default=None, help="also write every measurement here")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: bm25, dense, encode, rank")
    parser.add_argument("--render", type=Path, nargs="+", default=None,
                        help="measure nothing: print the table of earlier --json files (a later file's rows replace "
                             "an earlier one's)")
    parser.add_argument("--worker", choices=list(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        result = WORKERS[args.worker](args.corpus, args.work, args.debian)
        result["peak_rss_mb"] = _peak_mb()
        print(json.dumps(result))
        return 0
    if args.render:
        rows, rank, loads = {}, None, []
        for path in args.render:
            saved = json.loads(path.read_text(encoding="utf-8"))
            rows.update({(r["impl"], r["corpus"]): r for r in saved["results"]})
            rank = saved["rank"] or rank
            loads.append(saved["load"])
        print(_table(list(rows.values()), rank, "; ".join(loads)))
        return 0
    if not (args.debian / "corpus.jsonl").exists():
        build_debian(args.debian)
    skip = set(filter(None, args.skip.split(",")))
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    results = []
    if "bm25" not in skip:
        for name in ["debian", *args.sizes.split(",")]:
            for kind in ("ours", "bm25s"):
                results.append(_spawn(kind, name, args))
                print(json.dumps(results[-1]), flush=True)
    if "dense" not in skip:
        for name in args.dense_sizes.split(","):
            results.append(_spawn("dense", name, args))
            print(json.dumps(results[-1]), flush=True)
    if "encode" not in skip:
        results.append(_spawn("encode", "debian", args))
        print(json.dumps(results[-1]), flush=True)
    rank = rank_end_to_end(args) if "rank" not in skip else None
    load = f"{load} at the start, {' / '.join(f'{x:.1f}' for x in os.getloadavg())} at the end (2 cores)"
    table = _table(results, rank, load)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "rank": rank, "load": load}, indent=1),
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
