"""What the Audit page shows for a served log or run: reading an upload or a path, the headline with intervals,
the per-query table and drill-down, and the HTML report.

Pure functions (no Streamlit): a RAG log (JSONL) or a served run (expeval/TREC with samples, TREC Fair 2022) is
audited by :func:`fairrag_core.audit.rag_log.audit_rag_log` — a run as a log without answers, one line per
sample (:meth:`RagLog.from_served`) — so both get the same ledger, drill-down and report as a simulated audit.
"""

from __future__ import annotations

import hashlib
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from fairrag_core import Collection, FairRAGError
from fairrag_core.audit.compare import documents_of_logs, logs_of_audits
from fairrag_core.audit.log_report import (
    default_ledger_scope,
    log_findings,
    log_ledger,
    log_summary,
    query_headers,
)
from fairrag_core.audit.rag_log import SOURCE_LABELS, LogAuditRun
from fairrag_core.data import RagLog, assets_dir
from fairrag_core.data.files import check_upload
from fairrag_core.data.formats import kind_of
from fairrag_core.data.store_window import StoreWindow, load_selected
from fairrag_core.data.traces import TraceMap
from fairrag_core.glossary import term
from fairrag_core.metrics.registry import LEDGER, LOG_HEADLINE, LOG_QUERY, METRICS, SWEEP, keys
from fairrag_core.record import RunKind, RunRecord, SweepRun

from .. import charts
from ..services.identity import InputIdentity, record_inputs, reproduce_command, served_counts, served_kind
from ..services.uploads import safe_upload_name, slim_trace_upload
from .audit import display_ledger, groupings, with_interval
from .explain import SERVED_REPORT_INTRO
from .methodology import methodology_sections
from .report import ReportSection, audit_report_html
from .what_if import what_if_section

__all__ = ["DEMO_LOG", "save_served_upload", "save_provider_map", "save_target_shares", "safe_upload_name",
           "read_served", "audits_collection", "headline_table", "queries_table", "lines_table", "build_log_report",
           "served_label", "served_input", "measured_sources"]

#: The demo log (200 served answers over running-shoes; provenance in assets/README.md).
DEMO_LOG = assets_dir() / "logs" / "running-shoes.jsonl"


def save_served_upload(name: str, data: bytes | BinaryIO, root: Path) -> Path:
    """Write an uploaded log or run (its bytes, or the uploaded file itself) under ``root/served-<content hash>/``
    with its own (made safe) name, whose suffix says how to read it; the same content lands in the same place, so a
    re-upload reuses the cached audit.

    A JSON Lines trace export is cut to what the audit reads as it is read
    (:func:`~fairrag_studio.services.uploads.slim_trace_upload`): its limit is the requests it holds
    (:data:`~fairrag_core.checks.MAX_UPLOAD_REQUESTS`), the saved file is what is kept, and its hash is of that. Any
    other file above the upload limit (``$FAIRRAG_MAX_UPLOAD_MB``), or a name without a suffix of a log or run the
    command line audits (:mod:`fairrag_core.data.formats`), is a :class:`DataFormatError` before anything is
    written."""
    kind_of(safe_upload_name(name))
    slim = slim_trace_upload(name, io.BytesIO(data) if isinstance(data, bytes) else data, root)
    if slim is not None:
        return slim
    return _save_upload(name, data if isinstance(data, bytes) else data.getvalue(), root, "served")


def read_served(path: str | Path, collection: Collection | None, trace_map: TraceMap | None = None,
                window: StoreWindow | None = None) -> tuple[RagLog, str]:
    """The log at ``path`` (``.jsonl``/``.json``, also gzipped: a RAG log or an OTLP trace export, read with
    ``trace_map``; a ``collect`` store, its ``window``'s selection; otherwise a served run, converted to a log of its
    samples; :func:`~fairrag_core.data.store_window.load_selected`, as ``audit-log`` reads it), with its doc ids
    checked against ``collection`` (None: the providers come from the log), and what it is (``"log"`` or ``"run"``)."""
    log = load_selected(path, window or StoreWindow(), collection=collection, trace_map=trace_map)
    return log, "run" if log.kind == "run" else "log"


def save_provider_map(name: str, data: bytes, root: Path) -> Path:
    """Write an uploaded provider map (``doc_id,provider[,group columns]`` CSV, as ``--provider-map`` reads) under
    ``root/providers-<content hash>/`` with its own (made safe) name; above the upload limit it is a
    :class:`DataFormatError` before anything is written."""
    return _save_upload(name, data, root, "providers")


def save_target_shares(name: str, data: bytes, root: Path) -> Path:
    """Write an uploaded stated-shares file (``provider,share`` CSV or JSON, as ``--target-shares`` reads) under
    ``root/targets-<content hash>/`` with its own (made safe) name; above the upload limit it is a
    :class:`DataFormatError` before anything is written."""
    return _save_upload(name, data, root, "targets")


def _save_upload(name: str, data: bytes, root: Path, prefix: str) -> Path:
    """``data`` under ``root/<prefix>-<content hash>/<safe name>`` once it passes the upload limit: the same bytes
    land in the same folder, so a re-upload reuses it."""
    check_upload(name, data)
    folder = root / f"{prefix}-{hashlib.sha256(data).hexdigest()[:10]}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / safe_upload_name(name)
    target.write_bytes(data)
    return target


def audits_collection(records: list[RunRecord]) -> tuple[Collection, dict] | None:
    """For stored log audits made without a collection (providers from their logs) with one provider source: the
    collection of the documents their logs name — the logs read again from their recorded paths
    (:func:`~fairrag_core.audit.compare.logs_of_audits`, :func:`~fairrag_core.audit.compare.documents_of_logs`) —
    and that source as :class:`~fairrag_core.audit.compare.ComparisonConfig`'s fields, so that such audits can be
    reopened and compared (``compare-runs run:A run:B --provider-from …``). None when one of them is no log audit or
    used a collection, the sources differ, or a log is no longer readable."""
    reading = {(getattr(r.config, "provider_from", None), getattr(r.config, "provider_map", None)) for r in records}
    if not records or len(reading) != 1 or any(r.kind is not RunKind.AUDIT_LOG for r in records):
        return None
    provider_from, provider_map = reading.pop()
    if provider_from is None and provider_map is None:
        return None
    try:
        documents = documents_of_logs(logs_of_audits(records), provider_from=provider_from, provider_map=provider_map)
    except (FairRAGError, OSError):
        return None
    return documents.collection, {"provider_from": provider_from, "provider_map": provider_map}


def served_label(run: SweepRun) -> str:
    """A short name for a log audit: the log or run by its name and sha256, its size (a log's lines, a run's
    lines and rankings, a trace export's requests) and its queries (``run.trec (upload, sha256 3f2a…) · 5,000 lines
    holding 500 rankings · 50 queries``)."""
    record = run.record
    item = next((i for i in record_inputs(record, compute=False) if i.role in ("log", "run")), None)
    name = item.text if item is not None else Path(str(record.config.log)).name
    return f"{name} · {served_counts(record)} · {len(run.table)} queries"


def measured_sources(run: SweepRun) -> tuple[str, ...]:
    """The attribution sources a log audit measured (``cited``, ``entailed``): from a fresh audit, or from the
    per-document table of one reopened from the store."""
    found = getattr(run, "sources", None)
    if found is not None:
        return tuple(found)
    documents = run.documents
    return tuple(s for s in SOURCE_LABELS if f"{s}_exposure" in documents and documents[f"{s}_exposure"].notna().any())


def served_input(record) -> InputIdentity | None:
    """The log or run a log audit read (recorded by the app, else what the record knows)."""
    return next((i for i in record_inputs(record, compute=False) if i.role in ("log", "run")), None)


def headline_table(run: SweepRun) -> pd.DataFrame:
    """The headline for readers: one row per metric with its value, its interval ``[low, high]``, what it is
    averaged over and its direction; ``attrs["note"]`` says which estimate and which interval."""
    summary = log_summary(run)
    out = pd.DataFrame({
        "metric": summary["label"],
        "value": summary["estimate"].round(3),
        "95% interval": [with_interval(lo, hi) for lo, hi in zip(summary["low"], summary["high"])],
        "over": [f"{n} {over}" for n, over in zip(summary["queries"], summary["over"])],
        # the glossary's direction where the metric is in it (one wording on every page and in the report)
        "direction": [found.direction if (found := term(label)) is not None else direction
                      for label, direction in zip(summary["label"], summary["direction"])],
    })
    out.attrs["note"] = summary.attrs["note"]
    return out


def queries_table(run: SweepRun) -> pd.DataFrame:
    """One row per query with its metrics (columns that were not measured dropped), readable headers: the CLI's
    per-query columns (:func:`~fairrag_core.audit.log_report.query_columns`), with what was typed, and each interval
    as text after the metrics."""
    headers = query_headers()
    shown = run.table[[c for c in headers if c in run.table]].dropna(axis=1, how="all")
    if "m" in shown:  # a count (NaN for an unlabelled query): whole numbers, not 8.000
        shown = shown.assign(m=shown["m"].round().astype("Int64"))
    out = shown.rename(columns=headers).round(3)
    # intervals over the query's served lines; each contains the estimate printed in front of it
    table = run.table
    for metric in (METRICS[key] for key in keys(LOG_QUERY) if METRICS[key].interval):
        label, (estimate, low, high) = f"{metric.label} [95% over lines]", metric.columns(())
        if {estimate, low, high} <= set(table) and table[low].notna().any():
            out[label] = [("—" if pd.isna(e) else f"{e:.3f} {with_interval(lo, hi)}")
                          for e, lo, hi in zip(table[estimate], table[low], table[high])]
    return out


def _ids(value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "—"
    return ", ".join(value) if len(value) else "none"


def lines_table(run: LogAuditRun, query_id: str) -> pd.DataFrame | None:
    """The served lines of one query (the drill-down): when, what was typed, shown, answered, cited, entailed.
    None when the run was reopened from the store (its lines stay in the log file)."""
    lines = getattr(run, "lines", None)
    if lines is None or lines.empty:
        return None
    rows = lines[lines["query_id"] == query_id]
    out = pd.DataFrame({"line": rows["line"], "session": rows["session"], "time": rows["timestamp"],
                        "typed": rows["query"], "shown (top k)": rows["shown"].map(_ids),
                        "answer": rows["answer"]})
    for source, label in (("cited", "cited by the system"), ("entailed", "entailed per the judge")):
        if rows[source].notna().any():
            out[label] = rows[source].map(_ids)
    if rows["cited_outside"].map(len).any():
        out["cited, not shown"] = rows["cited_outside"].map(_ids)
    return out.dropna(axis=1, how="all").reset_index(drop=True)


def _attribution_text(run: SweepRun) -> str:
    record = run.record
    source = record.config.attribution.value
    words = {"none": "No attribution was measured (exposure only).",
             "logged": "Attribution comes from the citations the system logged (cited by the system).",
             "judge": f"Attribution comes from the NLI judge {record.attributor}: a shown document is credited when "
                      "it entails the logged answer, with the query as context (entailed per the judge).",
             "both": f"Two sources side by side: the citations the system logged (cited by the system) and the NLI "
                     f"judge {record.attributor} (entailed per the judge: the shown document supports the answer as an "
                     "answer to the query)."}
    return words[source] + (" Lines without citations (logged) or without an answer (judge) are left out of "
                            "that source's EAR and EAE-D." if source != "none" else "")


def _explained(attributed: bool, more: tuple[str, ...] = ()) -> list[str]:
    """The labels of the metrics the log report explains: the paper's metrics that a log audit shares with the
    sweeps (:data:`~fairrag_core.metrics.registry.LOG_HEADLINE` and :data:`~fairrag_core.metrics.registry.SWEEP`:
    EE-D, EE-R, EAR, EAE-D), then ``more``; those measured on answers only when the answers were ``attributed``."""
    shared = [key for key in keys(LOG_HEADLINE) if key in keys(SWEEP)]
    return [METRICS[key].label for key in (*shared, *more) if attributed or not METRICS[key].on_answers]


def build_log_report(run: SweepRun, collection: Collection, *, title: str | None = None, figures: str = "static",
                     renderer=None) -> str:
    """A self-contained HTML report of a log audit: every input by name and sha256, how to read it, the headline
    with intervals, the ledgers by provider and group (for every attribution source) with their gaps, the
    methodology, per-query drill-down (the served lines when the run still holds them), the reproduce command and
    the caveats. A run file's report is titled "served run" and counts its rankings; a trace export's counts its
    requests (one trace each), a log's its lines."""
    record = run.record
    inputs = record_inputs(record)
    served = next((i for i in inputs if i.role in ("log", "run")), None)
    kind = served.role if served is not None else served_kind(record)
    traces = served is not None and served.format == "otlp"  # counted in requests: its lines are export batches
    thing = "served run" if kind == "run" else "trace export" if traces else "RAG log"
    title = title or f"Fairness audit of a {thing}"
    headline = headline_table(run)
    labelled_only = default_ledger_scope(run)
    scope = "the queries with relevance labels" if labelled_only else "every query"
    by_role = {i.role: i for i in inputs}
    summary = {thing: served.full_text if served is not None else record.config.log,
               ("run file" if kind == "run" else "requests" if traces else "lines"): served_counts(record),
               "queries": len(run.table), "k": record.extra.get("k_used"),
               "attribution": record.config.attribution.value, "NLI judge": record.attributor or "—",
               "collection": by_role["collection"].full_text if "collection" in by_role else record.collection,
               "qrels": by_role["qrels"].full_text if "qrels" in by_role else "none (no relevance labels)",
               "seed": record.seed, "run id": run.run_id or "not saved",
               "reproduce": reproduce_command(record, inputs)[0]}
    notes = "\n\n".join(f"Note: {n}" for n in record.extra.get("notes", []))
    measured = measured_sources(run) or (None,)
    attributed = measured != (None,)
    unit = "sample of the run" if kind == "run" else "request of the trace export" if traces else "line of the log"
    findings = [f for f in log_findings(run, collection) if not f.detail]
    sections = [ReportSection("Findings", "What this audit found, most severe first (each provider's and group's "
                              "share tested against its fair share over the queries, Holm-adjusted across the "
                              "groups):\n\n" + "\n\n".join(f"{f.severity.value.capitalize()}: {f.text}"
                                                             for f in findings)),
                ReportSection("How to read this report", SERVED_REPORT_INTRO.format(unit=unit),
                              metrics=tuple(_explained(attributed))),
                ReportSection("Headline", f"{headline.attrs['note'].capitalize()}; the interval contains the value "
                                          f"beside it.\n\n{notes}", table=headline)]
    for by in groupings(collection):
        for source in measured:
            ledger = log_ledger(run, collection, by=by, source=source, labelled_only=labelled_only)
            label = f" — attribution {SOURCE_LABELS[source]}" if source else ""
            sections.append(ReportSection(
                f"Exposure ledger by {by}{label}",
                f"Over {scope}: shares of what the generator was shown (retrieval), of what the answers were "
                "credited to (attributed) and under the fair target, each with a 95% percentile bootstrap interval "
                "over queries; the chart's lower panel draws the gaps to the target.",
                table=display_ledger(ledger, compact=True), figure=charts.exposure_ledger_chart(ledger)))
    names = _explained(attributed, keys(LEDGER))
    if record.extra.get("what_if"):  # the replay the CLI stored or the page ran: after the ledgers it changes
        sections.append(what_if_section(record.extra["what_if"]))
    sections += methodology_sections(record, collection, lines_per_query=run.table["lines"], metrics=names,
                                     attribution=_attribution_text(run), inputs=inputs)
    per_query = queries_table(run)
    details = []
    where = ("The rankings are in the run file named above." if kind == "run"
             else "The served requests are in the trace export named above." if traces
             else "The served lines are in the log file named above.")
    for qid, (_, row) in zip(run.table["query_id"], per_query.iterrows()):
        metrics = " · ".join(f"{name} {value:.3f}" if isinstance(value, float) else f"{name} {value}"
                             for name, value in row.items() if name not in ("query",) and pd.notna(value))
        lines = lines_table(run, qid)
        text = metrics + ("" if lines is not None else f"\n\n{where}")
        details.append(ReportSection(str(qid), text, table=lines))
    sections.append(ReportSection("Per query", "Every query's metrics; open one for its served "
                                  f"{'rankings' if kind == 'run' else 'requests' if traces else 'lines'}.",
                                  table=per_query,
                                  details=tuple(details)))
    opening = ("The run file holds the rankings this system produced for these queries (each sample one served "
               "ranking), without answers" if kind == "run" else
               "The log shows what this system served to these users in this period")
    sections.append(ReportSection("Caveats", f"{opening}; the fair target needs relevance labels and only covers "
                                  "the labelled queries. Citations are what the system displayed, not proof of use; "
                                  "the NLI judge makes mistakes. With few rankings per query, EE-D overstates the "
                                  "policy's disparity: the per-query table gives the bias-corrected value beside "
                                  "it."))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return audit_report_html(title=title, summary=summary, sections=sections, generated_at=stamp, figures=figures,
                             renderer=renderer)
