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
    # a stored run is named by its id and the file it audited
    assert code == 0 and ee_d["system"] == f"run:{ids[1]} · B.trec" and ee_d["difference"] < -0.5


def test_bad_inputs_name_the_fix(served, monkeypatch, capsys):
    monkeypatch.chdir(served)
    code, _ = run(["compare-runs", "A.trec", "--collection", "running-shoes"])
    assert code == 2 and "compare at least two systems" in capsys.readouterr().err
    code, _ = run(["compare-runs", "A.trec", "B.trec"])  # no --collection: expeval's QRELS RUN_A RUN_B
    assert code == 2 and "give QRELS RUN_A RUN_B" in capsys.readouterr().err
    code, _ = run(["compare-runs", "A.trec", "B.trec", "--collection", "running-shoes", "--baseline", "Z"])
    assert code == 2 and "--baseline 'Z' is not one of the systems" in capsys.readouterr().err


# -- the same audit everywhere (issue 29): compare-runs reads files as audit-log reads them --------------------------
def _kv(key, value):
    return {"key": key, "value": {"stringValue": value}}


def _otlp_export(path, rankings):
    """An OpenInference export, one trace per (query id, ranking): a CHAIN root with ``fairrag.query_id`` and the first
    document cited, and a RETRIEVER span whose documents carry ``metadata.source`` (``d3`` → ``P3``)."""
    spans = []
    for t, (qid, ranking) in enumerate(rankings):
        trace = f"{path.stem.replace('.', '')}{t:04x}"
        spans.append({"traceId": trace, "spanId": f"{trace}r", "startTimeUnixNano": str(1_772_442_960_000_000_000 + t),
                      "attributes": [_kv("openinference.span.kind", "CHAIN"), _kv("fairrag.query_id", qid),
                                     _kv("fairrag.citations", json.dumps([ranking[0]]))]})
        docs = [_kv("openinference.span.kind", "RETRIEVER")]
        for i, doc in enumerate(ranking):
            docs += [_kv(f"retrieval.documents.{i}.document.id", doc),
                     _kv(f"retrieval.documents.{i}.document.metadata", json.dumps({"source": f"P{doc[1:]}"}))]
        spans.append({"traceId": trace, "spanId": f"{trace}s", "parentSpanId": f"{trace}r",
                      "startTimeUnixNano": str(1_772_442_960_000_000_001 + t), "attributes": docs})
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Deployment A always serves d0 d1 d2 (P0 first); B rotates the six documents: 12 queries, 3 requests each."""
    folder = tmp_path_factory.mktemp("exports")
    queries = [f"q{n:02d}" for n in range(12)]
    a = [(q, ["d0", "d1", "d2"]) for q in queries for _ in range(3)]
    b = [(q, [f"d{(n + s + j) % 6}" for j in range(3)]) for n, q in enumerate(queries) for s in range(3)]
    return _otlp_export(folder / "A.otlp.jsonl", a), _otlp_export(folder / "B.otlp.jsonl", b)


def test_two_trace_exports_compare_with_providers_from_the_traces_and_no_collection(exports, tmp_path, monkeypatch):
    a, b = exports
    monkeypatch.chdir(a.parent)
    argv = ["compare-runs", a.name, b.name, "--provider-from", "metadata.source", "--multi-retrieval", "first",
            "--seed", "4", "--n-boot", "200", "--n-permutations", "500", "--no-store"]
    code, text = run(argv)
    assert code == 0 and "Comparison of 2 systems on documents of A.otlp.jsonl + B.otlp.jsonl, each against " \
                          "A.otlp.jsonl" in text
    payload = json.loads(run([*argv, "--json"])[1])
    shares = {(s["kind"], s["group"]): s for s in payload["shares"]}
    assert shares[("retrieval", "P0")]["share_system"] == pytest.approx(1 / 6)  # B: each of six documents equally
    assert shares[("retrieval", "P0")]["share_baseline"] == pytest.approx(1 / 3)  # A: d0 d1 d2 only
    assert shares[("attributed", "P0")]["share_baseline"] == pytest.approx(1.0)  # A always cites d0
    assert {m["system"] for m in payload["metrics"]} == {"B.otlp.jsonl"} and "ee_r" not in {
        m["metric"] for m in payload["metrics"]}  # no relevance labels: EE-R is not compared
    assert any(f["text"].startswith("B.otlp.jsonl is fairer than A.otlp.jsonl") for f in payload["findings"])
    command = payload["command"]
    assert "--collection" not in command and command.endswith(
        "--seed 4 --multi-retrieval first --provider-from metadata.source")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    from fairrag_core.record import RunRecord

    command = RunRecord.from_dict(payload["config"]).command()
    assert f"compare-runs {a} {b}" in command
    again = json.loads(run([*shlex.split(command)[3:], "--no-store", "--json"])[1])
    assert again["metrics"] == payload["metrics"] and again["shares"] == payload["shares"]


def test_compare_runs_reading_options_and_their_errors(exports, served, capsys):
    a, b = map(str, exports)
    assert run(["compare-runs", a, b, "--provider-from", "metadata.source", "--collection", "running-shoes"])[0] == 2
    assert "--provider-from and --provider-map name the providers of logs compared without a collection" in \
        capsys.readouterr().err
    assert run(["compare-runs", a, b, "--trace-map", "answer=app.reply"])[0] == 2
    assert "--trace-map and --multi-retrieval read trace exports compared as systems" in capsys.readouterr().err
    log = str(served / "log.jsonl")
    assert run(["compare-runs", log, log, "--collection", "running-shoes", "--trace-map", "answer=app.reply",
                "--no-store"])[0] == 2
    assert "--trace-map and --multi-retrieval read trace exports; log.jsonl is a RAG log: drop them" in \
        capsys.readouterr().err


def test_stored_audits_of_trace_exports_compare_with_their_providers_from_the_logs(exports, tmp_path, capsys):
    """Audits made with --provider-from (no collection) compare as run:ID with the same provider source: the
    documents their logs name, read again from the recorded paths; a run that is no log audit is refused."""
    store = str(tmp_path / "runs.duckdb")
    ids = []
    for path in exports:
        code, text = run(["audit-log", str(path), "--provider-from", "metadata.source", "--seed", "1", "--boot", "100",
                          "--store", store])
        assert code == 0
        ids.append(text.split("Saved as run ")[1].split()[0])
    argv = ["compare-runs", *(f"run:{i}" for i in ids), "--provider-from", "metadata.source", "--seed", "2",
            "--n-boot", "200", "--n-permutations", "500", "--store", store, "--json"]
    code, text = run(argv)
    payload = json.loads(text)
    assert code == 0 and {m["system"] for m in payload["metrics"]} == {f"run:{ids[1]} · B.otlp.jsonl"}
    shares = {(s["kind"], s["group"]): s for s in payload["shares"]}
    assert shares[("retrieval", "P0")]["share_system"] == pytest.approx(1 / 6)
    assert payload["command"].endswith("--seed 2 --provider-from metadata.source")
    assert "--collection" not in payload["command"]
    code, again = run([*shlex.split(payload["command"])[3:], "--store", store, "--no-store", "--json"])
    assert code == 0 and json.loads(again)["shares"] == payload["shares"]
    assert payload["stored"]  # the comparison itself is a stored run, but no log audit
    assert run(["compare-runs", f"run:{payload['run_id']}", f"run:{ids[0]}", "--provider-from", "metadata.source",
                "--store", store, "--no-store"])[0] == 2
    assert "a comparison run has no log to take providers from" in capsys.readouterr().err


def test_the_reading_options_survive_compare_runs_own_command_line():
    """ComparisonConfig's reading fields are audit-log's options: printed by settings_argv, read back by
    compare-runs' parser to the same settings."""
    import argparse

    from fairrag_core.audit.compare import ComparisonConfig
    from fairrag_core.cli import build_parser
    from fairrag_core.cli.common import settings
    from fairrag_core.options import settings_argv

    config = ComparisonConfig(inputs=("/srv/a.otlp.jsonl", "/srv/b.otlp.jsonl"), seed=3,
                              trace_map=("query_id=app.qid", "answer=app.answer"), multi_retrieval="last",
                              provider_map="/srv/providers.csv")
    words = settings_argv(config)
    assert words == ["/srv/a.otlp.jsonl", "/srv/b.otlp.jsonl", "--seed", "3", "--trace-map", "query_id=app.qid",
                     "--trace-map", "answer=app.answer", "--multi-retrieval", "last", "--provider-map",
                     "/srv/providers.csv"]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert settings(ComparisonConfig, sub.choices["compare-runs"].parse_args(words)) == config
