"""``audit-log`` and ``compare-runs`` carry the run's header (issue 30, :meth:`fairrag_core.record.RunRecord.header`)
as ``rank`` and the sweeps do: under ``fairrag`` in ``--json``, as ``# key: value`` lines in an ``--output`` CSV and
in a Parquet file's ``attrs``; the same header in each, and the table read back unchanged."""

import hashlib
import io
import json

import pandas as pd
import pytest

from fairrag_core.cli import main
from fairrag_core.data.export import read_header
from fairrag_core.record import software


def run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


@pytest.fixture()
def walk_in_query():
    """A '#' in a query: quoted data in the ``--output`` CSV, not a header comment (tests/cli/conftest.py's log)."""
    return "shoes # for walking"


def test_audit_log_json_csv_and_parquet_carry_the_same_header(log_path, tmp_path):
    csv_path, parquet_path = tmp_path / "queries.csv", tmp_path / "queries.parquet"
    argv = ["audit-log", str(log_path), "--collection", "running-shoes", "--seed", "5", "--boot", "100", "--no-store",
            "--json"]
    code, text = run([*argv, "--output", str(csv_path)])
    assert code == 0
    payload = json.loads(text)
    header = payload["fairrag"]
    assert header["kind"] == "audit-log" and header["seed"] == 5 and header["settings"]["n_boot"] == 100
    assert header["command"] == payload["command"] and header["queries"] == 2
    assert header["version"] == software()["version"] and header["commit"] == software()["commit"]
    log_input = next(item for item in header["inputs"] if item["role"] == "log")
    assert log_input == {"role": "log", "name": "log.jsonl",
                         "sha256": hashlib.sha256(log_path.read_bytes()).hexdigest()}
    assert csv_path.read_text(encoding="utf-8").startswith("# package: fairrag-core\n")
    assert read_header(csv_path) == header
    table = pd.read_csv(csv_path, comment="#")  # the '#' in a query is quoted data, not a comment
    assert table["query_id"].tolist() == [q["query_id"] for q in payload["queries"]] == ["rs-q01", "walk-in"]
    assert table["query"].tolist()[1] == "shoes # for walking"
    assert table["ee_d"].tolist() == pytest.approx([q["ee_d"] for q in payload["queries"]])

    code, text = run([*argv, "--output", str(parquet_path)])
    assert code == 0
    stored = pd.read_parquet(parquet_path)
    assert stored.attrs["fairrag"] == json.loads(text)["fairrag"] == header
    assert stored["ee_d"].tolist() == pytest.approx(table["ee_d"].tolist())


def test_compare_runs_json_carries_the_comparisons_header(log_path, tmp_path, shoes):
    ids = shoes.doc_ids
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(json.dumps({"query_id": q, "ranking": ids[20:25], "citations": []})
                               for q in ("rs-q01", "walk-in")) + "\n", encoding="utf-8")
    code, text = run(["compare-runs", str(log_path), str(other), "--collection", "running-shoes", "--seed", "3",
                      "--n-boot", "100", "--no-store", "--json"])
    assert code == 0
    payload = json.loads(text)
    header = payload["fairrag"]
    assert header["command"] == payload["command"] and header["seed"] == 3
    assert header["version"] == software()["version"] and header["commit"] == software()["commit"]
    assert header["settings"] == payload["config"]["config"]
    shas = {item["name"]: item["sha256"] for item in header["inputs"] if item.get("sha256")}
    assert shas["log.jsonl"] == hashlib.sha256(log_path.read_bytes()).hexdigest()
    assert shas["other.jsonl"] == hashlib.sha256(other.read_bytes()).hexdigest()
