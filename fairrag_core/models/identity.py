"""Model identity: a string that names exactly which weights (and which backend) produced an output.

Persistent caches (:mod:`fairrag_core.data.disk_cache`) key answers and judgements by it, so an answer is served
again only by the same model: a GGUF file by its SHA-256 (the pinned digest of the bundled weights, or the file's
own hash, computed once per process), a Hugging Face id by its commit in the local hub cache, a local folder by a
fingerprint of its files. A model that defines an ``identity`` attribute (a string) names itself; any other
model gets ``None``: its outputs are cached in memory only, never on disk.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

__all__ = ["model_identity", "source_identity", "file_sha256"]

_hashes: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()
_WHOLE = 4 << 20  # files up to 4 MiB are hashed whole in a folder fingerprint; larger ones by head, tail and size


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a weights file: the pinned digest when it is one of the bundled GGUF files that
    :func:`~fairrag_core.models.gguf.resolve_gguf` verified, else the file's hash (once per process and version)."""
    from . import catalog, gguf

    path = Path(path)
    stat = path.stat()
    for weights in catalog.pinned_weights():
        if path in gguf._verified and path.name == weights.file_name and stat.st_size == weights.size:
            return str(weights.sha256)
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _lock:
        if key not in _hashes:
            _hashes[key] = gguf.sha256_of(path)
        return _hashes[key]


def _folder_fingerprint(folder: Path) -> str:
    """Every file's name and size, small files whole, large ones by their first and last MiB."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".cache" not in p.parts):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(folder)}\0{size}\0".encode())
        with open(path, "rb") as handle:
            if size <= _WHOLE:
                digest.update(handle.read())
            else:
                digest.update(handle.read(1 << 20))
                handle.seek(-(1 << 20), os.SEEK_END)
                digest.update(handle.read())
    return digest.hexdigest()


def _hub_commit(repo_id: str) -> str | None:
    """The commit of ``repo_id``'s ``main`` in the local Hugging Face cache (no network), if it is there."""
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:  # pragma: no cover - transformers brings huggingface_hub
        HF_HUB_CACHE = os.environ.get("HF_HUB_CACHE") or str(Path.home() / ".cache" / "huggingface" / "hub")
    ref = Path(HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}" / "refs" / "main"
    try:
        return ref.read_text().strip() or None
    except OSError:
        return None


def source_identity(source: str, *, gguf_file: str | None = None) -> str:
    """Identity of weights given as a hub id, a local folder, or a GGUF file inside a folder.

    A hub id without a cached commit is ``hf:<id>@unknown-revision`` (the hub may move it; keyed by id only).
    """
    if gguf_file:
        return f"gguf-sha256:{file_sha256(Path(source) / gguf_file)}"
    folder = Path(source)
    if folder.is_dir():
        return f"folder-sha256:{_folder_fingerprint(folder)}"
    if folder.is_file():
        return f"file-sha256:{file_sha256(folder)}"
    return f"hf:{source}@{_hub_commit(source) or 'unknown-revision'}"


def model_identity(model: object) -> str | None:
    """Which weights and backend ``model`` runs (see the module docstring), or ``None`` when unknown."""
    from .llama_cpp import LlamaCppModel
    from .transformers_lm import TransformersModel

    own = getattr(model, "identity", None)
    if isinstance(own, str) and own:
        return own
    if isinstance(model, LlamaCppModel):
        return f"llama-cpp:gguf-sha256:{file_sha256(model.path)}"
    if isinstance(model, TransformersModel):
        return (f"transformers:{source_identity(model.source, gguf_file=model.gguf_file)}:beams={model.num_beams}:"
                f"max_input={model.max_input_tokens}")
    return None
