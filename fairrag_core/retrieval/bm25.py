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

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from ..errors import InvalidParameterError
from ..text import DEFAULT_TOKENIZER
from .base import Retriever, check_query

__all__ = ["BM25Retriever"]


class BM25Retriever(Retriever):
    """Sparse BM25 over ``texts``; scores identical to ``rank_bm25.BM25Okapi`` on the same tokens.

    Args:
        texts: the documents (or pre-tokenised documents when ``tokenizer`` is None and items are lists).
        k1, b, epsilon: the BM25 parameters (rank_bm25 defaults).
        idf: ``"okapi"`` (rank_bm25-compatible) or ``"lucene"``.
        tokenizer: callable ``str → list[str]``; the default lower-cases, drops stop words and stems.
    """

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
        vocab: dict[str, int] = {}
        term_ids = np.fromiter(
            (vocab.setdefault(tok, len(vocab)) for doc in docs for tok in doc), dtype=np.int64
        )
        lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))
        n_docs = len(docs)
        doc_ids = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        pairs, tf = np.unique(term_ids * n_docs + doc_ids, return_counts=True)  # sorted by term, then doc
        terms = pairs // n_docs
        self._docs = (pairs % n_docs).astype(np.int64)
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

    @property
    def n_docs(self) -> int:
        return self._n_docs

    def score_tokens(self, tokens: Sequence[str]) -> np.ndarray:
        """Scores of all documents for an already tokenised query."""
        ids = [self.vocab[t] for t in tokens if t in self.vocab]
        if not ids:
            return np.zeros(self._n_docs)
        starts, stops = self._indptr[ids], self._indptr[np.asarray(ids) + 1]
        sel = np.concatenate([np.arange(a, z) for a, z in zip(starts, stops)])
        return np.bincount(self._docs[sel], weights=self._weights[sel], minlength=self._n_docs)

    def score(self, query: str) -> np.ndarray:
        return self.score_tokens(self._tokens(check_query(query)))
