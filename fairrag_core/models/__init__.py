"""Model wrappers: the only part of fairrag_core that imports torch (lazily, on first use)."""

from .catalog import ATTRIBUTORS, DEFAULTS, EMBEDDERS, GENERATORS, ModelSpec, describe_model, resolve_embedder
from .device import resolve_device

__all__ = ["ATTRIBUTORS", "DEFAULTS", "EMBEDDERS", "GENERATORS", "ModelSpec", "describe_model", "resolve_embedder", "resolve_device"]
