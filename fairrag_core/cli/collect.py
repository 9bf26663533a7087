"""``collect``: an OTLP/HTTP trace receiver (:mod:`fairrag_core.data.collector`). Point a deployment's OTLP exporter
at it (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces``) and audit the store it writes with
``audit-log STORE`` (every service) or ``audit-log STORE/<service>``, over a window with ``--since``/``--until``
(:mod:`fairrag_core.data.store_window`): no glue between the exporter and the audit.
"""

from __future__ import annotations

import contextlib
import signal
import sys

from ..options import TRACE_MAP, add_option
from .common import add_command

__all__ = ["register"]

#: Where the store goes unless told (beside the run store).
DEFAULT_STORE = "~/.cache/fairrag/traces"


def register(sub) -> None:
    """Add ``collect`` to the command parser ``sub``."""
    from ..data.collector import DEFAULT_MAX_BYTES, DEFAULT_PORT, DEFAULT_QUEUE

    p = add_command(sub, "collect", _cmd_collect,
                    help="receive OTLP/HTTP traces (protobuf or JSON) from a deployment's exporter into a store "
                         "that audit-log reads",
                    description="Serve POST /v1/traces (OTLP/HTTP: application/x-protobuf or application/json, "
                                "gzip too) and append what the audit reads of each span (ids, names, kinds, times, "
                                "the trace attributes; no document texts or prompts) to STORE/<service>/<hour>.jsonl. "
                                "Audit with: audit-log STORE (or STORE/<service>). Stop with Ctrl-C. Loopback only "
                                "unless --host names another address (docs/traces.md).")
    p.add_argument("--store", default=DEFAULT_STORE, help=f"the store folder (default {DEFAULT_STORE})")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 serves the network)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}, OTLP/HTTP's)")
    p.add_argument("--max-request-mb", type=float, default=DEFAULT_MAX_BYTES / (1 << 20),
                   help=f"largest request body, sent or inflated, in MiB (default {DEFAULT_MAX_BYTES >> 20}); "
                        "larger ones are answered 413")
    p.add_argument("--queue", type=int, default=DEFAULT_QUEUE,
                   help=f"requests waiting to be written at most (default {DEFAULT_QUEUE}); more are answered 503 "
                        "with Retry-After")
    add_option(p, TRACE_MAP, dest="trace_map", default=())


def _cmd_collect(args, out) -> int:
    from ..data.collector import Receiver
    from ..data.traces import TraceMap

    receiver = Receiver(args.store, host=args.host, port=args.port, max_bytes=int(args.max_request_mb * (1 << 20)),
                        queue_size=args.queue, trace_map=TraceMap.parse(args.trace_map or ()))
    print(f"collecting OTLP/HTTP traces at {receiver.url} into {receiver.store.folder}", file=out, flush=True)
    print(f"audit with: python -m fairrag_core audit-log {receiver.store.folder} --provider-from metadata.source",
          file=out, flush=True)
    # Ctrl-C or a service manager's SIGTERM stops it (what is queued is written first), even where the shell that
    # started it had SIGINT ignored, as a background job's is
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.default_int_handler)
    with contextlib.suppress(KeyboardInterrupt):
        receiver.serve_forever()
    c = receiver.counts
    print(f"stopped: {c['requests']:,} requests, {c['spans']:,} spans stored; {c['rejected']:,} refused "
          f"({c['busy']:,} while the queue was full)", file=out)
    sys.stdout.flush()
    return 0
