"""The report's methodology: what data, which user model, which models (with versions and sha256), which seeds
and N, what every metric means and which way is better, and the command that reproduces the run.

Pure functions (no Streamlit): a stored :class:`~fairrag_core.record.RunRecord` and its collection in,
:class:`~fairrag_studio.views.report.ReportSection` parts out, so a reviewer can check how every number was made.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pandas as pd

from fairrag_core import Collection
from fairrag_core.glossary import glossary_rows
from fairrag_core.models.catalog import display_name, model_for
from fairrag_core.models.gguf import package_version
from fairrag_core.record import RunKind, RunRecord

from ..services.identity import InputIdentity, record_inputs, reproduce_command, served_kind
from .report import ReportSection

__all__ = ["metric_glossary", "model_rows", "methodology_sections", "code_version"]



def metric_glossary(names: list[str] | None = None) -> pd.DataFrame:
    """The glossary (:mod:`fairrag_core.glossary`) as a table (``metric, meaning, direction, defined in``), for
    ``names`` (printed labels are resolved) or every metric."""
    return pd.DataFrame(glossary_rows(names), columns=["metric", "meaning", "direction", "defined in"])


def _version(distribution: str) -> str:
    """The installed version of a package, including weight-only packages installed outside site-packages."""
    return package_version(distribution) or "version not recorded here"


def _model_row(role: str, name: str | None) -> dict[str, str]:
    """One role's row: the catalogue's pinned weights (file, package and version, size, sha256) for a name, record
    name or hub id it knows, the package of weights shipped as a folder, else "not pinned here"."""
    if name is None:
        return {"role": role, "model": "—", "weights": "—", "sha256": "—"}
    model = model_for(name)
    if model is not None and model.weights is not None:
        weights, package = model.weights, model.distribution
        return {"role": role, "model": model.label, "weights": f"{weights.file_name} ({package} {_version(package)}; "
                f"{weights.size:,} bytes)", "sha256": weights.sha256 or "—"}
    if name == "bm25":
        return {"role": role, "model": "BM25 (Okapi, k1 = 1.5, b = 0.75)", "weights": "none (built in)",
                "sha256": "—"}
    if model is not None and model.distribution is not None:
        return {"role": role, "model": model.label, "weights": f"{model.distribution} {_version(model.distribution)}",
                "sha256": "—"}
    return {"role": role, "model": display_name(name), "weights": "Hugging Face id or local folder (not pinned here)",
            "sha256": "—"}


def model_rows(record: RunRecord) -> pd.DataFrame:
    """Which model filled each role of the run, with its weights file, package version and sha256."""
    if record.kind is RunKind.AUDIT_LOG:
        rows = [{"role": "retriever and generator", "model": "the audited system (as logged)",
                 "weights": "not known to the audit", "sha256": "—"}]
        if record.attributor:
            rows.append(_model_row("NLI judge (attribution)", record.attributor))
        return pd.DataFrame(rows)
    rows = [_model_row("retriever", record.retriever)]
    if record.generator:
        rows.append(_model_row("generator", record.generator))
        rows.append(_model_row("NLI judge (attribution)", record.attributor))
    return pd.DataFrame(rows)


def code_version() -> str:
    """The git commit of this checkout (``+ local changes`` when dirty), or "unknown"."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"git {commit}" + (" + local changes" if dirty else "")


def _alphas(record: RunRecord) -> str:
    alphas = getattr(record.config, "alphas", ())
    return ", ".join("∞ (deterministic)" if math.isinf(a) else f"{a:g}" for a in sorted(alphas))


def _inputs_text(inputs: list[InputIdentity]) -> str:
    """``Inputs. Collection my-news (upload; sha256 …); qrels qrels.txt (sha256 …); run run.trec (…): 5,000 lines
    holding 500 rankings.``"""
    words = {"collection": "Collection", "qrels": "relevance labels (qrels)", "log": "RAG log", "run": "run file"}
    parts = [f"{words.get(i.role, i.role)} {i.full_text}" + (f": {i.counts}" if i.counts else "") for i in inputs]
    return "Inputs. " + "; ".join(parts) + "." if parts else ""


def _data_text(record: RunRecord, collection: Collection, lines_per_query: pd.Series | None,
               inputs: list[InputIdentity]) -> str:
    config = record.config
    queries = len(record.query_ids) or "all labelled"
    named = next((i.name for i in inputs if i.role == "collection"), None) or record.collection_name or collection.name
    text = (f"Data. Collection {named}: {len(collection)} documents from "
            f"{len(set(collection.providers))} providers (fairness categories: "
            f"{', '.join(collection.categories()) or 'none'}); {queries} queries audited. Relevance labels come "
            f"from the collection's qrels; a document is useful when its grade is at least "
            f"{getattr(config, 'min_rel', 1)}.")
    listed = _inputs_text(inputs)
    if listed:
        text += f"\n\n{listed}"
    if record.kind is RunKind.AUDIT_LOG:
        stats = lines_per_query.describe() if lines_per_query is not None and len(lines_per_query) else None
        spread = (f" Served rankings per query (N): {int(stats['min'])}–{int(stats['max'])}, median "
                  f"{lines_per_query.median():g}." if stats is not None else "")
        if served_kind(record) == "run":
            text += ("\n\nThe run. Each sample of a query in the run file is one ranking served for it; the samples "
                     f"of a query are its N rankings.{spread}")
        else:
            text += f"\n\nThe log. Lines with the same query_id are that query's served rankings.{spread}"
    else:
        text += (f"\n\nSampling. N = {config.n_samples} rankings per query and system, drawn from the Plackett-Luce "
                 f"policy of the {record.retriever} scores at α = {_alphas(record)} among the top "
                 f"{getattr(config, 'candidates', None) or 'all'} candidates; seed {record.seed}.")
    return text


def _user_model_text(record: RunRecord) -> str:
    k = record.extra.get("k_used", getattr(record.config, "k", None))
    return (f"User model. The generator reads the top k = {k} documents with equal attention and ignores the rest: "
            "the step model MU(i) = 1[i ≤ k] of Kim & Diaz (2025, Eq. 4), so a document's exposure is the share of "
            "rankings that show it in the top k.")


def _intervals_text(record: RunRecord) -> str:
    config = record.config
    level = getattr(config, "level", 0.95)
    boot = getattr(config, "n_boot", 1000)
    return (f"Intervals. Every headline number is the plug-in value on the audited queries with a {level:.0%} "
            f"percentile bootstrap interval over queries ({boot} resamples, seed {record.seed}); the interval "
            "contains the number printed beside it. Ledger shares and gaps have the same kind of interval.")


def methodology_sections(record: RunRecord, collection: Collection, *,
                         lines_per_query: pd.Series | None = None, metrics: list[str] | None = None,
                         attribution: str | None = None,
                         inputs: list[InputIdentity] | None = None) -> list[ReportSection]:
    """The methodology part of a report: data and every input with its sha256, user model, sampling or log,
    intervals, attribution, models with versions and hashes, the metric glossary, and the reproduce command (an
    upload named by its own name, with where this server keeps it)."""
    inputs = record_inputs(record) if inputs is None else inputs
    text = [_data_text(record, collection, lines_per_query, inputs), _user_model_text(record), _intervals_text(record)]
    if attribution:
        text.append(f"Attribution. {attribution}")
    text.append(f"Code. FairRAG Studio {code_version()}; run kind {record.kind.value}; seed {record.seed}.")
    command, where = reproduce_command(record, inputs)
    served = {"log": "log file and ", "run": "run file and "}.get(next((i.role for i in inputs
                                                                      if i.role in ("log", "run")), ""), "")
    return [
        ReportSection("Methodology", "\n\n".join(text)),
        ReportSection("Models", "Each role's model, its weights file with the package that ships it, and the "
                                "sha256 the weights were verified against before loading.", table=model_rows(record)),
        ReportSection("What the metrics mean", table=metric_glossary(metrics)),
        ReportSection("Reproduce", f"Run this command in the FairRAG Studio checkout (with the same {served}"
                                   "collection) to recompute every number of this report." + (f"\n\n{where}" if where
                                                                                               else ""),
                      code=command),
    ]
