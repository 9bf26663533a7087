"""The app's side of input identity: labels for pages, what a stored run's record says about its inputs, the
fingerprint that makes a repeated audit reopen the stored one, and reproduce commands that name uploads by their
own names.

The identity itself — :class:`~fairrag_core.data.identity.InputIdentity`, the sha256 of a collection and of a
file, the counts of a log or run — lives in :mod:`fairrag_core.data.identity` (every audit, CLI or app, records its
inputs with it) and is re-exported here. Records saved by the CLI or by earlier versions (which only carry
``log_sha256`` and ``lines``) still get a name (:func:`record_inputs`). Pure: no Streamlit.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

from fairrag_core import DEMO_COLLECTIONS
from fairrag_core.data.formats import is_log
from fairrag_core.data.identity import (
    COLLECTION_PARTS,
    UPLOAD_META,
    InputIdentity,
    collection_identity,
    collection_sha256,
    count_lines,
    file_sha256,
    qrels_identity,
    served_identity,
    short_sha,
)
from fairrag_core.record import RunRecord, command_path

__all__ = ["InputIdentity", "UPLOAD_META", "COLLECTION_PARTS", "file_sha256", "collection_sha256",
           "collection_identity", "qrels_identity", "served_identity", "count_lines", "record_inputs",
           "with_inputs", "fingerprint", "short_sha", "collection_label", "reproduce_command", "served_kind",
           "served_counts", "audit_inputs"]


def collection_label(source: str) -> str:
    """How pages name a collection: a demo by its name; an upload or a folder with its sha256
    (``my-news (upload, sha256 3f2a…)``)."""
    if source in DEMO_COLLECTIONS:
        return source
    return collection_identity(source).text


def served_kind(record: RunRecord) -> str:
    """``run`` or ``log``: what a log audit read (the recorded inputs, else the file's suffix)."""
    for item in record_inputs(record, compute=False):
        if item.role in ("log", "run"):
            return item.role
    kind = record.extra.get("log_kind") or record.extra.get("kind")
    if kind in ("log", "run"):
        return kind
    log = str(getattr(record.config, "log", "") or "")
    return "log" if is_log(log) else "run"


def served_counts(record: RunRecord) -> str:
    """``5,000 lines holding 500 rankings`` for a run, ``200 lines`` for a log, ``200 requests`` for a trace export
    (from the recorded inputs, :attr:`InputIdentity.counts`; older records only know the rankings, which for a run
    they called lines)."""
    for item in record_inputs(record, compute=False):
        if item.role in ("log", "run"):
            return item.counts
    rankings = record.extra.get("rankings", record.extra.get("lines"))
    if rankings is None:
        return ""
    return f"{rankings:,} rankings" if served_kind(record) == "run" else f"{rankings:,} lines"


def record_inputs(record: RunRecord, *, compute: bool = True) -> list[InputIdentity]:
    """Every input of a run: those the app recorded (``extra["inputs"]``), else what the record knows — the log
    from ``config.log`` with ``extra["log_sha256"]`` and ``extra["lines"]``, the collection and its qrels from
    ``record.collection`` (their sha256 read now when ``compute``, and the folder still exists)."""
    recorded = record.extra.get("inputs")
    if recorded:
        return [InputIdentity.from_dict(item) for item in recorded]
    out = []
    log = str(getattr(record.config, "log", "") or "")
    if log:
        kind = "log" if is_log(log) else "run"
        out.append(InputIdentity(kind, Path(log).name, record.extra.get("log_sha256") or "", log,
                                 rankings=record.extra.get("lines")))
    if compute and record.collection:
        out.append(collection_identity(record.collection))
        qrels = qrels_identity(record.collection)
        if qrels is not None:
            out.append(qrels)
    return out


def with_inputs(run, inputs: list[InputIdentity], *, fingerprint_of: str | None = None):
    """``run`` with ``inputs`` (and the ``fingerprint`` of its request) recorded in ``record.extra``."""
    from dataclasses import replace

    extra = dict(run.record.extra, inputs=[i.to_dict() for i in inputs])
    if fingerprint_of is not None:
        extra["fingerprint"] = fingerprint_of
    return replace(run, record=replace(run.record, extra=extra))


def fingerprint(kind: str, inputs: list[InputIdentity], settings: dict) -> str:
    """What makes two audits the same: their kind, every input's role and sha256 (not its name or path), and the
    settings. Two requests with the same fingerprint give the same numbers, so the second reopens the first."""
    text = json.dumps({"kind": kind, "inputs": sorted((i.role, i.sha256) for i in inputs), "settings": settings},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def audit_inputs(record: RunRecord) -> tuple[list[InputIdentity], str]:
    """The inputs of a simulated audit (its collection and qrels, by sha256) and the fingerprint of its request:
    the inputs and every setting that changes its numbers (config, seed, retriever, models, queries)."""
    inputs = [collection_identity(record.collection)]
    qrels = qrels_identity(record.collection)
    if qrels is not None:
        inputs.append(qrels)
    settings = {"config": record.config.to_dict(), "seed": record.seed, "retriever": record.retriever,
                "generator": record.generator, "prompt_style": record.prompt_style, "attributor": record.attributor,
                "attributor_prompt": record.attributor_prompt, "query_ids": list(record.query_ids)}
    return inputs, fingerprint(record.kind.value, inputs, settings)


def reproduce_command(record: RunRecord, inputs: list[InputIdentity] | None = None) -> tuple[str, str]:
    """The command that reproduces ``record``, with each upload named by its own name instead of the folder this
    server keeps it in, and a note saying what each name stands for (empty when nothing was uploaded)."""
    command = record.command()
    notes = []
    for item in inputs if inputs is not None else record_inputs(record):
        if not item.upload or not item.path:
            continue
        where = command_path(item.path)
        quoted = shlex.quote(where)
        if quoted not in command:
            continue
        command = command.replace(quoted, shlex.quote(item.name))
        what = ("the folder of your uploaded collection files (corpus, queries, qrels)" if item.role == "collection"
                else f"your uploaded {'run file' if item.role == 'run' else 'RAG log'}")
        notes.append(f"{item.name} is {what}, sha256 {item.sha256}; this server keeps a copy at {where}.")
    return command, " ".join(notes)
