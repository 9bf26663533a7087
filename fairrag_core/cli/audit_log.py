"""``audit-log``: audit a deployed system's RAG log — exposure of what it retrieved, attribution of what it answered.

The log may be an OTLP JSON trace export (:mod:`fairrag_core.data.traces`, docs/traces.md), and without a collection
the documents' providers may come from the log itself (``--provider-from``, ``--provider-map``; EE-R is then
undefined, with the reason). ``--what-if-alphas`` replays the logged candidates and scores under the fair sampler
(:mod:`fairrag_core.audit.what_if`): the exposure the system would have delivered at each α, against what it served.

Kim & Diaz (2025) on served rankings: EE-D and EE-R per query (step model 1[i ≤ k]), EAR and EAE-D from the
logged citations and/or an NLI judge, the exposure ledger per provider and group with the gap to the fair
target, every headline with a percentile bootstrap interval over queries.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import replace

from ..audit.ledger import TOP_PROVIDERS, ledger_top
from ..audit.rag_log import LogAuditConfig
from ..data.export import HEADER_KEY, write_table
from ..errors import FairRAGError, InvalidParameterError
from ..metrics.attribution import HOW_TO_READ
from ..models.catalog import DEFAULTS
from ..options import COLLECTION, DEVICE, JSON, NLI, add_option, add_options
from .backend_options import add_backend, models_spec, on_backend
from .common import (
    ALL_PROVIDERS_HINT,
    add_all_providers,
    add_command,
    add_settings,
    add_store,
    keep_run,
    print_undefined,
    records,
    settings,
    stderr_progress,
)

__all__ = ["register"]

#: The settings that say how the log is read and where its providers come from (in the help's order; compare-runs
#: reads each of its files with the same), and the what-if's; the other settings are the audit's own.
READING = ("provider_from", "provider_map", "trace_map", "multi_retrieval", "service", "since", "until")
_WHAT_IF = ("what_if_alphas", "what_if_samples")
#: Fairness over time: ``--window`` audits a store per window (:mod:`fairrag_core.audit.monitor`).
_MONITOR = ("window", "changes")
#: The settings only ``audit-log`` takes (``check`` audits once, with no what-if and no windows).
AUDIT_ONLY = (*_WHAT_IF, *_MONITOR)


def register(sub) -> None:
    """Add ``audit-log`` to the command parser ``sub``."""
    p = add_command(sub, "audit-log", _cmd_audit_log, help="audit a RAG log (JSONL, one served answer per line) or an "
                                                           "OTLP trace export: exposure, attribution, ledger",
                    description="Audit what a deployed RAG system served. LOG is JSONL with query_id, ranking (doc "
                                "ids in the order given to the generator) and optional query, answer, citations, "
                                "session, timestamp. Lines with the same query_id are that query's served rankings. "
                                "Attribution comes from the logged citations (cited by the system), the NLI judge "
                                "(entailed per the judge; slow: one call per new document-answer pair) or both side "
                                "by side. A served run file (expeval/TREC with samples, TREC Fair 2022) is read as a "
                                "log of its samples, without answers. An OTLP JSON trace export (the OpenTelemetry "
                                "collector's file exporter; OpenInference or GenAI attributes) is read as one served "
                                "answer per trace (docs/traces.md); without a collection, --provider-from or "
                                "--provider-map name the documents' providers.")
    add_settings(p, LogAuditConfig, only=("log",))
    add_option(p, replace(COLLECTION, default_text=f"{COLLECTION.cli_default}; none with --provider-from or "
                                                   "--provider-map"), default=None)
    for name in READING:
        add_options(p, LogAuditConfig, only=(name,))
    add_option(p, replace(NLI, help=f"{NLI.help} for judge/both", default_text=f"the offline {DEFAULTS['attributor']}"))
    add_option(p, DEVICE)
    # what "entailed per the judge" means: the app's fitted rule by default (a log has no control document)
    add_settings(p, LogAuditConfig, skip=("log", *READING, *AUDIT_ONLY))
    p.add_argument("--output", default=None, help="write the per-query table here (.csv, or .parquet)")
    add_store(p, "the audit")
    for name in AUDIT_ONLY:
        add_options(p, LogAuditConfig, only=(name,))
    add_option(p, JSON)
    add_all_providers(p)
    add_backend(p, unit="chunk of document-answer pairs for the NLI judge (the audit itself runs here)")


def served_size(log) -> str:
    """``200 lines`` for a RAG log (one ranking a line); ``200 requests (traces)`` for a trace export (its requests,
    one trace each, whatever lines the export file has); ``5,000 lines, 500 rankings`` for a served run."""
    if log.format == "otlp":
        return f"{len(log):,} request (trace)" if len(log) == 1 else f"{len(log):,} requests (traces)"
    lines = log.identity()["lines"]
    return f"{lines:,} lines" if log.kind == "log" else f"{lines:,} lines, {len(log):,} rankings"


def check_provider_source(config, *, collection_given: bool, attribution: str, subject: str, verb: str) -> bool:
    """Whether ``config`` (audit-log's or compare-runs' settings) takes the providers from the logs themselves
    (``--provider-from``/``--provider-map``), refusing it beside ``--collection`` or with the NLI judge, which reads
    the documents' texts; ``subject`` and ``verb`` word the message for the command ("a log audited", "audit")."""
    from_log = config.provider_from is not None or config.provider_map is not None
    if from_log and collection_given:
        raise InvalidParameterError(f"--provider-from and --provider-map name the providers of {subject} without "
                                    "a collection; drop them to use the providers of --collection, or drop "
                                    "--collection")
    if from_log and attribution in ("judge", "both"):
        raise InvalidParameterError(f"the NLI judge reads the documents' texts, which only a collection gives; {verb} "
                                    "with --collection, or attribute from the logged citations (--attribution logged)")
    return from_log


def check_trace_options(log, trace_map) -> None:
    """Refuse ``--trace-map`` and ``--multi-retrieval`` for a served file that is no trace export."""
    from ..data.traces import MultipleRetrievals

    if log.format != "otlp" and (trace_map.attributes or trace_map.multiple is not MultipleRetrievals.SKIP):
        raise InvalidParameterError(f"--trace-map and --multi-retrieval read trace exports; {log.name} is a "
                                    f"{log.what}: drop them")


def _served(args, config):
    """The log and the collection to audit it against (from ``--collection``, or made from the log's documents with
    ``--provider-from``/``--provider-map``), the loader's notes, and the metrics left undefined on the way."""
    from ..data import load_collection
    from ..data.store_window import StoreWindow, load_selected
    from ..data.traces import (
        NO_RELEVANCE_LABELS,
        ProviderSource,
        TraceMap,
        documents_from_log,
        load_provider_map,
    )

    trace_map = TraceMap.parse(config.trace_map, multiple=config.multi_retrieval)
    from_log = check_provider_source(config, collection_given=args.collection is not None,
                                     attribution=config.attribution.value, subject="a log audited", verb="audit")
    provider_from = ProviderSource.parse(config.provider_from) if config.provider_from is not None else None
    provider_map = load_provider_map(config.provider_map) if config.provider_map is not None else None
    collection = None if from_log else load_collection(args.collection or COLLECTION.cli_default)
    window = StoreWindow.of(config)  # of a `collect` store: a service and a window
    log = _columns(args, config, collection) if collection is not None and not window.given else None
    if log is None:  # a RAG log, a trace export, a run, or a store's selection
        log = load_selected(args.log, window, collection=collection, trace_map=trace_map)
    check_trace_options(log, trace_map)
    notes, undefined = list(log.notes), {}
    if collection is None:
        documents = documents_from_log(log, provider_from=provider_from, provider_map=provider_map)
        collection, notes = documents.collection, notes + list(documents.notes)
        undefined["ee_r"] = NO_RELEVANCE_LABELS
    return log, collection, notes, undefined


def _columns(args, config, collection):
    """An exposure-only audit (``--attribution none``, the step user, no what-if) of a JSONL log — one file, or a
    folder of its shards — reads it column-wise (:mod:`fairrag_core.data.log_columns`): no Python object per line,
    so ten million lines fit. A folder's shards are read one task each on ``--backend`` (Ray: one per worker) and
    merged in name order. None: read the log line by line. When the column reader cannot take a log too large for
    the line reader, the log is read once more, keeping nothing, for the error that names the line."""
    import os

    from ..checks import max_log_lines
    from ..data.formats import is_log
    from ..data.log_columns import COLUMN_READER_TAKES, COLUMNS_FROM_BYTES, first_problem, read_log_columns
    from ..errors import DataFormatError
    from ..metrics.expeval import UserModel

    path = str(args.log)
    exposure_only = (config.attribution.value == "none" and config.user_model is UserModel.STEP
                     and not config.what_if_alphas)
    if os.path.isdir(path):
        from ..data.traces import is_trace_folder

        if is_trace_folder(path):  # a `collect` store: read as one trace export
            return None
        if not exposure_only:
            raise InvalidParameterError(f"{path} is a folder: its shards of one log are audited for exposure only "
                                        "(--attribution none, the step user, no --what-if-alphas)")
        return _shards(args, path, collection, config.k)
    if (not exposure_only or not is_log(path) or not os.path.isfile(path)
            or os.path.getsize(path) < COLUMNS_FROM_BYTES):
        return None
    if args.backend != "local" or args.ray_address is not None:
        return _shards(args, path, collection, config.k)
    columns = read_log_columns(path, collection)
    if columns is None and os.path.getsize(path) > 256 << 20:  # more than the line reader may hold
        lines = first_problem(path, collection)
        if lines > max_log_lines():
            raise DataFormatError(
                f"{lines:,} lines, more than the line-by-line reader holds ({max_log_lines():,}), and the column "
                f"reader does not take this log as written: {COLUMN_READER_TAKES}; write the log so, or split it "
                "(or raise FAIRRAG_MAX_LOG_LINES)", path=path)
    return columns


def _shards(args, path: str, collection, k: int | None):
    """The log's shards read on the chosen backend (the local one reads them here, one after the other)."""
    from ..backends.executor import LocalBackend
    from ..backends.workloads import read_log_on

    source = collection.source or collection.name
    shards = stderr_progress("read and aggregated {done}/{total} shards of the log on Ray")
    return on_backend(args, lambda: read_log_on(LocalBackend(), path, collection, source, k=k),
                      lambda backend: read_log_on(backend, path, collection, source, k=k, progress=shards))


def _cmd_audit_log(args, out) -> int:
    from ..audit.log_report import (
        default_ledger_scope,
        log_findings,
        log_ledger,
        log_summary,
        query_columns,
        served_unit,
    )
    from ..audit.rag_log import audit_rag_log

    config = settings(LogAuditConfig, args)
    if config.window or config.changes:  # fairness over time: one audit per window (audit/monitor.py)
        from .monitor import monitor_command

        return monitor_command(args, config, out, lambda cfg: _served(args, cfg)[:3])
    log, collection, loaded_notes, undefined = _served(args, config)
    attributor = None
    if config.attribution.value in ("judge", "both"):
        from ..rag.attribution import load_attributor

        attributor = load_attributor(args.nli, device=args.device)

    def local():  # the judge's progress at the start, at every further tenth, and at the end
        judged = stderr_progress("judged {done}/{total} document-answer pairs", tenths=True)
        return audit_rag_log(log, collection, config, attributor=attributor, progress=judged,
                             collection_source=collection.source)

    def remote(backend):
        from ..backends.workloads import JudgeSpec, audit_rag_log_on, cache_setting

        chunks = stderr_progress("judged {done}/{total} chunks of document-answer pairs on Ray")
        return audit_rag_log_on(backend, log, collection, config, JudgeSpec(models_spec(args), cache_setting()),
                                attributor.name, progress=chunks, collection_source=collection.source)

    # without a judge there is no model work: the audit is vectorised and runs here whatever --backend says
    run = local() if attributor is None else on_backend(args, local, remote)
    what_if = what_if_failed = None
    if config.what_if_alphas:  # the what-if replay against this audit (a log or a run keeps its scores)
        from ..audit.what_if import WhatIfSettings, what_if_sampling

        try:  # optional: a replay that fails never withholds the audit; it says why, and the exit status is 2
            what_if = what_if_sampling(log, collection, WhatIfSettings(alphas=config.what_if_alphas,
                                                                       n_samples=config.what_if_samples), audit=run)
        except (FairRAGError, MemoryError) as err:
            what_if_failed = _REPLAY_OUT_OF_MEMORY if isinstance(err, MemoryError) else str(err)
    # what the loader left out, and what was assumed about the documents
    extra = {**run.record.extra, "notes": [*loaded_notes, *run.record.extra["notes"]]}
    if what_if is not None:  # kept with the run: its tables, recommendation and findings (not the per-query rows)
        extra["what_if"] = what_if.to_dict(details=False)
    # the provider map's absolute path, as the log's, so that the reproduce command finds it from any directory
    provider_map = config.provider_map and os.path.abspath(config.provider_map)
    run = replace(run, record=replace(run.record, extra=extra,
                                      config=replace(run.record.config, provider_map=provider_map)))
    record = run.record
    command = record.command()  # derived from the record alone: `runs show` prints the same
    summary = log_summary(run)
    labelled_only = default_ledger_scope(run)
    groupings = ["provider", *collection.categories()]
    ledgers = {by: log_ledger(run, collection, by=by, labelled_only=labelled_only) for by in groupings}
    findings = log_findings(run, collection, groupings=groupings)
    named = {f.subject for f in findings if not f.detail}  # a group a finding names is never hidden
    header = record.header()  # the same on --json and --output (cli/ranking.py's commands carry it too)
    outputs = [(args.output, lambda: write_table(run.table, args.output, header=header))] if args.output else []
    kept = keep_run(args, run, label=f"{log.what} {log.name} · {served_size(log)}", outputs=outputs)
    if args.json:
        print(json.dumps({**kept.to_dict(), HEADER_KEY: header, "config": record.to_dict(), "command": command,
                          "undefined": undefined,
                          "estimate": summary.attrs["note"], "summary": records(summary),
                          "queries": records(run.table), "ledgers": {by: records(t) for by, t in ledgers.items()},
                          "ledgers_shown": {by: ledger_groups(t, by, named=named, every=args.all_providers)
                                            .shown["group"].tolist() for by, t in ledgers.items()},
                          "ledger_scope": "queries with relevance labels" if labelled_only else "every query",
                          "notes": record.extra["notes"], "findings": [f.to_dict() for f in findings],
                          **({"what_if": what_if.to_dict()} if what_if is not None else {}),
                          **({"what_if": {"error": what_if_failed}} if what_if_failed else {})},
                         indent=2, default=str), file=out)
        return _replay_failed(what_if_failed)
    print(f"{log.what[0].upper()}{log.what[1:]} {args.log}: {served_size(log)}, {len(run.table)} queries, "
          f"k = {record.extra['k_used']}, "
          f"attribution: {record.config.attribution.value}"
          + (f" ({record.attributor}, {record.extra['judged_pairs']} pairs)" if record.attributor else ""), file=out)
    for note in record.extra["notes"]:
        print(f"note: {note}", file=out)
    print("\nFindings (most severe first; tests over queries, Holm-adjusted across the groups):", file=out)
    for finding in (f for f in findings if not f.detail):
        print(f"  - [{finding.severity.value}] {finding.text}", file=out)
    print(f"\nHeadline ({summary.attrs['note']}):", file=out)
    for row in summary.itertuples():
        interval = "[—]" if row.low != row.low else f"[{row.low:.3f}, {row.high:.3f}]"
        print(f"  {row.label:<48} {row.estimate:.3f}  {interval}  over {row.queries} {row.over} · {row.direction}"
              + (f" ({row.note})" if row.note else ""), file=out)
    print_undefined(undefined, out)
    if any(m.startswith("eae_d_per_cited") for m in summary["metric"]):
        print(f"  ({HOW_TO_READ}.)", file=out)
    scope = "the queries with relevance labels" if labelled_only else "every query"
    for by, ledger in ledgers.items():
        top = ledger_groups(ledger, by, named=named, every=args.all_providers)
        shown = top.shown[["group", "retrieval_share", "retrieval_share_low", "retrieval_share_high",
                           "attributed_share", "target_share", "share_gap"]].rename(
            columns={"retrieval_share_low": "low", "retrieval_share_high": "high"})
        shown = shown.dropna(axis=1, how="all")
        gap = "; gap = retrieval − target" if "share_gap" in shown else ""  # no target column: no gap either
        print(f"\nExposure ledger by {by} over {scope} (shares{gap}):", file=out)
        if top.truncated:
            print(f"Showing {top.rule} ({ALL_PROVIDERS_HINT}).", file=out)
        print(shown.round(3).to_string(index=False), file=out)
        if top.truncated:
            parts = [f"{name} {top.others[column]:.3f}" for name, column in (
                ("retrieval share", "retrieval_share"), ("attributed share", "attributed_share"),
                ("target share", "target_share"), ("gap", "share_gap")) if top.others[column] == top.others[column]]
            print(f"{top.with_others('group')['group'].iloc[-1]}: {', '.join(parts)}", file=out)
    print(f"\nPer query ({record.config.level:.0%} intervals over the query's served {served_unit(run)}s: EE-D "
          "bias-corrected "
          "with the basic interval, EE-R plug-in with the percentile interval; a query served once has no interval):",
          file=out)
    columns = [c for c in query_columns(text=False, intervals=True) if c in run.table]  # the app's, with bounds
    print(run.table[columns].dropna(axis=1, how="all").round(3).to_string(index=False), file=out)
    if what_if is not None:
        from ..audit.what_if import what_if_text

        print("", *what_if_text(what_if), sep="\n", file=out)
    elif what_if_failed:
        print(f"\nWhat if it sampled: not replayed: {what_if_failed}", file=out)
    kept.print_text(out)
    wall = record.wall_seconds
    print(f"Audited in {wall:.2f} s." if wall is not None and math.isfinite(wall) else "", file=out)
    print(f"Reproduce with: {command}", file=out)
    return _replay_failed(what_if_failed)


#: A replay past this machine's memory: the input that makes it smaller (not the log, which was audited).
_REPLAY_OUT_OF_MEMORY = ("the what-if replay needs more memory than this machine has left; lower N "
                         "(--what-if-samples; the paper uses 100)")


def ledger_groups(ledger, by: str, *, named=(), every: bool = False):
    """The rows of a ledger that the text prints (:func:`~fairrag_core.audit.ledger.ledger_top`): the
    :data:`~fairrag_core.audit.ledger.TOP_PROVIDERS` with the most retrieval exposure and every group a finding
    names (``named``), the rest summed (``every``: all of them)."""
    return ledger_top(ledger, by, n=None if every else TOP_PROVIDERS, named=named)


def _replay_failed(why: str | None) -> int:
    """The exit status after the audit was printed: 2, with the error on stderr, when its what-if failed."""
    if why:
        print(f"error: what-if: {why}", file=sys.stderr)
    return 2 if why else 0
