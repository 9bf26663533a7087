"""compare-runs takes logs and runs (issue 20, item 5): any mix of RAG logs, run files and stored runs over the same
queries, compared with the audit's metrics, saved in the run store, with an HTML report and a reproduce command that
reruns from another folder."""

import io
import json
import shlex

import numpy as np
import pytest

from fairrag_core import load_collection
from fairrag_core.cli import main
from fairrag_core.ranking.sampling import sample_rankings
from fairrag_core.retrieval import BM25Retriever


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A (deterministic BM25, a TREC run), B (Plackett-Luce at α = 1, an expeval run with 20 samples) and a RAG log of
    B's first 5 samples per query with one logged citation each, over running-shoes."""
    folder = tmp_path_factory.mktemp("served")
    shoes = load_collection("running-shoes")
    bm25, ids = BM25Retriever(shoes.texts), np.array(shoes.doc_ids)
    with open(folder / "A.trec", "w") as a, open(folder / "B.trec", "w") as b, open(folder / "log.jsonl", "w") as log:
        for q in shoes.queries:
            scores = bm25.score(q.text)
            top = np.argsort(-scores, kind="stable")[:20]
            a.writelines(f"{q.query_id} Q0 {d} {r} {6 - r} A\n" for r, d in enumerate(ids[top[:5]], 1))
            sampled = sample_rankings(scores[top], alpha=1.0, n_samples=20, k=5, seed=1)
            for s, row in enumerate(sampled):
                b.writelines(f"{q.query_id} s{s} {d} {r} {6 - r} B\n" for r, d in enumerate(ids[top[row]], 1))
            log.writelines(json.dumps({"query_id": q.query_id, "ranking": list(ids[top[row]]),
                                       "citations": [str(ids[top[row]][0])]}) + "\n" for row in sampled[:5])
    return folder


def test_b_is_fairer_than_a_in_text_json_store_and_report(served, tmp_path, monkeypatch):
    monkeypatch.chdir(served)
    store = tmp_path / "runs.duckdb"
    code, text = run(["compare-runs", "A.trec", "B.trec", "log.jsonl", "--collection", "running-shoes", "--seed", "3",
                      "--store", str(store), "--report", str(tmp_path / "cmp.html"), "--n-boot", "300"])
    assert code == 0 and "Comparison of 3 systems on running-shoes, each against A.trec" in text
    assert "B.trec                       EE-D" in text and "Report written to" in text
    html = (tmp_path / "cmp.html").read_text()
    assert "<h1>Comparison of audited systems</h1>" in html and "compare-runs A.trec B.trec log.jsonl" in html
    run_id = text.split("Saved as run ")[1].split()[0]
    code, json_text = run(["compare-runs", "A.trec", "B.trec", "log.jsonl", "--collection", "running-shoes",
                           "--seed", "3", "--n-boot", "300", "--no-store", "--json"])
    payload = json.loads(json_text)
    ee_d = {(m["system"], m["metric"]): m for m in payload["metrics"]}
    b = ee_d[("B.trec", "ee_d")]
    assert b["difference"] < -0.5 and b["low"] <= b["difference"] <= b["high"] < 0 and b["p_holm"] < 0.01
    assert ee_d[("B.trec", "ee_r")]["difference"] < 0  # the cost: less exposure on useful documents
    assert ("log.jsonl", "ear") not in ee_d  # logged citations vs a run without any: not compared
    assert {s["kind"] for s in payload["shares"]} == {"retrieval"}
    # the stored comparison shows its command; run from another folder, it gives the same numbers
    code, shown = run(["runs", "--store", str(store), "show", run_id])
    assert code == 0 and "compare-runs" in shown
    assert payload["command"].startswith("python -m fairrag_core compare-runs A.trec B.trec log.jsonl --collection")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    from fairrag_core.record import RunRecord

    command = RunRecord.from_dict(payload["config"]).command()  # as runs show prints it from here
    assert f"compare-runs {served / 'A.trec'} {served / 'B.trec'} {served / 'log.jsonl'}" in command
    code, again = run([*shlex.split(command)[3:], "--no-store", "--json"])
    assert code == 0 and json.loads(again)["metrics"] == payload["metrics"]


def test_stored_runs_compare_as_systems(served, tmp_path, monkeypatch):
    monkeypatch.chdir(served)
    store = str(tmp_path / "runs.duckdb")
    ids = []
    for name in ("A.trec", "B.trec"):
        code, text = run(["audit-log", name, "--collection", "running-shoes", "--seed", "1", "--store", store,
                          "--json"])
        ids.append(json.loads(text)["run_id"])
    code, text = run(["compare-runs", f"run:{ids[0]}", f"run:{ids[1]}", "--collection", "running-shoes",
                      "--store", store, "--no-store", "--seed", "2", "--json"])
    payload = json.loads(text)
    ee_d = next(m for m in payload["metrics"] if m["metric"] == "ee_d")
    assert code == 0 and ee_d["system"] == f"run:{ids[1]}" and ee_d["difference"] < -0.5


def test_bad_inputs_name_the_fix(served, monkeypatch, capsys):
    monkeypatch.chdir(served)
    code, _ = run(["compare-runs", "A.trec", "--collection", "running-shoes"])
    assert code == 2 and "compare at least two systems" in capsys.readouterr().err
    code, _ = run(["compare-runs", "A.trec", "B.trec"])  # no --collection: expeval's QRELS RUN_A RUN_B
    assert code == 2 and "give QRELS RUN_A RUN_B" in capsys.readouterr().err
    code, _ = run(["compare-runs", "A.trec", "B.trec", "--collection", "running-shoes", "--baseline", "Z"])
    assert code == 2 and "--baseline 'Z' is not one of the systems" in capsys.readouterr().err
