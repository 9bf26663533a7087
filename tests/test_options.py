"""Options declared once (fairrag_core.options): the flag, the settings and the reproduce words all come from the
declaration on the settings field, so a settings object → its words → the command's parser → the same object."""

import argparse
import math
import shlex
import typing
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fairrag_core.audit.merit import grades_arg, threshold_arg
from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.audit.target_shares import target_shares_arg
from fairrag_core.audit.windows import WINDOWS, window_arg
from fairrag_core.cli import build_parser
from fairrag_core.cli import common as cli
from fairrag_core.cli.audit import CompareOptions, EvaluateOptions
from fairrag_core.data.store_window import when_arg
from fairrag_core.errors import InvalidParameterError
from fairrag_core.metrics.expeval import ExposureSettings
from fairrag_core.option_types import (
    alpha_arg,
    alphas_arg,
    candidates_arg,
    id_list_arg,
    level_arg,
    optional_float,
    positive_arg,
    seed_arg,
    unit_arg,
    whole_arg,
)
from fairrag_core.options import (
    Kind,
    Option,
    add_options,
    option,
    option_default,
    options_of,
    render,
    settings_argv,
)
from fairrag_core.rag.pipeline import RagConfig
from fairrag_core.rag.sweep import RagSweepConfig
from fairrag_core.ranking import RankingConfig, SweepConfig
from fairrag_core.settings import SamplingSettings

#: Every settings class a command reads, the command, and the words the command needs besides the settings.
COMMANDS = [
    ("rank", RankingConfig, ["--query", "best shoes"]),
    ("exposure-sweep", SweepConfig, []),
    ("rag", RagConfig, ["--query", "best shoes"]),
    ("sweep", RagSweepConfig, []),
    ("audit-log", LogAuditConfig, []),
    ("evaluate-run", ExposureSettings, ["qrels.txt", "run.txt"]),
    ("evaluate-run", EvaluateOptions, ["qrels.txt", "run.txt"]),
    ("compare-runs", CompareOptions, ["qrels.txt", "a.txt", "b.txt"]),
]


def _parser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


# -- golden values ------------------------------------------------------------------------------------------------
def test_values_are_written_as_the_command_line_reads_them():
    assert render((0.0, 1.0, 2.0, 4.0, math.inf)) == "0,1,2,4,inf"
    assert render(None) == "none" and render(0.7) == "0.7" and render(1.0) == "1" and render(2 / 3) == repr(2 / 3)
    assert render(("rs-q01", "rs-q02")) == "rs-q01,rs-q02" and render(1e-7) == "1e-07"
    assert render(RagSweepConfig().usefulness) == "utility"  # an Enum by its value


def test_a_redeclared_default_keeps_the_base_option_and_no_option_removes_one():
    assert options_of(RagConfig)["n_samples"] is options_of(SamplingSettings)["n_samples"]
    assert option_default(RagConfig, "n_samples") == 20 and option_default(SweepConfig, "n_samples") == 100
    assert "control_margin" in options_of(RagConfig) and "control_margin" not in options_of(LogAuditConfig)
    assert option_default(RagSweepConfig, "usefulness") is None  # the command line picks the labels that exist
    assert option_default(RankingConfig, "alpha") == 2.0  # the field has no default; the flag has


def test_help_names_each_commands_own_default():
    assert "sampled rankings N (default 100)" in _parser("exposure-sweep").format_help()
    assert "sampled rankings N (default 20)" in _parser("rag").format_help()  # it said 100 while the flag gave 20
    assert "(default 0.6)" in _parser("sweep").format_help()  # --min-support: the fitted rule (σ = 0.6)


def test_fields_without_an_option_are_the_known_ones():
    """A new settings field needs an option (or a reason here): a command cannot reproduce a value it cannot set."""
    def without(cls):
        return sorted(set(cls.__dataclass_fields__) - set(options_of(cls)))

    assert without(RagSweepConfig) == ["deterministic_baseline", "exclude_degenerate", "question_in_hypothesis"]
    assert without(RagConfig) == ["exclude_degenerate", "oracle_seed", "question_in_hypothesis"]
    assert without(LogAuditConfig) == ["control_margin"]
    for cls in (SweepConfig, RankingConfig, ExposureSettings, EvaluateOptions, CompareOptions):
        assert without(cls) == []


def test_a_value_no_option_sets_has_no_command():
    with pytest.raises(InvalidParameterError, match=r"RagSweepConfig.exclude_degenerate = True has no command-line "
                                                    r"option, so no command reproduces these settings"):
        settings_argv(RagSweepConfig(exclude_degenerate=True))
    assert "--seed" not in settings_argv(SamplingSettings())  # a fresh seed is no seed on the command line
    assert settings_argv(SamplingSettings(seed=3, candidates=50)) == ["--seed", "3", "--candidates", "50"]
    # K = 20 is the default everywhere (issue 28); every document is written 'none' and read back as None
    assert settings_argv(SamplingSettings(seed=3, candidates=20)) == ["--seed", "3"]
    assert settings_argv(SamplingSettings(seed=3, candidates=None)) == ["--seed", "3", "--candidates", "none"]


def test_every_parser_default_is_the_declared_one():
    """What a command omits from a reproduce command must be what its parser fills in."""
    for command, cls, extra in COMMANDS:
        args = _parser(command).parse_args(extra + (["log.jsonl"] if cls is LogAuditConfig else []))
        for name, opt in options_of(cls).items():
            if hasattr(args, name) and not opt.always and not opt.positional:
                parsed = getattr(args, name)
                if opt.kind is Kind.APPEND:  # argparse leaves a repeated option None; its field reads ()
                    parsed = tuple(parsed or ())
                assert parsed == option_default(cls, name), (command, name)


def test_toggles_switches_and_positionals():
    from dataclasses import dataclass

    @dataclass(frozen=True, kw_only=True)
    class Demo:
        path: str = option("path", default="", help="a file", path=True)
        fast: bool = option("--fast", kind=Kind.TOGGLE, default=True, help="go fast")
        strict: bool = option("-S", "--strict", kind=Kind.ON, default=False, help="strict")
        normal: bool = option("-U", "--unnormal", kind=Kind.OFF, default=True, help="raw")

    parser = argparse.ArgumentParser()
    add_options(parser, Demo)
    value = Demo(path="/data/x.txt", fast=False, strict=True, normal=False)
    words = settings_argv(value)
    assert words == ["/data/x.txt", "--no-fast", "-S", "-U"]
    assert cli.settings(Demo, parser.parse_args(words)) == value
    with pytest.raises(InvalidParameterError, match="positional option"):
        Option(("path", "--path"), "two names")


# -- property: settings → words → parser → the same settings ------------------------------------------------------
_TEXT = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,10}", fullmatch=True)
_ALPHA = st.one_of(st.floats(0, 64, allow_nan=False), st.just(math.inf))
_BY_PARSE = {
    positive_arg: st.integers(1, 500), candidates_arg: st.integers(1, 500), whole_arg: st.integers(-3, 5),
    seed_arg: st.integers(0, 2**63 - 1), window_arg: st.sampled_from(list(WINDOWS)),
    grades_arg: st.integers(2, 50), threshold_arg: st.floats(-5, 5, allow_nan=False),
    unit_arg: st.floats(0, 1), level_arg: st.floats(0.01, 0.99), optional_float: st.floats(-1, 1),
    alpha_arg: _ALPHA, alphas_arg: st.lists(_ALPHA, min_size=1, max_size=5, unique=True).map(tuple),
    when_arg: st.datetimes(datetime(2020, 1, 1), datetime(2030, 1, 1)).map(  # --since/--until: as when_arg writes
        lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")),
    id_list_arg: st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,6}", fullmatch=True), min_size=1, max_size=3,
                          unique=True).map(tuple),
}


def _values(cls, name: str, opt: Option):
    hint = typing.get_type_hints(cls)[name]
    members = [a for a in (typing.get_args(hint) or (hint,)) if isinstance(a, type) and hasattr(a, "__members__")]
    if members:
        return st.sampled_from(list(members[0]))
    if opt.kind is Kind.APPEND:  # --trace-map KEY=ATTRIBUTE, each key once
        from fairrag_core.data.traces import TRACE_FIELDS

        return st.lists(st.sampled_from(TRACE_FIELDS), max_size=3, unique=True).map(
            lambda keys: tuple(f"{key}=app.{key}" for key in keys))
    if opt.kind is not Kind.VALUE:
        return st.booleans()
    if opt.choices:
        return st.sampled_from(opt.choices)
    if opt.parse is target_shares_arg:  # read when parsed: a real file of shares, named absolutely
        return st.just(str(Path(__file__).resolve().parent / "data" / "target_shares.csv"))
    if opt.path:  # absolute, so the printed path is the value itself wherever the test runs
        return _TEXT.map(lambda t: f"/srv/logs/{t}.jsonl")
    base = _BY_PARSE.get(opt.parse, _TEXT)
    return st.one_of(st.none(), base) if type(None) in typing.get_args(hint) else base


@st.composite
def _settings(draw, command: str, cls):
    offered = {a.dest for a in _parser(command)._actions}
    values = {}
    for name, opt in options_of(cls).items():
        if name in offered and draw(st.booleans()):  # about half the fields away from their default
            values[name] = draw(_values(cls, name, opt))
    if cls is LogAuditConfig:
        values.setdefault("log", "/srv/logs/served.jsonl")  # the log is the command's required argument
    if "alpha" in options_of(cls):
        values.setdefault("alpha", draw(_ALPHA))  # a required field
    try:
        return cls(**values)
    except InvalidParameterError:
        assume(False)


@pytest.mark.parametrize(("command", "cls", "extra"), COMMANDS, ids=[f"{c}:{k.__name__}" for c, k, _ in COMMANDS])
def test_settings_survive_their_own_command_line(command, cls, extra):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
    @given(_settings(command, cls))
    def round_trip(value):
        words = settings_argv(value)
        args = _parser(command).parse_args(extra + words)
        assert cli.settings(cls, args) == value, shlex.join(words)

    round_trip()


def test_a_positional_that_takes_several_values():
    """``compare-runs A B C``: a positional APPEND is one or more values, printed in order, read back as a tuple."""
    from dataclasses import dataclass

    @dataclass(frozen=True, kw_only=True)
    class Demo:
        inputs: tuple[str, ...] = option("inputs", kind=Kind.APPEND, default=(), path=True, metavar="INPUT",
                                         help="files")
        k: int = option("-k", default=5, parse=int, help="k")

    parser = argparse.ArgumentParser()
    add_options(parser, Demo)
    value = Demo(inputs=("/data/a.jsonl", "run:abc123", "/data/b.txt"), k=3)
    words = settings_argv(value)
    assert words == ["/data/a.jsonl", "run:abc123", "/data/b.txt", "-k", "3"]
    assert cli.settings(Demo, parser.parse_args(words)) == value
    with pytest.raises(SystemExit):  # one value at least
        parser.parse_args(["-k", "3"])
