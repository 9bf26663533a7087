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
* :mod:`.index` — ``index`` (list, build or clear the persistent retrieval indexes);
* :mod:`.common` — the shared options, argument types and renderers.

Errors of the :class:`~fairrag_core.errors.FairRAGError` family and argument errors end with exit code 2 and one
line that names the fix. With ``--json`` every failure is also one JSON object on standard output,
``{"error": …, "error_type": …, "exit_code": …}``, so a script can parse whatever happened.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import traceback
from collections.abc import Sequence

from ..errors import FairRAGError, InvalidParameterError

__all__ = ["main", "build_parser", "UsageError", "COMMANDS", "OUT_OF_MEMORY"]


#: What a command says when its input did not fit in memory.
OUT_OF_MEMORY = ("the input needs more memory than this machine has left; for a large log, cut it into shards "
                 "and audit the folder (audit-log FOLDER --attribution none, on Ray with --backend ray); for a large "
                 "run, cut its rankings to the depth you evaluate or split its queries into several files; or run on "
                 "a machine with more memory")


class UsageError(InvalidParameterError):
    """A command line argparse refuses (unknown option, a value of the wrong type, a missing argument)."""

    def __init__(self, message: str, parser: argparse.ArgumentParser) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """argparse, except that a refused command line raises :class:`UsageError` instead of printing and exiting,
    so that :func:`main` can answer in JSON when asked to (subcommand parsers inherit the class)."""

    def error(self, message: str):
        raise UsageError(message, self)

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



#: Each command and the module that registers it, in the order of ``--help``. Running a command imports only its
#: module, so a command that needs no model, pandas or scipy starts in a fraction of a second (issue 22).
COMMANDS: dict[str, str] = {
    "collections": "ranking", "rank": "ranking", "exposure-sweep": "ranking",
    "rag": "rag", "label-utility": "rag", "sweep": "rag",
    "fair-qr": "fairqr", "fair-qr-eval": "fairqr",
    "runs": "runs",
    "audit-log": "audit_log", "collect": "collect", "check": "check",
    "evaluate-run": "audit", "compare-runs": "audit",
    "aspects": "richrag", "rich-rank": "richrag", "train-ranker": "richrag", "rich-eval": "richrag",
    "warm": "warm",
    "index": "index",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command-line parser: with ``command`` (a known command name) only that command's module is imported
    and registered; without, all of them (``--help``, an unknown command's list of choices)."""
    parser = _Parser(prog="python -m fairrag_core", description=_DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(f".{name}", __name__).register(sub)
    return parser


def _failed(message: str, error_type: str, exit_code: int, as_json: bool, out) -> int:
    """The exit code, after the failure as one JSON object on ``out`` when ``--json`` was given."""
    if as_json:
        print(json.dumps({"error": message, "error_type": error_type, "exit_code": exit_code}, ensure_ascii=False),
              file=out)
    return exit_code


def main(argv: Sequence[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    try:
        command = next((a for a in argv if not a.startswith("-")), None)  # the first argument that is no option
        args = build_parser(command).parse_args(argv)
    except UsageError as err:
        err.parser.print_usage(sys.stderr)
        print(f"{err.parser.prog}: error: {err}", file=sys.stderr)
        return _failed(f"{err.parser.prog}: {err}", "usage", 2, as_json, out)
    try:
        return args.handler(args, out)
    # MemoryError: an input larger than this machine's memory (e.g. FAIRRAG_MAX_FILE_MB raised past it)
    except (FairRAGError, MemoryError) as err:
        message = OUT_OF_MEMORY if isinstance(err, MemoryError) else str(err)
        print(f"error: {message}", file=sys.stderr)
        return _failed(message, type(err).__name__, 2, as_json, out)
    except Exception as err:  # a bug: keep the traceback for the report, and still answer in JSON when asked
        if not as_json:
            raise
        traceback.print_exc(file=sys.stderr)
        return _failed(f"internal error ({type(err).__name__}: {err}); please report it with the command line",
                       "internal", 1, as_json, out)
