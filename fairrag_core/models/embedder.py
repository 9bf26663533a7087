"""Sentence embedder (sentence-transformers): lazy loading, device auto, batching, normalised vectors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checks import check_positive_int
from ..errors import ModelUnavailableError
from .catalog import ModelSpec, offline_alternatives, resolve_embedder
from .device import resolve_device
from .queue import ModelLock

__all__ = ["Embedder"]


class Embedder:
    """Encode texts to L2-normalised float32 vectors, so that dot product = cosine similarity.

    The model loads on first use (never at import or construction), on ``device`` (None → auto).
    """

    def __init__(self, model: str | None = None, *, device: str | None = None, batch_size: int = 64) -> None:
        batch_size = check_positive_int(batch_size, "batch_size", hint="texts encoded per forward pass")
        self.spec: ModelSpec = resolve_embedder(model)
        self.requested_device = device
        self.batch_size = int(batch_size)
        self._model = None
        self._lock = ModelLock(self.spec.name)  # first come, first served; the app shows the queue

    @property
    def device(self) -> str:
        return str(self._load().device)

    def _load(self):
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                device = resolve_device(self.requested_device)
                try:
                    self._model = SentenceTransformer(self.spec.source, device=device, trust_remote_code=False)
                except (OSError, ValueError) as err:
                    raise ModelUnavailableError(
                        f"cannot load embedder {self.spec.name!r} ({err.__class__.__name__}: {err}). "
                        f"Without the Hugging Face hub, use an offline model: {offline_alternatives()}, "
                        "or pass a local folder"
                    ) from err
                if device.startswith("cuda"):
                    self._model.half()
            return self._model

    def encode(self, texts: str | Sequence[str]) -> np.ndarray:
        """``str`` → ``(dim,)``; list of ``str`` → ``(len, dim)``; float32, unit length."""
        single = isinstance(texts, str)
        batch = [texts] if single else list(texts)
        if not batch:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._load().encode(
            batch, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        ).astype(np.float32)
        return vectors[0] if single else vectors

    @property
    def dimension(self) -> int:
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())
