"""The Audit page's served tab (AppTest through the path route; AppTest cannot drive file_uploader) and the
pure helpers behind it: reading uploads, headline, drill-down and the log report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from fakes import SubstringAttributor
from streamlit.testing.v1 import AppTest

from fairrag_core import DataFormatError
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_studio.views.served import (
    DEMO_LOG,
    build_log_report,
    headline_table,
    lines_table,
    queries_table,
    read_served,
    safe_upload_name,
    save_served_upload,
)

APP = str(Path(__file__).resolve().parents[2] / "app.py")
AUDIT = "app_pages/audit.py"


@pytest.fixture(autouse=True)
def _run_store(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_DATA_DIR", raising=False)
    resources.run_store.clear()
    yield
    resources.run_store.clear()


@pytest.fixture()
def shoe_log(tmp_path, shoes):
    ids = shoes.doc_ids
    rows = [{"query_id": "rs-q01", "ranking": ids[:5], "answer": shoes.documents[0].title, "citations": [ids[0]],
             "session": "s1", "query": "<script>alert(1)</script>"},
            {"query_id": "rs-q01", "ranking": ids[2:7], "answer": "no idea", "citations": [], "session": "s2"},
            {"query_id": "rs-q02", "ranking": ids[10:15], "answer": "x", "citations": [ids[11], ids[40]]},
            {"query_id": "walk-in", "ranking": ids[20:25]}]
    path = tmp_path / "served.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def frame_with(at: AppTest, column: str):
    """The first table on the page with ``column`` (the sidebar and the stored-runs tab hold tables too)."""
    found = [f.value for f in at.dataframe if column in f.value.columns]
    assert found, f"no table with {column!r}"
    return found[0]


def open_audit() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(AUDIT).run()
    assert not at.exception
    return at


def pick_data_file(at: AppTest, name: str) -> None:
    """Choose ``name`` among the files of the server's data folder ($FAIRRAG_DATA_DIR)."""
    at.radio(key="served_source").set_value("Data folder").run()
    at.selectbox(key="served_file").set_value(name).run()
    assert not at.exception


def test_a_log_in_the_data_folder_is_audited_saved_and_drilled_into(shoe_log, monkeypatch):
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(shoe_log.parent))
    at = open_audit()
    pick_data_file(at, shoe_log.name)
    assert any("4 served rankings over 3 queries" in i.value for i in at.info)
    at.button(key="served_run").click().run()
    assert not at.exception
    headline = frame_with(at, "95% interval")
    assert headline["metric"].tolist()[:2] == ["EE-D", "EE-R"]
    assert "EAR (cited by the system)" in set(headline["metric"])
    for value, cell in zip(headline["value"], headline["95% interval"]):
        low, high = (float(x) for x in cell.strip("[]").split(","))
        assert low <= value <= high
    assert any("outside the top 5" in w.value for w in at.warning)
    assert any("Saved in the run store as" in c.value for c in at.caption)
    assert at.toggle(key="served_scope").value  # walk-in has no labels: the gap covers the labelled queries
    lines = frame_with(at, "shown (top k)")
    assert lines["session"].tolist() == ["s1", "s2"] and "cited by the system" in lines
    at.selectbox(key="served_query").set_value("rs-q02").run()
    assert frame_with(at, "shown (top k)")["cited, not shown"].tolist() == ["rs-041"]
    at.radio(key="served_by").set_value("segment").run()
    assert not at.exception and set(frame_with(at, "group")["group"]) == {"major", "independent", "startup"}
    stored = at.multiselect(key="stored_pick")
    stored.set_value(stored.options[:1]).run()  # reopen it from the run store: the same views, no lines
    assert not at.exception and any("The served lines stay in the log file" in c.value for c in at.caption)
    assert any(b.label == "Report (HTML)" for b in at.get("download_button"))


def test_a_bad_log_shows_the_loaders_message(tmp_path, monkeypatch):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q", "ranking": ["nope"]}\n', encoding="utf-8")
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(tmp_path))
    at = open_audit()
    pick_data_file(at, "bad.jsonl")
    assert any("not in collection 'running-shoes'" in e.value for e in at.error)


def test_the_judge_source_uses_the_sidebar_attributor(shoe_log, monkeypatch):
    from fairrag_studio.services import resources

    judge = SubstringAttributor()
    monkeypatch.setattr(resources, "attributor", lambda name, device: judge)
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(shoe_log.parent))
    at = open_audit()
    pick_data_file(at, shoe_log.name)
    at.selectbox(key="served_attr").set_value("both").run()
    at.button(key="served_run").click().run()
    assert not at.exception and judge.scored > 0
    assert "EAR (entailed per the judge)" in set(frame_with(at, "95% interval")["metric"])


@pytest.mark.skipif(not DEMO_LOG.exists(), reason="the demo log is not generated yet")
def test_the_demo_log_opens_with_its_ledger():
    at = open_audit()
    at.button(key="served_run").click().run()
    assert not at.exception and len(frame_with(at, "group")) == 14  # the ledger by provider


def test_the_simulated_ledger_opens_on_the_deterministic_system():
    at = open_audit()
    at.text_input(key="audit_alphas").set_value("0, 2").run()
    at.button(key="audit_run").click().run()
    assert not at.exception and math.isinf(at.selectbox(key="ledger_alpha").value)
    assert frame_with(at, "EE-D 95% interval")["EE-D 95% interval"].iloc[0].startswith("[")
    assert at.selectbox(key="audit_drill").value == "rs-q01"
    assert frame_with(at, "m")["system"].tolist() == ["α = 0", "α = 2", "deterministic"]


def test_upload_names_are_made_safe_and_large_uploads_refused(tmp_path, monkeypatch):
    assert safe_upload_name("../../etc/passwd.jsonl") == "passwd.jsonl"
    assert safe_upload_name("C:\\logs\\week 1.jsonl") == "week_1.jsonl"
    assert safe_upload_name(".jsonl") == "upload.jsonl"
    assert [safe_upload_name(n) for n in ("..", ".", "", "///")] == ["upload.jsonl"] * 4
    assert safe_upload_name("y" * 500 + ".tsv.gz") == "y" * 113 + ".tsv.gz"
    monkeypatch.setenv("FAIRRAG_MAX_UPLOAD_MB", "0.001")
    with pytest.raises(DataFormatError, match=r"big.jsonl: the upload is 0 MB, more than the 0 MB the app accepts"):
        save_served_upload("big.jsonl", b"x" * 5000, tmp_path / "uploads")
    assert not (tmp_path / "uploads").exists()  # refused before anything was written


def test_uploads_are_saved_by_content_and_read_by_suffix(tmp_path, shoe_log, shoes):
    data = shoe_log.read_bytes()
    path = save_served_upload("mine.jsonl", data, tmp_path)
    assert path == save_served_upload("mine.jsonl", data, tmp_path) and path.read_bytes() == data
    log, kind = read_served(path, shoes)
    assert kind == "log" and len(log) == 4
    ids = shoes.doc_ids
    run_text = "".join(f"rs-q01 {s} {d} {r} {10 - r} sys\n" for s in (1, 2) for r, d in enumerate(ids[s:s + 3], 1))
    run_path = save_served_upload("system.run", run_text.encode(), tmp_path)
    served, kind = read_served(run_path, shoes)
    assert kind == "run" and len(served) == 2 and served.entries[0].ranking == tuple(ids[1:4])
    unknown = save_served_upload("x.run", b"rs-q01 1 nope 1 1 sys\n", tmp_path)
    with pytest.raises(DataFormatError, match="'nope'"):
        read_served(unknown, shoes)


def test_log_report_has_headline_methodology_lines_and_escapes(shoe_log, shoes):
    run = audit_rag_log(shoe_log, shoes, LogAuditConfig(seed=3, attribution="both"), attributor=SubstringAttributor())
    headline = headline_table(run)
    assert "percentile bootstrap interval over queries" in headline.attrs["note"]
    assert list(queries_table(run)["query"]) == ["rs-q01", "rs-q02", "walk-in"]
    useful = queries_table(run)["useful (m)"]  # a count: whole numbers, and none for the unlabelled walk-in query
    assert useful.iloc[:2].tolist() == [int(shoes.useful(q).sum()) for q in ("rs-q01", "rs-q02")] and useful.isna()[2]
    assert lines_table(run, "rs-q01")["entailed per the judge"].tolist()[0] == shoes.doc_ids[0]
    html = build_log_report(run, shoes, renderer=lambda figs: [b"<svg/>"] * len(figs))
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for heading in ("Headline", "Methodology", "Models", "What the metrics mean", "Reproduce", "Per query"):
        assert f"<h2>{heading}</h2>" in html
    assert "Exposure ledger by segment — attribution entailed per the judge" in html
    assert "python -m fairrag_core audit-log" in html
    assert "--attribution both" in html and "--nli fake-substring" in html
    assert "<details><summary>rs-q01</summary>" in html and "sha256" in html
    assert "&lt;NA&gt;" not in html  # the walk-in query's missing count reads "—"
    assert len(html.encode()) < 200_000


def test_the_served_tab_reads_a_trace_export_also_gzipped(tmp_path):
    """The tab's reader is the CLI's (load_served): a trace export, plain or gzipped, is a log equal to its JSONL."""
    import gzip
    import shutil

    from fairrag_core import load_collection
    from fairrag_core.data import assets_dir
    from fairrag_studio.views.served import read_served

    collection = load_collection("running-shoes")
    traces = assets_dir() / "logs" / "running-shoes.otlp.jsonl"
    zipped = tmp_path / "export.jsonl.gz"
    with traces.open("rb") as src, gzip.open(zipped, "wb") as dst:
        shutil.copyfileobj(src, dst)
    jsonl, kind = read_served(assets_dir() / "logs" / "running-shoes.jsonl", collection)
    for path in (traces, zipped):
        log, what = read_served(path, collection)
        assert (what, kind, log.format) == ("log", "log", "otlp")
        assert [e.ranking for e in log.entries] == [e.ranking for e in jsonl.entries]


def test_an_audit_stored_before_the_newer_options_keeps_its_fingerprint():
    from fairrag_studio.panels.served import _settings_fingerprint

    config = LogAuditConfig(log="served.jsonl", k=5, user_model="gerr", n_boot=200, seed=7)
    # the settings the served tab fingerprinted before LogAuditConfig gained the trace map, the provider source and
    # the what-if (every field then, defaults included, but not the log's path)
    before = {"per_claim": False, "entail_threshold": None, "control_margin": None, "skip_degenerate": False,
              "min_support": None, "k": 5, "attribution": "auto", "min_rel": 1, "user_model": "gerr",
              "patience": 0.5, "utility": 0.5, "n_boot": 200, "level": 0.95, "seed": 7}
    assert _settings_fingerprint(config, "auto", "qwen-judge") == {"config": before, "attributor": None}
    assert _settings_fingerprint(config, "judge", "qwen-judge") == {"config": before, "attributor": "qwen-judge"}
    # a newer option in use makes another request
    replayed = LogAuditConfig(log="served.jsonl", k=5, user_model="gerr", n_boot=200, seed=7,
                              what_if_alphas=(0.0, 2.0), what_if_samples=50, provider_from="domain:metadata.url")
    assert _settings_fingerprint(replayed, "auto", "x")["config"] == before | {
        "provider_from": "domain:metadata.url", "what_if_alphas": [0.0, 2.0], "what_if_samples": 50}


# -- the same audit everywhere (issue 29): the providers from the log, the retrieval choice, requests not lines -----
def test_the_demo_trace_export_audits_with_providers_from_its_metadata_and_no_collection(tmp_path, monkeypatch):
    import shutil

    from fairrag_core.data import assets_dir

    shutil.copy(assets_dir() / "logs" / "running-shoes.otlp.jsonl", tmp_path / "shoes.otlp.jsonl")
    lines = (tmp_path / "shoes.otlp.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "half.otlp.jsonl").write_text("".join(lines[:17]), encoding="utf-8")  # another deployment's export
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(tmp_path))
    at = open_audit()
    pick_data_file(at, "shoes.otlp.jsonl")
    assert any("Trace export read: 200 served rankings over 20 queries" in i.value and "(200 requests)" in i.value
               for i in at.info)  # 33 export lines hold the 200 requests
    at.radio(key="served_providers").set_value("metadata").run()
    at.selectbox(key="served_multi").set_value("first").run()
    assert not at.exception and any("Providers from the log" in c.value for c in at.caption)
    at.button(key="served_run").click().run()
    assert not at.exception and not at.error
    headline = frame_with(at, "95% interval")
    assert "EE-D" in set(headline["metric"]) and "EE-R" not in set(headline["metric"])  # no relevance labels
    ledger = frame_with(at, "group")
    assert {"Velocore", "Stridewell"} <= set(ledger["group"])
    assert any("2 of 202 traces left out" in w.value for w in at.warning)
    command = next(c.value for c in at.code if "audit-log" in c.value)
    assert "--collection" not in command and command.endswith("--multi-retrieval first --provider-from metadata.source")
    inputs = next(c.value for c in at.caption if c.value.startswith("Inputs: "))
    assert inputs.startswith("Inputs: trace export **shoes\\.otlp\\.jsonl") and "(200 requests)" in inputs
    assert "collection **documents of shoes\\.otlp\\.jsonl" in inputs  # the log's documents, by their sha256
    # a second export audited the same way; the two audits, made without a collection, compare in the app
    pick_data_file(at, "half.otlp.jsonl")
    at.button(key="served_run").click().run()
    assert not at.exception and not at.error
    stored = at.multiselect(key="stored_pick")
    stored.set_value(stored.options[:2]).run()
    assert not at.exception and not at.error
    assert not any("different collections" in w.value or "not available" in w.value for w in at.warning)
    command = next(c.value for c in at.code if "compare-runs" in c.value)
    assert "--collection" not in command and command.endswith("--provider-from metadata.source")
    assert any("is fairer than" in m.value or "not fairer than" in m.value or "Too little evidence" in m.value
               for m in at.markdown)


def test_a_trace_export_counts_requests_in_its_identity_and_report(shoes):
    from fairrag_core.data import assets_dir, load_served
    from fairrag_core.data.identity import InputIdentity

    traces = assets_dir() / "logs" / "running-shoes.otlp.jsonl"
    run = audit_rag_log(load_served(traces, collection=shoes), shoes, LogAuditConfig(seed=1, n_boot=100))
    served = InputIdentity.from_dict(run.record.extra["inputs"][0])
    assert (served.format, served.lines, served.counts) == ("otlp", 33, "200 requests")
    assert InputIdentity("log", "a.jsonl", lines=200, rankings=200).counts == "200 lines"  # a RAG log: unchanged
    html = build_log_report(run, shoes)
    assert "Fairness audit of a trace export" in html and "200 requests" in html and "33 lines" not in html


def test_cli_flags_in_messages_name_the_pages_controls():
    from fairrag_studio.panels.served import _as_on_page

    assert _as_on_page("several independent retrieval spans (keep the first or the last with --multi-retrieval)") \
        == "several independent retrieval spans (keep the first or the last with 'Several retrieval spans')"
    assert _as_on_page("use --provider-from metadata.KEY, or --provider-map") == \
        "use 'Providers from' metadata.KEY, or 'Providers from' (a provider map)"
