"""The ranker's runs end to end, for ``make train-ranker`` and the ``train-ranker`` / ``rich-eval`` commands:
train and ship (:func:`train_and_save`), evaluate a saved ranker on its held-out queries (:func:`evaluate_saved`),
and k-fold cross-validation over all queries (:func:`cross_validate`), plus the fairness-vs-coverage tables of a
saved ranker (:func:`fairness_tables`).

The frozen encoder's vectors are kept between runs in ``<cache>/richrag/encodings-<encoder>.npz``
(``$FAIRRAG_CACHE`` or ``~/.cache/fairrag``; strings and float16 vectors, no pickle), so only the first run pays for
MiniLM; vectors are rounded to float16 either way, so a warm cache gives the same weights as a cold one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ..data import Collection
from ..errors import InvalidParameterError
from ..models.catalog import DEFAULT_EMBEDDER
from .evaluate import (
    RichEvalConfig,
    RichEvaluation,
    combine_folds,
    evaluate_pools,
    pool_features,
    query_scores,
    system_lists,
)
from .fairness import fairness_coverage_curve, provider_exposure, provider_summary
from .model_card import save_trained, write_model_card
from .ranker import MANIFEST_FILE, EncodingCache, ListwiseRanker, load_ranker, shipped_ranker_dir
from .train import RankerTrainConfig, build_query_pools, fold_splits, train_ranker

__all__ = ["encoding_cache", "train_and_save", "evaluate_saved", "cross_validate", "fairness_tables"]


def _cache_file(encoder: str) -> Path:
    from ..models.gguf import cache_dir

    return cache_dir() / "richrag" / f"encodings-{encoder.replace('/', '_')}.npz"


def encoding_cache(encoder: str = DEFAULT_EMBEDDER, *, device: str | None = None,
                   persist: bool = True) -> EncodingCache:
    """An encoding cache over the frozen ``encoder``, pre-filled from disk when ``persist``."""
    from ..models.embedder import Embedder

    cache = EncodingCache(Embedder(encoder, device=device))
    path = _cache_file(encoder)
    if persist and path.is_file():
        cache.load(path)
    return cache


def _save_cache(cache: EncodingCache, encoder: str) -> None:
    path = _cache_file(encoder)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.stem + ".partial.npz")
    cache.save(partial)
    partial.replace(path)


def _retriever(collection: Collection):
    from ..retrieval import BM25Retriever

    return BM25Retriever(collection.texts)


def _documents(collection: Collection):
    return lambda qp, top: [collection.documents[int(qp.pool.indices[j])] for j in top]


def _generator(name: str):
    from ..models.catalog import load_language_model
    from ..rag.generation import Generator

    return Generator(load_language_model(name))


def train_and_save(collection: Collection, config: RankerTrainConfig, output: str | Path | None = None, *,
                   device: str | None = None, evaluate: bool = True,
                   log: Callable[[str], None] | None = None) -> tuple[dict, RichEvaluation | None]:
    """Train on the fixed split, write weights + manifest + model card into ``output`` (default: the shipped
    folder), and (``evaluate``) score NCOM on the held-out queries with the saved, sha256-checked weights."""
    say = log or (lambda _msg: None)
    folder = Path(output) if output is not None else shipped_ranker_dir()
    cache = encoding_cache(config.encoder, device=device)
    retriever = _retriever(collection)
    start = time.perf_counter()
    trained = train_ranker(collection, config, retriever=retriever, cache=cache, device=device, log=say)
    _save_cache(cache, config.encoder)
    manifest = save_trained(trained, folder, collection=collection.name)
    manifest["seconds"]["total"] = round(time.perf_counter() - start, 1)
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    evaluation = None
    note = ""
    if evaluate:
        evaluation = evaluate_saved(collection, folder, RichEvalConfig(n_boot=2000), cache=cache)
        _save_cache(cache, config.encoder)
        note = ("NCOM@k on the held-out queries, greedy decoding; mean over queries with a 95% percentile "
                "bootstrap interval, and the paired difference ranker-dpo − system with its interval and the "
                "paired randomization test's p-value. `python -m fairrag_core rich-eval` reproduces it.")
    write_model_card(folder, manifest, evaluation=None if evaluation is None else evaluation.table,
                     evaluation_note=note)
    return manifest, evaluation


def evaluate_saved(collection: Collection, folder: str | Path | None = None, config: RichEvalConfig | None = None,
                   *, cache: EncodingCache | None = None, device: str | None = None,
                   progress: Callable[[str], None] | None = None) -> RichEvaluation:
    """Evaluate a saved ranker (both stages) and the baselines on the held-out queries its manifest names."""
    config = config or RichEvalConfig()
    folder = Path(folder) if folder is not None else shipped_ranker_dir()
    own_cache = cache is None
    encoder = DEFAULT_EMBEDDER
    if own_cache:
        if (folder / MANIFEST_FILE).is_file():
            encoder = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8")).get("encoder", encoder)
        cache = encoding_cache(encoder, device=device)
    dpo = load_ranker(folder if folder != shipped_ranker_dir() else None, stage="dpo", device=device, cache=cache)
    sft = load_ranker(folder, stage="sft", device=device, cache=dpo.cache)
    manifest = dpo.manifest
    test_ids = list(manifest.get("test_queries", []))
    if not test_ids:
        raise InvalidParameterError(f"{folder}/{MANIFEST_FILE} names no held-out queries; retrain with train-ranker")
    leaked = set(test_ids) & set(manifest.get("train_queries", []))
    if leaked:
        raise InvalidParameterError(f"held-out queries {sorted(leaked)} were trained on; evaluate another split")
    train_config = RankerTrainConfig.from_dict(manifest["config"])
    retriever = _retriever(collection)
    pools = build_query_pools(collection, retriever, test_ids, train_config)
    generator = _generator(config.generator) if config.answers else None
    result = evaluate_pools(pools, retriever, {"ranker-sft": sft, "ranker-dpo": dpo}, config,
                            split=f"fixed split: {len(test_ids)} held-out queries (split_seed "
                                  f"{train_config.split_seed})", generator=generator,
                            documents=_documents(collection), progress=progress)
    if own_cache:
        _save_cache(cache, encoder)
    if generator is not None:
        scope = (f"the first {min(config.answer_queries, len(test_ids))} of the {len(test_ids)} held-out queries"
                 if config.answer_queries else f"all {len(test_ids)} held-out queries")
        systems = ", ".join(config.answer_systems) if config.answer_systems else "every system"
        result.notes.append(f"rich answers by {config.generator}, at most {config.max_new_tokens} new tokens, "
                            f"from each system's top {config.k}; Com-ROUGE on {scope}, {systems}")
    return result


def cross_validate(collection: Collection, train_config: RankerTrainConfig, n_folds: int,
                   config: RichEvalConfig | None = None, *, device: str | None = None,
                   log: Callable[[str], None] | None = None) -> RichEvaluation:
    """k-fold cross-validation over all queries with aspects: a fresh ranker per fold (same config and seed),
    every query held out exactly once; the folds are stratified by number of aspects (``split_seed``)."""
    config = config or RichEvalConfig()
    say = log or (lambda _msg: None)
    cache = encoding_cache(train_config.encoder, device=device)
    retriever = _retriever(collection)
    generator = _generator(config.generator) if config.answers else None
    results = []
    for f, (train_ids, test_ids) in enumerate(fold_splits(collection, n_folds, seed=train_config.split_seed)):
        say(f"fold {f + 1}/{n_folds}: {len(train_ids)} training, {len(test_ids)} held-out queries")
        trained = train_ranker(collection, train_config, retriever=retriever, cache=cache, train_ids=train_ids,
                               test_ids=test_ids, device=device)
        rankers = {"ranker-sft": ListwiseRanker(trained.sft_network, manifest={}, cache=cache, device=device),
                   "ranker-dpo": ListwiseRanker(trained.dpo_network, manifest={}, cache=cache, device=device)}
        pools = build_query_pools(collection, retriever, test_ids, train_config)
        results.append(evaluate_pools(pools, retriever, rankers, config, split=f"fold {f + 1}", generator=generator,
                                      documents=_documents(collection)))
    _save_cache(cache, train_config.encoder)
    out = combine_folds(results, config, split=f"{n_folds}-fold cross-validation over {len(collection.queries)} "
                                               f"queries (split_seed {train_config.split_seed})")
    return out


def fairness_tables(collection: Collection, folder: str | Path | None = None, *, alphas: Sequence[float],
                    k: int = 5, n_samples: int = 100, seed: int = 0, device: str | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Item 7 on the saved ranker's held-out queries: the provider table (:func:`provider_summary`) of every
    deterministic list, and the EE-D vs NCOM curve of Plackett-Luce over the ranker's and the retriever's scores."""
    folder = Path(folder) if folder is not None else shipped_ranker_dir()
    ranker = load_ranker(folder if folder != shipped_ranker_dir() else None, device=device)
    config = RankerTrainConfig.from_dict(ranker.manifest["config"])
    retriever = _retriever(collection)
    pools = build_query_pools(collection, retriever, ranker.manifest["test_queries"], config)
    lists = system_lists(pools, retriever, k, {"ranker-dpo": ranker})
    providers = provider_summary(provider_exposure(collection, pools, lists, k))
    scores = {"ranker-dpo": [ranker.scores(pool_features(ranker, qp)) for qp in pools],
              "relevance": [query_scores(qp, retriever) for qp in pools]}
    curve = fairness_coverage_curve(pools, scores, alphas, k=k, n_samples=n_samples, seed=seed,
                                    greedy={"ranker-dpo": lists["ranker-dpo"], "relevance": lists["relevance"]})
    return providers, curve
