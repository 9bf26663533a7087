"""What a sweep or audit run produced, and the typed record that makes it reproducible.

A :class:`SweepRun` bundles the per-(query, α) table, the per-candidate exposure table behind ledgers, and a
:class:`RunRecord`: the run's kind, collection, retriever, models, its full settings (a
:class:`~fairrag_core.settings.Settings` subclass), the seed actually used and what the run cost. The record
serialises itself (:meth:`RunRecord.to_dict` / :meth:`RunRecord.from_dict`, which also reads records saved by
earlier versions) and writes the command that reproduces the run (:meth:`RunRecord.command`), derived from the option
declarations of its settings and inputs (:mod:`fairrag_core.options`), never from a hand-written flag list.

Every record also says what made it (:func:`software`: the package, its version and the git commit when run from a
checkout) and what it read (:meth:`RunRecord.inputs`: the collection, its queries and qrels, each by name and sha256);
:meth:`RunRecord.header` gathers these with the settings, and every output of a run carries it: the ``--json``
output under ``header``, a CSV written for the run as ``# key: value`` lines before its table
(:func:`fairrag_core.data.export.write_table`), the run store in the record itself.
"""

from __future__ import annotations

import enum
import functools
import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidParameterError
from .models.catalog import attributor_option
from .options import (
    COLLECTION,
    GENERATOR,
    MODEL,
    NLI,
    PROMPT_STYLE,
    QUERY,
    RETRIEVER,
    Entry,
    argv,
    command_path,
    setting_entries,
)
from .settings import Settings, settings_class

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["RunKind", "RunRecord", "SweepRun", "command_path", "software", "collection_inputs", "PACKAGE"]

#: The distribution's name (pyproject.toml), as a citation and every record's ``software`` name it.
PACKAGE = "fairrag-core"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout holding the package, if any


@functools.cache
def software() -> dict[str, str]:
    """What made a record: ``{"package": "fairrag-core", "version": …, "commit": …}``, once per process.

    ``version``: the installed distribution's, else ``pyproject.toml``'s beside the package (a checkout), else
    ``"unknown"``. ``commit``: ``git rev-parse HEAD`` of the checkout the package was imported from, with ``-dirty``
    when tracked files differ from it (the numbers may then come from code no commit holds); ``"unknown"`` when the
    package is not in a git checkout or git is not installed. Every record takes it (:attr:`RunRecord.software`),
    so every stored run and every output header names the code that made it.
    """
    return {"package": PACKAGE, "version": _version(), "commit": _commit()}


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        import tomllib

        with open(os.path.join(_ROOT, "pyproject.toml"), "rb") as handle:
            project = tomllib.load(handle).get("project", {})
        return str(project["version"]) if project.get("name") == PACKAGE else "unknown"
    except (OSError, ValueError, KeyError):
        return "unknown"


def _commit() -> str:
    if not os.path.exists(os.path.join(_ROOT, ".git")):
        return "unknown"
    try:
        head = subprocess.run(["git", "-C", _ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        changed = subprocess.run(["git", "-C", _ROOT, "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("-dirty" if changed.returncode == 0 and changed.stdout.strip() else "")


def collection_inputs(source: str) -> list[dict[str, Any]]:
    """The inputs a run over the collection ``source`` (a demo name or a folder) read, as
    :meth:`~fairrag_core.data.identity.InputIdentity.to_dict`: the collection (the sha256 of all its parts), its
    queries file and, when it has them, its qrels, each with its name and the sha256 of its bytes."""
    from .data.demo import DEMO_COLLECTIONS, demo_folder
    from .data.identity import InputIdentity, collection_identity, file_sha256, qrels_identity

    items = [collection_identity(source)]
    folder = demo_folder(source) if source in DEMO_COLLECTIONS else Path(source)
    queries = folder / "queries.jsonl"
    if queries.is_file():
        items.append(InputIdentity("queries", queries.name, file_sha256(queries), str(queries),
                                   upload=items[0].upload))
    qrels = qrels_identity(source)
    if qrels is not None:
        items.append(qrels)
    return [item.to_dict() for item in items]


class RunKind(str, enum.Enum):
    """What a stored run is: an exposure-only sweep, a sweep with answers, an audit (either, saved from the
    Audit page with its per-document details), the audit of a served RAG log or run (``audit-log``), a
    comparison of audited systems (:mod:`fairrag_core.audit.compare`), or one query ranked at one α (``rank``:
    its sampled and deterministic rows, as a sweep's)."""

    RANK = "rank"
    EXPOSURE_SWEEP = "exposure-sweep"
    RAG_SWEEP = "rag-sweep"
    AUDIT = "audit"
    AUDIT_LOG = "audit-log"
    COMPARISON = "comparison"


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """Everything needed to read, trust and reproduce a run."""

    kind: RunKind
    collection: str
    retriever: str
    config: Settings
    seed: int
    query_ids: tuple[str, ...] = ()
    generator: str | None = None
    prompt_style: str | None = None  # the generator's prompt style (fairrag_core.rag.generation.PROMPT_STYLES)
    attributor: str | None = None
    attributor_prompt: str | None = None  # a digest of the NLI judge's prompt, when the attributor is an LLM judge
    complete: bool = True
    wall_seconds: float | None = None
    generator_calls: int | None = None
    sampled_rankings: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the first-stage depth actually used
    software: dict[str, str] = field(default_factory=software)  # what made it; {} for runs stored before

    @property
    def collection_name(self) -> str:
        """The collection's short name: a demo name, or the last part of a folder path."""
        return os.path.basename(self.collection.rstrip(os.sep)) or self.collection

    @property
    def answers(self) -> bool:
        """Whether the run generated and attributed answers (a RAG sweep) or measured exposure only."""
        return self.generator is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value, "collection": self.collection, "retriever": self.retriever,
            "config_type": type(self.config).__name__, "config": self.config.to_dict(), "seed": self.seed,
            "query_ids": list(self.query_ids), "generator": self.generator, "prompt_style": self.prompt_style,
            "attributor": self.attributor, "attributor_prompt": self.attributor_prompt,
            "complete": self.complete, "wall_seconds": self.wall_seconds, "generator_calls": self.generator_calls,
            "sampled_rankings": self.sampled_rankings, "extra": self.extra, "software": self.software,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, kind: str | None = None) -> RunRecord:
        """Rebuild a record from :meth:`to_dict`, or from the flat settings dict earlier versions stored."""
        if "config_type" not in data:
            return _legacy_record(data, kind)
        config = settings_class(data["config_type"]).from_dict(data["config"])
        return cls(kind=RunKind(data["kind"]), collection=data["collection"], retriever=data["retriever"],
                   config=config, seed=int(data["seed"]), query_ids=tuple(data.get("query_ids") or ()),
                   generator=data.get("generator"), prompt_style=data.get("prompt_style"),
                   attributor=data.get("attributor"), attributor_prompt=data.get("attributor_prompt"),
                   complete=bool(data.get("complete", True)), wall_seconds=data.get("wall_seconds"),
                   generator_calls=data.get("generator_calls"), sampled_rankings=data.get("sampled_rankings"),
                   extra=dict(data.get("extra") or {}), software=dict(data.get("software") or {}))

    def inputs(self) -> list[dict[str, Any]]:
        """What the run read, each by role, name and sha256: the recorded ``extra["inputs"]`` (an audit, or a run
        saved with them), else the collection's (:func:`collection_inputs`; read now, empty when it has no
        collection)."""
        recorded = self.extra.get("inputs")
        if recorded:
            return list(recorded)
        return collection_inputs(self.collection) if self.collection else []

    def with_inputs(self) -> RunRecord:
        """This record with :meth:`inputs` kept in ``extra["inputs"]`` (so a stored run names them even when its
        collection has changed or gone since)."""
        if self.extra.get("inputs") or not self.collection:
            return self
        return replace(self, extra={**self.extra, "inputs": self.inputs()})

    def header(self) -> dict[str, Any]:
        """What every output of the run carries (module docstring): the package, version and commit that made it,
        the command that reproduces it, its kind, inputs (role, name, sha256), models, seed and full settings
        (``settings``, as :meth:`Settings.to_dict`: N, k, K as asked, …), the first-stage cut-off K as run
        (``candidates_used``) and how many queries it ran. Fields without a value (no generator) are left out; a run
        stored before versions were recorded says ``"not recorded"``."""
        made = {key: self.software.get(key, "not recorded") for key in ("package", "version", "commit")}
        header = {**made, "command": self.command(), "kind": self.kind.value, "collection": self.collection,
                  "inputs": [{key: item.get(key) for key in ("role", "name", "sha256")} for item in self.inputs()],
                  "retriever": self.retriever, "generator": self.generator, "prompt_style": self.prompt_style,
                  "attributor": self.attributor, "seed": self.seed, "settings": self.config.to_dict(),
                  "candidates_used": self.extra.get("candidates_used"),  # K as run (settings' None: every document)
                  "queries": len(self.query_ids) or None}
        return {key: value for key, value in header.items() if value is not None}

    def command(self) -> str:
        """The ``python -m fairrag_core …`` command that reproduces this run's table (paths as
        :func:`command_path` names them from the current directory)."""
        return shlex.join(["python", "-m", "fairrag_core", *self.argv()])

    def argv(self) -> list[str]:
        """The command's words after ``python -m fairrag_core``, derived from the option declarations of the
        record's settings (:mod:`fairrag_core.options`) and of its inputs: every value that differs from the command
        line's default, the seed the run used, and the collection, retriever and models.

        Raises:
            InvalidParameterError: the settings hold a value that no option sets (no command reproduces them).
        """
        words = _COMMANDS.get(self.kind)
        if words is None:  # a new kind of run (e.g. a stored comparison) adds its command here
            raise InvalidParameterError(f"no reproduce command is declared for runs of kind {self.kind.value!r}; "
                                        "add one to record._COMMANDS")
        return words(self)


def _sweep_argv(record: RunRecord) -> list[str]:
    """``exposure-sweep`` or ``sweep`` (a sweep saved from the Audit page too): inputs, then the settings."""
    kind, _, model = record.retriever.partition(":")
    inputs = [Entry(COLLECTION, record.collection), Entry(RETRIEVER, kind), Entry(MODEL, model or None)]
    if record.answers:
        # runs saved before prompt styles were recorded used the original short prompt
        inputs += [Entry(GENERATOR, record.generator), Entry(NLI, _attributor_name(record.attributor)),
                   Entry(PROMPT_STYLE, record.prompt_style or "short")]
    entries = setting_entries(record.config, values={"seed": record.seed})
    return ["sweep" if record.answers else "exposure-sweep", *argv(inputs + entries)]


def _rank_argv(record: RunRecord) -> list[str]:
    """``rank``: the collection, retriever and its model, the query (its text, kept in ``extra["query"]``), then the
    settings."""
    kind, _, model = record.retriever.partition(":")
    inputs = [Entry(COLLECTION, record.collection), Entry(RETRIEVER, kind), Entry(MODEL, model or None),
              Entry(QUERY, record.extra["query"])]
    return ["rank", *argv(inputs + setting_entries(record.config, values={"seed": record.seed}))]


def _audit_log_argv(record: RunRecord) -> list[str]:
    """``audit-log LOG``: the log audit's settings (how the log is read, the providers from the log, the what-if
    included); the citation rule only when a judge attributed; no ``--collection`` when the providers came from the
    log (``--provider-from``, ``--provider-map``)."""
    judged = record.attributor is not None
    from_log = record.config.provider_from is not None or record.config.provider_map is not None
    inputs = ([] if from_log else [Entry(COLLECTION, record.collection)]) + (
        [Entry(NLI, _attributor_name(record.attributor))] if judged else [])
    entries = setting_entries(record.config, values={"seed": record.seed}, skip_groups=() if judged else ("citation",))
    return ["audit-log", *argv(inputs + entries)]


def _comparison_argv(record: RunRecord) -> list[str]:
    """``compare-runs A B … --collection …``: the compared files (or stored runs, ``run:ID``), which are the
    settings' positional inputs, and the other settings; no ``--collection`` when the providers came from the logs
    (``--provider-from``, ``--provider-map``)."""
    settings = replace(record.config, systems=())  # the systems' labels come from the inputs
    inputs = [] if settings.providers_from_logs else [Entry(COLLECTION, record.collection)]
    return ["compare-runs", *argv([*inputs, *setting_entries(settings, values={"seed": record.seed})])]


#: The command that reproduces each kind of run.
_COMMANDS: dict[RunKind, Callable[[RunRecord], list[str]]] = {
    RunKind.RANK: _rank_argv, RunKind.EXPOSURE_SWEEP: _sweep_argv, RunKind.RAG_SWEEP: _sweep_argv,
    RunKind.AUDIT: _sweep_argv,
    RunKind.AUDIT_LOG: _audit_log_argv, RunKind.COMPARISON: _comparison_argv,
}


def _attributor_name(attributor: str | None) -> str:
    """The CLI name of a stored attributor, from the model catalogue (``judge:qwen2.5-1.5b`` → ``qwen-judge``,
    ``nli:X`` → ``X``)."""
    return attributor_option(attributor)


def _legacy_record(data: dict[str, Any], kind: str | None) -> RunRecord:
    """Records saved before settings were typed: a flat ``DataFrame.attrs`` dict (exposure or RAG sweeps)."""
    answers = "generator" in data
    settings = {"alphas": [a if a is not None else "inf" for a in data.get("alphas", ())],
                "n_samples": int(data.get("n_samples", 20)), "k": int(data.get("k", 5)), "seed": data.get("seed"),
                "candidates": data.get("candidates"), "min_rel": int(data.get("min_rel", 1))}
    if answers:
        settings.update(metric=data.get("metric", "rougeL"), usefulness=data.get("labels", "utility"),
                        prompt_order=data.get("prompt_order", "sampled"), oracle=bool(data.get("oracle", True)))
    config = settings_class("RagSweepConfig" if answers else "SweepConfig").from_dict(settings)
    return RunRecord(kind=RunKind(kind or ("rag-sweep" if answers else "exposure-sweep")),
                     collection=str(data.get("collection", "")), retriever=str(data.get("retriever", "bm25")),
                     config=config, seed=int(data.get("seed", 0)), query_ids=tuple(data.get("query_ids") or ()),
                     generator=data.get("generator"), attributor=data.get("attributor"),
                     complete=bool(data.get("complete", True)), wall_seconds=data.get("wall_seconds"),
                     generator_calls=data.get("generator_calls"), sampled_rankings=data.get("sampled_rankings"),
                     software={})  # made before versions were recorded


@dataclass(frozen=True)
class SweepRun:
    """A sweep's results: one row per (query, α), the per-candidate exposure behind ledgers, and its record.

    ``documents`` has one row per (query, α, candidate) with ``query_id, alpha, doc_id, exposure,
    target_exposure`` (and ``attributed_exposure`` when answers were attributed). ``run_id`` is set once the
    run is saved in a :class:`~fairrag_core.audit.store.RunStore`.
    """

    record: RunRecord
    table: pd.DataFrame
    documents: pd.DataFrame
    run_id: str | None = None

    def saved_as(self, run_id: str) -> SweepRun:
        return replace(self, run_id=run_id)

    def as_kind(self, kind: RunKind) -> SweepRun:
        """The same results recorded as another kind (the Audit page saves its sweeps as audits)."""
        return replace(self, record=replace(self.record, kind=kind))

    def __post_init__(self) -> None:
        if not isinstance(self.record, RunRecord):
            raise InvalidParameterError("SweepRun needs a RunRecord as its record")
