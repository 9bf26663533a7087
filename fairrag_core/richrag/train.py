"""Training data and the two-stage training of the list-wise ranker (RichRAG §3.4.1–3.4.2), torch-free.

**Split.** The 60 multi-faceted queries are split once, stratified by their number of aspects and seeded by
``split_seed`` (independent of the training seed): ``test_queries`` are held out and never trained on; the model
card lists both sides. :func:`fold_splits` gives k folds over the same queries for cross-validation.

**Pools.** Every query's pool is :func:`~fairrag_core.richrag.pool.build_pool` (BM25 by default, N per aspect,
capacity M), with the shipped aspects; φ is :func:`~fairrag_core.richrag.coverage.coverage_matrix` against the
sub-answers; the silver list is :func:`~fairrag_core.richrag.coverage.greedy_coverage` (Eq. 8–9).

**Augmentation** (45 training queries are few). Each epoch draws ``augmentations`` fresh views of every training
pool, and the silver list is recomputed on each view:

* *random subsets*: keep a uniform share in [``keep_min``, 1] of the pool (at least ``sft_k`` + 2 documents);
* *random orders*: candidates and aspects are shuffled (the network must not read meaning into positions);
* *distractor injection*: up to ``distractors`` documents from just below the pool's cut (the next documents the
  aspect queries retrieve: they share the query's words), with the aspect that found them as s(d);
* *aspect dropout*: with probability ``aspect_dropout`` one aspect (fixed per query by the seed, so that its FiD
  strings are encoded once) disappears: its φ column, its aspect token and its name in every s(d).

**DPO pairs (US³).** For ``dpo_views`` views of every training pool, the SFT model's greedy list and
``dpo_samples`` lists sampled from its pointer distribution are scored by the reward; a (greedy, sampled) pair whose
rewards differ by more than ``mu`` becomes (winner, loser). **Reward: NCOM of the list** (COM of Eq. 13 normalised
by the silver list's), not Eq. 11's ROUGE + Com-ROUGE of a generated answer: one SmolLM2 answer per sampled list
costs ~2–5 s on this CPU, thousands of lists would not fit the 15-minute budget. So DPO here optimises list
coverage directly, not the generator's preferences; the evaluation reports the answers' Com-ROUGE separately.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import check_positive_int
from ..data import Collection
from ..errors import InvalidParameterError
from ..models.catalog import DEFAULT_EMBEDDER
from ..seeds import derive_seed
from ..settings import Settings
from .coverage import coverage_matrix, greedy_coverage, ncom
from .pool import Pool, PoolSettings, aspect_query, build_pool
from .ranker import EncodingCache, RankerFeatures, fid_text, ranker_features

__all__ = ["RankerTrainConfig", "QueryPool", "split_queries", "fold_splits", "build_query_pools", "augment",
           "view_features", "silver_instances", "dpo_pairs", "prefetch_encodings", "TrainedRanker", "train_ranker"]


@dataclass(frozen=True, kw_only=True)
class RankerTrainConfig(Settings):
    """Everything that decides the trained weights (saved in the model card)."""

    seed: int = 13
    split_seed: int = 2024
    test_queries: int = 15
    per_aspect: int = 10
    capacity: int = 40
    k: int = 5  # DPO list length and the main evaluation cut-off
    sft_k: int = 10  # silver list length for SFT (its prefixes serve k = 3, 5)
    augmentations: int = 16
    keep_min: float = 0.6
    distractors: int = 4
    aspect_dropout: float = 0.3
    sft_epochs: int = 15
    sft_lr: float = 1e-3
    batch_size: int = 32
    aux_weight: float = 1.0
    dpo_views: int = 8
    dpo_samples: int = 8
    mu: float = 0.05
    beta: float = 0.1
    dpo_epochs: int = 2
    dpo_lr: float = 1e-4
    hidden: int = 128
    layers: int = 2
    tau: float = 0.1
    input_dropout: float = 0.5
    coverage_bias: bool = True
    pointer_init: float = 1.0
    detach_coverage: bool = True
    encoder: str = DEFAULT_EMBEDDER

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("per_aspect", "capacity", "k", "sft_k", "augmentations", "sft_epochs", "batch_size",
                     "dpo_views", "dpo_samples", "hidden", "layers"):
            check_positive_int(getattr(self, name), name)
        if not 0 < self.keep_min <= 1 or not 0 <= self.aspect_dropout <= 1:
            raise InvalidParameterError("keep_min must be in (0, 1] and aspect_dropout in [0, 1]")


@dataclass(frozen=True)
class QueryPool:
    """One query's pool with everything training and evaluation need."""

    query_id: str
    query: str
    aspects: tuple[str, ...]
    sub_answers: tuple[str, ...]
    pool: Pool
    documents: tuple[str, ...]  # the pooled documents' texts (title. text), pool order
    phi: np.ndarray  # (M, n)
    distractors: tuple[int, ...] = ()  # collection positions just below the pool's cut
    distractor_texts: tuple[str, ...] = ()
    distractor_aspect: tuple[int, ...] = ()  # the aspect that retrieved each distractor
    distractor_rank: tuple[int, ...] = ()
    distractor_phi: np.ndarray | None = None  # (D, n)
    dropped_aspect: int | None = None  # the aspect that aspect dropout removes (None: never)

    @property
    def aspect_sets(self) -> list[tuple[int, ...]]:
        return [self.pool.aspects_of(j) for j in range(len(self.pool))]


# -- splits ----------------------------------------------------------------------------------------------------------
def _strata(collection: Collection, query_ids: Sequence[str]) -> dict[int, list[str]]:
    strata: dict[int, list[str]] = {}
    for qid in sorted(query_ids):
        strata.setdefault(len(collection.query(qid).aspects), []).append(qid)
    return strata


def fold_splits(collection: Collection, n_folds: int, *, seed: int,
                query_ids: Sequence[str] | None = None) -> list[tuple[list[str], list[str]]]:
    """k folds over the queries with aspects, stratified by number of aspects: ``[(train_ids, test_ids), …]``."""
    ids = list(query_ids) if query_ids is not None else [q.query_id for q in collection.queries if q.aspects]
    n_folds = check_positive_int(n_folds, "n_folds", hint="e.g. 5")
    if n_folds < 2 or n_folds > len(ids):
        raise InvalidParameterError(f"n_folds must be between 2 and the {len(ids)} queries, got {n_folds}")
    rng = np.random.default_rng(seed)
    folds: list[list[str]] = [[] for _ in range(n_folds)]
    offset = 0
    for _, group in sorted(_strata(collection, ids).items()):
        for qid in rng.permutation(group).tolist():
            folds[offset % n_folds].append(qid)
            offset += 1
    return [(sorted(set(ids) - set(f)), sorted(f)) for f in folds]


def split_queries(collection: Collection, config: RankerTrainConfig) -> tuple[list[str], list[str]]:
    """The fixed split (train ids, held-out test ids), stratified by number of aspects, seeded by ``split_seed``."""
    ids = [q.query_id for q in collection.queries if q.aspects]
    if not 0 < config.test_queries < len(ids):
        raise InvalidParameterError(f"test_queries must be between 1 and {len(ids) - 1}, got {config.test_queries}")
    rng = np.random.default_rng(config.split_seed)
    strata = _strata(collection, ids)
    test: list[str] = []
    quota = {n: config.test_queries * len(g) / len(ids) for n, g in strata.items()}
    counts = {n: int(np.floor(q)) for n, q in quota.items()}
    for n in sorted(quota, key=lambda n: (counts[n] - quota[n], n))[: config.test_queries - sum(counts.values())]:
        counts[n] += 1  # largest remainders
    for n, group in sorted(strata.items()):
        test += rng.permutation(group).tolist()[: counts[n]]
    return sorted(set(ids) - set(test)), sorted(test)


# -- pools -----------------------------------------------------------------------------------------------------------
def build_query_pools(collection: Collection, retriever, query_ids: Sequence[str], config: RankerTrainConfig, *,
                      with_distractors: bool = False) -> list[QueryPool]:
    """Pools, φ and (for training) distractors and the dropped aspect for every query in ``query_ids``."""
    settings = PoolSettings(per_aspect=config.per_aspect, capacity=config.capacity)
    out = []
    for qid in query_ids:
        query = collection.query(qid)
        if not query.aspects:
            raise InvalidParameterError(f"query {qid!r} has no aspects; the ranker trains on queries with aspects")
        aspects = tuple(a.aspect for a in query.aspects)
        answers = tuple(a.answer for a in query.aspects)
        pool = build_pool(retriever, query.text, aspects, settings)
        docs = [collection.documents[int(i)] for i in pool.indices]
        phi = coverage_matrix(docs, answers)
        extra: dict = {}
        if with_distractors and config.distractors:
            extra = _distractors(collection, retriever, query.text, aspects, answers, pool, config)
        dropped = None
        if with_distractors and config.aspect_dropout > 0 and len(aspects) >= 3:
            dropped = derive_seed(config.seed, 7, zlib.crc32(qid.encode())) % len(aspects)  # per query, not per list
        out.append(QueryPool(qid, query.text, aspects, answers, pool, tuple(d.full_text for d in docs), phi,
                             dropped_aspect=dropped, **extra))
    return out


def _distractors(collection, retriever, query, aspects, answers, pool, config) -> dict:
    depth = config.per_aspect + 4 * config.distractors
    deeper = build_pool(retriever, query, aspects, PoolSettings(per_aspect=depth, capacity=len(collection)))
    inside = set(pool.indices.tolist())
    rows = [j for j, d in enumerate(deeper.indices.tolist()) if d not in inside][: config.distractors]
    chosen = [int(deeper.indices[j]) for j in rows]
    first_aspect = [int(np.flatnonzero(deeper.ranks[j] > 0)[np.argmin(deeper.ranks[j][deeper.ranks[j] > 0])])
                    for j in rows]
    rank = [int(deeper.ranks[j, a]) for j, a in zip(rows, first_aspect)]
    docs = [collection.documents[d] for d in chosen]
    phi = coverage_matrix(docs, answers) if docs else np.zeros((0, len(aspects)))
    return {"distractors": tuple(chosen), "distractor_texts": tuple(d.full_text for d in docs),
            "distractor_aspect": tuple(first_aspect), "distractor_rank": tuple(rank), "distractor_phi": phi}


# -- views (augmentation) --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _View:
    query: str
    aspects: tuple[str, ...]
    documents: tuple[str, ...]
    aspect_sets: tuple[tuple[int, ...], ...]
    ranks: np.ndarray
    phi: np.ndarray


def _base_view(qp: QueryPool) -> _View:
    return _View(qp.query, qp.aspects, qp.documents, tuple(qp.aspect_sets), qp.pool.ranks, qp.phi)


def augment(qp: QueryPool, rng: np.random.Generator, config: RankerTrainConfig) -> _View:
    """One augmented view of a training pool (module docstring: subsets, orders, distractors, aspect dropout)."""
    docs = list(qp.documents)
    ranks = list(qp.pool.ranks)
    phi = list(qp.phi)
    m = len(docs)
    keep_n = max(min(m, config.sft_k + 2), int(np.ceil(rng.uniform(config.keep_min, 1.0) * m)))
    keep = sorted(rng.choice(m, size=keep_n, replace=False).tolist())
    docs, ranks, phi = [docs[i] for i in keep], [ranks[i] for i in keep], [phi[i] for i in keep]
    n_distract = int(rng.integers(0, len(qp.distractors) + 1)) if qp.distractors else 0
    for j in sorted(rng.choice(len(qp.distractors), size=n_distract, replace=False).tolist()) if n_distract else []:
        row = np.zeros(len(qp.aspects), dtype=np.int64)
        row[qp.distractor_aspect[j]] = qp.distractor_rank[j]
        docs.append(qp.distractor_texts[j])
        ranks.append(row)
        phi.append(qp.distractor_phi[j])
    rank_mat, phi_mat = np.array(ranks), np.array(phi)
    columns = list(range(len(qp.aspects)))
    if qp.dropped_aspect is not None and rng.random() < config.aspect_dropout:
        columns.remove(qp.dropped_aspect)
    columns = [columns[i] for i in rng.permutation(len(columns))]
    order = rng.permutation(len(docs))
    rank_mat = rank_mat[order][:, columns]
    return _View(qp.query, tuple(qp.aspects[c] for c in columns), tuple(docs[i] for i in order),
                 tuple(tuple(int(j) for j in np.flatnonzero(row > 0)) for row in rank_mat), rank_mat,
                 phi_mat[order][:, columns])


def view_features(cache: EncodingCache, view: _View, *, target_k: int | None = None) -> RankerFeatures:
    """The network's input for a view, with the silver list of length ``target_k`` and φ when asked."""
    x = ranker_features(cache, view.query, view.aspects, view.documents, view.aspect_sets, view.ranks)
    if target_k is None:
        return x
    target = tuple(greedy_coverage(view.phi, min(target_k, len(view.documents))))
    return RankerFeatures(x.doc_vectors, x.doc_extra, x.aspect_vectors, x.pair, target, view.phi.astype(np.float32))


def prefetch_encodings(cache: EncodingCache, pools: Sequence[QueryPool]) -> int:
    """Encode, in one sorted pass, every text the views of ``pools`` can ask for; returns how many texts."""
    texts: set[str] = set()
    for qp in pools:
        variants = [None] if qp.dropped_aspect is None else [None, qp.dropped_aspect]
        for dropped in variants:
            keep = [i for i in range(len(qp.aspects)) if i != dropped]
            texts |= {aspect_query(qp.query, qp.aspects[i]) for i in keep}
            for doc, s in zip(qp.documents, qp.aspect_sets):
                texts.add(fid_text(qp.query, sorted(qp.aspects[i] for i in s if i != dropped), doc))
            for doc, a in zip(qp.distractor_texts, qp.distractor_aspect):
                texts.add(fid_text(qp.query, [qp.aspects[a]] if a != dropped else [], doc))
        texts |= set(qp.documents) | set(qp.distractor_texts)
    cache.encode(sorted(texts))
    return len(texts)


def silver_instances(cache: EncodingCache, pools: Sequence[QueryPool], config: RankerTrainConfig, *, epoch: int,
                     augmentations: int | None = None) -> list[RankerFeatures]:
    """One epoch of SFT instances: ``augmentations`` views per pool (seeded by (seed, epoch, pool)), plus the
    un-augmented pool itself, each with its silver list of length ``sft_k``."""
    count = config.augmentations if augmentations is None else augmentations
    out = []
    for p, qp in enumerate(pools):
        rng = np.random.default_rng([config.seed, epoch, p])
        views = [_base_view(qp)] + [augment(qp, rng, config) for _ in range(count)]
        out += [view_features(cache, v, target_k=config.sft_k) for v in views]
    return out


def dpo_pairs(cache: EncodingCache, pools: Sequence[QueryPool], config: RankerTrainConfig,
              decode: Callable[[list[RankerFeatures], bool, int], list[list[int]]]) -> tuple[list, dict]:
    """US³ pairs: for every view, the greedy list against each sampled list whose reward (NCOM) differs by > μ.

    ``decode(instances, sample, seed)`` is the SFT policy. Returns ``[(instance, winner, loser), …]`` and counts.
    """
    views, instances = [], []
    for p, qp in enumerate(pools):
        rng = np.random.default_rng([config.seed, 10_000, p])
        for v in range(config.dpo_views):
            view = _base_view(qp) if v == 0 else augment(qp, rng, config)
            views.append(view)
            instances.append(view_features(cache, view))
    greedy = decode(instances, False, config.seed)
    sampled = [decode(instances, True, derive_seed(config.seed, 11, s)) for s in range(config.dpo_samples)]
    pairs, gaps, greedy_won = [], [], 0
    for i, (view, x) in enumerate(zip(views, instances)):
        k = len(greedy[i])
        reward_g = ncom(view.phi, greedy[i])
        seen = {tuple(greedy[i])}
        for lists in sampled:
            y = lists[i][:k]
            if tuple(y) in seen:
                continue
            seen.add(tuple(y))
            reward_s = ncom(view.phi, y)
            if abs(reward_g - reward_s) > config.mu:
                won = reward_g > reward_s
                greedy_won += won
                pairs.append((x, greedy[i] if won else y, y if won else greedy[i]))
                gaps.append(abs(reward_g - reward_s))
    stats = {"views": len(views), "pairs": len(pairs), "greedy_wins": int(greedy_won),
             "sample_wins": len(pairs) - int(greedy_won), "mean_gap": float(np.mean(gaps)) if gaps else 0.0,
             "greedy_reward": float(np.mean([ncom(v.phi, g) for v, g in zip(views, greedy)]))}
    return pairs, stats


# -- the whole run ---------------------------------------------------------------------------------------------------
@dataclass
class TrainedRanker:
    """What :func:`train_ranker` returns: both stages' networks, the split, the history and the timings."""

    config: RankerTrainConfig
    sft_network: object
    dpo_network: object
    train_ids: list[str]
    test_ids: list[str]
    history: list[dict]
    dpo_stats: dict
    seconds: dict
    device: str


def train_ranker(collection: Collection, config: RankerTrainConfig, *, retriever=None,
                 cache: EncodingCache | None = None, train_ids: Sequence[str] | None = None,
                 test_ids: Sequence[str] = (), device: str | None = None,
                 log: Callable[[str], None] | None = None) -> TrainedRanker:
    """SFT on silver lists, then DPO on US³ pairs, on ``train_ids`` (default: the fixed split's training side).

    ``cache`` holds the frozen encoder's vectors (default: a fresh cache over the offline MiniLM). Training runs with
    torch's deterministic algorithms on one CPU thread (or the GPU :func:`resolve_device` finds): the same config
    gives the same weights, bit for bit, on the same machine.
    """
    from ..models import listwise_ranker as backend
    from ..models import listwise_training as training
    from ..models.device import resolve_device
    from ..retrieval import BM25Retriever

    say = log or (lambda _msg: None)
    device = resolve_device(device)
    if train_ids is None:
        train_ids, test_ids = split_queries(collection, config)
    train_ids, test_ids = list(train_ids), list(test_ids)
    overlap = set(train_ids) & set(test_ids)
    if overlap:
        raise InvalidParameterError(f"queries {sorted(overlap)} are both training and test queries; split them")
    if cache is None:
        from ..models.embedder import Embedder

        cache = EncodingCache(Embedder(config.encoder, device=device))
    retriever = retriever or BM25Retriever(collection.texts)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    pools = build_query_pools(collection, retriever, train_ids, config, with_distractors=True)
    seconds["pools"] = time.perf_counter() - start
    start = time.perf_counter()
    n_texts = prefetch_encodings(cache, pools)
    seconds["encode"] = time.perf_counter() - start
    say(f"{len(pools)} training pools, {n_texts} texts encoded in {seconds['encode']:.0f} s")

    dim = int(cache.encode([pools[0].documents[0]]).shape[1])  # the frozen encoder's width (cached already)
    arch = backend.Architecture(input_dim=dim, hidden=config.hidden, layers=config.layers, tau=config.tau,
                                input_dropout=config.input_dropout, coverage_bias=config.coverage_bias,
                                pointer_init=config.pointer_init, detach_coverage=config.detach_coverage,
                                max_steps=max(16, config.sft_k), slot_seed=config.seed)
    sft = training.Optimisation(epochs=config.sft_epochs, batch_size=config.batch_size, lr=config.sft_lr,
                               aux_weight=config.aux_weight)
    dpo = training.Optimisation(epochs=config.dpo_epochs, batch_size=config.batch_size, lr=config.dpo_lr,
                               beta=config.beta)
    history: list[dict] = []

    def record(row: dict) -> None:
        history.append(row)
        say(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))

    with backend.deterministic_torch():
        net = backend.build_network(arch, seed=config.seed)
        start = time.perf_counter()
        training.train_sft(net, lambda epoch: silver_instances(cache, pools, config, epoch=epoch), sft,
                          seed=config.seed, device=device, log=record)
        seconds["sft"] = time.perf_counter() - start
        sft_net = backend.clone(net)

        start = time.perf_counter()

        def policy(instances, sample, seed):
            return backend.decode(net, instances, config.k, device=device, sample=sample, seed=seed)

        pairs, stats = dpo_pairs(cache, pools, config, policy)
        say(f"US³: {stats}")
        if pairs and config.dpo_epochs:
            training.train_dpo(net, pairs, dpo, seed=config.seed, device=device, log=record)
        seconds["dpo"] = time.perf_counter() - start
    return TrainedRanker(config, sft_net, net, train_ids, test_ids, history, stats, seconds, device)
