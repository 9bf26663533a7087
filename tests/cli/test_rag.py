"""CLI plumbing of rag / label-utility / sweep / runs with stand-in models (the real ones are in tests/models)."""

import io
import json

import pytest
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core.cli import main
from fairrag_core.models import catalog
from fairrag_core.rag import attribution


@pytest.fixture()
def fake_models(monkeypatch, tmp_path):
    model = FirstDocumentModel("fake-gen")
    monkeypatch.setattr(catalog, "load_language_model", lambda name, device=None: model)
    monkeypatch.setattr(attribution, "load_attributor", lambda name=None, device=None: SubstringAttributor())
    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    return model


def run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_rag_json_has_all_six_metrics_and_citations(fake_models):
    code, text = run(["rag", "--collection", "running-shoes", "--query", "best shoes for a first marathon",
                      "--alpha", "2", "--samples", "20", "-k", "5", "--seed", "3", "--json"])
    assert code == 0
    payload = json.loads(text)
    assert set(payload["metrics"]) == {"ee_d", "ee_d_plug_in", "ee_r", "eu", "eu_normalised", "ear", "eae_d",
                                       "eae_d_per_cited", "degenerate_share"}
    assert all(v is not None for v in payload["metrics"].values())
    # the stand-in answers with document [1]'s title (up to a colon); a question, or a whole title given back, is a
    # prompt echo (degenerate) and scores 0 by definition
    from fairrag_core import load_collection
    from fairrag_core.rag.degenerate import repeats_title

    titles = {d.doc_id: d.title for d in load_collection("running-shoes").documents}
    flagged = [a for a in payload["answers"] if a["flags"]]
    assert all(a["flags"] == ["echo"] for a in flagged)
    assert all(a["answer"].endswith("?") or repeats_title(a["answer"], titles[a["ranking"][0]]) for a in flagged)
    assert all(a["utility"] == 0 for a in flagged)
    assert payload["metrics"]["degenerate_share"] == sum(a["samples"] for a in flagged) / 20
    assert sum(a["samples"] for a in payload["answers"]) == 20
    for answer in payload["answers"]:
        cited = {c["doc_id"] for c in answer["citations"]}
        assert cited <= set(answer["ranking"]) and cited.isdisjoint(answer["not_entailing"])
        assert (answer["ranking"][0] in cited) is (not answer["flags"])  # degenerate answers cite nothing
    assert fake_models.prompts_seen >= len(payload["answers"])  # distinct lists (+ oracle lists) only


def test_rag_readable(fake_models):
    code, text = run(["rag", "--collection", "running-shoes", "--query", "best shoes for a first marathon",
                      "--samples", "10", "--seed", "1"])
    assert code == 0 and "distinct top-5 lists" in text and "EAE-D" in text and "cited:" in text


def test_label_utility_sweep_and_runs(fake_models, tmp_path):
    code, text = run(["label-utility", "--collection", "running-shoes", "--queries", "rs-q01,rs-q02", "--depth", "4",
                      "--out-dir", str(tmp_path), "--json"])
    assert code == 0
    qrels = tmp_path / "utility.fake-gen.qrels"
    assert qrels.is_file() and "Regenerate with: python -m fairrag_core label-utility" in qrels.read_text()
    # the sweep reads utility labels from the collection folder: use relevance labels here
    code, text = run(["sweep", "--collection", "running-shoes", "--queries", "rs-q01,rs-q02", "--alphas", "0,8",
                      "--samples", "10", "-k", "3", "--labels", "relevance", "--seed", "4", "--json",
                      "--output", str(tmp_path / "sweep.csv")])
    assert code == 0
    payload = json.loads(text)
    assert len(payload["rows"]) == 2 * 3  # 2 queries × (2 α + deterministic)
    assert payload["table1"] and len(payload["table2"]) == 5
    assert (tmp_path / "sweep.csv").is_file() and (tmp_path / "sweep.parquet").is_file()
    code, text = run(["runs", "--json"])
    runs = json.loads(text)
    assert code == 0 and runs[0]["run_id"] == payload["run_id"]
    code, text = run(["runs", "show", payload["run_id"]])
    assert code == 0 and "rs-q01" in text and "Reproduce with: python -m fairrag_core sweep" in text
    code, text = run(["runs", "compare", payload["run_id"], payload["run_id"]])
    assert code == 0 and "ee_d" in text


def test_sweep_asking_for_missing_utility_labels_names_the_command(fake_models, capsys):
    code, _ = run(["sweep", "--collection", "running-shoes", "--queries", "rs-q01", "--samples", "2",
                   "--labels", "utility"])
    assert code == 2 and "label-utility --collection running-shoes --generator fake-gen" in capsys.readouterr().err


def test_sweep_defaults_to_relevance_labels_when_the_generator_has_none(fake_models, capsys):
    code, text = run(["sweep", "--collection", "running-shoes", "--queries", "rs-q01,rs-q02", "--alphas", "0,8",
                      "--samples", "4", "-k", "3", "--no-store", "--json"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "No utility labels for fake-gen" in err
    payload = json.loads(text)
    assert payload["config"]["config"]["usefulness"] == "relevance"
    assert "--labels relevance" in payload["command"]


def test_sweep_refuses_a_huge_n_before_loading_any_model(monkeypatch, capsys):
    import fairrag_core.cli.rag as rag_cli

    def no_models(args, **kwargs):
        raise AssertionError("a model was loaded before the settings were checked")

    monkeypatch.setattr(rag_cli, "load_models", no_models)
    code, _ = run(["sweep", "--collection", "running-shoes", "--samples", "1000000000"])
    assert code == 2 and "lower N" in capsys.readouterr().err


def test_rag_json_names_a_rag_command_that_parses_and_reproduces(fake_models):
    """``rag --json``'s command is a ``rag`` command (it once named ``rank`` with the citation options, which ``rank``
    refuses): the CLI's own parser reads it back to the same settings, and run, it gives the same answers."""
    import shlex

    from fairrag_core.cli import build_parser
    from fairrag_core.cli.common import settings
    from fairrag_core.rag.pipeline import RagConfig

    asked = ["rag", "--collection", "running-shoes", "--query", "best shoes for a first marathon", "--alpha", "2",
             "--samples", "12", "-k", "3", "--seed", "3", "--entail-threshold", "0.4", "--prompt-order", "retrieval"]
    code, text = run([*asked, "--json"])
    assert code == 0
    command = json.loads(text)["command"]
    words = shlex.split(command)
    assert words[:4] == ["python", "-m", "fairrag_core", "rag"]
    assert {"--entail-threshold", "--prompt-order", "--generator", "--nli", "--prompt-style"} <= set(words)
    parsed = build_parser().parse_args(words[3:])  # argparse exits on an unrecognised argument
    assert settings(RagConfig, parsed) == settings(RagConfig, build_parser().parse_args(asked))
    again = json.loads(run([*words[3:], "--json"])[1])
    first = json.loads(text)
    assert again["answers"] == first["answers"] and again["metrics"] == first["metrics"]
    assert again["command"] == command


def test_sweep_on_partial_qrels_names_the_queries_it_leaves_out_and_its_csv_carries_the_json_header(fake_models,
                                                                                                   tmp_path):
    """Issue 30: the RAG sweep runs every query, says which ones EE-R, the oracle and Tables 1–2 leave out and why,
    and its CSV's '# key: value' header is its JSON's ``fairrag`` (read back with pandas' comment='#')."""
    import shutil

    import pandas as pd

    from fairrag_core.data.demo import demo_folder
    from fairrag_core.data.export import read_header

    folder = tmp_path / "partial"
    folder.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        shutil.copy(demo_folder("running-shoes") / name, folder / name)
    qrels = (demo_folder("running-shoes") / "qrels.txt").read_text().splitlines()
    (folder / "qrels.txt").write_text("".join(f"{line}\n" for line in qrels if line.startswith("rs-q01 ")))
    code, text = run(["sweep", "--collection", str(folder), "--queries", "rs-q01,rs-q02,rs-q03", "--alphas", "0,8",
                      "--samples", "4", "-k", "3", "--labels", "relevance", "--seed", "2", "--json",
                      "--output", str(tmp_path / "sweep.csv")])
    assert code == 0
    payload = json.loads(text)
    assert payload["left_out"] == (
        "Swept 3 queries: the means per α on all 3 (they need no relevance labels); Tables 1–2 on the 1 with ≥ 2 "
        "useful candidates. Left out of Tables 1–2: 2 of 3 without relevance judgements (EE-R and the oracle "
        "undefined): rs-q02, rs-q03.")
    assert read_header(tmp_path / "sweep.csv") == payload["fairrag"]
    assert payload["fairrag"]["kind"] == "rag-sweep" and payload["fairrag"]["generator"] == "fake-gen"
    table = pd.read_csv(tmp_path / "sweep.csv", comment="#")
    assert table["query_id"].tolist() == [row["query_id"] for row in payload["rows"]]
    code, text = run(["sweep", "--collection", str(folder), "--queries", "rs-q01,rs-q02,rs-q03", "--alphas", "0,8",
                      "--samples", "4", "-k", "3", "--labels", "relevance", "--seed", "2", "--no-store"])
    assert code == 0 and payload["left_out"] in text
