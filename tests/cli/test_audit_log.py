"""``audit-log``: the table, the JSON, the run store, --k, and errors with their fix."""

import io
import json

import pytest
from fakes import SubstringAttributor

from fairrag_core.cli import main
from fairrag_core.rag import attribution


def run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


@pytest.fixture()
def log_path(tmp_path, shoes):
    ids = shoes.doc_ids
    rows = [{"query_id": "rs-q01", "ranking": ids[:5], "answer": "x", "citations": [ids[0]], "session": "s1"},
            {"query_id": "rs-q01", "ranking": ids[1:6], "answer": "y", "citations": []},
            {"query_id": "walk-in", "query": "shoes for walking", "ranking": ids[10:15], "citations": [ids[12]]}]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_table_output_has_headline_with_intervals_ledgers_and_the_command(log_path, tmp_path):
    store = tmp_path / "runs.duckdb"
    code, text = run(["audit-log", str(log_path), "--collection", "running-shoes", "--seed", "4",
                      "--store", str(store)])
    assert code == 0
    assert "RAG log" in text and "3 lines, 2 queries, k = 5, attribution: logged" in text
    assert "Headline (mean over the audited queries (EE-D per query bias-corrected, as everywhere); 95% percentile " \
           "bootstrap interval over queries)" in text
    assert "EAR (cited by the system)" in text and "Exposure ledger by segment" in text
    assert "over the queries with relevance labels" in text  # walk-in has no labels: the gap covers rs-q01 only
    assert "Reproduce with: python -m fairrag_core audit-log" in text and "--seed 4" in text
    run_id = text.split("Saved as run ")[1].split()[0]
    code, shown = run(["runs", "show", run_id, "--store", str(store)])
    assert code == 0 and f"audit-log {log_path} --collection running-shoes --attribution logged --seed 4" in shown


def test_json_output_and_the_per_query_file(log_path, tmp_path):
    out = tmp_path / "queries.csv"
    code, text = run(["audit-log", str(log_path), "--collection", "running-shoes", "--k", "3", "--seed", "1",
                      "--no-store", "--json", "--output", str(out), "--boot", "200"])
    assert code == 0
    payload = json.loads(text)
    assert payload["run_id"] is None and payload["config"]["kind"] == "audit-log"
    assert payload["config"]["config"]["k"] == 3 and "-k 3" in payload["command"] and "--boot 200" in payload["command"]
    rows = {r["metric"]: r for r in payload["summary"]}
    assert rows["ee_d"]["low"] <= rows["ee_d"]["estimate"] <= rows["ee_d"]["high"]
    assert {q["query_id"] for q in payload["queries"]} == {"rs-q01", "walk-in"}
    assert set(payload["ledgers"]) == {"provider", "segment"} and payload["ledger_scope"].startswith("queries with")
    assert out.read_text(encoding="utf-8").startswith("query_id,query,lines")


def test_judge_attribution_loads_the_nli_model_and_shows_progress(log_path, monkeypatch, capsys):
    monkeypatch.setattr(attribution, "load_attributor", lambda name=None, device=None: SubstringAttributor())
    main(["audit-log", str(log_path), "--collection", "running-shoes", "--attribution", "both", "--no-store",
          "--seed", "0", "--paper-citations"], out=io.StringIO())
    assert "judged 10/10 document-answer pairs" in capsys.readouterr().err  # the paper's rule asks about every pair
    main(["audit-log", str(log_path), "--collection", "running-shoes", "--attribution", "both", "--no-store",
          "--seed", "0"], out=io.StringIO())
    # the fitted rule (default) sends only pairs whose document holds the answer's words: "x" and "y" are in none
    assert "judged 0/0 document-answer pairs" in capsys.readouterr().err


def test_errors_name_the_fix(log_path, tmp_path, capsys):
    assert run(["audit-log", str(log_path), "--collection", "news", "--no-store"])[0] == 2
    assert "are not in collection 'news'" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q"}\n', encoding="utf-8")
    assert run(["audit-log", str(bad), "--no-store"])[0] == 2
    assert 'line 1: missing field "ranking"' in capsys.readouterr().err
    assert run(["audit-log", str(log_path), "--no-store", "--collection", "running-shoes", "-k", "200"])[0] == 2
    assert "k=200 is larger than the 92 candidate(s)" in capsys.readouterr().err
    assert run(["audit-log", str(log_path), "--level", "95"])[0] == 2
    assert "expected a level between 0 and 1" in capsys.readouterr().err
