import io
import json
import shlex

import pytest

from fairrag_core.cli import main

MARATHON = ["--collection", "running-shoes", "--query", "best shoes for a first marathon"]


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def test_rank_readable(capsys):
    code, text = run(["rank", *MARATHON, "--alpha", "2", "--samples", "100", "-k", "5", "--seed", "1"])
    assert code == 0
    for part in ("Deterministic top-5", "Sampled rankings", "Exposure by provider", "EE-D", "EE-R", "--seed 1"):
        assert part in text


def test_rank_json_and_exposure_spreads_as_alpha_falls():
    reached = {}
    for alpha in ("8", "2", "0.5"):
        code, text = run(["rank", *MARATHON, "--alpha", alpha, "--samples", "100", "-k", "5", "--seed", "3", "--json",
                          "--candidates", "all"])
        assert code == 0
        payload = json.loads(text)
        assert len(payload["rankings"]) == 100 and len(payload["deterministic_ranking"]) == 5
        assert sum(p["exposure"] for p in payload["providers"]) == pytest.approx(5)
        reached[alpha] = payload["providers_reached"]
        assert payload["ee_d"]["low"] <= payload["ee_d"]["high"]
    assert reached["8"] < reached["2"] <= reached["0.5"] == 14


def test_exposure_sweep_json_and_csv(tmp_path):
    """The CSV and the JSON carry the same header (issue 30): the run's settings, inputs with sha256, version and
    commit; pandas reads the CSV's table with comment='#', read_header its header."""
    import pandas as pd

    from fairrag_core.data.demo import demo_folder
    from fairrag_core.data.export import read_header
    from fairrag_core.data.identity import collection_sha256
    from fairrag_core.record import software

    out_csv = tmp_path / "sweep.csv"
    code, text = run(["exposure-sweep", "--collection", "people", "--alphas", "0,4", "--samples", "20",
                      "--seed", "2", "--json", "--output", str(out_csv), "--store", str(tmp_path / "runs.duckdb")])
    assert code == 0
    payload = json.loads(text)
    assert payload["config"]["config"]["alphas"] == [0.0, 4.0]
    assert len(payload["rows"]) == 2 * 22
    table = pd.read_csv(out_csv, comment="#")
    assert list(table.columns[:3]) == ["query_id", "system", "alpha"] and len(table) == 2 * 22
    assert table["ee_d"].tolist() == pytest.approx([row["ee_d"] for row in payload["rows"]])
    header = read_header(out_csv)
    assert header == payload["fairrag"]
    assert header["version"] == software()["version"] and header["commit"] == software()["commit"]
    assert header["seed"] == 2 and header["settings"]["n_samples"] == 20 and header["settings"]["candidates"] == 20
    assert header["settings"]["k"] == 5 and header["command"] == payload["command"]
    assert header["candidates_used"] == 20 and header["queries"] == 22  # K as run, and every query swept
    inputs = {item["role"]: item for item in header["inputs"]}
    assert inputs["collection"]["sha256"] == collection_sha256(demo_folder("people"))
    assert set(inputs) == {"collection", "queries", "qrels"} and len(inputs["qrels"]["sha256"]) == 64
    assert payload["stored"] and payload["run_id"]


def test_exposure_sweep_table(tmp_path):
    code, text = run(["exposure-sweep", "--collection", "running-shoes", "--alphas", "0,8", "--samples", "20",
                      "--seed", "2", "--no-store"])
    assert code == 0 and "EE-D α=0" in text and "Swept 18 queries: EE-D and providers reached on all 18" in text
    assert "Saved as run" not in text and "Made by fairrag-core" in text


def test_rank_is_stored_only_when_asked(tmp_path):
    """``rank --store PATH`` keeps the ranking as a record whose reproduce command is the one rank printed; without
    --store nothing is saved."""
    from fairrag_core.audit.store import RunStore

    path = tmp_path / "runs.duckdb"
    code, text = run(["rank", *MARATHON, "--alpha", "2", "--samples", "30", "--seed", "4", "--json"])
    assert code == 0 and "run_id" not in json.loads(text) and not path.exists()
    code, text = run(["rank", *MARATHON, "--alpha", "2", "--samples", "30", "--seed", "4", "--json",
                      "--store", str(path)])
    payload = json.loads(text)
    assert code == 0 and payload["stored"]
    stored = RunStore(path).load(payload["run_id"])
    assert stored.record.command() == payload["command"] == payload["fairrag"]["command"]
    sampled, deterministic = stored.table.to_dict(orient="records")
    assert sampled["alpha"] == 2.0 and deterministic["system"] == "deterministic"
    assert sampled["ee_d"] == pytest.approx(payload["ee_d"]["estimate"])
    assert sampled["ee_d_plug_in"] == pytest.approx(payload["ee_d_plug_in"])
    assert deterministic["ee_d"] == pytest.approx(payload["deterministic_ee_d"])
    assert sampled["providers_reached"] == payload["providers_reached"]
    code, text = run([*shlex.split(stored.record.command())[3:], "--json"])  # the stored command reproduces it
    again = json.loads(text)
    assert code == 0 and again["ee_d"] == payload["ee_d"] and again["rankings"] == payload["rankings"]


def test_collections_command():
    code, text = run(["collections", "--json"])
    assert code == 0 and {row["collection"] for row in json.loads(text)} >= {"running-shoes", "people"}


def test_domain_errors_exit_2_with_a_message(capsys):
    code, _ = run(["rank", *MARATHON, "-k", "500"])
    assert code == 2 and "k=500 is larger than the 20 candidate(s)" in capsys.readouterr().err
    code, _ = run(["rank", *MARATHON, "-k", "500", "--candidates", "all"])
    assert code == 2 and "k=500 is larger than the 92 candidate(s)" in capsys.readouterr().err
    code, _ = run(["rank", *MARATHON, "--candidates", "many"])
    assert code == 2 and "expected a positive whole number or 'all', got 'many'" in capsys.readouterr().err
    code, _ = run(["rank", "--collection", "nowhere", "--query", "x"])
    assert code == 2 and "no collection 'nowhere'" in capsys.readouterr().err
    code, _ = run(["rank", *MARATHON[:2], "--query", "   "])
    assert code == 2 and "query is empty" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [["--alpha", "-1"], ["--alpha", "nan"], ["--samples", "0"], ["-k", "x"]])
def test_argument_errors(bad, capsys):
    assert main(["rank", *MARATHON, *bad]) == 2
    assert "error" in capsys.readouterr().err


def test_help_teaches(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "α = 0 is uniform" in capsys.readouterr().out
