"""A prepared class: which answers ``make class`` (``warm --mark-class``) put into the disk cache, with which preset.

Answering live on a 2-core CPU costs minutes, so a teacher prepares the class beforehand: ``warm`` computes every
answer and judgement the tour needs and, with ``--mark-class``, writes this record beside the cache file. The app
then defaults to the preset the class was prepared with (Quality, where the better model was affordable because it
ran ahead of time) and says, under the answers, that they came from the cache and which models made them.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..data.disk_cache import default_cache_path
from .presets import DEFAULT_PRESET, PRESETS

__all__ = ["PreparedClass", "prepared_class", "mark_prepared_class", "default_preset", "PREPARED_FILE"]

#: The record's file name, beside the cache file.
PREPARED_FILE = "prepared_class.json"


@dataclass(frozen=True)
class PreparedClass:
    """What was warmed: the preset and its models, the collection, queries, α values and Playground settings."""

    preset: str
    generator: str
    attributor: str
    collection: str
    query_ids: tuple[str, ...]
    alphas: tuple[float, ...]
    k: int
    n_samples: int
    candidates: int | None
    seed: int
    made_at: float
    seconds: float

    @property
    def when(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(self.made_at))


def _record_path(cache_path: Path | None = None) -> Path | None:
    path = cache_path if cache_path is not None else default_cache_path()
    return None if path is None else Path(path).with_name(PREPARED_FILE)


def mark_prepared_class(prepared: PreparedClass, cache_path: Path | None = None) -> Path | None:
    """Write the record beside the cache file (None when the cache is off)."""
    where = _record_path(cache_path)
    if where is None:
        return None
    data = asdict(prepared)
    data["alphas"] = ["inf" if math.isinf(a) else a for a in prepared.alphas]
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return where


def prepared_class(cache_path: Path | None = None) -> PreparedClass | None:
    """The record of the last prepared class, or None (none made, cache off, or a record this version cannot read:
    a damaged record only costs the default preset, never the app)."""
    where = _record_path(cache_path)
    if where is None or not where.is_file():
        return None
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
        data["alphas"] = tuple(float(a) for a in data["alphas"])
        data["query_ids"] = tuple(data["query_ids"])
        found = PreparedClass(**data)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return found if found.preset in PRESETS else None


def default_preset(cache_path: Path | None = None) -> str:
    """The app's default answer preset: the prepared class's, else :data:`~.presets.DEFAULT_PRESET`."""
    found = prepared_class(cache_path)
    return found.preset if found is not None else DEFAULT_PRESET
