"""``runs``: list, show, compare or delete the runs saved in the DuckDB run store."""

from __future__ import annotations

import json
import sys

from ..metrics.registry import SWEEP, keys

__all__ = ["register"]


def register(sub) -> None:
    """Add ``runs`` to the command parser ``sub``."""
    p = sub.add_parser("runs", help="list, show, compare or delete saved runs in the DuckDB run store",
                       description="`runs` lists saved runs; `runs show ID` prints one with the command that "
                                   "reproduces it; `runs compare ID ID…` puts mean metrics per α side by side.")
    p.add_argument("action", nargs="?", default="list", choices=["list", "show", "compare", "delete"])
    p.add_argument("run_ids", nargs="*", default=[])
    p.add_argument("--store", default=None, help="DuckDB run store (default ~/.cache/fairrag/runs.duckdb)")
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
            columns = {}
            for run_id in args.run_ids:
                table = store.load(run_id).table
                present = [m for m in keys(SWEEP) if m in table.columns]  # the per-system metrics
                means = table.assign(alpha=table["alpha"].fillna(float("inf"))).groupby("alpha")[present].mean()
                columns[run_id] = means
            merged = pd.concat(columns, axis=1)
            print(merged.to_json(orient="split") if args.json else merged.round(3).to_string(), file=out)
            return 0
        run = store.load(args.run_ids[0])
        if args.json:
            print(json.dumps({"config": run.record.to_dict(), "command": run.record.command(),
                              "rows": json.loads(run.table.to_json(orient="records"))}), file=out)
        else:
            print(f"Reproduce with: {run.record.command()}\n", file=out)
            print(json.dumps(run.record.to_dict(), indent=2, default=str), file=out)
            print(run.table.to_string(index=False), file=out)
    return 0
