"""Command line: ``python -m fairrag_core <command>``. Readable tables by default, ``--json`` for machines.

One module per command group, each registering its commands with a handler:

* :mod:`.ranking` — ``collections``, ``rank``, ``exposure-sweep``;
* :mod:`.rag` — ``rag``, ``label-utility``, ``sweep``;
* :mod:`.fairqr` — ``fair-qr``, ``fair-qr-eval``;
* :mod:`.runs` — ``runs``;
* :mod:`.audit_log` — ``audit-log`` (a served RAG log: exposure, attribution, ledger);
* :mod:`.audit` — ``evaluate-run``, ``compare-runs`` (served rankings with expeval's metrics; paired comparison);
* :mod:`.richrag` — ``aspects``, ``rich-rank`` (RichRAG: sub-aspects, the multi-faceted pool, ranked lists, NCOM);
* :mod:`.warm` — ``warm`` (precompute a collection's answers and judgements into the disk cache);
* :mod:`.common` — the shared options, argument types and renderers.

Errors of the :class:`~fairrag_core.errors.FairRAGError` family end with exit code 2 and their message, which
names the fix.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import FairRAGError
from . import audit, audit_log, fairqr, rag, ranking, richrag, runs, warm

__all__ = ["main", "build_parser"]

_DESCRIPTION = """\
FairRAG Studio core: fair stochastic retrieval for RAG (Kim & Diaz, ICTIR 2025).

A deterministic retriever feeds the same top-k documents to the generator every time, so equally
useful sources never get exposure. The stochastic retriever samples rankings from a Plackett-Luce
policy whose sharpness is set by α: α = 0 is uniform (fairest), large α approaches the deterministic
ranking. Exposure is measured with EE-D (disparity: 1 = deterministic, lower = fairer) and EE-R
(relevance: 1 = exposure exactly where an oracle would put it).

Examples:
  python -m fairrag_core collections
  python -m fairrag_core rank --collection running-shoes \\
      --query "best shoes for a first marathon" --alpha 2 --samples 100 -k 5
  python -m fairrag_core rank --collection running-shoes --query "best shoes for a first marathon" \\
      --alpha 0.5 --retriever dense --json
  python -m fairrag_core exposure-sweep --collection running-shoes --alphas 0,1,2,4,8 --samples 100 -k 5
"""



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fairrag_core", description=_DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    for group in (ranking, rag, fairqr, runs, audit_log, audit, richrag, warm):
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args, out)
    except FairRAGError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
