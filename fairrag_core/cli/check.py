"""``check``: the fairness gate for CI and release — audit a deployment and hold it to a policy.

The input is audited exactly as ``audit-log`` audits it (its reading, its settings and its options: a RAG log, an
OTLP trace export, a ``collect`` store's service and window with ``--service``/``--since``/``--until``), or read
back from the run store (``run:ID``: a stored ``audit-log`` run, as it was audited; a stored comparison, with its
findings). The policy (:mod:`fairrag_core.audit.policy`, docs/check.md) holds rules on the findings ("no provider
under-cited beyond noise") and on the headline metrics ("EE-D ≤ 0.5"), each a failure or a warning. The verdict is
printed (text, or ``--json``), written as JUnit XML (``--junit``) and as a Markdown summary (``--summary``, and
appended to ``$GITHUB_STEP_SUMMARY`` when set), and returned as the exit code
(:data:`~fairrag_core.audit.policy.EXIT_CODES`).

The gate is deterministic: its bootstrap seed is 0 unless ``--seed`` says otherwise, so the same input gets the same
verdict on every CI run.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

from ..audit.compare import STORED
from ..audit.rag_log import LogAuditConfig
from ..errors import InvalidParameterError
from ..models.catalog import DEFAULTS
from ..options import COLLECTION, DEVICE, JSON, NLI, add_option, option_default, options_of
from .audit_log import AUDIT_ONLY, READING
from .common import add_command, add_settings, settings

__all__ = ["register", "GITHUB_STEP_SUMMARY"]

#: The file GitHub Actions shows as a job's summary (appended to, never overwritten).
GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def register(sub) -> None:
    """Add ``check`` to the command parser ``sub``."""
    from ..audit.policy import EXIT_CODES

    codes = "; ".join(f"{code}: {what}" for code, what in sorted(EXIT_CODES.items()))
    p = add_command(sub, "check", _cmd_check,
                    help="the fairness gate: audit a log, trace export, collected window or stored run against a "
                         "policy; exit codes, JUnit XML, Markdown summary",
                    description="Audit INPUT as audit-log does (same options) — or read a stored run (run:ID) — and "
                                "hold it to the rules of --policy (TOML, docs/check.md; default: no provider "
                                "under-exposed or under-cited beyond noise). Exit codes: " + codes + ".")
    log = options_of(LogAuditConfig)["log"]
    add_option(p, replace(log, metavar="INPUT", help=f"{log.help}; an OTLP trace export; a `collect` store (with "
                                                     f"--service, --since, --until); or a stored run {STORED}ID"),
               dest="log", default="")
    p.add_argument("--policy", default=None, metavar="FILE",
                   help="the policy: TOML [[rule]] tables (docs/check.md; default: no provider under-exposed or "
                        "under-cited beyond noise, both fail)")
    p.add_argument("--strict", action="store_true", help="warnings fail the gate too (exit code 3)")
    p.add_argument("--junit", default=None, metavar="FILE",
                   help="write the verdict as JUnit XML: one testcase per rule")
    p.add_argument("--summary", default=None, metavar="FILE",
                   help=f"write a short Markdown summary (also appended to ${GITHUB_STEP_SUMMARY} when it is set)")
    p.add_argument("--store", default=None, help=f"DuckDB run store that holds {STORED}ID (default "
                                                 "~/.cache/fairrag/runs.duckdb)")
    # how the input is read and audited: audit-log's options, declared once on LogAuditConfig
    add_option(p, replace(COLLECTION, default_text=f"{COLLECTION.cli_default}; none with --provider-from or "
                                                   "--provider-map"), default=None)
    add_settings(p, LogAuditConfig, only=READING)
    add_option(p, replace(NLI, help=f"{NLI.help} for judge/both", default_text=f"the offline {DEFAULTS['attributor']}"))
    add_option(p, DEVICE)
    add_settings(p, LogAuditConfig, skip=("log", *READING, *AUDIT_ONLY), defaults={"seed": 0})
    add_option(p, JSON)
    # audit-log's column reader of a large log asks for the backend; the gate audits here
    p.set_defaults(backend="local", ray_address=None)


def _audit_file(args):
    """The input audited as audit-log audits it: ``(subject, run, collection, notes, undefined)``."""
    from ..audit.rag_log import audit_rag_log
    from .audit_log import _served, served_size

    config = settings(LogAuditConfig, args)
    log, collection, notes, undefined = _served(args, config)
    attributor = None
    if config.attribution.value in ("judge", "both"):
        from ..rag.attribution import load_attributor

        attributor = load_attributor(args.nli, device=args.device)
    run = audit_rag_log(log, collection, config, attributor=attributor, collection_source=collection.source)
    return (f"{log.what} {args.log} ({served_size(log)}, {len(run.table)} queries)", run, collection,
            [*notes, *run.record.extra.get("notes", [])], undefined)


def _stored(args):
    """A stored run: ``(subject, run, collection, notes, undefined)`` for an audit-log run (its collection, or the
    one made from its logs again, as the app reopens it); ``collection`` None for a comparison."""
    from ..audit.store import RunStore
    from ..record import RunKind

    run_id = args.log[len(STORED):]
    given = ["--collection"] * (args.collection is not None) + [
        opt.flags[0] for name, opt in options_of(LogAuditConfig).items()
        if name in READING and getattr(args, name) not in (None, (), [], option_default(LogAuditConfig, name))]
    if given:
        raise InvalidParameterError(f"{STORED}{run_id} is checked as it was audited, with its own collection and "
                                    f"reading; drop {', '.join(given)} (or check the log itself with them)")
    with RunStore(args.store) as store:
        run = store.load(run_id)
    record, undefined = run.record, {}
    if record.kind is RunKind.COMPARISON:
        return f"stored comparison {STORED}{run_id} ({' vs '.join(record.extra['systems'])})", run, None, [], {}
    if record.kind is not RunKind.AUDIT_LOG:
        raise InvalidParameterError(f"{STORED}{run_id} is a stored {record.kind.value} run; the gate checks a log "
                                    "audit (audit-log) or a comparison (compare-runs): store one, or check the log "
                                    "itself")
    config = record.config
    if config.provider_from is not None or config.provider_map is not None:
        from ..audit.compare import documents_of_logs, logs_of_audits
        from ..data.traces import NO_RELEVANCE_LABELS

        collection = documents_of_logs(logs_of_audits([record]), provider_from=config.provider_from,
                                       provider_map=config.provider_map).collection
        undefined["ee_r"] = NO_RELEVANCE_LABELS
    else:
        from ..data import load_collection

        collection = load_collection(record.collection)
    served = (record.extra.get("inputs") or [{}])[0].get("name") or record.config.log
    return (f"stored run {STORED}{run_id} (audit of {served}, {len(run.table)} queries)", run, collection,
            list(record.extra.get("notes", [])), undefined)


def _write(path: str, text: str, *, append: bool = False) -> None:
    try:
        with open(path, "a" if append else "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as err:
        raise InvalidParameterError(f"cannot write {path} ({err.strerror or err}); pick a writable path") from None


def _cmd_check(args, out) -> int:
    from ..audit.policy import evaluate, load_policy
    from ..audit.policy_report import junit_xml, markdown_summary, verdict_text

    policy = load_policy(args.policy)  # a bad policy stops before the audit
    subject, run, collection, notes, undefined = _stored(args) if args.log.startswith(STORED) else _audit_file(args)
    if collection is None:  # a stored comparison: its findings as compare-runs found them, no headline
        from ..audit.comparison_findings import stored_findings

        findings, headlines = stored_findings(run), {}
    else:
        from ..audit.log_report import log_findings, log_summary
        from ..audit.policy import headlines_from

        findings, headlines = log_findings(run, collection), headlines_from(log_summary(run))
    verdict = evaluate(policy, findings, headlines, undefined, subject=subject, notes=notes)
    strict = args.strict
    if args.junit:
        _write(args.junit, junit_xml(verdict, strict=strict))
    summary = markdown_summary(verdict, strict=strict)
    if args.summary:
        _write(args.summary, summary)
    if os.environ.get(GITHUB_STEP_SUMMARY):  # the CI's page: a summary it cannot take never hides the verdict
        try:
            _write(os.environ[GITHUB_STEP_SUMMARY], summary, append=True)
        except InvalidParameterError as err:
            print(f"warning: ${GITHUB_STEP_SUMMARY}: {err}", file=sys.stderr)
    if args.json:
        print(json.dumps(verdict.to_dict(strict=strict), indent=2, ensure_ascii=False, default=str), file=out)
    else:
        for note in notes:
            print(f"note: {note}", file=out)
        print(*verdict_text(verdict, strict=strict), sep="\n", file=out)
    return verdict.exit_code(strict=strict)
