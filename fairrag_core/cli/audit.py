"""``evaluate-run`` and ``compare-runs``: audit a deployed system's served rankings with expeval's metrics.

``evaluate-run QRELS RUN`` prints what expeval prints (``metric<TAB>query<TAB>value``, 6 decimals, qrels order) for
the same flags (``-u -p -r -B -C -U -G``, also spelled ``--user-model`` …), then the mean over queries as ``all``
lines (trec_eval's convention). ``--ci`` prints a readable report with intervals instead, ``--json`` one JSON
object. ``compare-runs QRELS RUN_A RUN_B`` is the paired comparison a reviewer needs for "did the change help?".
Diaz et al., CIKM 2020 (expected exposure); Kim & Diaz 2025 (the step model).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys

import numpy as np
import pandas as pd

from ..audit.served import (
    DIRECTION,
    as_judgments,
    as_run,
    bootstrap_run,
    compare_runs,
    evaluate_run,
    evaluate_run_awrf,
    summarise_run,
    unjudged_queries,
)
from ..data import DEMO_COLLECTIONS
from ..metrics.expeval import METRICS, Bounds, ExposureSettings, UserModel
from ..record import command_path
from ..seeds import new_seed
from .common import positive_arg, seed_arg

__all__ = ["register"]


def _unit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def _model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-u", "--user-model", default="gerr", choices=[m.value for m in UserModel],
                   help="browsing model: gerr (default), rbp, or step (Fair RAG's machine user; needs -k)")
    p.add_argument("-p", "--patience", type=_unit, default=0.5,
                   help="patience p: probability of reading on to the next rank (gerr, rbp; default 0.5)")
    p.add_argument("-r", "--utility", type=_unit, default=0.5,
                   help="utility u: probability of stopping after a relevant document (gerr; default 0.5)")
    p.add_argument("-k", type=positive_arg, default=None, help="documents the step user reads (--user-model step)")
    p.add_argument("-B", "--binarize", action="store_true", help="binary relevance (grade > 0 → 1)")
    p.add_argument("-C", "--complete", action="store_true",
                   help="complete judgments (every qrels line is judged, grade 0 and -1 too); use for re-ranking")
    p.add_argument("-U", "--unnormalized", action="store_true", help="unnormalised metrics")
    p.add_argument("-G", "--groups", action="store_true", help="group exposure (the qrels' group ids)")
    p.add_argument("--bounds", default="expeval", choices=[b.value for b in Bounds],
                   help="normalisation bounds: expeval's (default, identical numbers) or corrected (fixes expeval's "
                        "constant/negative values; see fairrag_core.metrics.expeval)")
    p.add_argument("--group-by", default="provider",
                   help="when QRELS is a collection: group documents by provider (default) or by a category")
    p.add_argument("--format", default="auto", choices=["auto", "trec", "trec-fair-2022"],
                   help="run format (default: auto-detect)")
    p.add_argument("--seed", type=seed_arg, default=None, help="bootstrap seed, 0 to 2**63-1 (default: fresh, printed)")
    p.add_argument("--n-boot", type=positive_arg, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--level", type=_level, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _level(text: str) -> float:
    value = _unit(text)
    if value in (0.0, 1.0):
        raise argparse.ArgumentTypeError(f"expected a level strictly between 0 and 1, e.g. 0.95, got {text!r}")
    return value


def register(sub) -> None:
    """Add ``evaluate-run`` and ``compare-runs`` to the command parser ``sub``."""
    p = sub.add_parser(
        "evaluate-run", help="expected exposure of a served run (expeval's metrics and flags): EE-D, EE-R, difference",
        description="Evaluate the rankings a system served (QRELS first, RUN second, as expeval). RUN: "
                    "'qid sample docno rank score run_id' lines (expeval; a plain TREC run is one sample per query) "
                    "or TREC Fair 2022 'id seq_no page_id' (tab-separated). QRELS: 'qid gid[|gid] docno rel' "
                    "(rel -1 = unjudged), or a collection name/folder. Prints expeval's per-query lines, then the "
                    "means as 'all'.",
    )
    p.add_argument("qrels", help="qrels file (expeval or TREC format) or a collection name/folder")
    p.add_argument("run", help="run file (.gz too)")
    _model_options(p)
    p.add_argument("--ci", action="store_true",
                   help="readable report with intervals: per query over its samples, means over queries")
    p.add_argument("--awrf", type=positive_arg, default=None, metavar="K",
                   help="also nDCG@K and AWRF@K (TREC Fair 2022) per query, from the qrels' groups")
    p.set_defaults(handler=_cmd_evaluate)

    p = sub.add_parser(
        "compare-runs", help="paired comparison of two served runs: A − B per metric, interval and p-value",
        description="Did the change help? Each metric's mean of A − B over the judged queries, with a percentile "
                    "bootstrap interval over queries and the p-value of a two-sided paired randomization "
                    "(sign-flip) test (exact up to 16 queries); the paired t-test's p-value beside it.",
    )
    p.add_argument("qrels", help="qrels file (expeval or TREC format) or a collection name/folder")
    p.add_argument("run_a", help="run A (e.g. the new system)")
    p.add_argument("run_b", help="run B (e.g. the baseline)")
    _model_options(p)
    p.add_argument("--n-permutations", type=positive_arg, default=10000,
                   help="random sign flips when there are more than 16 queries (default 10000)")
    p.set_defaults(handler=_cmd_compare)


def _model(args) -> dict:
    return {"user_model": args.user_model, "patience": args.patience, "utility": args.utility, "k": args.k,
            "binarize": args.binarize, "complete": args.complete, "normalize": not args.unnormalized,
            "groups": args.groups, "bounds": args.bounds}


def _describe(settings: ExposureSettings) -> str:
    model = settings.user_model.value
    if settings.user_model is UserModel.STEP:
        model += f" (k={settings.k})"
    elif settings.user_model is UserModel.RBP:
        model += f" (p={settings.patience:g})"
    else:
        model += f" (p={settings.patience:g}, u={settings.utility:g})"
    parts = [model, "complete" if settings.complete else "incomplete judgments",
             "binarised" if settings.binarize else "graded", "normalised" if settings.normalize else "unnormalised",
             f"{settings.bounds.value} bounds"]
    return ", ".join(parts) + (", group exposure" if settings.groups else "")


def _notes(table: pd.DataFrame, skipped: list[str], settings: ExposureSettings) -> list[str]:
    notes = []
    missing = table.index[~table["in_run"]].tolist()
    if missing:
        notes.append(f"{len(missing)} judged quer{'y is' if len(missing) == 1 else 'ies are'} not in the run "
                     f"({', '.join(missing[:5])}): scored as expeval does (worst disparity and relevance; difference = "
                     "relevance's upper bound, which is 0 when that bound is degenerate)")
    if skipped:
        one = len(skipped) == 1
        notes.append(f"{len(skipped)} quer{'y' if one else 'ies'} of the run ha{'s' if one else 've'} no judged "
                     f"document and {'is' if one else 'are'} left out, as expeval does ({', '.join(skipped[:5])})")
    stand_ins = {m: table.index[[m in str(u).split(",") for u in table["undefined"]]].tolist() for m in METRICS}
    for metric, queries in stand_ins.items():
        if queries:
            notes.append(f"{metric} is undefined for {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} "
                         f"({', '.join(queries[:5])}{', …' if len(queries) > 5 else ''}): its bounds are equal, so "
                         "every ranking would get expeval's stand-in value; the trec_eval-style lines print that "
                         "value, as expeval does, while means, intervals, --ci and --json leave it out (null); "
                         "--bounds corrected or -U measure it")
    if settings.normalize and not settings.corrected and settings.groups:
        notes.append("group mode: expeval's normalised group relevance is the constant 1 and its group disparity "
                     "is constant (rbp) or can be negative (gerr); use --bounds corrected or -U")
    if not np.all(np.isfinite(table[list(METRICS)].to_numpy(float))):
        notes.append("an infinite value means no judged document of the query got exposure (expeval's util.l2)")
    return notes


def _means(table: pd.DataFrame) -> dict[str, float]:
    return {m: float(table[m].mean()) if len(table) else math.nan for m in METRICS}


def _input_path(value: str) -> str:
    """A file argument as a reproduce command should name it (:func:`~fairrag_core.record.command_path`): relative
    under the current directory, else absolute; a collection name stays a name."""
    if value in DEMO_COLLECTIONS or not os.path.exists(value):
        return value
    return command_path(os.path.abspath(value))


def _command(args, extra: list[str]) -> str:
    words = ["python", "-m", "fairrag_core", args.command, *map(_input_path, extra), "-u", args.user_model]
    if args.user_model == "step":
        words += ["-k", str(args.k)]
    else:
        words += ["-p", f"{args.patience:g}"] + (["-r", f"{args.utility:g}"] if args.user_model == "gerr" else [])
    words += [flag for flag, on in (("-B", args.binarize), ("-C", args.complete), ("-U", args.unnormalized),
                                    ("-G", args.groups)) if on]
    if args.bounds != "expeval":
        words += ["--bounds", args.bounds]
    if args.group_by != "provider":
        words += ["--group-by", args.group_by]
    if args.format != "auto":
        words += ["--format", args.format]
    if getattr(args, "awrf", None):
        words += ["--awrf", str(args.awrf)]
    return shlex.join(words + ["--seed", str(args.seed), "--n-boot", str(args.n_boot), "--level", f"{args.level:g}"])


def _cmd_evaluate(args, out) -> int:
    settings = ExposureSettings(**_model(args))
    run = as_run(args.run, run_format=args.format)
    judgments = as_judgments(args.qrels, groups_by=args.group_by)
    table = evaluate_run(run, judgments, **_model(args))
    skipped = unjudged_queries(run, judgments, binarize=args.binarize, complete=args.complete)
    awrf = evaluate_run_awrf(run, judgments, cutoff=args.awrf) if args.awrf else None
    notes = _notes(table, skipped, settings)
    if not (args.ci or args.json):
        for qid, row in table.iterrows():
            for metric in METRICS:
                print(f"{metric}\t{qid}\t{row[metric]:f}", file=out)
            if awrf is not None and qid in awrf.index:
                for name in awrf.columns[:3]:
                    print(f"{name}\t{qid}\t{awrf.loc[qid, name]:f}", file=out)
        for metric, value in _means(table).items():
            print(f"{metric}\tall\t{value:f}", file=out)
        if awrf is not None:
            for name in awrf.columns[:3]:
                print(f"{name}\tall\t{awrf[name].mean():f}", file=out)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        return 0
    args.seed = new_seed() if args.seed is None else args.seed
    summary = summarise_run(table, n_boot=args.n_boot, level=args.level, seed=args.seed) if len(table) else None
    # our reports show a value only where it is measured: expeval's stand-in for equal bounds becomes null / "—"
    reported = table.copy()
    for metric in METRICS:
        reported.loc[[metric in str(u).split(",") for u in reported["undefined"]], metric] = np.nan
    intervals = (bootstrap_run(run, judgments, n_boot=args.n_boot, level=args.level, seed=args.seed, **_model(args))
                 if args.ci else None)
    command = _command(args, [args.qrels, args.run]) + (" --ci" if args.ci else "") + (" --json" if args.json else "")
    if args.json:
        payload = {"run": {"run_id": run.run_id, "format": run.format.value, "source": run.source,
                           "queries": len(run), "lines": run.n_lines},
                   "qrels": judgments.source, "settings": settings.to_dict(), "seed": args.seed,
                   "queries": json.loads(reported.reset_index().to_json(orient="records")),
                   "mean": None if summary is None else json.loads(summary.reset_index().to_json(orient="records")),
                   "skipped_queries": skipped, "notes": notes, "command": command}
        if intervals is not None:
            payload["intervals"] = json.loads(intervals.reset_index().to_json(orient="records"))
        if awrf is not None:
            payload["awrf"] = json.loads(awrf.reset_index().to_json(orient="records"))
        print(json.dumps(payload, indent=2), file=out)
        return 0
    _print_report(run, judgments, settings, table, summary, intervals, awrf, notes, args, command, out)
    return 0


def _print_report(run, judgments, settings, table, summary, intervals, awrf, notes, args, command, out) -> None:
    samples = sorted({int(n) for n in table["n_samples"] if n})
    print(f"Run {run.run_id} ({run.format.value}, {len(run)} queries, {run.n_lines} ranked lines; samples per query: "
          f"{', '.join(map(str, samples[:3])) + (' …' if len(samples) > 3 else '') or 'none'}) judged by "
          f"{judgments.source}", file=out)
    print(f"User model {_describe(settings)}; {len(table)} judged queries\n", file=out)
    if summary is not None:
        print(f"Mean over queries (plug-in mean; {args.level:.0%} percentile bootstrap interval over "
              f"{summary['n_queries'].iloc[0]} queries):", file=out)
        for metric, row in summary.iterrows():
            value = "       —" if pd.isna(row.estimate) else f"{row.estimate:8.4f}"
            interval = "[—]" if pd.isna(row.low) else f"[{row.low:.4f}, {row.high:.4f}]"
            print(f"  {metric:<11} {value}  {interval}   {DIRECTION[metric]} (over {row.n_queries} queries)",
                  file=out)
    print(f"\nPer query ({args.level:.0%} interval over the query's samples; disparity and difference: bias-corrected "
          "estimate with a basic interval, the plug-in beside it; relevance: plug-in with a percentile interval):",
          file=out)
    for qid in table.index:
        cells = []
        for metric in METRICS:
            row = intervals.loc[(qid, metric)]
            if metric in str(table.loc[qid, "undefined"]).split(","):
                cells.append(f"{metric} —")
                continue
            interval = "[—]" if pd.isna(row.low) else f"[{row.low:.4f}, {row.high:.4f}]"
            text = f"{row.estimate:.4f} {interval}"
            if metric != "relevance" and not pd.isna(row.low):
                text += f" (plug-in {row.plug_in:.4f})"
            cells.append(f"{metric} {text}")
        print(f"  {qid:<8} " + "   ".join(cells) + f"   N={int(table.loc[qid, 'n_samples'])}", file=out)
    if awrf is not None:
        print("\nTREC Fair 2022 measures (mean over each query's samples):", file=out)
        print(awrf.round(4).to_string(), file=out)
    for note in notes:
        print(f"Note: {note}", file=out)
    print(f"Reproduce: {command}", file=out)


def _cmd_compare(args, out) -> int:
    settings = ExposureSettings(**_model(args))
    args.seed = new_seed() if args.seed is None else args.seed
    judgments = as_judgments(args.qrels, groups_by=args.group_by)
    run_a, run_b = as_run(args.run_a, run_format=args.format), as_run(args.run_b, run_format=args.format)
    result = compare_runs(run_a, run_b, judgments, n_boot=args.n_boot, n_permutations=args.n_permutations,
                          level=args.level, seed=args.seed, **_model(args))
    command = _command(args, [args.qrels, args.run_a, args.run_b])
    if args.json:
        payload = {"run_a": run_a.run_id, "run_b": run_b.run_id, "qrels": judgments.source,
                   "settings": settings.to_dict(), "seed": args.seed,
                   "metrics": json.loads(result.reset_index().to_json(orient="records")), "command": command}
        print(json.dumps(payload, indent=2), file=out)
        return 0
    n = int(result["n_queries"].iloc[0])
    print(f"Run A {run_a.run_id} vs run B {run_b.run_id} on {n} judged queries ({judgments.source})", file=out)
    print(f"User model {_describe(settings)}\n", file=out)
    print(f"  {'metric':<11} {'A':>8} {'B':>8} {'A − B':>9}  {args.level:.0%} interval        p (rand.)  p (t)   ",
          file=out)
    for metric, row in result.iterrows():
        print(f"  {metric:<11} {row.mean_a:8.4f} {row.mean_b:8.4f} {row.difference:+9.4f}  "
              f"[{row.low:+.4f}, {row.high:+.4f}]  {row.p_value:9.4f}  {row.p_value_t:.4f}  {DIRECTION[metric]}",
              file=out)
    exact = "exact over all 2^n sign vectors" if n <= 16 else f"{args.n_permutations} random sign vectors"
    print(f"\nA − B: mean of the per-query differences (plug-in) with a percentile bootstrap interval over queries; "
          f"p: paired randomization (sign-flip) test, two-sided, {exact}; p (t): paired t-test.", file=out)
    print(f"Reproduce: {command}", file=out)
    return 0
