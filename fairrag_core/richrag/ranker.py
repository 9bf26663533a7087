"""The generative list-wise ranker, torch-free side: its inputs, the frozen encoder's cache, and the trained model.

Wang et al., "RichRAG", §3.4. Each pooled candidate d_i becomes the FiD string of Eq. 5,
``q [Q] s_1 [E] … [E] s_n [S] d_i`` (s(d_i) = the aspects whose retrieval found it, §3.3), encoded by the frozen
offline MiniLM (mean pooling) into e_i. Besides e_i the network reads (:class:`RankerFeatures`):

* per candidate: |s(d)| / n and the document's log length (coverage by ROUGE recall grows with length);
* per aspect: Enc(q ∘ s_j);
* per (candidate, aspect): cos(Enc(d), Enc(q ∘ s_j)), cos(e_i, Enc(q ∘ s_j)), 1[j ∈ s(d)] and 1 / rank of d in
  aspect j's retrieval (ranks from 1, as :class:`~fairrag_core.richrag.pool.Pool` keeps them; 0 if j did not
  retrieve d).

The network and its training loops live in :mod:`fairrag_core.models.listwise_ranker` (torch); this module builds
the numbers it reads and wraps the trained model for inference (:class:`ListwiseRanker`, :func:`load_ranker`).
The shipped weights (``assets/models/richrag-ranker/``) are safetensors; their sha256 is pinned here
(:data:`SHIPPED_SHA256`) and in the folder's manifest, and a file whose digest differs is refused before it is read.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..checks import check_k
from ..data.demo import assets_dir
from ..errors import InvalidParameterError, ModelUnavailableError
from ..models.catalog import DEFAULT_EMBEDDER
from .pool import aspect_query

__all__ = ["RankerFeatures", "EncodingCache", "fid_text", "ranker_features", "ListwiseRanker",
           "load_ranker", "shipped_ranker_dir", "verify_weights", "sha256_file", "SHIPPED_SHA256", "WEIGHTS_FILE",
           "MANIFEST_FILE"]

WEIGHTS_FILE = "model.safetensors"
MANIFEST_FILE = "ranker.json"
#: sha256 of ``assets/models/richrag-ranker/model.safetensors`` (``make train-ranker`` with the default seed).
SHIPPED_SHA256 = "549ac79f45897f14ab0b52c0efce2e841281faa8bd56bbb1cf18e61c1b37268b"


def shipped_ranker_dir() -> Path:
    """The folder of the shipped ranker: ``assets/models/richrag-ranker``."""
    return assets_dir() / "models" / "richrag-ranker"


def fid_text(query: str, aspects_of_doc: Sequence[str], document: str) -> str:
    """The FiD input of one candidate (Eq. 5, without the docid token: we mean-pool instead).

    >>> fid_text("How to compost?", ["bins", "smells"], "Use a lidded bin.")
    'How to compost? [Q] bins [E] smells [S] Use a lidded bin.'
    """
    return f"{query} [Q] {' [E] '.join(aspects_of_doc)} [S] {document}"


@dataclass(frozen=True)
class RankerFeatures:
    """What the network reads for one (query, pool); ``target``/``phi`` only in training."""

    doc_vectors: np.ndarray  # (M, D) e_i
    doc_extra: np.ndarray  # (M, 2)
    aspect_vectors: np.ndarray  # (n, D)
    pair: np.ndarray  # (M, n, 4)
    target: tuple[int, ...] | None = None
    phi: np.ndarray | None = None

    @property
    def n_candidates(self) -> int:
        return len(self.doc_vectors)


class EncodingCache:
    """Frozen-encoder vectors by text. Anything with ``encode(list[str]) -> (n, D)`` encodes (e.g.
    :class:`~fairrag_core.models.embedder.Embedder`); missing texts are encoded sorted, in fixed batches, and every
    vector is rounded to float16 precision, so that the values do not depend on which texts were cached before
    (batch padding changes the last float32 bits): same seed, same weights."""

    def __init__(self, encoder, *, batch_size: int = 32) -> None:
        self.encoder = encoder
        self.batch_size = batch_size
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def encode(self, texts: Iterable[str]) -> np.ndarray:
        texts = list(texts)
        with self._lock:
            missing = sorted(set(texts) - set(self._vectors))
            for start in range(0, len(missing), self.batch_size):
                chunk = missing[start: start + self.batch_size]
                vectors = np.asarray(self.encoder.encode(chunk), dtype=np.float32)
                for text, vector in zip(chunk, vectors):
                    self._vectors[text] = vector.astype(np.float16).astype(np.float32)
            return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)

    def save(self, path: str | Path) -> None:
        keys = sorted(self._vectors)
        np.savez_compressed(path, texts=np.array(keys, dtype=object).astype(str),
                            vectors=np.stack([self._vectors[k] for k in keys]).astype(np.float16))

    def load(self, path: str | Path) -> int:
        """Add the vectors saved by :meth:`save` (a plain npz of strings and float16, no pickle); returns how many."""
        with np.load(path, allow_pickle=False) as data:
            for text, vector in zip(data["texts"].tolist(), data["vectors"]):
                self._vectors.setdefault(str(text), vector.astype(np.float32))
            return len(data["texts"])


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def ranker_features(cache: EncodingCache, query: str, aspects: Sequence[str], documents: Sequence[str],
                    aspect_sets: Sequence[Iterable[int]], aspect_ranks: np.ndarray | None = None) -> RankerFeatures:
    """The network's input for one pool: ``documents`` are the candidates' texts, ``aspect_sets[i]`` the indices
    (into ``aspects``) of the aspects that retrieved candidate i, ``aspect_ranks[i, j]`` its rank in aspect j's
    list (1 = best, 0 = not retrieved, as :attr:`Pool.ranks`; None: ranks unknown, only membership is used)."""
    if not documents:
        raise InvalidParameterError("the pool is empty; retrieve candidates before ranking")
    if not aspects:
        raise InvalidParameterError("the ranker needs at least one aspect; give the query's aspects")
    sets = [sorted({int(j) for j in s}) for s in aspect_sets]
    if len(sets) != len(documents):
        raise InvalidParameterError(f"aspect_sets has {len(sets)} entries for {len(documents)} documents; one each")
    if any(j < 0 or j >= len(aspects) for s in sets for j in s):
        raise InvalidParameterError(f"aspect_sets hold indices outside [0, {len(aspects)}); index the aspects list")
    # s(d) is a set: its aspects enter in text order, so that shuffling the aspects changes no FiD string
    fid = cache.encode(fid_text(query, sorted(aspects[j] for j in s), doc) for s, doc in zip(sets, documents))
    plain = cache.encode(documents)
    asp = cache.encode(aspect_query(query, a) for a in aspects)
    member = np.zeros((len(documents), len(aspects)), dtype=np.float32)
    for i, s in enumerate(sets):
        member[i, s] = 1.0
    if aspect_ranks is None:
        rank_feature = member
    else:
        ranks = np.asarray(aspect_ranks)
        if ranks.shape != member.shape:
            raise InvalidParameterError(f"aspect_ranks must have shape {member.shape}, got {ranks.shape}")
        rank_feature = np.where(ranks > 0, 1.0 / np.maximum(ranks, 1), 0.0).astype(np.float32)
    pair = np.stack([_unit(plain) @ _unit(asp).T, _unit(fid) @ _unit(asp).T, member, rank_feature], axis=-1)
    extra = np.stack([
        np.array([len(s) / len(aspects) for s in sets]),
        np.array([math.log1p(len(doc.split())) / math.log1p(200) for doc in documents]),
    ], axis=-1)
    return RankerFeatures(fid.astype(np.float32), extra.astype(np.float32), asp.astype(np.float32),
                          pair.astype(np.float32))


# -- the trained model -----------------------------------------------------------------------------------------------
def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify_weights(path: str | Path, expected: str) -> None:
    """Refuse ``path`` unless its sha256 is ``expected`` (checked before the file is parsed)."""
    path = Path(path)
    if not path.is_file():
        raise ModelUnavailableError(f"{path} is missing; run `make train-ranker` (or restore it from git)")
    if not expected:
        raise ModelUnavailableError(f"no sha256 is pinned for {path}; its folder needs {MANIFEST_FILE} with 'sha256'")
    found = sha256_file(path)
    if found != expected:
        raise ModelUnavailableError(
            f"refusing {path}: sha256 {found} does not match the pinned {expected}; restore the file "
            "(git checkout) or retrain it with `make train-ranker`")


class ListwiseRanker:
    """A trained ranker with its encoder: ``rank`` emits k pool positions (greedy decoding, no repeats)."""

    def __init__(self, network, *, manifest: dict, cache: EncodingCache | None = None, device: str | None = None,
                 name: str = "richrag-ranker") -> None:
        self.network = network
        self.manifest = manifest
        self.name = name
        self._cache = cache
        self._device = device

    @property
    def device(self) -> str:
        from ..models.device import resolve_device

        return resolve_device(self._device)

    @property
    def cache(self) -> EncodingCache:
        if self._cache is None:
            from ..models.embedder import Embedder

            self._cache = EncodingCache(Embedder(self.manifest.get("encoder", DEFAULT_EMBEDDER), device=self._device))
        return self._cache

    def features(self, query: str, aspects: Sequence[str], documents: Sequence[str],
                 aspect_sets: Sequence[Iterable[int]], aspect_ranks: np.ndarray | None = None) -> RankerFeatures:
        return ranker_features(self.cache, query, aspects, documents, aspect_sets, aspect_ranks)

    def rank_features(self, features: Sequence[RankerFeatures], k: int) -> list[list[int]]:
        """Greedy lists of ``min(k, M)`` positions for several pools at once."""
        from ..models import listwise_ranker as backend

        lists: list[list[int]] = []
        for x in features:
            lists.extend(backend.decode(self.network, [x], min(check_k(k), x.n_candidates), device=self.device))
        return lists

    def rank(self, query: str, aspects: Sequence[str], documents: Sequence[str], aspect_sets: Sequence[Iterable[int]],
             k: int, *, aspect_ranks: np.ndarray | None = None) -> list[int]:
        """The ranked list: k distinct positions into ``documents`` (fewer when the pool is smaller)."""
        return self.rank_features([self.features(query, aspects, documents, aspect_sets, aspect_ranks)], k)[0]

    def scores(self, features: RankerFeatures) -> np.ndarray:
        """The first step's pointer logits h^1·F/τ (one per candidate), e.g. for Plackett-Luce sampling with α."""
        from ..models import listwise_ranker as backend

        return backend.first_step_scores(self.network, [features], device=self.device)[0]

    def with_cache(self, cache: EncodingCache) -> ListwiseRanker:
        """The same model reading vectors from ``cache`` (share one cache between rankers)."""
        return ListwiseRanker(self.network, manifest=self.manifest, cache=cache, device=self._device, name=self.name)


def load_ranker(path: str | Path | None = None, *, stage: str = "dpo", device: str | None = None,
                cache: EncodingCache | None = None) -> ListwiseRanker:
    """Load a trained ranker from its folder (default: the shipped one), after checking the weights' sha256.

    ``stage``: ``"dpo"`` (SFT + DPO, the final model, ``model.safetensors``) or ``"sft"`` (after stage 1 only,
    ``model-sft.safetensors``). The shipped folder's digests are pinned in :data:`SHIPPED_SHA256` and in its
    manifest; another folder's come from its manifest (``ranker.json``, written by ``train-ranker``).
    """
    from ..models import listwise_ranker as backend

    folder = Path(path) if path is not None else shipped_ranker_dir()
    manifest_path = folder / MANIFEST_FILE
    if not manifest_path.is_file():
        raise ModelUnavailableError(f"{folder} has no {MANIFEST_FILE}; train a ranker with `make train-ranker`")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    files = manifest.get("weights", {})
    if stage not in files:
        raise InvalidParameterError(f"stage must be one of {sorted(files)} for {folder}, got {stage!r}")
    entry = files[stage]
    expected = entry["sha256"]
    if path is None and stage == "dpo" and SHIPPED_SHA256 and expected != SHIPPED_SHA256:
        raise ModelUnavailableError(
            f"{manifest_path} pins {expected}, the code pins {SHIPPED_SHA256}; restore the shipped ranker")
    verify_weights(folder / entry["file"], expected)
    network, _ = backend.load_weights(folder / entry["file"])
    return ListwiseRanker(network, manifest={**manifest, "stage": stage}, cache=cache, device=device,
                          name=f"ranker-{stage}")
