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
    assert out.read_text(encoding="utf-8").splitlines()[-3].startswith("query_id,query,lines")  # after the header


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


# -- trace exports, and providers without a collection (docs/traces.md) ------------------------------------------
def test_a_trace_export_audits_without_a_collection_with_providers_from_its_metadata(tmp_path):
    from fairrag_core.data import assets_dir

    traces = str(assets_dir() / "logs" / "running-shoes.otlp.jsonl")
    code, text = run(["audit-log", traces, "--provider-from", "domain:metadata.url", "--seed", "2", "--no-store",
                      "--boot", "200"])
    assert code == 0
    assert "Trace export" in text and "200 requests (traces), 20 queries, k = 5, attribution: logged" in text
    assert " lines" not in text.split("\n")[0]  # a trace export is counted in requests, never in its lines
    assert "note: 2 of 202 traces left out: 2 with no retrieval span" in text
    assert "  — EE-R: no relevance labels: the documents come from the log" in text
    assert "velocore.example" in text and "Exposure ledger by provider over every query" in text
    command = text.split("Reproduce with: ")[1].strip()
    assert "--collection" not in command and command.endswith("--seed 2 --provider-from domain:metadata.url")
    code, again = run(["audit-log", traces, "--provider-from", "domain:metadata.url", "--seed", "2", "--no-store",
                       "--boot", "200", "--json"])
    payload = json.loads(again)
    assert payload["undefined"] == {"ee_r": payload["undefined"]["ee_r"]} and "ee_r" not in {
        r["metric"] for r in payload["summary"]}
    assert payload["notes"][0].startswith("2 of 202 traces left out") and payload["command"] == command


def test_a_provider_map_gives_providers_and_groups(log_path, tmp_path, shoes):
    mapping = tmp_path / "providers.csv"
    mapping.write_text("doc_id,provider,tier\n" + "".join(f"{d},P{i % 4},{'big' if i % 2 else 'small'}\n"
                                                          for i, d in enumerate(shoes.doc_ids)), encoding="utf-8")
    code, text = run(["audit-log", str(log_path), "--provider-map", str(mapping), "--no-store", "--seed", "1",
                      "--boot", "200"])
    assert code == 0 and "Exposure ledger by tier over every query" in text and "P3" in text
    assert f"--provider-map {mapping}" in text.split("Reproduce with: ")[1]


def test_trace_options_and_errors(log_path, tmp_path, capsys):
    assert run(["audit-log", str(log_path), "--provider-from", "metadata.source", "--collection",
                "running-shoes"])[0] == 2
    assert "--provider-from and --provider-map name the providers of a log audited without a collection" in \
        capsys.readouterr().err
    assert run(["audit-log", str(log_path), "--trace-map", "answer=app.reply", "--no-store"])[0] == 2
    assert "--trace-map and --multi-retrieval read trace exports; log.jsonl is a RAG log: drop them" in \
        capsys.readouterr().err
    assert run(["audit-log", str(log_path), "--trace-map", "answer", "--no-store"])[0] == 2
    assert "--trace-map 'answer' is not KEY=ATTRIBUTE" in capsys.readouterr().err
    assert run(["audit-log", str(log_path), "--provider-from", "source", "--no-store"])[0] == 2
    assert "is not metadata.KEY or id" in capsys.readouterr().err
    assert run(["audit-log", str(log_path), "--provider-from", "metadata.source", "--attribution", "judge",
                "--no-store"])[0] == 2
    assert "the NLI judge reads the documents' texts, which only a collection gives" in capsys.readouterr().err


def test_a_trace_export_with_a_trace_map_and_several_retrievals(tmp_path, shoes):
    def kv(key, value):
        return {"key": key, "value": {"stringValue": value}}

    spans = [{"traceId": "a1", "spanId": "r", "startTimeUnixNano": "1772442960000000000",
              "attributes": [kv("app.qid", "rs-q01"), kv("app.answer", "yes")]}]
    for n, doc in enumerate(shoes.doc_ids[:2]):
        spans.append({"traceId": "a1", "spanId": f"s{n}", "parentSpanId": "r", "startTimeUnixNano": str(n + 1),
                      "attributes": [kv("openinference.span.kind", "RETRIEVER"),
                                     kv("retrieval.documents.0.document.id", doc)]})
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, indent=1), encoding="utf-8")
    code, text = run(["audit-log", str(path), "--collection", "running-shoes", "--no-store", "--seed", "0",
                      "--trace-map", "query_id=app.qid", "--trace-map", "answer=app.answer",
                      "--multi-retrieval", "last"])
    assert code == 0 and ": 1 request (trace), 1 queries, k = 1, attribution: none" in text
    assert text.split("Reproduce with: ")[1].strip().endswith(
        "--trace-map query_id=app.qid --trace-map answer=app.answer --multi-retrieval last")


# -- what if it sampled (docs/served-runs.md) --------------------------------------------------------------------
def test_what_if_alphas_replays_the_logged_scores_and_keeps_the_result_with_the_run(log_path, tmp_path, capsys):
    from fairrag_core.audit.store import RunStore
    from fairrag_core.data import assets_dir

    traces = str(assets_dir() / "logs" / "running-shoes.otlp.jsonl")
    store = tmp_path / "runs.duckdb"
    code, text = run(["audit-log", traces, "--collection", "running-shoes", "--seed", "2", "--store", str(store),
                      "--boot", "200", "--what-if-alphas", "0,2,inf", "--what-if-samples", "40"])
    assert code == 0
    section = text.split("What if it sampled")[1]
    assert "N = 40 rankings per query and α, k = 5; 20 queries replayed" in section
    assert "as served" in section and "α = 0 " in section and "α = ∞ (deterministic)" in section
    assert "Recommender: " in section and "What-if findings:" in section and "Not estimated: answers and citations " \
           "are not regenerated" in section
    assert text.split("Reproduce with: ")[1].strip().endswith("--what-if-alphas 0,2,inf --what-if-samples 40")
    run_id = text.split("Saved as run ")[1].split()[0]
    with RunStore(str(store)) as opened:
        kept = opened.load_record(run_id).extra["what_if"]
    assert kept["alphas"] == [0.0, 2.0, "inf"] and kept["curve"][0]["label"] == "as served"
    assert "per_query" not in kept and kept["findings"][0]["text"] in section
    # a JSONL log carries no scores: the error names what to export
    assert run(["audit-log", str(log_path), "--collection", "running-shoes", "--no-store",
                "--what-if-alphas", "0,2"])[0] == 2
    assert "the log carries no scores: export document.score (traces) or the TREC score column" in \
        capsys.readouterr().err


def test_a_what_if_that_fails_never_withholds_the_audit(capsys):
    """Issue 28: ``--what-if-samples 2000000`` on a 40-trace export grew to 11.8 GB, and any what-if error withheld the
    audit. Now the replay is refused before it allocates (16,528 MB here, against the 400 MB budget), the audit is
    printed whole, the what-if part says why, and the exit status is 2 with the error on stderr."""
    from fairrag_core.data import assets_dir

    traces = str(assets_dir() / "logs" / "running-shoes.otlp.jsonl")
    argv = ["audit-log", traces, "--collection", "running-shoes", "--no-store", "--seed", "1", "--what-if-alphas",
            "0,2", "--what-if-samples", "2000000"]
    why = ("the what-if's 1,000 resamples of N = 2,000,000 sampled rankings of up to 14 candidates needs 16,528 MB, "
           "more than the 400 MB one step may allocate; lower N (--what-if-samples; the paper uses 100) or the "
           "resamples (--boot) (or raise the budget with FAIRRAG_MAX_MEMORY_MB)")
    code, text = run(argv)
    assert code == 2 and capsys.readouterr().err == f"error: what-if: {why}\n"
    assert "Headline (" in text and "Exposure ledger by provider" in text and "Per query (" in text
    assert f"\nWhat if it sampled: not replayed: {why}\n" in text and "Reproduce with: " in text
    code, text = run([*argv, "--json"])
    data = json.loads(text)
    assert code == 2 and data["what_if"] == {"error": why} and data["summary"] and data["queries"]
    assert without_what_if(text) == without_what_if(run(argv[:7] + ["--json"])[1])


def without_what_if(text: str) -> dict:
    data = json.loads(text)
    for key in ("what_if", "command", "config", "fairrag", "wall_seconds"):
        data.pop(key, None)
    return data


def test_finite_extreme_scores_replay_and_the_audit_prints(tmp_path):
    """Issue 28: a run whose logged scores are finite but near ±1e308 (a document logged twice at 1e308 averages to
    inf if summed first) said "scores contain NaN or infinity" (false) and printed no audit; now it replays."""
    ids = ["rs-001", "rs-002", "rs-003", "rs-004"]
    scores = [1e308, -1e308, 5e307, -1.7e308]
    path = tmp_path / "extreme.run"
    path.write_text("".join(f"{q} s{s} {ids[i]} {r} {scores[i]!r} sys\n" for q in ("rs-q01", "rs-q02")
                            for s, order in enumerate([(0, 1, 2), (0, 2, 3)], 1) for r, i in enumerate(order, 1)))
    code, text = run(["audit-log", str(path), "--collection", "running-shoes", "--no-store", "--seed", "1",
                      "--what-if-alphas", "0,2", "--what-if-samples", "20"])
    assert code == 0 and "Headline (" in text
    section = text.split("What if it sampled")[1]
    assert "2 queries replayed" in section and "α = 0 " in section and "α = 2 " in section


def test_a_trace_export_is_counted_in_requests_and_a_ledger_without_target_has_no_gap_header():
    """Issue 29's leftovers (issue 31): a trace export's text says requests, not lines, in the headline and the
    per-query table; a ledger without relevance labels (no target column) says no "gap = retrieval − target"."""
    from fairrag_core.data import assets_dir

    traces = str(assets_dir() / "logs" / "running-shoes.otlp.jsonl")
    code, text = run(["audit-log", traces, "--collection", "running-shoes", "--seed", "1", "--boot", "50",
                      "--no-store"])
    assert code == 0 and "over 20 queries with cited requests" in text and "queries with cited lines" not in text
    assert "intervals over the query's served requests: EE-D bias-corrected with the basic interval" in text
    assert "over the queries with relevance labels (shares; gap = retrieval − target):" in text  # a target: a gap
    code, text = run(["audit-log", traces, "--provider-from", "id", "--seed", "1", "--boot", "50", "--no-store"])
    assert code == 0 and "Exposure ledger by provider over every query (shares):\n" in text
    assert "gap = retrieval − target" not in text and "target_share" not in text and "share_gap" not in text
