"""BM25 (Robertson et al.) on a term-major sparse matrix of precomputed weights.

The weight of term t in document d is

    w(t, d) = idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·|d| / avgdl))

and the score of a query is the sum of ``w`` over its tokens (repeated tokens count again). With
``idf="okapi"`` (default) the idf and its floor match ``rank_bm25.BM25Okapi`` exactly:
``idf = ln((N − df + 0.5) / (df + 0.5))``, and terms with a negative idf get ``epsilon · mean(idf)``.
``idf="lucene"`` uses ``ln(1 + (N − df + 0.5) / (df + 0.5))`` (never negative).

Indexing is ``O(total tokens)``; a query costs ``O(Σ_t df(t))`` for its terms, independent of N.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from ..checks import check_memory, check_positive_int
from ..errors import InvalidParameterError
from ..text import DEFAULT_TOKENIZER, ENGLISH_STOP_WORDS, Tokenizer
from .base import Candidates, Retriever, check_query, top_candidates
from .index_store import IndexStore, content_sha256

__all__ = ["BM25Retriever", "tokenizer_identity", "BUILD_BYTES_PER_TOKEN"]

#: Peak bytes per token while building (int64 term and document ids, their pair keys and np.unique's sorted copy,
#: the postings; 60 measured at 3·10⁷ tokens, benchmarks/index_growth.py): what the build states to the memory
#: budget (:func:`~fairrag_core.checks.check_memory`).
BUILD_BYTES_PER_TOKEN = 64


def tokenizer_identity(tokenizer: object) -> str | None:
    """What a stored index's terms depend on: a :class:`~fairrag_core.text.Tokenizer`'s settings, its stop list and
    the Snowball stemmer's version; ``"pre-tokenised"`` for ``None``; ``None`` (not storable) for any other callable."""
    if tokenizer is None:
        return "pre-tokenised"
    if not isinstance(tokenizer, Tokenizer):
        return None
    import importlib.metadata

    stops = hashlib.sha256(" ".join(sorted(ENGLISH_STOP_WORDS)).encode()).hexdigest()[:16]
    return f"{tokenizer!r}:stop-words-{stops}:snowballstemmer-{importlib.metadata.version('snowballstemmer')}"


class _SortedVocab:
    """A stored vocabulary: the terms sorted (as UTF-8 bytes, which is code-point order), looked up by bisection on
    the memory-mapped blob, so that opening an index costs no dictionary build."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self._blob, self._offsets = blob, offsets
        self._n = len(offsets) - 1

    def __len__(self) -> int:
        return self._n

    def _word(self, i: int) -> bytes:
        return self._blob[self._offsets[i]:self._offsets[i + 1]].tobytes()

    @property
    def words(self) -> list[str]:
        return [self._word(i).decode("utf-8") for i in range(self._n)]

    def get(self, token: str, default: int | None = None) -> int | None:
        data = token.encode("utf-8")
        i = bisect.bisect_left(range(self._n), data, key=self._word)
        return i if i < self._n and self._word(i) == data else default

    def __contains__(self, token: str) -> bool:
        return self.get(token) is not None

    def __getitem__(self, token: str) -> int:
        found = self.get(token)
        if found is None:
            raise KeyError(token)
        return found


class BM25Retriever(Retriever):
    """Sparse BM25 over ``texts``; scores identical to ``rank_bm25.BM25Okapi`` on the same tokens.

    Args:
        texts: the documents (or pre-tokenised documents when ``tokenizer`` is None and items are lists).
        k1, b, epsilon: the BM25 parameters (rank_bm25 defaults).
        idf: ``"okapi"`` (rank_bm25-compatible) or ``"lucene"``.
        tokenizer: callable ``str → list[str]``; the default lower-cases, drops stop words and stems.
    """

    #: the stored index's manifest when this one was opened from an :class:`~.index_store.IndexStore`
    manifest: dict | None = None

    def __init__(
        self,
        texts: Sequence[str] | Sequence[Sequence[str]],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        idf: Literal["okapi", "lucene"] = "okapi",
        tokenizer: Callable[[str], list[str]] | None = DEFAULT_TOKENIZER,
    ) -> None:
        if len(texts) == 0:
            raise InvalidParameterError("BM25 needs at least one document to index")
        if not (k1 >= 0 and 0 <= b <= 1 and math.isfinite(k1)):
            raise InvalidParameterError(f"BM25 needs k1 ≥ 0 and 0 ≤ b ≤ 1, got k1={k1}, b={b}")
        if idf not in ("okapi", "lucene"):
            raise InvalidParameterError(f"idf must be 'okapi' or 'lucene', got {idf!r}")
        self.name = "bm25"
        self.k1, self.b, self.epsilon, self.idf_variant = float(k1), float(b), float(epsilon), idf
        self.tokenizer = tokenizer
        docs = [self._tokens(t) for t in texts]
        self._build(docs)

    def _tokens(self, text: str | Sequence[str]) -> list[str]:
        if self.tokenizer is None:
            if isinstance(text, str):
                raise InvalidParameterError("tokenizer=None expects pre-tokenised documents (lists of tokens)")
            return list(text)
        return self.tokenizer(text)

    def _build(self, docs: list[list[str]]) -> None:
        n_docs = len(docs)
        lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=n_docs)
        tokens = int(lengths.sum())
        check_memory(tokens * BUILD_BYTES_PER_TOKEN, f"a BM25 index of {tokens:,} tokens",
                     fix="index fewer or shorter documents")
        vocab: dict[str, int] = {}
        term_ids = np.fromiter(
            (vocab.setdefault(tok, len(vocab)) for doc in docs for tok in doc), dtype=np.int64, count=tokens
        )
        # term ids in sorted token order, so that a stored index looks its terms up by bisection (_SortedVocab)
        words = sorted(vocab)
        rank = np.empty(len(vocab), dtype=np.int64)
        rank[np.fromiter((vocab[w] for w in words), dtype=np.int64, count=len(words))] = np.arange(len(words))
        term_ids = rank[term_ids]
        vocab = dict(zip(words, range(len(words))))
        doc_ids = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        pairs, tf = np.unique(term_ids * n_docs + doc_ids, return_counts=True)  # sorted by term, then doc
        del term_ids, doc_ids
        terms = pairs // n_docs
        self._docs = (pairs % n_docs).astype(np.int32 if n_docs < 2**31 else np.int64)
        del pairs
        df = np.bincount(terms, minlength=len(vocab))
        self._indptr = np.concatenate([[0], np.cumsum(df)])
        avgdl = lengths.sum() / n_docs
        if self.idf_variant == "okapi":
            idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
            floor = self.epsilon * (idf.mean() if idf.size else 0.0)
            idf = np.where(idf < 0, floor, idf)
        else:
            idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        norm = self.k1 * (1 - self.b + self.b * lengths / avgdl) if avgdl > 0 else np.full(n_docs, self.k1)
        self._weights = idf[terms] * tf * (self.k1 + 1) / (tf + norm[self._docs])
        self.vocab = vocab
        self.idf = idf
        self.doc_lengths = lengths
        self.avgdl = float(avgdl)
        self._n_docs = n_docs

    # -- the persistent index (index_store) -------------------------------------------------------------------
    def _params(self) -> dict:
        return {"k1": self.k1, "b": self.b, "epsilon": self.epsilon, "idf": self.idf_variant}

    def arrays(self) -> dict[str, np.ndarray]:
        """The index as arrays (what :mod:`.index_store` writes): the vocabulary as sorted UTF-8 bytes with
        offsets (term id = position), the term-major postings (``indptr``, ``docs``, ``weights``), ``idf`` and
        the document lengths."""
        words = self.vocab.words if isinstance(self.vocab, _SortedVocab) else list(self.vocab)
        encoded = [w.encode("utf-8") for w in words]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        return {"vocab_bytes": blob, "vocab_offsets": offsets, "indptr": self._indptr, "docs": self._docs,
                "weights": self._weights, "idf": self.idf, "lengths": self.doc_lengths}

    @classmethod
    def cached(
        cls,
        texts: Sequence[str] | Sequence[Sequence[str]],
        *,
        store: IndexStore | None,
        collection: str | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        idf: Literal["okapi", "lucene"] = "okapi",
        tokenizer: Callable[[str], list[str]] | None = DEFAULT_TOKENIZER,
    ) -> BM25Retriever:
        """The BM25 index of ``texts`` from ``store`` (memory-mapped), built and saved there on first use; scores
        equal those of ``BM25Retriever(texts, …)``. A tokenizer without an identity (any callable other than a
        :class:`~fairrag_core.text.Tokenizer`) or ``store=None`` builds in memory only."""
        params = {"k1": float(k1), "b": float(b), "epsilon": float(epsilon), "idf": idf}
        tok_id = tokenizer_identity(tokenizer)
        if store is None or tok_id is None or len(texts) == 0:
            return cls(texts, tokenizer=tokenizer, **params)
        key = store.key("bm25", content_sha256(texts), tok_id, params)
        found = store.load(key)
        if found is None:
            start = time.perf_counter()
            built = cls(texts, tokenizer=tokenizer, **params)
            seconds = time.perf_counter() - start
            if not store.try_save(key, built.arrays(), {
                "kind": "bm25", "collection": collection or "", "n_docs": built.n_docs, "tokenizer": tok_id,
                "params": params, "avgdl": built.avgdl, "terms": len(built.vocab), "postings": int(built._docs.size),
                "build_seconds": round(seconds, 3),
            }):
                return built
            found = store.load(key)
            if found is None:  # the store cannot be read back (e.g. removed meanwhile): use what was built
                return built
        return cls._from_arrays(*found, tokenizer=tokenizer)

    @classmethod
    def _from_arrays(cls, arrays: dict[str, np.ndarray], manifest: dict, *,
                     tokenizer: Callable[[str], list[str]] | None) -> BM25Retriever:
        self = cls.__new__(cls)
        params = manifest["params"]
        self.name = "bm25"
        self.k1, self.b, self.epsilon, self.idf_variant = params["k1"], params["b"], params["epsilon"], params["idf"]
        self.tokenizer = tokenizer
        self.vocab = _SortedVocab(arrays["vocab_bytes"], arrays["vocab_offsets"])
        self._indptr, self._docs, self._weights = arrays["indptr"], arrays["docs"], arrays["weights"]
        self.idf, self.doc_lengths = arrays["idf"], arrays["lengths"]
        self.avgdl = float(manifest["avgdl"])
        self._n_docs = int(manifest["n_docs"])
        self.manifest = manifest
        return self

    @property
    def n_docs(self) -> int:
        return self._n_docs

    def score_tokens(self, tokens: Sequence[str]) -> np.ndarray:
        """Scores of all documents for an already tokenised query."""
        ids = [i for i in map(self.vocab.get, tokens) if i is not None]
        if not ids:
            return np.zeros(self._n_docs)
        spans = [slice(self._indptr[i], self._indptr[i + 1]) for i in ids]  # views: one copy by concatenate
        docs = np.concatenate([self._docs[span] for span in spans])
        weights = np.concatenate([self._weights[span] for span in spans])
        return np.bincount(docs, weights=weights, minlength=self._n_docs)

    def retrieve_tokens(self, tokens: Sequence[str], k: int) -> Candidates:
        """Top-``k`` candidates for an already tokenised query, as :func:`~.base.top_candidates` of
        :meth:`score_tokens` (ties in index order), selected among the documents that score above zero when at
        least ``k`` do (every other document scores 0 or less, so it cannot enter): O(n) for the scores, then a
        partition of those documents only."""
        k = check_positive_int(k, "candidates", hint="how many top documents to keep")
        scores = self.score_tokens(tokens)
        positive = np.flatnonzero(scores > 0)
        if positive.size >= k:
            best = top_candidates(scores[positive], k)
            return Candidates(positive[best.indices], best.scores)
        return top_candidates(scores, k)

    def retrieve(self, query: str, k: int) -> Candidates:
        return self.retrieve_tokens(self._tokens(check_query(query)), k)

    def score(self, query: str) -> np.ndarray:
        return self.score_tokens(self._tokens(check_query(query)))
