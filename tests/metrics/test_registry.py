"""The metric registry is the one table: the CLI's and the app's per-query columns, the label tables of the CLI, the
app, the comparisons and the log audit's headline, and the glossary all read it, and agree with each other."""

from __future__ import annotations

import io
import json
import re

import pytest
from fakes import SubstringAttributor

from fairrag_core.audit import compare
from fairrag_core.audit.log_report import QUERY_FACTS, log_summary, query_columns, query_headers
from fairrag_core.audit.store import RunStore
from fairrag_core.cli import main
from fairrag_core.cli.common import METRIC_NAMES
from fairrag_core.errors import InvalidParameterError
from fairrag_core.glossary import GLOSSARY, term
from fairrag_core.metrics.registry import (
    COMPARISON,
    LEDGER,
    LOG_HEADLINE,
    LOG_QUERY,
    METRICS,
    SWEEP,
    Metric,
    keys,
    register,
)
from fairrag_core.rag import attribution
from fairrag_studio.views.audit import DISPLAY_NAMES, METRIC_COLUMNS
from fairrag_studio.views.served import queries_table

#: The per-query metric columns the CLI and the app showed before the registry (issue 28: two copies of one list).
LOG_QUERY_COLUMNS = ["ee_d", "ee_r", "providers_reached", "ear_cited", "eae_d_cited", "eae_d_per_cited_cited",
                     "ear_entailed", "eae_d_entailed", "eae_d_per_cited_entailed", "expeval_disparity",
                     "expeval_relevance", "expeval_difference"]


def _metric_columns(columns) -> list[str]:
    """The metric columns among a per-query table's columns (no query facts, no interval bounds)."""
    return [c for c in columns if c not in QUERY_FACTS and not re.search(r"_(low|high)$", c)]


def test_both_per_query_tables_read_one_list_from_the_registry():
    cli = query_columns(text=False, intervals=True)
    app = list(query_headers())
    assert cli[:3] == ["query_id", "lines", "m"] and app[:4] == ["query_id", "query", "lines", "m"]
    assert _metric_columns(cli) == _metric_columns(app) == LOG_QUERY_COLUMNS
    assert cli[3:9] == ["ee_d", "ee_d_low", "ee_d_high", "ee_r", "ee_r_low", "ee_r_high"]
    for column in LOG_QUERY_COLUMNS:  # every column is a registered per-query metric (per source, or itself)
        key = re.sub(r"_(cited|entailed)$", "", column)
        assert LOG_QUERY in METRICS[key].tables, column
        assert (column != key) == METRICS[key].per_source, column
    assert query_headers()["eae_d_per_cited_entailed"] == "EAE-D/cited (entailed)"
    assert query_headers()["providers_reached"] == "providers"


def test_a_new_per_query_metric_reaches_the_cli_and_the_app_together(monkeypatch):
    monkeypatch.setitem(METRICS, "toy", Metric("toy", "TOY", "a toy", "higher = better", "higher", "this test",
                                               tables=frozenset({LOG_QUERY}), interval=True))
    assert query_columns(text=False, intervals=True)[-3:] == ["toy", "toy_low", "toy_high"]
    assert list(query_headers().items())[-1] == ("toy", "TOY")


@pytest.fixture()
def audited(tmp_path, shoes, monkeypatch):
    """The CLI's text output of an audit that fills every per-query column (both attribution sources, a second
    user model, a query served twice), and the run it stored."""
    monkeypatch.setattr(attribution, "load_attributor", lambda name=None, device=None: SubstringAttributor())
    ids = shoes.doc_ids
    rows = [{"query_id": "rs-q01", "ranking": ids[:5], "answer": "x", "citations": [ids[0]]},
            {"query_id": "rs-q01", "ranking": ids[1:6], "answer": "y", "citations": [ids[2]]},
            {"query_id": "rs-q02", "ranking": ids[3:8], "answer": "z", "citations": [ids[4]]},
            {"query_id": "rs-q02", "ranking": ids[3:8], "answer": "z", "citations": [ids[3]]}]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    store, out = tmp_path / "runs.duckdb", io.StringIO()
    assert main(["audit-log", str(log), "--collection", "running-shoes", "--attribution", "both", "--user-model",
                 "gerr", "--paper-citations", "--seed", "3", "--boot", "100", "--store", str(store)], out=out) == 0
    text = out.getvalue()
    with RunStore(store) as kept:
        run = kept.load(text.split("Saved as run ")[1].split()[0])
    return text, run


def test_the_cli_and_the_app_print_the_same_per_query_metrics(audited):
    text, run = audited
    per_query = text.split("\nPer query (")[1].split("\n")
    printed = per_query[1].split()  # the table's header line
    headers = {header: column for column, header in query_headers().items()}
    shown = [headers.get(h, h) for h in queries_table(run).columns if "[95% over lines]" not in h]
    assert _metric_columns(printed) == _metric_columns(shown)
    assert {"ear_cited", "eae_d_per_cited_entailed", "expeval_difference", "ee_d_low"} <= set(printed)
    assert printed == [c for c in query_columns(text=False, intervals=True) if c in printed]  # the registry's order


def test_every_entry_has_a_label_a_direction_and_a_glossary_line():
    assert len(GLOSSARY) == len(METRICS) >= 26
    for key, metric in METRICS.items():
        assert re.fullmatch(r"[a-z0-9_]+", key) and metric.key == key
        assert metric.label and metric.meaning and metric.direction and metric.source, key
        assert metric.better in ("lower", "higher", None), key
        found = GLOSSARY[metric.label]
        assert found.metric is metric and term(metric.label) is found  # the glossary is the registry, not a copy
        assert found.line == f"{metric.label} — {metric.meaning}; {metric.direction} ({metric.source})."
        assert all(other in METRICS and key in METRICS[other].comparable_with for other in metric.comparable_with)
    assert METRICS["ee_r"].can_be_undefined and not METRICS["ee_d"].can_be_undefined
    assert METRICS["eae_d_per_cited"].comparable_with == ("ee_d",) and METRICS["eae_d"].comparable_with == ()
    assert {key for key, m in METRICS.items() if m.on_answers} == {  # an exposure-only audit leaves these out
        "eu", "eu_normalised", "ear", "eae_d", "eae_d_per_cited", "attributed_share", "attributed_gap",
        "cited_entailed", "entailed_cited"}


def test_labels_agree_between_the_cli_the_json_the_app_and_the_comparisons(audited):
    assert keys(SWEEP) == METRIC_COLUMNS == ("ee_d", "ee_r", "eu", "eu_normalised", "ear", "eae_d")
    assert keys(COMPARISON) == tuple(compare.METRICS) == ("ee_d", "ee_r", "eu", "ear", "eae_d", "eae_d_per_cited")
    for key in keys(SWEEP):
        assert DISPLAY_NAMES[key] == METRICS[key].label  # the app's and the report's tables
        assert METRIC_NAMES[key] == METRICS[key].in_words  # the CLI's lines for a metric without a value
    for key in keys(LEDGER):
        assert DISPLAY_NAMES[key] == METRICS[key].label
    for key, (label, _) in compare.METRICS.items():
        assert label == METRICS[key].label
    # the labels each place has always printed: one entry holds them all
    assert METRIC_NAMES == {"ee_d": "EE-D", "ee_r": "EE-R", "eu": "EU", "eu_normalised": "normalised EU",
                            "ear": "EAR", "eae_d": "EAE-D", "ee_d_interval": "EE-D's interval",
                            "ee_r_interval": "EE-R's interval"}
    assert DISPLAY_NAMES["eu_normalised"] == "EU (normalised)"
    assert DISPLAY_NAMES["share_gap"] == "gap (retrieval − target)"
    assert compare.METRICS["ee_r"] == ("EE-R", "higher = more exposure on useful documents")
    assert compare._ATTRIBUTION == ("ear", "eae_d", "eae_d_per_cited")
    # the log audit's headline: JSON key, CLI label and direction per metric
    summary = log_summary(audited[1])
    rows = dict(zip(summary["metric"], zip(summary["label"], summary["direction"], summary["over"])))
    assert rows["ee_d"] == ("EE-D", "lower = fairer", "every query")
    assert rows["ee_r"] == ("EE-R", "higher = better", "queries with relevance labels")
    assert rows["ear_cited"] == ("EAR (cited by the system)", "share of shown documents the answers rest on",
                                 "queries with cited lines")
    assert rows["eae_d_per_cited_entailed"][0] == "EAE-D/cited (entailed per the judge)"
    assert rows["expeval_disparity"] == ("disparity (gerr, patience 0.5, utility 0.5; expeval-normalised)",
                                         "lower = fairer", "queries with relevance labels")
    assert list(rows)[:11] == ["ee_d", "ee_r", "expeval_disparity", "expeval_relevance", "expeval_difference",
                               "ear_cited", "eae_d_cited", "eae_d_per_cited_cited", "ear_entailed", "eae_d_entailed",
                               "eae_d_per_cited_entailed"]
    for key, (label, _, _) in rows.items():
        base = key if key in METRICS else re.sub(r"_(cited|entailed)$", "", key)
        assert LOG_HEADLINE in METRICS[base].tables or base in ("cited_entailed", "entailed_cited"), key
        assert term(label).metric is METRICS[base], label  # the printed label resolves to its own entry


def test_a_metric_is_declared_once():
    with pytest.raises(InvalidParameterError, match="registered twice"):
        register(METRICS["ee_d"])
    with pytest.raises(InvalidParameterError, match="better is"):
        register(Metric("new_one", "NEW", "m", "d", "up", "s"))
    assert "new_one" not in METRICS
