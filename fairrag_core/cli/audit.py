"""``evaluate-run`` and ``compare-runs``: audit a deployed system's served rankings with expeval's metrics.

``evaluate-run QRELS RUN`` prints what expeval prints (``metric<TAB>query<TAB>value``, 6 decimals, qrels order) for
the same flags (``-u -p -r -B -C -U -G``, also spelled ``--user-model`` …), then the mean over queries as ``all``
lines (trec_eval's convention). ``--ci`` prints a readable report with intervals instead, ``--json`` one JSON
object. ``compare-runs QRELS RUN_A RUN_B`` is the paired comparison a reviewer needs for "did the change help?".
Diaz et al., CIKM 2020 (expected exposure); Kim & Diaz 2025 (the step model).
"""

from __future__ import annotations

import math
import shlex
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..audit.compare import ComparisonConfig
from ..audit.served import as_judgments, as_run, evaluate_rows, unjudged_queries, with_depth
from ..audit.served_awrf import evaluate_run_awrf
from ..audit.served_stats import DIRECTION, compare_runs, evaluate_served
from ..errors import InvalidParameterError
from ..metrics.expeval import METRICS, ExposureSettings, UserModel
from ..option_types import level_arg, positive_arg
from ..options import (
    COLLECTION,
    JSON,
    SEED,
    Entry,
    Kind,
    Option,
    add_option,
    add_options,
    argv,
    option,
    option_default,
    setting_entries,
)
from ..seeds import new_seed
from .audit_log import READING
from .common import add_command, add_store, fmt, print_json, records, settings

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["register", "ServedOptions", "EvaluateOptions", "CompareOptions"]

#: The files the commands read (printed by :func:`~fairrag_core.options.command_path` in the reproduce command).
QRELS = Option(("qrels",), "qrels file (expeval or TREC format) or a collection name/folder", path=True)
RUN = Option(("run",), "run file (.gz too)", path=True)
RUN_A = Option(("run_a",), "run A (e.g. the new system)", path=True)
RUN_B = Option(("run_b",), "run B (e.g. the baseline)", path=True)


@dataclass(frozen=True, kw_only=True)
class ServedOptions:
    """What ``evaluate-run`` and ``compare-runs`` read besides the user model (:class:`ExposureSettings`): how the
    files are read, and the bootstrap."""

    group_by: str = option("--group-by", default="provider",
                           help="when QRELS is a collection: group documents by provider or by a category")
    format: str = option("--format", default="auto", choices=("auto", "trec", "trec-fair-2022"),
                         help="run format (auto: detect it)")
    seed: int | None = SEED.field(default=None)
    n_boot: int = option("--n-boot", default=1000, parse=positive_arg, help="bootstrap resamples")
    level: float = option("--level", default=0.95, parse=level_arg, help="interval level")


@dataclass(frozen=True, kw_only=True)
class EvaluateOptions(ServedOptions):
    """``evaluate-run``'s own: the readable report with intervals, and the TREC Fair 2022 measures."""

    ci: bool = option("--ci", kind=Kind.ON, default=False,
                      help="the readable report with intervals (per query over its samples, means over queries): "
                           "the default output, the flag is kept for scripts")
    trec_eval: bool = option("--trec-eval", kind=Kind.ON, default=False,
                             help="expeval's own output instead: one 'metric<TAB>query<TAB>value' line per query and "
                                  "metric (plug-in values, as expeval prints them), then the means as 'all'")
    awrf: int | None = option("--awrf", default=None, parse=positive_arg, metavar="K",
                              help="also nDCG@K and AWRF@K (TREC Fair 2022) per query, from the qrels' groups")


@dataclass(frozen=True, kw_only=True)
class CompareOptions(ServedOptions):
    """``compare-runs``'s own: the randomization test's sign flips."""

    n_permutations: int = option("--n-permutations", default=10000, parse=positive_arg,
                                 help="random sign flips when there are more than 16 queries")


def register(sub) -> None:
    """Add ``evaluate-run`` and ``compare-runs`` to the command parser ``sub``."""
    p = add_command(sub, "evaluate-run", _cmd_evaluate, help="expected exposure of a served run (expeval's metrics "
                                                             "and flags): EE-D, EE-R, difference",
                    description="Evaluate the rankings a system served (QRELS first, RUN second, as expeval). RUN: "
                                "'qid sample docno rank score run_id' lines (expeval; a plain TREC run is one sample "
                                "per query) or TREC Fair 2022 'id seq_no page_id' (tab-separated). QRELS: 'qid "
                                "gid[|gid] docno rel' (rel -1 = unjudged), or a collection name/folder. Prints a "
                                "report: per query and over queries, EE-D (bias-corrected) and EE-R with intervals, "
                                "under the step user by default; --trec-eval prints expeval's per-query lines and the "
                                "means as 'all' instead (add -u gerr for expeval's own numbers).")
    for opt in (QRELS, RUN):
        add_option(p, opt)
    _add_options(p, EvaluateOptions)

    p = add_command(sub, "compare-runs", _cmd_compare, help="compare served systems: RAG logs, runs and stored runs "
                                                            "(--collection), or two runs with expeval's metrics "
                                                            "(QRELS RUN_A RUN_B)",
                    description="Is B fairer than A, and at what cost? With --collection (or, for logs and trace "
                                "exports without one, --provider-from or --provider-map): every INPUT (a RAG log, a "
                                "trace export, a `collect` store, a run file, or a stored run run:ID) is read and "
                                "audited as audit-log reads and audits it (--trace-map, --multi-retrieval, --service, "
                                "--since, --until, --target-shares, --merit-grades, --merit-threshold as there), and "
                                "each is compared with the baseline over the queries they share — per-query differences"
                                " of EE-D, EE-R and attribution with bootstrap intervals and paired sign-flip tests, "
                                "per-provider share differences with permutation tests, Holm-adjusted — with findings "
                                "(each system's own too, as audit-log finds them); saved in the run store, --report "
                                "writes the HTML report. Systems are named by their file (a stored run: run:ID · file)."
                                " Without either: QRELS RUN_A RUN_B, each metric's mean of A − B over the judged "
                                "queries with expeval's metrics, the interval and the sign-flip p-value.")
    add_options(p, ComparisonConfig, only=("inputs",))
    _add_options(p, CompareOptions)
    add_option(p, COLLECTION, default=None)
    add_options(p, ComparisonConfig, only=("baseline", "by", "attribution", "min_rel"))
    for name in READING:  # how each served file is read, as audit-log reads it (its options, its order)
        add_options(p, ComparisonConfig, only=(name,))
    # each served system's label-free findings: the stated shares and the merit rule
    add_options(p, ComparisonConfig, only=("target_shares", "merit_grades", "merit_threshold"))
    p.add_argument("--report", default=None, metavar="FILE.html",
                   help="with --collection: also write the comparison's self-contained HTML report")
    add_store(p, "the comparison")


def _add_options(p, cls: type) -> None:
    add_options(p, ExposureSettings)
    add_options(p, cls)
    add_option(p, JSON)


def _read(cls: type, args) -> tuple[ExposureSettings, ServedOptions]:
    """The user model and the command's options; the seed drawn now when none was given (printed, so it reruns)."""
    model, options = settings(ExposureSettings, args), settings(cls, args)
    return model, options if options.seed is not None else replace(options, seed=new_seed())


def _describe(settings: ExposureSettings) -> str:
    model = settings.user_model.value
    if settings.user_model is UserModel.STEP:
        model += f" (k={settings.k})" if settings.k is not None else " (k = the longest ranking)"
    elif settings.user_model is UserModel.RBP:
        model += f" (p={settings.patience:g})"
    else:
        model += f" (p={settings.patience:g}, u={settings.utility:g})"
    parts = [model, "complete" if settings.complete else "incomplete judgments",
             "binarised" if settings.binarize else "graded", "normalised" if settings.normalize else "unnormalised",
             f"{settings.bounds.value} bounds"]
    return ", ".join(parts) + (", group exposure" if settings.groups else "")


def _notes(rows: list[dict], skipped: list[str], settings: ExposureSettings) -> list[str]:
    """What a reader must know about the values (:func:`~fairrag_core.audit.served.evaluate_rows`' rows)."""
    notes = []
    missing = [row["query_id"] for row in rows if not row["in_run"]]
    if missing:
        notes.append(f"{len(missing)} judged quer{'y is' if len(missing) == 1 else 'ies are'} not in the run "
                     f"({', '.join(missing[:5])}): scored as expeval does (worst disparity and relevance; difference = "
                     "relevance's upper bound, which is 0 when that bound is degenerate)")
    if skipped:
        one = len(skipped) == 1
        notes.append(f"{len(skipped)} quer{'y' if one else 'ies'} of the run ha{'s' if one else 've'} no judged "
                     f"document and {'is' if one else 'are'} left out, as expeval does ({', '.join(skipped[:5])})")
    for metric in METRICS:
        queries = [row["query_id"] for row in rows if metric in str(row["undefined"]).split(",")]
        if queries:
            notes.append(f"{metric} is undefined for {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} "
                         f"({', '.join(queries[:5])}{', …' if len(queries) > 5 else ''}): its bounds are equal, so "
                         "every ranking would get expeval's stand-in value; the trec_eval-style lines print that "
                         "value, as expeval does, while means, intervals, --ci and --json leave it out (null); "
                         "--bounds corrected or -U measure it")
    if settings.normalize and not settings.corrected and settings.groups:
        notes.append("group mode: expeval's normalised group relevance is the constant 1 and its group disparity "
                     "is constant (rbp) or can be negative (gerr); use --bounds corrected or -U")
    if not all(math.isfinite(row[m]) for row in rows for m in METRICS):
        notes.append("an infinite value means no judged document of the query got exposure (expeval's util.l2)")
    return notes


def _command(command: str, files: list[tuple[Option, str]], model: ExposureSettings, options: ServedOptions,
             *extra: str) -> str:
    """The command that reproduces this evaluation, from the option declarations of its files and settings."""
    entries = [Entry(opt, path) for opt, path in files] + setting_entries(model) + setting_entries(options)
    return shlex.join(["python", "-m", "fairrag_core", command, *argv(entries), *extra])


def _cmd_evaluate(args, out) -> int:
    model, opts = _read(EvaluateOptions, args)
    run = as_run(args.run, run_format=opts.format)
    judgments = as_judgments(args.qrels, groups_by=opts.group_by)
    if opts.trec_eval and not args.json:  # no pandas on this path: it is the one large runs take
        model = with_depth(model, run)  # the step user reads the longest ranking unless -k says otherwise
        rows = evaluate_rows(qrels=judgments, run=run, settings=model)
        skipped = unjudged_queries(qrels=judgments, run=run, settings=model)
        awrf = evaluate_run_awrf(qrels=judgments, run=run, cutoff=opts.awrf) if opts.awrf else None
        _print_trec_eval(rows, awrf, out)
        for note in _notes(rows, skipped, model):
            print(f"note: {note}", file=sys.stderr)
        return 0
    # the Python API's one call (evaluate_served): the same estimator and numbers as fr.evaluate_served(...)
    result = evaluate_served(qrels=judgments, run=run, settings=model, n_boot=opts.n_boot, level=opts.level,
                             seed=opts.seed)
    model, table, intervals, reported, summary = (result.settings, result.table, result.intervals, result.queries,
                                                  result.mean)
    awrf = evaluate_run_awrf(qrels=judgments, run=run, cutoff=opts.awrf) if opts.awrf else None
    notes = _notes(result.rows, result.skipped_queries, model)
    command = _command("evaluate-run", [(QRELS, args.qrels), (RUN, args.run)], model, opts,
                       *(["--json"] if args.json else []))
    if args.json:
        return print_json({"run": {"run_id": run.run_id, "format": run.format.value, "source": run.source,
                                   "queries": len(run), "lines": run.n_lines},
                           "qrels": judgments.source, "settings": model.to_dict(), "seed": opts.seed,
                           "queries": records(reported.reset_index()),
                           "mean": None if summary is None else records(summary.reset_index()),
                           "skipped_queries": result.skipped_queries, "notes": notes, "command": command,
                           "intervals": records(intervals.reset_index()),
                           **({"awrf": records(awrf.reset_index())} if awrf is not None else {})}, out, indent=2)
    samples = sorted({int(n) for n in table["n_samples"] if n})
    print(f"Run {run.run_id} ({run.format.value}, {len(run)} queries, {run.n_lines} ranked lines; samples per query: "
          f"{', '.join(map(str, samples[:3])) + (' …' if len(samples) > 3 else '') or 'none'}) judged by "
          f"{judgments.source}", file=out)
    print(f"User model {_describe(model)}; {len(table)} judged queries\n", file=out)
    if summary is not None:
        print(f"Mean over queries of the estimates below (disparity and difference bias-corrected; {opts.level:.0%} "
              f"percentile bootstrap interval over {summary['n_queries'].iloc[0]} queries):", file=out)
        for metric, row in summary.iterrows():
            interval = "[—]" if row.low != row.low else f"[{row.low:.4f}, {row.high:.4f}]"
            print(f"  {metric:<11} {fmt(row.estimate, '.4f'):>8}  {interval}   {DIRECTION[metric]} (over "
                  f"{row.n_queries} queries)", file=out)
    print(f"\nPer query ({opts.level:.0%} interval over the query's samples; disparity and difference: bias-corrected "
          "estimate with a basic interval, the plug-in beside it; relevance: plug-in with a percentile interval):",
          file=out)
    for qid in table.index:
        cells = []
        for metric in METRICS:
            row = intervals.loc[(qid, metric)]
            if metric in str(table.loc[qid, "undefined"]).split(","):
                cells.append(f"{metric} —")
                continue
            plug_in = f" (plug-in {row.plug_in:.4f})" if metric != "relevance" and row.low == row.low else ""
            interval = "[—]" if row.low != row.low else f"[{row.low:.4f}, {row.high:.4f}]"
            cells.append(f"{metric} {row.estimate:.4f} {interval}{plug_in}")
        print(f"  {qid:<8} " + "   ".join(cells) + f"   N={int(table.loc[qid, 'n_samples'])}", file=out)
    if awrf is not None:
        print("\nTREC Fair 2022 measures (mean over each query's samples):", file=out)
        print(awrf.round(4).to_string(), file=out)
    print(*(f"Note: {note}" for note in notes), f"Reproduce: {command}", sep="\n", file=out)
    return 0


def _print_trec_eval(rows: list[dict], awrf: pd.DataFrame | None, out) -> None:
    """expeval's lines (``metric<TAB>query<TAB>value``, plug-in values) per query, then the means as ``all``."""
    measures = [] if awrf is None else list(awrf.columns[:4])  # the TREC Fair 2022 ones after expeval's
    for row in rows:
        qid = row["query_id"]
        lines = [(m, row[m]) for m in METRICS] + [(n, awrf.loc[qid, n]) for n in measures if qid in awrf.index]
        print(*(f"{name}\t{qid}\t{value:f}" for name, value in lines), sep="\n", file=out)
    means = []
    for m in METRICS:  # the mean over the queries, NaN left out (as pandas' mean, which this replaces here)
        values = np.array([row[m] for row in rows], dtype=np.float64)
        kept = values[~np.isnan(values)]
        means.append((m, float(kept.sum() / kept.size) if kept.size else math.nan))
    means += [(n, awrf[n].mean()) for n in measures]
    print(*(f"{name}\tall\t{value:f}" for name, value in means), sep="\n", file=out)


def _cmd_compare(args, out) -> int:
    if args.collection is not None or args.provider_from is not None or args.provider_map is not None:
        from .compare import run_comparison

        return run_comparison(args, out)
    if args.trace_map or args.multi_retrieval != option_default(ComparisonConfig, "multi_retrieval"):
        raise InvalidParameterError("--trace-map and --multi-retrieval read trace exports compared as systems: add "
                                    "--collection C, or --provider-from/--provider-map")
    if len(args.inputs) != 3:
        raise InvalidParameterError(f"compare-runs got {len(args.inputs)} inputs: give QRELS RUN_A RUN_B (expeval's "
                                    "comparison), or two or more logs, runs or run:ID with --collection C")
    args.qrels, args.run_a, args.run_b = args.inputs
    model, opts = _read(CompareOptions, args)
    judgments = as_judgments(args.qrels, groups_by=opts.group_by)
    run_a, run_b = as_run(args.run_a, run_format=opts.format), as_run(args.run_b, run_format=opts.format)
    result = compare_runs(qrels=judgments, run_a=run_a, run_b=run_b, settings=model, n_boot=opts.n_boot,
                          n_permutations=opts.n_permutations, level=opts.level, seed=opts.seed)
    command = _command("compare-runs", [(QRELS, args.qrels), (RUN_A, args.run_a), (RUN_B, args.run_b)], model, opts)
    if args.json:
        return print_json({"run_a": run_a.run_id, "run_b": run_b.run_id, "qrels": judgments.source,
                           "settings": model.to_dict(), "seed": opts.seed, "metrics": records(result.reset_index()),
                           "command": command}, out, indent=2)
    n = int(result["n_queries"].iloc[0])
    print(f"Run A {run_a.run_id} vs run B {run_b.run_id} on {n} judged queries ({judgments.source})", file=out)
    print(f"User model {_describe(model)}\n", file=out)
    print(f"  {'metric':<11} {'A':>8} {'B':>8} {'A − B':>9}  {opts.level:.0%} interval        p (rand.)  p (t)   ",
          file=out)
    for metric, row in result.iterrows():
        print(f"  {metric:<11} {row.mean_a:8.4f} {row.mean_b:8.4f} {row.difference:+9.4f}  "
              f"[{row.low:+.4f}, {row.high:+.4f}]  {row.p_value:9.4f}  {row.p_value_t:.4f}  {DIRECTION[metric]}",
              file=out)
    exact = "exact over all 2^n sign vectors" if n <= 16 else f"{opts.n_permutations} random sign vectors"
    print(f"\nA − B: mean of the per-query differences (plug-in) with a percentile bootstrap interval over queries; "
          f"p: paired randomization (sign-flip) test, two-sided, {exact}; p (t): paired t-test.", file=out)
    print(f"Reproduce: {command}", file=out)
    return 0
