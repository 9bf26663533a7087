"""Model wrappers: the only part of fairrag_core that imports torch (lazily, on first use)."""

from .catalog import EMBEDDERS, ModelSpec, resolve_embedder
from .device import resolve_device

__all__ = ["EMBEDDERS", "ModelSpec", "resolve_embedder", "resolve_device"]
