"""Each command-line option declared once — flag, help, default — and the flag, the settings and the reproduce
command all derived from that one declaration.

A settings field declares its option where the field is defined::

    n_samples: int = option("--samples", "-N", default=100, parse=positive_arg, help="sampled rankings N")

From it come the argparse argument with its type, choices and a help that names the default (:func:`add_options`),
the settings object of the parsed arguments (:func:`settings_from_args`), and the words that rebuild those settings
(:func:`settings_argv`), which the reproduce command of a stored run prints
(:meth:`fairrag_core.record.RunRecord.command`). An input that is no settings field (the collection, the models) is
an :class:`Option` constant below (:data:`COLLECTION` …) with its own default.

A reproduce command holds every value that differs from the command line's default, plus the options marked
``always`` (the seed, α, the citation rule whose default is a fitted preset, the inputs). It is rendered when it is
printed, against the defaults of the installed version, so a stored run's command is right for the version that
prints it. A field without an option (``no_option()``, or none declared) cannot be set from the command line: a run
whose value differs from the field's default has no reproduce command, and :func:`settings_argv` says so instead of
printing one that would compute something else.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, kw_only=True)
... class Demo:
...     k: int = option("-k", default=5, parse=int, help="documents per ranking")
...     fast: bool = option("--fast", kind=Kind.TOGGLE, default=False, help="go fast")
>>> settings_argv(Demo(k=3))
['-k', '3']
>>> settings_argv(Demo(fast=True))
['--fast']
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import math
import os
import types
import typing
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import MISSING, dataclass
from typing import Any

from .errors import InvalidParameterError
from .option_types import alphas_arg, positive_arg, seed_arg, whole_arg

__all__ = ["Kind", "Option", "Entry", "option", "no_option", "options_of", "option_default", "add_option",
           "add_options", "settings_from_args", "setting_entries", "settings_argv", "argv", "render", "command_path",
           "SEED", "MIN_REL", "COLLECTION", "RETRIEVER", "MODEL", "DEVICE", "QUERY", "GENERATOR", "NLI", "PROMPT_STYLE",
           "JSON", "TRACE_MAP", "MULTI_RETRIEVAL", "PROVIDER_FROM", "PROVIDER_MAP", "WHAT_IF_ALPHAS", "WHAT_IF_SAMPLES"]

_KEY = "fairrag_option"


class _Unset:
    """No value given (``dataclasses.MISSING`` cannot be a field's default)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


class Kind(str, enum.Enum):
    """How an option is written: ``--flag VALUE`` (or a positional VALUE), ``--x/--no-x``, one switch, or
    ``--flag VALUE`` repeated (each use adds one value to a tuple; a positional APPEND takes one or more values)."""

    VALUE = "value"
    TOGGLE = "toggle"  # --per-claim / --no-per-claim (argparse.BooleanOptionalAction)
    ON = "on"  # -B, --binarize: present means True (the default is False)
    OFF = "off"  # --no-oracle, -U: present means False (the default is True)
    APPEND = "append"  # --trace-map a=x --trace-map b=y: ("a=x", "b=y"); none given is (); positional: A B C


@dataclass(frozen=True)
class Option:
    """One command-line option: its flags (the first is the one commands print; a name without dashes is a
    positional argument), its help (without the default, which is added), how its text is read (``parse``), how it
    is written (``kind``) and, for an option that is no settings field or whose command-line default is not the
    field's, ``cli_default``.

    ``always``: printed in every reproduce command, even at its default. ``path``: a file or folder, printed by
    :func:`command_path`. ``group``: options that go together (``"citation"``: the citation rule).
    ``default_text``: how the help names a default of None or nothing (``candidates=None`` → "every document").
    """

    flags: tuple[str, ...]
    help: str
    parse: Callable[[str], Any] | None = None
    kind: Kind = Kind.VALUE
    cli_default: Any = UNSET
    default_text: str | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    always: bool = False
    path: bool = False
    group: str | None = None
    required: bool = False

    def __post_init__(self) -> None:
        if not self.flags:
            raise InvalidParameterError("an Option needs at least one flag, e.g. Option(('--seed',), help=...)")
        if self.positional and (len(self.flags) > 1 or self.kind not in (Kind.VALUE, Kind.APPEND)):
            raise InvalidParameterError(f"the positional option {self.flags[0]!r} takes one name and its value(s)")

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def dest(self) -> str:
        """The argparse name of an option that is no field: its first long flag (``--min-rel`` → ``min_rel``)."""
        long = next((f for f in self.flags if f.startswith("--")), self.flags[0])
        return long.lstrip("-").replace("-", "_")

    def field(self, *, default: Any = MISSING, default_factory: Any = MISSING) -> Any:
        """A dataclass field (``dataclasses.field``) that carries this option."""
        return dataclasses.field(default=default, default_factory=default_factory, metadata={_KEY: self})


def option(*flags: str, help: str, default: Any = MISSING, default_factory: Any = MISSING, **more: Any) -> Any:
    """A settings field with its command-line option: ``default`` is the field's (and the flag's, unless
    ``cli_default`` says otherwise); the other keywords are :class:`Option`'s."""
    return Option(flags, help, **more).field(default=default, default_factory=default_factory)


def no_option(*, default: Any = MISSING) -> Any:
    """A field that a subclass takes off the command line (a log audit has no control document): it keeps its
    default, and a run with another value has no reproduce command."""
    return dataclasses.field(default=default, metadata={_KEY: None})


def options_of(cls: type) -> dict[str, Option]:
    """``{field name: Option}`` of a settings dataclass, in field order. A field redeclared in a subclass (a new
    default) keeps the option its base declared; :func:`no_option` removes it."""
    found = {}
    for f in dataclasses.fields(cls):
        for klass in cls.__mro__:
            declared = getattr(klass, "__dataclass_fields__", {}).get(f.name)
            if declared is not None and _KEY in declared.metadata:
                if declared.metadata[_KEY] is not None:
                    found[f.name] = declared.metadata[_KEY]
                break
    return found


def _resolve(value: Any) -> Any:
    return value() if callable(value) and not isinstance(value, type) else value


def _field_default(cls: type, name: str) -> Any:
    f = cls.__dataclass_fields__[name]
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def option_default(cls: type, name: str) -> Any:
    """The command line's default for field ``name`` of ``cls``: the option's ``cli_default``, else the field's."""
    opt = options_of(cls)[name]
    return _resolve(opt.cli_default) if opt.cli_default is not UNSET else _field_default(cls, name)


def _enum_of(hint: Any) -> type[enum.Enum] | None:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = inner[0] if len(inner) == 1 else None
    return hint if isinstance(hint, type) and issubclass(hint, enum.Enum) else None


def render(value: Any, *, path: bool = False) -> str:
    """A value as a command line writes it: Enums by value, ``inf``, ``none``, grids as ``0,1,2,inf``, floats in
    their shortest exact form, paths by :func:`command_path`.

    >>> render((0.0, 2.0, float("inf"))), render(None), render(0.7), render(1 / 3)
    ('0,2,inf', 'none', '0.7', '0.3333333333333333')
    """
    if value is None:
        return "none"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    if isinstance(value, (tuple, list)):
        return ",".join(render(v) for v in value)
    return command_path(str(value)) if path else str(value)


def _help(opt: Option, default: Any) -> str:
    text = opt.help
    if opt.kind is Kind.TOGGLE:
        text += f" (default {'on' if default else 'off'})"
    elif opt.kind in (Kind.VALUE, Kind.APPEND) and not opt.positional and not opt.required:
        said = opt.default_text if opt.default_text and default in (None, ()) else render(default)
        text += f" (default {said})"
    return text.replace("%", "%%")


def add_option(parser: argparse.ArgumentParser, opt: Option, *, dest: str | None = None, default: Any = UNSET,
               choices: Sequence[str] | None = None) -> None:
    """Add ``opt`` to ``parser`` as ``dest`` (default :attr:`Option.dest`), with ``default`` (default: its
    ``cli_default``) named in the help and ``choices`` (default: its own)."""
    dest = dest or opt.dest
    default = _resolve(opt.cli_default if default is UNSET else default)
    default = None if default is UNSET or default is MISSING else default
    choices = list(choices) if choices is not None else (list(opt.choices) if opt.choices else None)
    kwargs: dict[str, Any] = {"help": _help(opt, default)}
    if opt.positional:
        if opt.kind is Kind.APPEND:
            kwargs["nargs"] = "+"
        parser.add_argument(dest, type=opt.parse, choices=choices, metavar=opt.metavar or
                            (opt.flags[0] if opt.flags[0] != dest else None), **kwargs)
        return
    if opt.kind is Kind.TOGGLE:
        kwargs["action"] = argparse.BooleanOptionalAction
    elif opt.kind is Kind.ON:
        kwargs["action"] = "store_true"
    elif opt.kind is Kind.OFF:
        kwargs["action"] = "store_false"
    elif opt.kind is Kind.APPEND:  # argparse appends to a fresh list; absent stays None (the handler reads ())
        kwargs.update(action="append", type=opt.parse, metavar=opt.metavar or opt.dest.upper())
        default = None
    else:
        kwargs.update(type=opt.parse, choices=choices, required=opt.required,
                      metavar=opt.metavar or (None if choices else opt.dest.upper()))
    parser.add_argument(*opt.flags, dest=dest, default=default, **kwargs)


def add_options(parser: argparse.ArgumentParser, cls: type, *, skip: Collection[str] = (),
                only: Collection[str] | None = None, defaults: dict[str, Any] | None = None) -> None:
    """Add the options of the fields of ``cls`` (each as its field name) to ``parser``: ``skip`` or keep ``only``
    some fields; ``defaults`` replaces the command line's default of some (e.g. the Playground's for ``warm``).
    Enum fields take their members' values as choices."""
    hints = typing.get_type_hints(cls)
    for name, opt in options_of(cls).items():
        if name in skip or (only is not None and name not in only):
            continue
        default = defaults[name] if defaults and name in defaults else option_default(cls, name)
        members = _enum_of(hints[name])
        add_option(parser, opt, dest=name, default=default,
                   choices=[str(m.value) for m in members] if members and opt.choices is None else None)


def settings_from_args(cls: type, args: argparse.Namespace, *, reset: Collection[str] = (), **overrides: Any) -> Any:
    """``cls`` built from the parsed ``args``: every field whose option the parser has, then ``overrides``. The
    fields of the groups in ``reset`` keep their dataclass default (``--paper-citations``: the paper's rule)."""
    # a repeated option (or a positional taking several values) as a tuple: argparse gives a list, or None for none
    values = {name: tuple(getattr(args, name) or ()) if opt.kind is Kind.APPEND else getattr(args, name)
              for name, opt in options_of(cls).items()
              if hasattr(args, name) and name not in overrides and opt.group not in reset}
    return cls(**values, **overrides)


@dataclass(frozen=True)
class Entry:
    """An option with the value a command gives it and the command line's default for it."""

    option: Option
    value: Any
    default: Any = UNSET

    def words(self) -> list[str]:
        """What a command line says for this value: nothing when it is the default (unless ``always``)."""
        opt, value = self.option, self.value
        if not opt.always and self.default is not UNSET and _same(value, self.default):
            return []
        if opt.positional:
            values = value if opt.kind is Kind.APPEND else (value,)
            return [render(v, path=opt.path) for v in values]
        if opt.kind is Kind.TOGGLE:
            return [opt.flags[0] if value else "--no-" + opt.flags[0].removeprefix("--")]
        if opt.kind in (Kind.ON, Kind.OFF):
            return [opt.flags[0]] if bool(value) is (opt.kind is Kind.ON) else []
        if opt.kind is Kind.APPEND:
            return [w for v in value or () for w in (opt.flags[0], render(v, path=opt.path))]
        if value is None and not _reads_none(opt):
            if opt.always or self.default is UNSET or self.default is None:
                return []  # the command line's None: a fresh seed, every document, no dense model
            raise InvalidParameterError(f"{opt.flags[0]} cannot say None (its default is {render(self.default)}), "
                                        "so no command line reproduces this value; give it a value")
        text = render(value, path=opt.path)
        # "--control-margin=-1e-05": argparse would take a separate "-1e-05" for an option of its own
        return [f"{opt.flags[0]}={text}"] if text.startswith("-") else [opt.flags[0], text]


def _reads_none(opt: Option) -> bool:
    """Whether the option reads ``none`` back as None (a citation rule's "no threshold")."""
    try:
        return opt.parse is not None and opt.parse("none") is None
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return False


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, enum.Enum) or isinstance(b, enum.Enum):
        return render(a) == render(b)
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b) and all(
            _same(x, y) for x, y in zip(a, b))
    return a == b


def setting_entries(settings: Any, *, values: dict[str, Any] | None = None, skip: Collection[str] = (),
                    skip_groups: Collection[str] = ()) -> list[Entry]:
    """The option entries of ``settings`` (``values`` replaces some, e.g. the seed a run drew). ``skip`` and
    ``skip_groups`` leave out options that do not matter to this run (the citation rule of a log audit without a
    judge).

    Raises:
        InvalidParameterError: a field that no option sets holds a value other than its default, so no command
            line reproduces these settings.
    """
    cls, values = type(settings), dict(values or {})
    declared = options_of(cls)
    for f in dataclasses.fields(cls):
        if f.name not in declared and not _same(getattr(settings, f.name), _field_default(cls, f.name)):
            raise InvalidParameterError(
                f"{cls.__name__}.{f.name} = {getattr(settings, f.name)!r} has no command-line option, so no command "
                f"reproduces these settings; rebuild the run in Python from its record's config "
                f"({cls.__name__}.from_dict(record.config.to_dict())) or declare an option for {f.name}")
    return [Entry(opt, values.get(name, getattr(settings, name)), option_default(cls, name))
            for name, opt in declared.items() if name not in skip and opt.group not in skip_groups]


def argv(entries: Iterable[Entry]) -> list[str]:
    """The words of ``entries``: positional values first, then the options, each in the order given."""
    entries = list(entries)
    return ([w for e in entries if e.option.positional for w in e.words()]
            + [w for e in entries if not e.option.positional for w in e.words()])


def settings_argv(settings: Any, **kwargs: Any) -> list[str]:
    """The command-line words that rebuild ``settings`` (keywords as :func:`setting_entries`)."""
    return argv(setting_entries(settings, **kwargs))


def command_path(value: str) -> str:
    """A path as a printed command should name it: relative when it lies under the current directory, absolute
    otherwise, so the command works from here and, copied elsewhere, still finds the file. A bare name (a demo
    collection, or a file name without a folder) is kept as it is.

    >>> command_path("running-shoes")
    'running-shoes'
    >>> command_path(os.path.join(os.getcwd(), "data", "qrels.txt")) == os.path.join("data", "qrels.txt")
    True
    >>> command_path("/srv/elsewhere/log.jsonl")
    '/srv/elsewhere/log.jsonl'
    """
    text = str(value)
    if not text or (os.sep not in text and (os.altsep is None or os.altsep not in text)):
        return text
    absolute = os.path.abspath(os.path.expanduser(text))
    here = os.getcwd()
    if absolute == here:
        return "."
    if absolute.startswith(here.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, here)
    return absolute


# -- options shared by several settings classes, and the inputs a run records (no settings fields) -------------
#: ``--seed``: every stochastic command's; always printed (the seed a run drew is what makes it reproducible).
SEED = Option(("--seed",), "random seed, 0 to 2**63-1", parse=seed_arg, always=True,
              default_text="fresh, printed so you can rerun")
#: ``--min-rel``: the qrels grade from which a document is useful.
MIN_REL = Option(("--min-rel",), "qrels grade from which a document counts as useful (EE-R, the fair target)",
                 parse=whole_arg)
#: ``--collection``: a demo name or a folder (printed by :func:`command_path`).
COLLECTION = Option(("--collection",), "a demo collection (`python -m fairrag_core collections` lists them) or a "
                    "folder with corpus.jsonl|csv, queries.jsonl, qrels.txt", cli_default="running-shoes",
                    always=True, path=True)
#: ``--retriever``: the first-stage scorer (the CLI binds the choices: :class:`~fairrag_core.retrieval.RetrieverKind`).
RETRIEVER = Option(("--retriever",), "first-stage scorer; dense uses the offline MiniLM unless --model",
                   cli_default="bm25", always=True)
#: ``--model``: the dense retriever's model.
MODEL = Option(("--model",), "dense model: short name (minilm), HF id or local folder",
               default_text="MiniLM for dense")
QUERY = Option(("--query",), "the question; if it is one of the collection's queries, its relevance labels give EE-R "
               "(and its gold answer EU)", required=True)
#: ``--device``: where models run (not part of a run's record: it does not change its numbers).
DEVICE = Option(("--device",), "where models run: cpu, cuda or mps", default_text="auto")
#: ``--generator``, ``--nli``, ``--prompt-style``: the models a run with answers used (the CLI binds their defaults
#: from the model catalog and the answer presets, and completes ``--nli``'s help with the catalogue's attributors).
GENERATOR = Option(("--generator",), "generator: a catalog name, any HF id or folder", always=True)
NLI = Option(("--nli",), "NLI attributor", always=True)
PROMPT_STYLE = Option(("--prompt-style",), "how the generator is asked ('short' is the original few-word prompt; "
                      "docs/answers.md compares them)", always=True)
#: ``--json``: the output's form (no part of a reproduce command).
JSON = Option(("--json",), "print one JSON object instead of tables", kind=Kind.ON)
#: ``--trace-map KEY=ATTRIBUTE`` (repeatable), ``--multi-retrieval``: how a trace export is read
#: (:class:`~fairrag_core.data.traces.TraceMap`).
TRACE_MAP = Option(("--trace-map",), "read a field of a trace from another span attribute, KEY=ATTRIBUTE; keys: "
                   "query_id, query, answer, citations, session, ranking, documents, document_id, document_score, "
                   "document_metadata; repeat for several (docs/traces.md)", kind=Kind.APPEND,
                   metavar="KEY=ATTRIBUTE", default_text="the OpenInference and GenAI conventions")
MULTI_RETRIEVAL = Option(("--multi-retrieval",), "a trace with several retrieval spans: skip it (counted), or keep "
                         "the first or the last by start time", choices=("skip", "first", "last"), cli_default="skip")
#: ``--provider-from``, ``--provider-map``: providers from the log itself, for an audit without a collection
#: (:func:`~fairrag_core.data.traces.documents_from_log`).
PROVIDER_FROM = Option(("--provider-from",), "without a collection: each document's provider from its logged "
                       "metadata, metadata.KEY, or domain:metadata.KEY for a URL's host", metavar="[domain:]FIELD",
                       default_text="none (the collection's providers)")
PROVIDER_MAP = Option(("--provider-map",), "without a collection: a CSV doc_id,provider[,group columns] naming the "
                      "logged documents' providers", metavar="FILE", path=True,
                      default_text="none (the collection's providers)")
#: ``--what-if-alphas``, ``--what-if-samples``: replay a served log's scores under the fair sampler
#: (:func:`~fairrag_core.audit.what_if.what_if_sampling`).
WHAT_IF_ALPHAS = Option(("--what-if-alphas",), "what if it sampled: replay each query's logged candidates and scores "
                        "under the fair Plackett-Luce sampler at these α (e.g. 0,1,2,4,8; inf = deterministic by "
                        "logged score) and estimate the exposure it would have delivered; needs logged scores",
                        parse=alphas_arg, metavar="ALPHAS", default_text="none (no what-if)")
WHAT_IF_SAMPLES = Option(("--what-if-samples",), "rankings sampled per query and α in the what-if", parse=positive_arg,
                         cli_default=100, metavar="N")
