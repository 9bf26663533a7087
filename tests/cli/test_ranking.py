import io
import json

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
    out_csv = tmp_path / "sweep.csv"
    code, text = run(["exposure-sweep", "--collection", "people", "--alphas", "0,4", "--samples", "20",
                      "--seed", "2", "--json", "--output", str(out_csv)])
    assert code == 0
    payload = json.loads(text)
    assert payload["config"]["config"]["alphas"] == [0.0, 4.0]
    assert len(payload["rows"]) == 2 * 22 and out_csv.read_text().startswith("query_id,system,alpha")


def test_exposure_sweep_table():
    code, text = run(["exposure-sweep", "--collection", "running-shoes", "--alphas", "0,8", "--samples", "20",
                      "--seed", "2"])
    assert code == 0 and "EE-D α=0" in text and "Mean over queries" in text


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
