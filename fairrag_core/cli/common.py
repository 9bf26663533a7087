"""What every command shares: the inputs and settings options (declared once in :mod:`fairrag_core.options` and on
the settings fields), the citation rule's command-line defaults, keeping a finished run, loading a collection with
its retriever, and small text renderers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..checks import parse_list as id_list  # --queries q1,q2 → ("q1", "q2"); absent → ()
from ..data import Collection as DataCollection
from ..data import load_collection
from ..errors import FairRAGError, StoreError
from ..metrics.registry import METRICS, SWEEP, keys
from ..option_types import alphas_arg, count_arg, positive_arg, seed_arg
from ..options import (
    COLLECTION,
    DEVICE,
    GENERATOR,
    JSON,
    MODEL,
    NLI,
    PROMPT_STYLE,
    RETRIEVER,
    add_option,
    add_options,
    options_of,
    settings_from_args,
)
from ..retrieval import Retriever, RetrieverKind, build_retriever
from ..settings import SamplingSettings

__all__ = ["alphas_arg", "positive_arg", "seed_arg", "count_arg", "add_command", "add_settings", "settings",
           "add_common", "add_store", "keep_run", "Kept", "load_inputs", "load_models", "id_list", "bar", "fmt",
           "print_undefined", "METRIC_NAMES", "print_json", "records", "stderr_progress", "add_all_providers",
           "ALL_PROVIDERS_HINT"]


def add_command(sub, name: str, handler: Callable, **kwargs: Any) -> argparse.ArgumentParser:
    """A command's parser (``kwargs``: ``help``, ``description``) that runs ``handler(args, out)``."""
    p = sub.add_parser(name, **kwargs)
    p.set_defaults(handler=handler)
    return p


def add_store(parser: argparse.ArgumentParser, what: str, *, opt_in: bool = False) -> None:
    """``--store`` and ``--no-store`` (``what``: what the command would save, for the help); with ``opt_in``, only
    ``--store [PATH]``: the command saves ``what`` only when asked (``rank``, a quick look that stays quick)."""
    if opt_in:
        parser.add_argument("--store", nargs="?", const="", default=None, metavar="PATH",
                            help=f"save {what} in the run store: this DuckDB file, or without PATH "
                                 "~/.cache/fairrag/runs.duckdb (default: not saved)")
        return
    parser.add_argument("--store", default=None, help="DuckDB run store (default ~/.cache/fairrag/runs.duckdb)")
    parser.add_argument("--no-store", action="store_true", help=f"do not save {what} in the run store")


def add_settings(parser: argparse.ArgumentParser, cls: type, *, skip: Collection[str] = (),
                 only: Collection[str] | None = None, defaults: dict[str, Any] | None = None) -> None:
    """The options of the settings class ``cls`` (:func:`fairrag_core.options.add_options`); when it has the citation
    rule, its defaults are the default answer preset's fitted rule (docs/answers.md; the dataclasses default to the
    paper's rule) and ``--paper-citations`` is offered."""
    from ..rag.presets import DEFAULT_PRESET, PRESETS

    citation = any(o.group == "citation" for n, o in options_of(cls).items()
                   if n not in skip and (only is None or n in only))
    fitted = PRESETS[DEFAULT_PRESET].citation.citation_fields() if citation else {}
    add_options(parser, cls, skip=skip, only=only, defaults={**fitted, **(defaults or {})})
    if citation:
        parser.add_argument("--paper-citations", action="store_true",
                            help="the paper's rule: the whole answer, entailment the most likely class, no control, "
                                 "no lexical check (every citation option at its settings default)")


def settings(cls: type, args: argparse.Namespace, **overrides: Any) -> Any:
    """The settings ``cls`` of the parsed ``args`` (:func:`add_settings`); ``--paper-citations`` resets the rule."""
    reset = ("citation",) if getattr(args, "paper_citations", False) else ()
    return settings_from_args(cls, args, reset=reset, **overrides)


def add_common(parser: argparse.ArgumentParser, cls: type = SamplingSettings, *, models: bool = False,
               attributor: bool = True, **options: Any) -> None:
    """The run's inputs (``--collection``, ``--retriever``, ``--model``, ``--device`` and, with ``models``, the
    generator, its prompt style and, with ``attributor``, the NLI attributor, their defaults from the model catalog
    and the default answer preset), the settings options of ``cls`` (:func:`add_settings`) and ``--json``."""
    add_option(parser, COLLECTION)
    add_option(parser, RETRIEVER, choices=[k.value for k in RetrieverKind])
    add_option(parser, MODEL)
    add_option(parser, DEVICE)
    if models:
        from ..models.catalog import ATTRIBUTORS, DEFAULTS, listed
        from ..rag.generation import PROMPT_STYLES
        from ..rag.presets import DEFAULT_PRESET, PRESETS

        add_option(parser, GENERATOR, default=DEFAULTS["generator"])
        if attributor:
            menu = listed(ATTRIBUTORS, DEFAULTS["attributor"], marked="offline default")
            add_option(parser, replace(NLI, help=f"{NLI.help}: {menu}, an HF id or folder"),
                       default=DEFAULTS["attributor"])
        add_option(parser, PROMPT_STYLE, default=PRESETS[DEFAULT_PRESET].style, choices=list(PROMPT_STYLES))
    add_settings(parser, cls, **options)
    add_option(parser, JSON)


@dataclass(frozen=True)
class Kept:
    """What became of a finished run's extras: the run store's id (None when not stored) and each failure to keep
    it (store, --output), in words that say why and what to do. The result itself is printed either way."""

    run_id: str | None = None
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "stored": self.run_id is not None, "problems": list(self.problems)}

    def print_text(self, out) -> None:
        """The text output's lines: where the run was saved, and each problem."""
        if self.run_id:
            print(f"\nSaved as run {self.run_id} (python -m fairrag_core runs show {self.run_id})", file=out)
        for problem in self.problems:
            print(f"\nNot kept: {problem}", file=out)


def keep_run(args, run, *, label: str | None = None, outputs: Sequence[tuple[str, Callable[[], object]]] = ()) -> Kept:
    """Save a finished ``run`` in the run store (unless ``--no-store``) and write its ``--output`` files, never
    losing the run when one of them fails: a full disk, a read-only or damaged store, an unwritable path each
    becomes a problem line naming the fix, and the caller prints the result all the same (issue: a full store
    printed only the store's error after a finished audit). Each problem is also one warning line on standard error
    (the result goes to standard output). A command with an opt-in ``--store`` (:func:`add_store`) saves only when
    it was given."""
    from ..audit.store import RunStore

    run_id, problems = None, []
    opted_out = args.no_store if hasattr(args, "no_store") else args.store is None  # opt-in: --store given
    if not opted_out:
        try:
            with RunStore(args.store) as store:
                run_id = store.save(run, label=label)
        except StoreError as err:
            problems.append(f"the run was not stored: {err} (or rerun with --no-store)")
        except OSError as err:
            problems.append(f"the run was not stored ({err.strerror or err}); free space or fix the store's "
                            "permissions, or rerun with --store PATH or --no-store")
    for path, write in outputs:
        try:
            write()
        except (OSError, FairRAGError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            problems.append(f"{path} was not written ({reason}); pick a writable path with free space")
    for problem in problems:
        print(f"warning: {problem} (the finished result is printed all the same)", file=sys.stderr)
    return Kept(run_id, tuple(problems))


def load_inputs(args) -> tuple[DataCollection, Retriever]:
    """The collection and first-stage retriever named by the common options (BM25 for a command without
    ``--retriever``)."""
    collection = load_collection(args.collection)
    return collection, build_retriever(getattr(args, "retriever", "bm25"), collection.texts,
                                       model=getattr(args, "model", None), device=getattr(args, "device", None),
                                       collection=collection.name)


def load_models(args, *, attributor: bool = True) -> tuple:
    """The generator ``--generator`` (asked in ``--prompt-style``) and, with ``attributor``, the NLI attributor
    ``--nli`` (else None), both on ``--device``."""
    from ..models.catalog import load_language_model
    from ..rag import Generator
    from ..rag.attribution import load_attributor

    generator = Generator(load_language_model(args.generator, device=args.device), style=args.prompt_style)
    return generator, load_attributor(args.nli, device=args.device) if attributor else None


#: What a shortened provider list adds to its rule line (:attr:`fairrag_core.audit.ledger.TopGroups.rule`).
ALL_PROVIDERS_HINT = "--all-providers prints every one"


def add_all_providers(parser: argparse.ArgumentParser) -> None:
    """``--all-providers``: print every provider (and group) instead of the first
    :data:`~fairrag_core.audit.ledger.TOP_PROVIDERS` and one line summing the rest (text only: JSON has them all)."""
    from ..audit.ledger import TOP_PROVIDERS

    parser.add_argument("--all-providers", action="store_true",
                        help=f"print every provider and group (default: the top {TOP_PROVIDERS} and one line for "
                             "all others; --json always lists every one)")


def bar(value: float, scale: float, width: int = 24) -> str:
    filled = 0 if scale <= 0 else round(width * min(value / scale, 1.0))
    return "█" * filled + "·" * (width - filled)


def fmt(value, spec: str = ".3f") -> str:
    """A metric in the format ``spec`` (three decimals), or "—" when it has no value (None or NaN: undefined, or not
    measured)."""
    return "—" if value is None or value != value else format(value, spec)


def print_json(payload, out, **dumps: Any) -> int:
    """Print ``payload`` as JSON (``dumps``: :func:`json.dumps`'s keywords) and return the exit code 0."""
    print(json.dumps(payload, **dumps), file=out)
    return 0


def records(frame) -> list[dict]:
    """A data frame's rows as JSON-ready dicts (pandas' own conversion: NaN → None, timestamps as numbers; a value
    pandas cannot write, as its text)."""
    return json.loads(frame.to_json(orient="records", default_handler=str))


def stderr_progress(what: str, *, tenths: bool = False) -> Callable[[int, int], None]:
    """A progress callback that prints ``what`` (with ``{done}`` and ``{total}``) on standard error, indented; with
    ``tenths``, only at the start, at every further tenth of the total, and at the end."""
    shown = -1

    def progress(done: int, total: int) -> None:
        nonlocal shown
        tenth = 10 * done // max(total, 1)
        if not tenths or tenth > shown or done == total:
            shown = tenth
            print(f"  {what.format(done=done, total=total)}", file=sys.stderr, flush=True)

    return progress


#: How the text output names each metric (and interval) that may be left without a value: the per-system metrics
#: of the registry (:mod:`fairrag_core.metrics.registry`) as a sentence names them, and ``<key>_interval`` for those
#: with an interval (``EE-D's interval``).
METRIC_NAMES = {**{key: METRICS[key].in_words for key in keys(SWEEP)},
                **{f"{key}_interval": f"{METRICS[key].in_words}'s interval" for key in keys(SWEEP)
                   if METRICS[key].interval}}


def print_undefined(undefined: dict[str, str], out) -> None:
    """One line per metric shown as "—": its name (:data:`METRIC_NAMES`) and why it has no value."""
    for metric, reason in undefined.items():
        print(f"  — {METRIC_NAMES.get(metric, metric)}: {reason}", file=out)
