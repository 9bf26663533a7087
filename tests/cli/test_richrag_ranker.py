"""``train-ranker`` and ``rich-eval``: flags, errors, and the held-out table of the shipped ranker."""

import io
import json

import pytest

from fairrag_core.cli import main
from fairrag_core.richrag.ranker import WEIGHTS_FILE, shipped_ranker_dir


def test_help_names_the_commands(capsys):
    for command in ("train-ranker", "rich-eval"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "ranker" in capsys.readouterr().out


def test_one_fold_is_refused(capsys):
    assert main(["rich-eval", "--folds", "1"], out=io.StringIO()) == 2
    assert "--folds must be 0 (fixed split) or at least 2" in capsys.readouterr().err


def test_a_missing_ranker_folder_names_the_fix(tmp_path, capsys):
    assert main(["rich-eval", "--ranker-dir", str(tmp_path)], out=io.StringIO()) == 2
    assert "train-ranker" in capsys.readouterr().err


@pytest.mark.skipif(not (shipped_ranker_dir() / WEIGHTS_FILE).is_file(), reason="no shipped ranker yet")
@pytest.mark.model
@pytest.mark.slow
def test_rich_eval_prints_the_held_out_table():
    out = io.StringIO()
    assert main(["rich-eval", "--json", "--fairness", "--alphas", "0,4"], out=out) == 0
    payload = json.loads(out.getvalue())
    manifest = json.loads((shipped_ranker_dir() / "ranker.json").read_text())
    assert payload["query_ids"] == manifest["test_queries"]
    systems = {row["system"] for row in payload["ncom"]}
    assert systems == {"relevance", "mmr", "round-robin", "ranker-sft", "ranker-dpo", "cosine-greedy", "oracle"}
    for row in payload["ncom"]:
        assert row["low"] <= row["ncom"] <= row["high"]
    assert {row["system"] for row in payload["providers"]} == systems - {"ranker-sft"}
    assert {row["policy"] for row in payload["fairness_curve"]} == {"plackett-luce", "greedy"}
