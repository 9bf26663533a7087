"""A prepared class: which answers ``make class`` (``warm --mark-class``) put into the disk cache, with which preset.

Answering live on a 2-core CPU costs minutes, so a teacher prepares the class beforehand: ``warm`` computes every
answer and judgement the tour needs and, with ``--mark-class``, writes this record beside the cache file. The app
then defaults to the preset the class was prepared with (Quality, where the better model was affordable because it
ran ahead of time) and says, under the answers, that they came from the cache and which models made them.

:func:`plan_answers` lists the answers a class needs and which the cache already holds (so that ``warm`` counts,
estimates and resumes); the record keeps their cache keys, so that :func:`is_prepared` can say whether a tour step
will replay from the cache (:data:`CLASS_STEPS`; the Playground and FAIR-QR pages say it). The tour's FAIR-QR step
is the FAIR-QR page's first run (:func:`fairqr_showcase`); ``warm --mark-class`` runs it once so that the LLM
refiner's replies are cached, and records their keys.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..data.disk_cache import DiskCache, default_cache_path
from ..errors import StoreError
from .generation import Generator, answer_key, build_prompt
from .presets import DEFAULT_PRESET, PRESETS

__all__ = ["PreparedClass", "prepared_class", "mark_prepared_class", "default_preset", "PREPARED_FILE",
           "PlannedTask", "plan_answers", "CLASS_STEPS", "is_prepared", "prepared_note", "FAIRQR_SHOWCASE",
           "fairqr_showcase"]

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
    #: the disk-cache keys of every answer prepared (empty in records written before they were kept)
    answer_keys: tuple[str, ...] = ()
    #: the disk-cache keys of the FAIR-QR showcase's refiner replies (empty: that step was not prepared)
    refinement_keys: tuple[str, ...] = ()

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
        data["answer_keys"] = tuple(data.get("answer_keys", ()))
        data["refinement_keys"] = tuple(data.get("refinement_keys", ()))
        found = PreparedClass(**data)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return found if found.preset in PRESETS else None


def default_preset(cache_path: Path | None = None) -> str:
    """The app's default answer preset: the prepared class's, else :data:`~.presets.DEFAULT_PRESET`."""
    found = prepared_class(cache_path)
    return found.preset if found is not None else DEFAULT_PRESET


@dataclass(frozen=True)
class PlannedTask:
    """The answers one (query, α) of a class needs: one prompt per distinct list the generator is shown, with
    their disk-cache keys and how many of them the cache already holds."""

    query_id: str
    alpha: float
    answers: int
    cached: int
    keys: tuple[str, ...]  # empty when the generator has no identity (its answers are not kept on disk)

    @property
    def todo(self) -> int:
        return self.answers - self.cached


def plan_answers(collection, retriever, generator: Generator, queries: Sequence, alphas: Sequence[float],
                 config) -> list[PlannedTask]:
    """For each query and α (with ``config``, a :class:`~.pipeline.RagConfig`), the answers :func:`~.pipeline.run_rag`
    will ask the generator for, and which of them its cache holds. Samples and retrieves (milliseconds), loads no
    model; the answers found on disk are kept in the generator's memory cache for the run that follows."""
    from ..ranking.run import run_ranking
    from .pipeline import shown_lists

    identity = generator.identity if generator.cache.disk is not None else None
    decoding = generator.style.decoding
    plan = []
    for query in queries:
        for alpha in alphas:
            settings = replace(config, alpha=alpha)
            ranking = run_ranking(collection, retriever, query.text, settings, n_boot=1)
            docs = [collection.documents[i] for i in ranking.candidate_indices]
            prompts = [build_prompt(ranking.query_text, [docs[p] for p in key], generator.style)
                       for key in shown_lists(ranking, settings)[0]]
            found = generator.cache.get_many(generator.name, decoding, prompts, identity=identity)
            keys = tuple(answer_key(identity, decoding, p) for p in prompts) if identity is not None else ()
            plan.append(PlannedTask(query.query_id, alpha, len(prompts), sum(f is not None for f in found), keys))
    return plan


#: Per demo collection, the FAIR-QR page's first query: its BM25 list is far from the target, so the refinements
#: show (other collections start from their first example query).
FAIRQR_SHOWCASE = {"people": "award-winning film directors"}


def fairqr_showcase(collection):
    """The FAIR-QR page's first run on ``collection`` as (query, :class:`~fairrag_core.fairqr.FairQRConfig`, refiner
    name) with the page's defaults (category region if there is one, else the first; relevant-documents target;
    K = min(20, documents); 5 refinements; the first refiner LLM), or None (no group labels, or no query)."""
    from ..fairqr import FairQRConfig
    from ..models.catalog import REFINER, role_models

    categories = collection.categories()
    examples = [q.text for q in collection.queries]
    query = FAIRQR_SHOWCASE.get(collection.name, examples[0] if examples else "")
    refiners = role_models(REFINER)
    if not categories or not query or not refiners:
        return None
    chosen = ("region",) if "region" in categories else tuple(categories[:1])
    return query, FairQRConfig(categories=chosen, top_k=min(20, len(collection))), refiners[0]


#: The tour steps (README, "A 15-minute classroom tour") that a class can have prepared, and how the app names them.
CLASS_STEPS = {"answers": "step 3 answers", "fair-qr": "FAIR-QR"}


def is_prepared(step: str, cache_path: Path | None = None) -> bool:
    """Whether tour ``step`` (a key of :data:`CLASS_STEPS`) replays from the cache: ``"answers"`` when the last
    ``make class`` recorded its answers and the cache still holds every one of them; ``"fair-qr"`` likewise for the
    FAIR-QR showcase's refiner replies (unprepared, that step runs live: about 30 s on 2 cores)."""
    from ..fairqr.refiners import REFINEMENT_KIND

    if step not in CLASS_STEPS:
        raise KeyError(f"unknown tour step {step!r}; use one of {', '.join(CLASS_STEPS)}")
    found = prepared_class(cache_path)
    path = cache_path if cache_path is not None else default_cache_path()
    if found is None or path is None or not Path(path).is_file():
        return False
    kind, keys = ("answer", found.answer_keys) if step == "answers" else (REFINEMENT_KIND, found.refinement_keys)
    if not keys:
        return False
    try:
        held = DiskCache(path).get_many(kind, list(keys))
    except StoreError:
        return False
    return len(held) == len(set(keys))


def prepared_note(cache_path: Path | None = None) -> str | None:
    """The line a page shows about the class's preparation ("Prepared for the class: step 3 answers ✓, FAIR-QR ✗
    (runs live)"), or None when no class was prepared."""
    if prepared_class(cache_path) is None:
        return None
    marks = [f"{name} {'✓' if is_prepared(step, cache_path) else '✗ (runs live)'}"
             for step, name in CLASS_STEPS.items()]
    return "Prepared for the class: " + ", ".join(marks)
