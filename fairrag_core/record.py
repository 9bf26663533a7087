"""What a sweep or audit run produced, and the typed record that makes it reproducible.

A :class:`SweepRun` bundles the per-(query, α) table, the per-candidate exposure table behind ledgers, and a
:class:`RunRecord`: the run's kind, collection, retriever, models, its full settings (a
:class:`~fairrag_core.settings.Settings` subclass), the seed actually used and what the run cost. The record
serialises itself (:meth:`RunRecord.to_dict` / :meth:`RunRecord.from_dict`, which also reads records saved by
earlier versions) and writes the command that reproduces the run (:meth:`RunRecord.command`), derived from the option
declarations of its settings and inputs (:mod:`fairrag_core.options`), never from a hand-written flag list.
"""

from __future__ import annotations

import enum
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .errors import InvalidParameterError
from .models.catalog import attributor_option
from .options import (
    COLLECTION,
    GENERATOR,
    MODEL,
    NLI,
    PROMPT_STYLE,
    RETRIEVER,
    Entry,
    argv,
    command_path,
    setting_entries,
)
from .settings import Settings, settings_class

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["RunKind", "RunRecord", "SweepRun", "command_path"]


class RunKind(str, enum.Enum):
    """What a stored run is: an exposure-only sweep, a sweep with answers, an audit (either, saved from the
    Audit page with its per-document details), the audit of a served RAG log or run (``audit-log``), or a
    comparison of audited systems (:mod:`fairrag_core.audit.compare`)."""

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
            "sampled_rankings": self.sampled_rankings, "extra": self.extra,
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
                   extra=dict(data.get("extra") or {}))

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
    RunKind.EXPOSURE_SWEEP: _sweep_argv, RunKind.RAG_SWEEP: _sweep_argv, RunKind.AUDIT: _sweep_argv,
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
                     generator_calls=data.get("generator_calls"), sampled_rankings=data.get("sampled_rankings"))


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
