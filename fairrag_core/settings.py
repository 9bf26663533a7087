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

import enum
import math
import types
import typing
from dataclasses import dataclass, fields
from typing import Any

from .checks import MAX_SAMPLES, check_at_most, check_positive_int
from .errors import InvalidParameterError
from .option_types import positive_arg
from .options import MIN_REL, SEED, option
from .seeds import check_seed

__all__ = ["Settings", "SamplingSettings", "settings_class", "fields_of"]

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
    """The settings class called ``name`` (for records that name their config's type)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InvalidParameterError(f"unknown settings type {name!r}; known: {sorted(_REGISTRY)}") from None


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

    ``candidates`` is the first-stage cut-off K (None: every document); ``min_rel`` is the qrels grade from
    which a document counts as useful (for EE-R and the oracle, when no utility labels are given).
    ``seed = None`` draws a fresh seed, which the run records so that it can be reproduced.
    """

    n_samples: int = option("--samples", "-N", default=100, parse=positive_arg, help="sampled rankings N")
    k: int = option("-k", default=5, parse=positive_arg, help="documents per ranking passed to the generator")
    seed: int | None = SEED.field(default=None)
    candidates: int | None = option("--candidates", default=None, parse=positive_arg, default_text="every document",
                                    help="first-stage cut-off K: sample among the top K only")
    min_rel: int = MIN_REL.field(default=1)

    def __post_init__(self) -> None:
        super().__post_init__()
        # refused when the settings are made, before any model loads or array is allocated
        check_at_most(self.n_samples, "n_samples", MAX_SAMPLES, hint="sampled rankings; the paper uses 100",
                      fix="lower N (the paper uses 100)")
        check_positive_int(self.k, "k", hint="documents given to the generator, e.g. 5")
        if self.seed is not None:
            check_seed(self.seed)
