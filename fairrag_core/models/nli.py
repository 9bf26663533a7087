"""Sequence-classification NLI models (cross-encoders such as ``FacebookAI/roberta-large-mnli``).

The torch half of :class:`~fairrag_core.rag.attribution.CrossEncoderAttributor`: load the model and tokenizer
(lazily, fp16 on CUDA, never remote code), find the entailment / neutral / contradiction columns from
``config.id2label``, and score (premise, claim) pairs in batches with the premise truncated, never the claim.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InvalidParameterError, ModelUnavailableError
from .catalog import DEFAULTS
from .device import resolve_device
from .hub import hub_load_kwargs
from .queue import ModelLock

__all__ = ["NLIClassifier", "nli_class_columns"]


def nli_class_columns(id2label: dict) -> list[int | None]:
    """Model output column of entailment, neutral, contradiction (None where the model lacks one).

    Two-class models (entailment / not-entailment) map "not …" to neutral.

    >>> nli_class_columns({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"})
    [2, 1, 0]
    """
    names = {int(i): str(name).lower() for i, name in id2label.items()}
    entail = [i for i, name in names.items() if "entail" in name and not name.startswith("not")]
    if len(entail) != 1:
        raise InvalidParameterError(
            f"cannot find a single entailment class in id2label={id2label}; use an NLI model"
        )
    neutral = [i for i, name in names.items() if "neutral" in name or name.startswith("not")]
    contra = [i for i, name in names.items() if "contradict" in name]
    return [entail[0], neutral[0] if neutral else None, contra[0] if contra else None]


class NLIClassifier:
    """A sequence-classification NLI model: ``class_probabilities(premises, claims)`` → ``(n, 3)`` rows of
    P(entailment), P(neutral), P(contradiction)."""

    def __init__(self, source: str, *, device: str | None = None, batch_size: int = 16, max_length: int = 512,
                 model=None, tokenizer=None) -> None:
        self.source = source
        self.requested_device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self._model, self._tokenizer = model, tokenizer
        self._columns: list[int | None] | None = None
        self._lock = ModelLock(self.source)  # first come, first served; the app shows the queue

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory (they load on first use)."""
        return self._model is not None

    def _load(self):
        if self._model is None:
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            kwargs = hub_load_kwargs()
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.source, **kwargs)
                model = AutoModelForSequenceClassification.from_pretrained(self.source, **kwargs)
            except (OSError, ValueError) as err:
                raise ModelUnavailableError(
                    f"cannot load NLI model {self.source!r} ({err.__class__.__name__}). Offline, use the default "
                    f"LLM judge ({DEFAULTS['attributor']}) or a local folder"
                ) from err
            device = resolve_device(self.requested_device)
            if device.startswith("cuda"):
                model = model.half()
            self._model = model.to(device).eval()
        if self._columns is None:
            self._columns = nli_class_columns(self._model.config.id2label)
        return self._model, self._tokenizer

    def class_probabilities(self, premises: Sequence[str], claims: Sequence[str]) -> np.ndarray:
        import torch

        with self._lock:
            model, tokenizer = self._load()
            rows = []
            for start in range(0, len(premises), self.batch_size):
                batch = tokenizer(list(premises[start : start + self.batch_size]),
                                  list(claims[start : start + self.batch_size]), truncation="only_first",
                                  max_length=self.max_length, padding=True, return_tensors="pt").to(model.device)
                with torch.no_grad():
                    probs = torch.softmax(model(**batch).logits.float(), dim=-1).cpu().numpy()
                out = np.zeros((probs.shape[0], 3))
                for j, col in enumerate(self._columns):
                    if col is not None:
                        out[:, j] = probs[:, col]
                rows.append(out)
            return np.concatenate(rows) if rows else np.zeros((0, 3))
