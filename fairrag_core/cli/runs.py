"""``runs``: list, show, compare, export or delete the runs saved in the DuckDB run store."""

from __future__ import annotations

import json
import sys

from ..errors import InvalidParameterError
from ..metrics.registry import LOG_HEADLINE, METRICS, SWEEP, keys
from ..record import RunKind

__all__ = ["register"]


def register(sub) -> None:
    """Add ``runs`` to the command parser ``sub``."""
    p = sub.add_parser("runs", help="list, show, compare, export or delete saved runs in the DuckDB run store",
                       description="`runs` lists saved runs; `runs show ID` prints one with the command that "
                                   "reproduces it; `runs compare ID ID…` puts mean metrics per α side by side (log "
                                   "audits: their means over queries; two sweeps: also the second minus the first); "
                                   "`runs export ID --output FILE` writes its table with its header (.csv, .parquet "
                                   "or .json).")
    p.add_argument("action", nargs="?", default="list", choices=["list", "show", "compare", "export", "delete"])
    p.add_argument("run_ids", nargs="*", default=[])
    p.add_argument("--store", default=None, help="DuckDB run store (default ~/.cache/fairrag/runs.duckdb)")
    p.add_argument("--output", default=None, help="export: the file to write (.csv with '# key: value' header lines, "
                                                  ".parquet, or .json with the header under 'fairrag')")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_cmd_runs)


def _cmd_runs(args, out) -> int:
    import pandas as pd

    from ..audit.store import RunStore

    with RunStore(args.store) as store:
        if args.action == "list":
            runs = store.list()
            print(runs.to_json(orient="records", date_format="iso") if args.json
                  else (runs.to_string(index=False) if not runs.empty else "no runs saved yet"), file=out)
            return 0
        if not args.run_ids:
            print("error: give a run id (see `python -m fairrag_core runs`)", file=sys.stderr)
            return 2
        if args.action == "delete":
            for run_id in args.run_ids:
                store.delete(run_id)
                print(f"deleted {run_id}", file=out)
            return 0
        if args.action == "compare":
            runs = {run_id: store.load(run_id) for run_id in args.run_ids}
            logs = {_is_log(run) for run in runs.values()}
            if len(logs) > 1 or any("alpha" not in run.table.columns for run in runs.values() if not _is_log(run)):
                raise InvalidParameterError(
                    "`runs compare` puts sweeps (per α) or log audits side by side, not a mix or a comparison; "
                    "compare them with `python -m fairrag_core compare-runs run:ID run:ID --collection NAME`")
            merged = pd.concat({run_id: _means(run) for run_id, run in runs.items()}, axis=1)
            if len(runs) == 2 and logs == {False}:  # two sweeps
                merged = _with_difference(merged, *runs)
            print(merged.to_json(orient="split") if args.json else merged.round(3).to_string(), file=out)
            return 0
        run = store.load(args.run_ids[0])
        if args.action == "export":
            return _export(run, args.output, out)
        findings = _comparison_findings(run)
        if args.json:
            print(json.dumps({"config": run.record.to_dict(), "command": run.record.command(),
                              "rows": json.loads(run.table.to_json(orient="records")),
                              **({"findings": [f.to_dict() for f in findings]} if findings is not None else {})}),
                  file=out)
        else:
            if findings is not None:  # a comparison: what compare-runs printed, its findings as they were
                from ..audit.compare import Comparison
                from .compare import _print

                _print(Comparison(record=run.record, table=run.table, documents=run.documents,
                                  findings=tuple(findings)), out)
                print("", file=out)
            print(f"Reproduce with: {run.record.command()}\n", file=out)
            print(json.dumps(run.record.to_dict(), indent=2, default=str), file=out)
            print(run.table.to_string(index=False), file=out)
    return 0


def _comparison_findings(run):
    """A stored comparison's findings, as compare-runs found them (the systems' own kept in its record); None for
    any other run."""
    if run.record.kind is not RunKind.COMPARISON:
        return None
    from ..audit.comparison_findings import stored_findings

    return stored_findings(run)


def _with_difference(merged, first: str, second: str):
    """Two sweeps' means per α with ``<second> − <first>`` per metric they share, on the α both ran (NaN
    elsewhere)."""
    import pandas as pd

    shared = [m for m in merged[first].columns if m in merged[second].columns]
    difference = merged[second][shared] - merged[first][shared]
    return pd.concat([merged, pd.concat({f"{second} − {first}": difference}, axis=1)], axis=1)


def _export(run, path: str | None, out) -> int:
    """``runs export ID --output FILE``: the stored table with the run's header (:meth:`RunRecord.header`): a CSV's
    ``# key: value`` lines, Parquet's ``attrs``, or JSON ``{"fairrag": header, "rows": […]}``."""
    from ..data.export import HEADER_KEY, write_table
    from .common import records

    if not path:
        raise InvalidParameterError("give the file to write: runs export ID --output FILE (.csv, .parquet or .json)")
    header = run.record.header()
    if path.lower().endswith(".json"):
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({HEADER_KEY: header, "rows": records(run.table)}, handle, indent=2, ensure_ascii=False)
    else:
        write_table(run.table, path, header=header)
    print(f"wrote {path} ({len(run.table)} rows of run {run.run_id}, {header['kind']})", file=out)
    return 0


def _is_log(run) -> bool:
    """Whether ``run`` is a log audit (``audit-log``), whose table is per query with no α."""
    return run.record.kind is RunKind.AUDIT_LOG


def _means(run):
    """A stored run's mean metrics: per α for a sweep (its :data:`~fairrag_core.metrics.registry.SWEEP` metrics), or
    one row over the queries for a log audit, which has no α (its headline metrics, the attribution ones per source,
    ``ear_cited``; metrics it did not measure left out)."""
    from ..audit.rag_log import SOURCE_LABELS

    table = run.table
    if not _is_log(run):
        present = [m for m in keys(SWEEP) if m in table.columns]  # the per-system metrics
        return table.assign(alpha=table["alpha"].fillna(float("inf"))).groupby("alpha")[present].mean()
    columns = [column for key in keys(LOG_HEADLINE)
               for column in (METRICS[key].columns(tuple(SOURCE_LABELS)) if METRICS[key].per_source else (key,))]
    present = [c for c in columns if c in table.columns and table[c].notna().any()]
    return table[present].mean().to_frame("mean over queries").T
