"""``audit-log STORE --window 1d``: a ``collect`` store audited window by window (:mod:`fairrag_core.audit.monitor`):
the text table of windows by providers, ``--json``, and ``--output`` (CSV or Parquet: one row per window and
provider)."""

from __future__ import annotations

import json

from ..errors import InvalidParameterError

__all__ = ["monitor_command"]


def monitor_command(args, config, out, read) -> int:
    """Run ``audit-log --window`` (``read(config)`` → log, collection, notes: audit-log's own loader)."""
    from ..audit.monitor import monitor_store, monitor_text, read_changes
    from ..data.export import write_table
    from ..data.store_window import is_store

    if not config.window:
        raise InvalidParameterError("--changes marks a timeline; add --window 1d (or 1h, 7d)")
    if not is_store(args.log):
        raise InvalidParameterError(f"--window audits a `collect` store window by window; {args.log} is not one (a "
                                    "folder of <service>/<hour>.jsonl files): drop --window, or give the store")
    if config.what_if_alphas:
        raise InvalidParameterError("--what-if-alphas replays one audit; drop it with --window (or replay a window "
                                    "with --since/--until)")
    changes = read_changes(config.changes) if config.changes else ()
    result = monitor_store(args.log, config, read=read, changes=changes)
    if args.output:
        table = result.shares_table().merge(result.headline_table(), on="window", how="left")
        write_table(table, args.output)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str), file=out)
        return 0
    print("\n".join(monitor_text(result, every=args.all_providers)), file=out)
    return 0
