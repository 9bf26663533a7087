"""What made a record and what it read (issue 30): the package version and git commit (record.software), the inputs'
sha256, and the header every output carries (CSV comment lines read back by pandas, Parquet attrs)."""

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from fairrag_core import record as record_module
from fairrag_core.data.export import read_header, write_table
from fairrag_core.data.identity import file_sha256
from fairrag_core.record import RunKind, RunRecord, collection_inputs, software
from fairrag_core.settings import SamplingSettings

ROOT = Path(__file__).resolve().parents[1]


def test_software_names_the_version_and_the_checked_out_commit():
    made = software()
    assert made["package"] == "fairrag-core" and made["version"] == "0.1.0"  # pyproject.toml's
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        assert made["commit"].removesuffix("-dirty") == head.stdout.strip()


def test_outside_a_checkout_the_commit_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(record_module, "_ROOT", str(tmp_path))
    assert record_module._commit() == "unknown" and record_module._version() in ("unknown", "0.1.0")


def test_collection_inputs_name_each_file_with_its_sha256():
    inputs = {item["role"]: item for item in collection_inputs("running-shoes")}
    folder = ROOT / "assets" / "collections" / "running-shoes"
    assert inputs["queries"]["sha256"] == file_sha256(folder / "queries.jsonl")
    assert inputs["qrels"]["sha256"] == file_sha256(folder / "qrels.txt")
    assert inputs["collection"]["name"] == "running-shoes" and len(inputs["collection"]["sha256"]) == 64


def test_a_record_from_before_versions_were_recorded_says_so():
    made = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection="running-shoes", retriever="bm25",
                     config=SamplingSettings(seed=3), seed=3)
    data = made.to_dict()
    assert RunRecord.from_dict(data) == made
    data.pop("software")
    header = RunRecord.from_dict(data).header()
    assert header["version"] == header["commit"] == "not recorded" and header["seed"] == 3
    flat = RunRecord.from_dict({"collection": "running-shoes", "alphas": [0.0], "seed": 4})  # the oldest records
    assert flat.software == {} and flat.header()["version"] == "not recorded"


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_table_written_with_a_header_reads_back_whole(tmp_path, suffix):
    """A '#' inside a cell (a query text) stays data: text cells are quoted when one holds '#'."""
    table = pd.DataFrame({"query": ["what is #1?", "=cmd", "plain"], "alpha": [0.0, float("inf"), 2.0],
                          "fairness_question": [True, False, True]})
    header = {"version": "0.1.0", "seed": 7, "settings": {"k": 5, "alphas": [0.0, "inf"]}, "commit": "unknown",
              "command": "python -m fairrag_core exposure-sweep --seed 7"}
    path = write_table(table, tmp_path / f"t{suffix}", header=header)
    assert read_header(path) == header
    back = pd.read_csv(path, comment="#") if suffix == ".csv" else pd.read_parquet(path)
    expected = ["what is #1?", "'=cmd", "plain"] if suffix == ".csv" else ["what is #1?", "=cmd", "plain"]
    assert back["query"].tolist() == expected and back["alpha"].tolist() == [0.0, float("inf"), 2.0]
    assert back["fairness_question"].tolist() == [True, False, True]
