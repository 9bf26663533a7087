"""``runs compare``: sweeps per α, log audits over their queries, and a mix refused with the command that fits."""

import io
import json

import pytest

from fairrag_core.audit.store import RunStore
from fairrag_core.cli import main
from fairrag_core.ranking.sweep import SweepConfig, exposure_sweep


def run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def _audit(log_path, store, *extra):
    code, text = run(["audit-log", str(log_path), "--collection", "running-shoes", "--seed", "4", "--boot", "50",
                      "--store", str(store), "--json", *extra])
    assert code == 0
    payload = json.loads(text)
    return payload["run_id"], {r["metric"]: r["estimate"] for r in payload["summary"]}


def test_compare_puts_two_log_audits_side_by_side_with_their_headline_means(log_path, tmp_path):
    store = tmp_path / "runs.duckdb"
    first, first_headline = _audit(log_path, store)
    second, second_headline = _audit(log_path, store, "--k", "3")
    code, text = run(["runs", "compare", first, second, "--store", str(store), "--json"])
    assert code == 0  # it raised KeyError: 'alpha' (a log audit's table has no α column)
    table = json.loads(text)
    assert table["index"] == ["mean over queries"]
    columns = [tuple(c) for c in table["columns"]]
    assert columns == [(run_id, metric) for run_id in (first, second)
                       for metric in ("ee_d", "ee_r", "ear_cited", "eae_d_cited", "eae_d_per_cited_cited")]
    means = dict(zip(columns, table["data"][0], strict=True))
    for run_id, headline in ((first, first_headline), (second, second_headline)):
        assert means[run_id, "ee_d"] == pytest.approx(headline["ee_d"])  # the audit's own headline
        assert means[run_id, "ee_r"] == pytest.approx(headline["ee_r"])
    assert means[first, "ear_cited"] == pytest.approx(0.15)  # (0.1 + 0.2) / 2: 1 of 5 shown cited, then 1 of 10
    code, text = run(["runs", "compare", first, second, "--store", str(store)])
    assert code == 0 and text.splitlines()[-1].startswith("mean over queries")


def test_compare_refuses_a_log_audit_beside_a_sweep_naming_compare_runs(log_path, tmp_path, capsys, shoes,
                                                                         shoes_bm25):
    store = tmp_path / "runs.duckdb"
    audit, _ = _audit(log_path, store)
    swept = exposure_sweep(shoes, shoes_bm25, SweepConfig(alphas=(0.0, 2.0), n_samples=4, k=3, seed=1,
                                                          query_ids=("rs-q01",)))
    with RunStore(store) as runs:
        sweep = runs.save(swept)
    code, text = run(["runs", "compare", sweep, sweep, "--store", str(store)])
    lines = text.splitlines()
    assert code == 0 and lines[1].split() == ["ee_d", "ee_r"] and lines[2].split() == ["alpha"]  # per α, as before
    assert [line.split()[0] for line in lines[3:]] == ["0.0", "2.0"]
    code, _ = run(["runs", "compare", sweep, audit, "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2 and "compare-runs run:ID run:ID --collection NAME" in err and len(err.strip().splitlines()) == 1


def _sweep(store, *extra) -> dict:
    code, text = run(["exposure-sweep", "--collection", "running-shoes", "--samples", "10", "--seed", "6",
                      "--queries", "rs-q01,rs-q02,rs-q03", "--store", str(store), "--json", *extra])
    assert code == 0
    return json.loads(text)


def test_compare_of_two_sweeps_adds_their_difference_per_alpha(tmp_path):
    """Issue 30: ``runs compare A B`` of two stored sweeps prints B − A per α (on the α both ran)."""
    store = tmp_path / "runs.duckdb"
    first = _sweep(store, "--alphas", "0,2")
    second = _sweep(store, "--alphas", "2,8", "-k", "3")
    a, b = first["run_id"], second["run_id"]
    code, text = run(["runs", "compare", a, b, "--store", str(store), "--json"])
    assert code == 0
    table = json.loads(text)
    assert table["index"] == [0.0, 2.0, 8.0]
    cells = {(tuple(column), alpha): value for row, alpha in zip(table["data"], table["index"], strict=True)
             for column, value in zip(table["columns"], row, strict=True)}
    means = {payload["run_id"]: {r["alpha"]: r for r in payload["summary"]} for payload in (first, second)}
    difference = f"{b} − {a}"
    assert cells[(difference, "ee_d"), 2.0] == pytest.approx(means[b][2.0]["ee_d"] - means[a][2.0]["ee_d"])
    assert cells[(a, "ee_d"), 2.0] == pytest.approx(means[a][2.0]["ee_d"])
    assert cells[(difference, "ee_d"), 0.0] is None and cells[(difference, "ee_d"), 8.0] is None  # one side only
    code, text = run(["runs", "compare", a, b, "--store", str(store)])
    assert code == 0 and difference in text.splitlines()[0]


def test_export_writes_the_stored_table_with_its_header(tmp_path):
    """``runs export ID --output`` writes what the sweep's own --output and --json wrote: the table, and the same
    header (read back with pandas' comment='#', and from JSON under 'fairrag')."""
    import pandas as pd

    from fairrag_core.data.export import read_header

    store = tmp_path / "runs.duckdb"
    swept = _sweep(store, "--alphas", "0,2", "--output", str(tmp_path / "own.csv"))
    csv_path, json_path = tmp_path / "exported.csv", tmp_path / "exported.json"
    for path in (csv_path, json_path):
        code, text = run(["runs", "export", swept["run_id"], "--store", str(store), "--output", str(path)])
        assert code == 0 and text.startswith(f"wrote {path} (6 rows of run {swept['run_id']}, exposure-sweep)")
    exported = pd.read_csv(csv_path, comment="#")
    assert exported["ee_d"].tolist() == pytest.approx([r["ee_d"] for r in swept["rows"]])
    assert exported.equals(pd.read_csv(tmp_path / "own.csv", comment="#"))
    assert read_header(csv_path) == read_header(tmp_path / "own.csv") == swept["fairrag"]
    written = json.loads(json_path.read_text(encoding="utf-8"))
    assert written["fairrag"] == swept["fairrag"] and written["rows"] == swept["rows"]


def test_export_without_a_file_names_the_option(tmp_path, capsys):
    store = tmp_path / "runs.duckdb"
    swept = _sweep(store, "--alphas", "0")
    code, _ = run(["runs", "export", swept["run_id"], "--store", str(store)])
    assert code == 2 and "runs export ID --output FILE" in capsys.readouterr().err
