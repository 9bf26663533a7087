"""The command line imports only what the command it runs needs (issue 22: start-up ≤ 0.5 s for commands that need
no model, pandas or scipy). Checked by what is imported, not by a timed assertion; the figures are printed by
``benchmarks/bench_scale.py`` and in the README."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fairrag_core.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
EXPEVAL = ROOT / "tests" / "data" / "expeval"

_PROBE = """
import json, sys
from fairrag_core.cli import main
out = open("/dev/null", "w")
try:
    code = main(sys.argv[1:], out=out)
except SystemExit as done:  # --help
    code = done.code
heavy = ["pandas", "scipy.stats", "scipy.sparse", "torch", "transformers", "duckdb", "streamlit"]
print(json.dumps({"code": code, "imported": [m for m in heavy if m in sys.modules]}))
"""


def _imported(*argv: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_command_table_lists_every_registered_command():
    parser = build_parser()
    registered = next(a for a in parser._actions if a.dest == "command").choices
    assert list(registered) == list(COMMANDS)


@pytest.mark.parametrize("argv, allowed", [
    (("evaluate-run", "--help"), set()),
    (("runs", "--help"), {"pandas"}),  # the run store's tables
])
def test_help_of_a_command_imports_no_heavy_library(argv, allowed):
    found = _imported(*argv)
    assert found["code"] == 0 and set(found["imported"]) <= allowed, found


def test_evaluate_run_in_expevals_format_needs_neither_pandas_nor_scipy():
    """The path a 10⁷-line run takes: the block reader, numpy, the per-query values, plain printing."""
    found = _imported("evaluate-run", "-u", "gerr", "--trec-eval", str(EXPEVAL / "qrels_graded.txt"),
                      str(EXPEVAL / "run_a.txt"))
    assert found == {"code": 0, "imported": []}


def test_an_input_too_large_for_memory_gets_a_message_that_names_the_fix(monkeypatch, capsys):
    """Past the machine's memory (FAIRRAG_MAX_FILE_MB raised beyond it) a command ends with a worded error, exit 2,
    and a JSON object under --json, not a traceback."""
    import io

    from fairrag_core.cli import audit as audit_cli
    from fairrag_core.cli import main

    def no_room(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(audit_cli, "as_run", no_room)
    out = io.StringIO()
    argv = ["evaluate-run", str(EXPEVAL / "qrels_graded.txt"), str(EXPEVAL / "run_a.txt")]
    assert main(argv, out=out) == 2
    assert "more memory than this machine has left" in capsys.readouterr().err
    assert main([*argv, "--json"], out=out) == 2
    assert json.loads(out.getvalue())["error_type"] == "MemoryError"
