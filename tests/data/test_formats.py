"""The one table of served formats (issue 28, "Served formats"): every suffix names its kind, each format is
recognised by its first line and read by its own reader as load_served (the CLI's audit-log) reads it, in every
suffix, and a name with none of the suffixes is refused in one line that lists them."""

from __future__ import annotations

from pathlib import Path

import pytest
from served_samples import samples, write

from fairrag_core import DataFormatError
from fairrag_core.audit.log_shards import log_shards
from fairrag_core.data import RagLog, load_served
from fairrag_core.data.formats import (
    SERVED_FORMATS,
    format_of,
    is_log,
    kind_of,
    log_suffixes,
    run_suffixes,
    served_suffixes,
    shard_suffixes,
    upload_types,
)
from fairrag_core.data.otlp_proto import is_protobuf
from fairrag_core.data.served import RunFormat

EXPEVAL = Path(__file__).parent / "expeval"
ACCEPTED = (".jsonl, .ndjson, .json, .jsonl.gz, .ndjson.gz, .json.gz, .pb, .pb.gz, .txt, .run, .tsv, .trec, .txt.gz, "
            ".run.gz, .tsv.gz, .trec.gz")
SAMPLES = samples()


def test_the_table_names_each_format_as_its_loader_records_it():
    assert [f.name for f in SERVED_FORMATS] == ["jsonl", "otlp", "trec", "trec-fair-2022"]
    assert [f.kind for f in SERVED_FORMATS] == ["log", "log", "run", "run"]
    assert {f.name for f in SERVED_FORMATS if f.kind == "run"} == {m.value for m in RunFormat} - {"auto", "lists"}
    assert set(SAMPLES) == {f.name for f in SERVED_FORMATS}  # every format has a sample below


def test_the_suffix_lists_are_derived_from_the_table():
    assert log_suffixes() == (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz", ".pb", ".pb.gz")
    assert run_suffixes() == (".txt", ".run", ".tsv", ".trec", ".txt.gz", ".run.gz", ".tsv.gz", ".trec.gz")
    assert served_suffixes() == log_suffixes() + run_suffixes() and ", ".join(served_suffixes()) == ACCEPTED
    assert shard_suffixes() == (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")  # a .json may be one whole document
    assert upload_types() == ["jsonl", "ndjson", "json", "gz", "pb", "txt", "run", "tsv", "trec"]


@pytest.mark.parametrize("suffix", served_suffixes())
def test_format_of_each_suffix_by_name(suffix):
    kind = "log" if suffix in log_suffixes() else "run"
    for name in (f"served{suffix}", f"SERVED{suffix.upper()}", f"/srv/week.1/served{suffix}", Path(f"x{suffix}")):
        assert kind_of(name) == kind and is_log(name) is (kind == "log")
        # a name alone: the first format with its suffix, whose reader also tells the others with it apart
        assert format_of(name).name == ("otlp" if ".pb" in suffix else "jsonl" if kind == "log" else "trec")


@pytest.mark.parametrize("name", ["notes.md", "run.gz", "log.jsonl.zip", "README", "served.jsonl.bz2", ".tsvx"])
def test_an_unknown_suffix_is_refused_naming_the_accepted_ones(name):
    for ask in (kind_of, format_of):
        with pytest.raises(DataFormatError) as err:
            ask(name)
        assert str(err.value) == f"{name!r} is not a log or run file (the suffix must be one of {ACCEPTED}); rename it"
    assert not is_log(name)


@pytest.mark.parametrize(("fmt", "suffix"), [(f, s) for f in SERVED_FORMATS for s in f.suffixes],
                         ids=lambda v: getattr(v, "name", v))
def test_every_format_in_every_suffix_is_recognised_and_read_as_the_cli_reads_it(tmp_path, fmt, suffix):
    for i, data in enumerate(SAMPLES[fmt.name]):
        if fmt.name == "otlp" and is_protobuf(suffix) is data.lstrip().startswith(b"{"):
            continue  # OTLP JSON is .json(l), OTLP protobuf .pb
        path = write(tmp_path / f"served{i}{suffix}", data)
        assert format_of(path) is fmt
        served = load_served(path)  # what audit-log reads
        assert (served.kind, served.format) == (fmt.kind, fmt.name)
        direct = fmt.load(path)
        direct = RagLog.from_served(direct) if fmt.kind == "run" else direct
        assert (direct.format, direct.sha256, len(direct)) == (served.format, served.sha256, len(served)) == \
            (fmt.name, served.sha256, 200)
        assert [e.ranking for e in direct.entries] == [e.ranking for e in served.entries]


@pytest.mark.parametrize("fixture", sorted(EXPEVAL.glob("run_*.txt")), ids=lambda p: p.name)
def test_the_expeval_fixture_runs_are_recognised(fixture):
    assert format_of(fixture).name == "trec" and load_served(fixture).format == "trec"


def test_demo_logs_are_recognised_by_their_first_line():
    from served_samples import LOGS

    assert format_of(LOGS / "running-shoes.jsonl").name == "jsonl"
    assert format_of(LOGS / "running-shoes.otlp.jsonl").name == "otlp"


def test_a_shard_folder_holds_the_table_shard_suffixes_only(tmp_path):
    for suffix in served_suffixes():
        write(tmp_path / f"part{suffix}", SAMPLES["jsonl"][0])
    assert [p.name for p in log_shards(tmp_path)] == sorted(f"part{s}" for s in shard_suffixes())
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataFormatError, match=r"the folder holds no log shards \(\.jsonl, \.ndjson, \.jsonl\.gz, "
                                              r"\.ndjson\.gz\); put the parts"):
        log_shards(empty)
