"""Bad values on the command line end in one line that names the fix and exit code 2 — and, under ``--json``, in
one JSON object a script can parse (issue 19, items 3–5)."""

import argparse
import io
import json

import pytest

from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.cli import build_parser, main
from fairrag_core.errors import InvalidParameterError
from fairrag_core.seeds import MAX_SEED, as_generator, check_seed, derive_seed
from fairrag_core.settings import SamplingSettings

MARATHON = ["--collection", "running-shoes", "--query", "best shoes for a first marathon"]


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def _commands_with(option: str) -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(name for name, parser in sub.choices.items()
                  if any(option in action.option_strings for action in parser._actions))


def test_the_seed_range_is_checked_in_one_place():
    assert check_seed(0) == 0 and check_seed(MAX_SEED) == 2**63 - 1
    for bad, words in ((-1, "is negative"), (2**63, "larger than"), (1.5, "whole number"), (True, "whole number")):
        with pytest.raises(InvalidParameterError, match=words):
            check_seed(bad)
    with pytest.raises(InvalidParameterError, match="is negative"):
        as_generator(-1)  # numpy's own ValueError before
    with pytest.raises(InvalidParameterError, match="is negative"):
        derive_seed(-5, 1)
    with pytest.raises(InvalidParameterError, match="is negative"):
        SamplingSettings(seed=-1)
    with pytest.raises(InvalidParameterError, match="is negative"):
        LogAuditConfig(seed=-1)


def test_every_command_that_takes_a_seed_refuses_a_negative_one(capsys):
    commands = _commands_with("--seed")
    assert {"rank", "exposure-sweep", "sweep", "audit-log", "evaluate-run", "compare-runs"} <= set(commands)
    for command in commands:
        for bad in ("-1", "1_0", "٣", str(2**63), "x"):
            code, text = run([command, "--seed", bad])
            err = capsys.readouterr().err
            assert code == 2 and text == "", (command, bad)
            assert "argument --seed:" in err and "Traceback" not in err, (command, bad, err)
            assert "0 to 9223372036854775807" in err or "larger than" in err, (command, bad, err)


def test_whole_numbers_are_ascii_digits_only(capsys):
    for bad in ("1_0", "٣", "0x10", "1e3", ""):
        code, _ = run(["rank", *MARATHON, "-k", bad])
        assert code == 2 and "expected a positive whole number" in capsys.readouterr().err
        code, _ = run(["rank", *MARATHON, "--min-rel", bad])
        assert code == 2 and "expected a whole number" in capsys.readouterr().err
    code, text = run(["rank", *MARATHON, "--seed", "+7", "--samples", "5", "--json"])
    assert code == 0 and json.loads(text)["seed"] == 7


def test_argument_errors_under_json_are_one_json_object(capsys):
    for argv, words in ((["rank", "--query", "x", "--samples", "abc", "--json"], "expected a positive whole number"),
                        (["rank", "--json"], "the following arguments are required: --query"),
                        (["audit-log", "--json", "--seed", "-1", "log.jsonl"], "seed=-1 is negative"),
                        (["evaluate-run", "q.txt", "r.txt", "--json", "--bogus"], "unrecognized arguments: --bogus")):
        code, text = run(argv)
        payload = json.loads(text)
        assert code == 2 and payload["exit_code"] == 2 and payload["error_type"] == "usage"
        assert words in payload["error"], payload
        assert words in capsys.readouterr().err  # the person at the terminal still reads it
    code, text = run(["rank", *MARATHON, "-k", "500", "--json"])  # a domain error after parsing
    payload = json.loads(text)
    assert code == 2 and payload["error_type"] == "InvalidParameterError" and "k=500" in payload["error"]
    code, text = run(["rank", *MARATHON, "-k", "500"])  # without --json, nothing on stdout
    assert code == 2 and text == ""
