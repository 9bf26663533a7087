"""The embedded demo collections (``assets/collections/``) and where the bundled assets live."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEMO_COLLECTIONS", "assets_dir", "demo_folder"]

#: Bundled demo collections, in the order the UI lists them.
DEMO_COLLECTIONS: tuple[str, ...] = ("running-shoes", "news", "people", "multi-faceted")


def assets_dir() -> Path:
    """Folder of the bundled assets (override with the ``FAIRRAG_ASSETS`` environment variable)."""
    env = os.environ.get("FAIRRAG_ASSETS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "assets"


def demo_folder(name: str) -> Path:
    """The folder of the demo collection ``name`` (one of :data:`DEMO_COLLECTIONS`)."""
    return assets_dir() / "collections" / name
