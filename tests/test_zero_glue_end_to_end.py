"""Issue 29's "Done means", end to end: a LlamaIndex deployment traced by the stock openinference instrumentor through
the OTel SDK exporter into ``fairrag collect`` (benchmarks/instrumented_deployment.py, with nothing in between),
audited with zero glue — in the CLI's JSON, the app's Served tab, the HTML report the tab downloads, and
``compare-runs`` of A with B — carries the same numbers everywhere, and those of the pipeline's own record."""

from __future__ import annotations

import html
import io
import json
import os
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("openinference.instrumentation.llama_index")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
pytest.importorskip("rank_bm25")

from streamlit.testing.v1 import AppTest

from fairrag_core.cli import main
from fairrag_core.seeds import derive_seed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import instrumented_deployment as deployment  # noqa: E402

UNDER_CITED = deployment.UNDER_CITED
PROVIDER_FROM = "metadata.maintainer"


def _corpus(path: Path) -> Path:
    """Each team's quota of made-up package descriptions, each with words of the deployment's queries (seeded)."""
    rng = random.Random(29)
    words = sorted({w for q in deployment.QUERIES for w in deployment.tokens(q)})
    lines = []
    for team, quota in deployment.PROVIDERS.items():
        slug = team.split()[1].lower()
        for i in range(quota):
            text = f"{slug}-pkg{i}: " + " ".join(rng.sample(words, 4)) + f" module for {slug}"
            lines.append(json.dumps({"doc_id": f"{slug}-pkg{i}", "text": text, "provider": team}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("deployment")
    corpus = _corpus(out.parent / f"{out.name}-corpus.jsonl")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "instrumented_deployment.py"), "--out", str(out),
                           "--corpus", str(corpus), "--requests", "120"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("equal to the pipeline record") == 4  # both deployments, the store and the export
    return out


def _cli(argv) -> dict:
    out = io.StringIO()
    assert main([*argv, "--json", "--no-store"], out=out) == 0
    return json.loads(out.getvalue())


def _plain(text: str) -> str:
    """A finding as the page shows it, back to its text (markdown_text escapes with a backslash)."""
    return re.sub(r"\\(.)", r"\1", text)


def test_an_instrumented_deployment_audits_with_zero_glue_and_the_same_numbers_everywhere(built, tmp_path,
                                                                                          monkeypatch):
    store = built / "store"
    provider_of = {json.loads(line)["doc_id"]: json.loads(line)["provider"]
                   for line in (built / "corpus.jsonl").read_text().splitlines()}
    record_b = json.loads((built / "record-b.json").read_text())

    # the app: the store in the data folder, service B, providers from the logged metadata, nothing else
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(built))
    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    from fairrag_studio.services import resources

    resources.run_store.clear()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("app_pages/audit.py").run()
    assert not at.exception
    at.radio(key="served_source").set_value("Data folder").run()
    at.selectbox(key="served_file").set_value("store/").run()
    at.selectbox(key="served_service").set_value("deployment-b").run()
    at.radio(key="served_providers").set_value("metadata").run()
    at.text_input(key="served_metadata_key").input("maintainer").run()
    at.button(key="served_run").click().run()
    assert not at.exception and not at.error
    command = next(c.value for c in at.code if "audit-log" in c.value)
    shown = [_plain(m.value.split(" · ", 1)[1]) for m in at.markdown if m.value.startswith("- **")]
    shown = [line for block in shown for line in block.split("\n- **")]  # one markdown block holds them all
    shown = [line.split(" · ", 1)[-1] for line in shown]

    # the CLI: the app's own reproduce command gives the same findings, word for word and number for number
    argv = shlex.split(command)[3:]
    assert argv[:2] == ["audit-log", str(store)] and f"--provider-from {PROVIDER_FROM}" in command
    assert "--service deployment-b" in command
    payload = _cli(argv)
    findings = [f for f in payload["findings"] if not f["detail"]]
    assert len(shown) >= 4 and shown == [f["text"] for f in findings]
    assert any(t.startswith(f"{UNDER_CITED} is under-cited for how often it is shown: ") for t in shown)
    by = {(f["metric"], f["subject"]): f for f in payload["findings"]}
    under = by[("citation share − retrieval share", UNDER_CITED)]
    assert under["kind"] == "under-cited" and under["p_adjusted"] <= 0.05 and under["correction"]
    assert "requests)" in under["text"] and " lines)" not in under["text"]
    assert any(k[0] == "retrieval share − presence share" for k in by)
    assert any(k[0] == "retrieval share − merit share" for k in by)
    assert payload["config"]["extra"]["requests"] == len(record_b) == 120

    # the numbers are the pipeline's own: each team's retrieval and citation share from its record
    retrieval, citation = deployment.record_shares(record_b, provider_of)
    ledger = {row["group"]: row for row in payload["ledgers"]["provider"]}
    for team in deployment.PROVIDERS:
        assert ledger[team]["retrieval_share"] == pytest.approx(retrieval[team], abs=1e-9)
        assert ledger[team]["attributed_share"] == pytest.approx(citation[team], abs=1e-9)
    assert under["value"]["estimate"] == pytest.approx(citation[UNDER_CITED], abs=1e-9)
    assert under["reference"]["estimate"] == pytest.approx(retrieval[UNDER_CITED], abs=1e-9)

    # the HTML report the tab downloads: the same findings
    from fairrag_core.audit.store import RunStore
    from fairrag_studio.views.served import audits_collection, build_log_report

    runs = RunStore(tmp_path / "runs.duckdb")
    stored = runs.load(runs.list()["run_id"].iloc[0])
    report = html.unescape(build_log_report(stored, audits_collection([stored.record])[0]))
    assert all(text in report for text in shown) and "120 requests" in report

    # compare-runs A vs B: each system's own findings are audit-log's at the system's seed, and the share
    # differences are the two ledgers'
    seed = 11
    compared = _cli(["compare-runs", str(store / "deployment-a"), str(store / "deployment-b"), "--provider-from",
                     PROVIDER_FROM, "--seed", str(seed), "--n-permutations", "2000"])
    texts = {f["text"] for f in compared["findings"]}
    for i, name in enumerate(("deployment-a", "deployment-b")):
        alone = _cli(["audit-log", str(store / name), "--provider-from", PROVIDER_FROM,
                      "--seed", str(derive_seed(seed, i))])
        assert {f"{name}: {f['text']}" for f in alone["findings"]} <= texts
        if name == "deployment-b":
            b_ledger = {row["group"]: row["retrieval_share"] for row in alone["ledgers"]["provider"]}
        else:
            a_ledger = {row["group"]: row["retrieval_share"] for row in alone["ledgers"]["provider"]}
    shares = {s["group"]: s for s in compared["shares"] if s["kind"] == "retrieval"}
    for team in deployment.PROVIDERS:
        assert shares[team]["share_system"] == pytest.approx(b_ledger[team], abs=1e-9)
        assert shares[team]["share_baseline"] == pytest.approx(a_ledger[team], abs=1e-9)
    assert any(t.startswith("deployment-b is fairer than deployment-a") and "relevance was not measured" in t
               for t in texts)
