"""``compare-runs A B [C …] --collection C``: compare served systems — RAG logs, run files and stored runs
(``run:ID``), in any mix — over the queries they share, with the audit's metrics (:mod:`fairrag_core.audit.compare`).

Each served file is audited as ``audit-log`` audits it (the one audit, :func:`~fairrag_core.audit.rag_log.
audit_served`); a stored run brings its systems (one per α of a sweep or batch audit). The comparison — paired
per-query differences with intervals and tests, per-provider share differences, and what they mean — is printed,
saved in the run store and, with ``--report``, written as the same self-contained HTML report the app offers.
With ``--provider-from`` or ``--provider-map`` instead of ``--collection``, the files' providers come from the files
themselves, as ``audit-log`` reads them (one collection of the documents they name). Without either,
``compare-runs QRELS RUN_A RUN_B`` is expeval's comparison (:mod:`.audit`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from ..audit.compare import (
    STORED,
    Comparison,
    ComparisonConfig,
    System,
    compare_systems,
    documents_of_logs,
    logs_of_audits,
    stored_systems,
)
from ..audit.comparison_findings import with_findings
from ..audit.rag_log import AttributionSource, LogAuditConfig, audit_served
from ..data import load_collection
from ..data.export import HEADER_KEY
from ..data.store_window import StoreWindow, load_selected
from ..errors import InvalidParameterError
from ..seeds import derive_seed, new_seed
from .audit_log import check_provider_source, check_trace_options
from .common import fmt, keep_run, print_json, records, settings

__all__ = ["run_comparison", "STORED"]

def _systems(inputs: list[str], collection, config: ComparisonConfig, store_path, served: dict) -> list[System]:
    """One system per input: a stored run's (one per α; named by its id and the file it audited), or the audit of a
    served file (``served``: each file's loaded log; named by its file), read and audited as ``audit-log`` reads and
    audits it."""
    systems: list[System] = []
    for i, value in enumerate(inputs):
        if value.startswith(STORED):
            from ..audit.store import RunStore

            run_id = value[len(STORED):]
            systems += stored_systems(RunStore(store_path).load(run_id), run_id)
            continue
        log = served[value]
        audit = audit_served(log, collection, LogAuditConfig(
            k=config.k, attribution=AttributionSource(config.attribution), min_rel=config.min_rel,
            n_boot=config.n_boot, level=config.level, seed=derive_seed(config.seed, i), trace_map=config.trace_map,
            multi_retrieval=config.multi_retrieval, provider_from=config.provider_from,
            provider_map=config.provider_map, service=config.service, since=config.since, until=config.until,
            target_shares=config.target_shares, merit_grades=config.merit_grades,
            merit_threshold=config.merit_threshold))
        systems.append(System(log.name, audit))
    labels = [s.label for s in systems]  # two files of the same name: number them
    return [replace(s, label=f"{s.label} ({i + 1})") if labels.count(s.label) > 1 else s for i, s in enumerate(systems)]


def _served(inputs: list[str], collection_name: str | None, config: ComparisonConfig, store_path):
    """The collection and each served file's log: from ``--collection``, or — with ``--provider-from`` or
    ``--provider-map`` — one collection of the documents the files and the stored log audits' logs name, with their
    providers from the logs."""
    from ..data.traces import TraceMap

    trace_map = TraceMap.parse(config.trace_map, multiple=config.multi_retrieval)
    from_log = check_provider_source(config, collection_given=collection_name is not None,
                                     attribution=config.attribution, subject="logs compared", verb="compare")
    collection = None if from_log else load_collection(collection_name)
    window = StoreWindow.of(config)  # of a `collect` store (or one service's folder of it): a service and a window
    served = {value: load_selected(value, window, collection=collection, trace_map=trace_map)
              for value in inputs if not value.startswith(STORED)}
    for log in served.values():
        check_trace_options(log, trace_map)
    if from_log:
        stored = [value[len(STORED):] for value in inputs if value.startswith(STORED)]
        if stored:
            from ..audit.store import RunStore

            store = RunStore(store_path)
            stored = logs_of_audits([store.load_record(run_id) for run_id in stored])
        collection = documents_of_logs([*served.values(), *stored], provider_from=config.provider_from,
                                       provider_map=config.provider_map).collection
    return collection, served


def run_comparison(args, out) -> int:
    """The systems mode of ``compare-runs`` (``--collection``, ``--provider-from`` or ``--provider-map`` given)."""
    inputs = list(args.inputs)
    if len(inputs) < 2:
        raise InvalidParameterError("compare at least two systems: compare-runs A B [C …] --collection C (RAG logs, "
                                    "run files or stored runs run:ID)")
    config = settings(ComparisonConfig, args)
    # the files', provider map's and stated shares' absolute paths: the reproduce command finds them from any folder
    config = ComparisonConfig(**{**config.to_dict(), "seed": config.seed if config.seed is not None else new_seed(),
                                 "inputs": tuple(value if value.startswith(STORED) else os.path.abspath(value)
                                                 for value in inputs),
                                 "provider_map": config.provider_map and os.path.abspath(config.provider_map),
                                 "target_shares": config.target_shares and os.path.abspath(config.target_shares)})
    collection, served = _served(inputs, args.collection, config, getattr(args, "store", None))
    systems = _systems(inputs, collection, config, getattr(args, "store", None), served)
    config = replace(config, baseline=_baseline(config.baseline, systems, served))
    result = with_findings(compare_systems(systems, collection, config), systems, collection)
    outputs = []
    if getattr(args, "report", None):
        outputs.append((args.report, lambda: Path(args.report).write_text(comparison_report(result, collection),
                                                                         encoding="utf-8")))
    kept = keep_run(args, result, label=f"comparison · {' vs '.join(result.record.extra['systems'])}",
                    outputs=outputs)
    command = result.record.command()
    if args.json:
        return print_json({**kept.to_dict(), HEADER_KEY: result.record.header(), "config": result.record.to_dict(),
                           "command": command,
                           "findings": [f.to_dict() for f in result.findings],
                           "metrics": records(result.table), "shares": records(result.documents)},
                          out, indent=2, default=str)
    _print(result, out)
    kept.print_text(out)
    if getattr(args, "report", None) and not kept.problems:
        print(f"Report written to {args.report}", file=out)
    print(f"Reproduce with: {command}", file=out)
    return 0


def _baseline(given: str | None, systems: list[System], served: dict) -> str:
    """``--baseline`` as a system's label: the label itself, or the input as given (a file's path, or ``run:ID`` of a
    stored run named ``run:ID · a.jsonl``)."""
    labels = [s.label for s in systems]
    if not given or given in labels:
        return given or ""
    if given in served:
        found = [label for label in labels if label.split(" (")[0] == served[given].name]
        if len(found) == 1:
            return found[0]
    found = [label for label in labels if label.startswith(f"{given} · ")]
    if given.startswith(STORED) and found:
        return found[0]
    raise InvalidParameterError(f"--baseline {given!r} is not one of the systems: {', '.join(labels)}")


def comparison_report(result: Comparison, collection) -> str:
    """The self-contained HTML report of a comparison (the app's download; imported late: it draws charts)."""
    from fairrag_studio.views.compare import comparison_report_html

    return comparison_report_html(result, collection)


def _print(result: Comparison, out) -> None:
    record = result.record
    base = record.extra["baseline"]
    print(f"Comparison of {len(record.extra['systems'])} systems on {record.collection_name}, each against {base} "
          f"(seed {record.seed}):", file=out)
    for item in record.extra["inputs"]:
        name = f" · {item['name']}" if item.get("name") and not item["label"].startswith(item["name"]) \
            and not item["label"].endswith(f" · {item['name']}") else ""
        sha = f" · sha256 {item['sha256'][:12]}…" if item.get("sha256") else ""
        print(f"  {item['label']}{name}{sha}", file=out)
    headline = [f"  - {f.text}" for f in result.findings if not f.detail]  # the details are the tables below
    if headline:
        print("\nFindings:", *headline, sep="\n", file=out)
    level = record.config.level
    print(f"\nPer-query metrics, system − {base} (mean difference, {level:.0%} bootstrap interval over queries; p: "
          "paired sign-flip test, Holm-adjusted across the metrics):", file=out)
    for row in result.table.itertuples():
        print(f"  {row.system:<28.28} {row.label:<12} {fmt(row.mean_system)} vs {fmt(row.mean_baseline)}  "
              f"Δ {fmt(row.difference, '+.3f')} [{fmt(row.low, '+.3f')}, {fmt(row.high, '+.3f')}]  "
              f"p {row.p_value:.3g} (Holm {row.p_holm:.3g}) · {row.direction}", file=out)
    if not result.documents.empty:
        print(f"\nShares per {record.config.by}, system − {base} (paired bootstrap interval; p: within-query swap "
              "permutation test, Holm-adjusted across groups); differences beyond noise:", file=out)
        shown = result.documents[result.documents["p_holm"] < 1 - level]
        if shown.empty:
            print(f"  none: no {record.config.by}'s share differs beyond noise", file=out)
        for row in shown.itertuples():
            print(f"  {row.system:<28.28} {row.kind:<10} {row.group:<24.24} {row.share_system:6.1%} vs "
                  f"{row.share_baseline:6.1%}  Δ {row.difference * 100:+.1f} points "
                  f"[{row.low * 100:+.1f}, {row.high * 100:+.1f}]  p {row.p_holm:.3g} (Holm)", file=out)
