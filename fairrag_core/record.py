"""What a sweep or audit run produced, and the typed record that makes it reproducible.

A :class:`SweepRun` bundles the per-(query, α) table, the per-candidate exposure table behind ledgers, and a
:class:`RunRecord`: the run's kind, collection, retriever, models, its full settings (a
:class:`~fairrag_core.settings.Settings` subclass), the seed actually used and what the run cost. The record
serialises itself (:meth:`RunRecord.to_dict` / :meth:`RunRecord.from_dict`, which also reads records saved by
earlier versions) and writes the command that reproduces the run (:meth:`RunRecord.command`).
"""

from __future__ import annotations

import enum
import math
import os
import shlex
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from .errors import InvalidParameterError
from .settings import SamplingSettings, Settings, settings_class

__all__ = ["RunKind", "RunRecord", "SweepRun", "command_path"]


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


class RunKind(str, enum.Enum):
    """What a stored run is: an exposure-only sweep, a sweep with answers, an audit (either, saved from the
    Audit page with its per-document details), or the audit of a served RAG log (``audit-log``)."""

    EXPOSURE_SWEEP = "exposure-sweep"
    RAG_SWEEP = "rag-sweep"
    AUDIT = "audit"
    AUDIT_LOG = "audit-log"


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
        """The ``python -m fairrag_core …`` command that reproduces this run's table."""
        config = self.config
        if self.kind is RunKind.AUDIT_LOG:
            return self._audit_log_command()
        words = ["python", "-m", "fairrag_core", "sweep" if self.answers else "exposure-sweep",
                 "--collection", command_path(self.collection)]
        kind, _, model = self.retriever.partition(":")
        words += ["--retriever", kind] + (["--model", model] if model else [])
        if self.answers:
            words += ["--generator", str(self.generator), "--nli", _attributor_name(self.attributor)]
        alphas = getattr(config, "alphas", ())
        words += ["--alphas", ",".join(_alpha_text(a) for a in alphas)]
        words += ["--samples", str(config.n_samples), "-k", str(config.k), "--seed", str(self.seed)]
        if isinstance(config, SamplingSettings):
            if config.candidates is not None:
                words += ["--candidates", str(config.candidates)]
            if config.min_rel != 1:
                words += ["--min-rel", str(config.min_rel)]
        if getattr(config, "query_ids", ()):
            words += ["--queries", ",".join(config.query_ids)]
        if self.answers:
            # runs saved before prompt styles and citation rules were settings used the original ones
            words += ["--prompt-style", self.prompt_style or "short"]
            if getattr(config, "per_claim", False):
                words.append("--per-claim")
            else:
                words.append("--no-per-claim")
            threshold, margin = getattr(config, "entail_threshold", None), getattr(config, "control_margin", None)
            words += ["--entail-threshold", "none" if threshold is None else f"{threshold:g}"]
            words += ["--control-margin", "none" if margin is None else f"{margin:g}"]
            support = getattr(config, "min_support", None)
            words += ["--min-support", "none" if support is None else f"{support:g}"]
            words.append("--skip-degenerate" if getattr(config, "skip_degenerate", False) else "--no-skip-degenerate")
            for flag, name in (("--labels", "usefulness"), ("--metric", "metric"), ("--prompt-order", "prompt_order")):
                value = getattr(config, name, None)
                if value is not None:
                    words += [flag, value.value if isinstance(value, enum.Enum) else str(value)]
            if getattr(config, "oracle", True) is False:
                words.append("--no-oracle")
        return shlex.join(words)

    def _audit_log_command(self) -> str:
        """``audit-log LOG --collection …``: the log audit's settings (``config`` is a ``LogAuditConfig``)."""
        config = self.config
        attribution = getattr(config, "attribution", "auto")
        attribution = attribution.value if isinstance(attribution, enum.Enum) else str(attribution)
        words = ["python", "-m", "fairrag_core", "audit-log", command_path(str(getattr(config, "log", ""))),
                 "--collection", command_path(self.collection), "--attribution", attribution]
        if self.attributor is not None:
            words += ["--nli", _attributor_name(self.attributor)]
            # the judge's citation rule (audits stored before it was a setting used the paper's argmax)
            threshold, support = getattr(config, "entail_threshold", None), getattr(config, "min_support", None)
            words.append("--per-claim" if getattr(config, "per_claim", False) else "--no-per-claim")
            words += ["--entail-threshold", "none" if threshold is None else f"{threshold:g}"]
            words += ["--min-support", "none" if support is None else f"{support:g}"]
            words.append("--skip-degenerate" if getattr(config, "skip_degenerate", False) else "--no-skip-degenerate")
        if getattr(config, "k", None) is not None:
            words += ["-k", str(config.k)]
        if getattr(config, "min_rel", 1) != 1:
            words += ["--min-rel", str(config.min_rel)]
        model = getattr(config, "user_model", None)
        model = model.value if isinstance(model, enum.Enum) else model
        if model not in (None, "step"):
            words += ["--user-model", model, "--patience", f"{config.patience:g}"]
            if model == "gerr":
                words += ["--utility", f"{config.utility:g}"]
        if getattr(config, "n_boot", 1000) != 1000:
            words += ["--boot", str(config.n_boot)]
        if getattr(config, "level", 0.95) != 0.95:
            words += ["--level", f"{config.level:g}"]
        words += ["--seed", str(self.seed)]
        return shlex.join(words)


def _alpha_text(alpha: float) -> str:
    return "inf" if math.isinf(alpha) else f"{alpha:g}"


def _attributor_name(attributor: str | None) -> str:
    """The CLI name of a stored attributor (``judge:qwen2.5-1.5b`` → ``qwen-judge``, ``nli:X`` → ``X``)."""
    if attributor is None:
        return "qwen-judge"
    if attributor == "judge:qwen2.5-1.5b":
        return "qwen-judge"
    return attributor.partition(":")[2] or attributor


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
