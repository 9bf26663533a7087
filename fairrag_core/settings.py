"""Run settings as frozen, keyword-only dataclasses that serialise themselves.

Every run of the package — one query (:class:`~fairrag_core.ranking.RankingConfig`,
:class:`~fairrag_core.rag.RagConfig`) or a sweep (:class:`~fairrag_core.ranking.SweepConfig`,
:class:`~fairrag_core.rag.RagSweepConfig`) — shares the :class:`SamplingSettings`: N sampled rankings of k
documents among the first-stage candidates, the seed, and the grade from which a document counts as useful.
Settings round-trip through JSON (:meth:`Settings.to_dict` / :meth:`Settings.from_dict`), so a stored run can
be rebuilt and reproduced from its record. Each field that the command line sets declares its option where it is
defined (:func:`fairrag_core.options.option`): flag, help and default are written once, and the CLI's flags and
the reproduce commands are derived from them.
"""

from __future__ import annotations

import ast
import enum
import functools
import importlib
import math
import types
import typing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .checks import MAX_SAMPLES, check_at_most, check_positive_int
from .errors import InvalidParameterError
from .option_types import candidates_arg, positive_arg
from .options import MIN_REL, SEED, option
from .seeds import check_seed

__all__ = ["Settings", "SamplingSettings", "settings_class", "fields_of", "DEFAULT_CANDIDATES", "PLAYGROUND_SAMPLING"]

#: The first-stage cut-off K every run samples among unless told otherwise: the CLI, the Python API and the app.
#: Over many more candidates α hardly separates the top documents (scores min-maxed into [1, 2]; see
#: :func:`fairrag_core.ranking.sampling.separation_note`), so "every document" is a choice, never the default.
DEFAULT_CANDIDATES = 20

_REGISTRY: dict[str, type[Settings]] = {}


def _jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _coerce(value: Any, hint: Any) -> Any:
    """``value`` read from JSON, turned back into the field's declared type."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _coerce(value, options[0]) if len(options) == 1 else value
    if origin is tuple:
        inner = typing.get_args(hint)[0] if typing.get_args(hint) else Any
        return tuple(_coerce(v, inner) for v in value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hint is float:
        return float(value)
    return value


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Base of every settings dataclass: JSON round trip and a registry of the concrete classes by name."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.__name__] = cls

    def __post_init__(self) -> None:
        # String options become their Enum (``metric="rougeL"``); an unknown value is refused with the choices.
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            hint, value = hints[f.name], getattr(self, f.name)
            if isinstance(hint, type) and issubclass(hint, enum.Enum) and not isinstance(value, hint):
                try:
                    object.__setattr__(self, f.name, hint(value))
                except ValueError:
                    choices = ", ".join(str(m.value) for m in hint)
                    raise InvalidParameterError(f"{f.name}={value!r} is not one of: {choices}") from None

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready values (Enums by value, ±inf as ``"inf"``, tuples as lists)."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        """Rebuild settings from :meth:`to_dict` output; unknown keys are refused with the known ones."""
        hints = typing.get_type_hints(cls)
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InvalidParameterError(f"{cls.__name__} has no setting(s) {unknown}; known: {sorted(names)}")
        return cls(**{k: _coerce(v, hints[k]) for k, v in data.items()})


def settings_class(name: str) -> type[Settings]:
    """The settings class called ``name`` (for records that name their config's type).

    A class registers itself when its module is imported; a reader of stored runs need not have imported it: the
    module that defines ``name`` is found in the package's source (:func:`_settings_modules`) and imported here.
    """
    if name not in _REGISTRY and name in _settings_modules():
        importlib.import_module(_settings_modules()[name])
    try:
        return _REGISTRY[name]
    except KeyError:
        known = sorted(set(_REGISTRY) | set(_settings_modules()))
        raise InvalidParameterError(f"unknown settings type {name!r}; known: {known}") from None


@functools.cache
def _settings_modules() -> dict[str, str]:
    """Every :class:`Settings` subclass of the package by name → the module that defines it, read from the source
    (the class statements themselves, so there is no second list to keep): a class counts when one of its bases is
    ``Settings`` or another such class."""
    package = Path(__file__).resolve().parent
    classes: dict[str, tuple[str, set[str]]] = {}
    for path in sorted(package.rglob("*.py")):
        module = ".".join((__package__ or "fairrag_core", *path.relative_to(package).with_suffix("").parts))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                classes.setdefault(node.name, (module.removesuffix(".__init__"), bases))
    found = {"Settings": __name__}
    grew = True
    while grew:
        grew = False
        for name, (module, bases) in classes.items():
            if name not in found and bases & set(found):
                found[name], grew = module, True
    found.pop("Settings")
    return found


def fields_of(settings: Settings, *bases: type[Settings]) -> dict[str, Any]:
    """The values of ``settings`` for the fields declared by ``bases`` (to build one config from another).

    >>> fields_of(SamplingSettings(k=3), SamplingSettings)["k"]
    3
    """
    wanted = {f.name for base in bases for f in fields(base)}
    return {f.name: getattr(settings, f.name) for f in fields(settings) if f.name in wanted}


@dataclass(frozen=True, kw_only=True)
class SamplingSettings(Settings):
    """What every run samples: N rankings of k documents among the top ``candidates``, from ``seed``.

    ``candidates`` is the first-stage cut-off K (:data:`DEFAULT_CANDIDATES`; None: every document); ``min_rel`` is
    the qrels grade from which a document counts as useful (for EE-R and the oracle, when no utility labels are given).
    ``seed = None`` draws a fresh seed, which the run records so that it can be reproduced.
    """

    n_samples: int = option("--samples", "-N", default=100, parse=positive_arg, help="sampled rankings N")
    k: int = option("-k", default=5, parse=positive_arg, help="documents per ranking passed to the generator")
    seed: int | None = SEED.field(default=None)
    candidates: int | None = option("--candidates", default=DEFAULT_CANDIDATES, parse=candidates_arg,
                                    help="first-stage cut-off K: sample among the top K only ('all': every document)")
    min_rel: int = MIN_REL.field(default=1)

    def __post_init__(self) -> None:
        super().__post_init__()
        # refused when the settings are made, before any model loads or array is allocated
        check_at_most(self.n_samples, "n_samples", MAX_SAMPLES, hint="sampled rankings; the paper uses 100",
                      fix="lower N (the paper uses 100)")
        check_positive_int(self.k, "k", hint="documents given to the generator, e.g. 5")
        if self.seed is not None:
            check_seed(self.seed)


#: What the app's Playground samples by default (its sidebar's k, N, K and seed): small N for a live page, a fixed
#: seed so a class sees the same grid. ``warm`` prepares exactly these answers (``make class``).
PLAYGROUND_SAMPLING = SamplingSettings(n_samples=20, k=5, seed=42)
