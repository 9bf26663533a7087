"""Public names imported on first use (PEP 562): a package lists where each name lives, and importing the package
(or one of its modules) does not import them all — so ``import fairrag_core`` and the CLI start fast (issue 22).

>>> import fairrag_core
>>> callable(fairrag_core.sample_rankings), "sample_rankings" in dir(fairrag_core)
(True, True)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict, exports: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package whose globals are ``namespace``: ``exports``
    maps each public name to the module (relative to the package) that defines it; a name is imported when first
    read, then kept as a plain attribute."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # once imported, a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
