"""End to end (issue 29): ``audit-log`` on an OTLP trace export whose reranker logs its input list with scores, the
providers from the documents' metadata, says which publisher is under-exposed against presence and against the
system's own scores, in text and in JSON."""

import io
import json

import numpy as np
from data.test_traces import T0, export, span, write_lines  # the OTLP builders of tests/data

from fairrag_core.cli import main


def _flat(prefix, docs, scores):
    attrs = {}
    for i, (doc, score) in enumerate(zip(docs, scores)):
        attrs[f"{prefix}.{i}.document.id"] = doc
        attrs[f"{prefix}.{i}.document.score"] = float(score)
        attrs[f"{prefix}.{i}.document.metadata"] = json.dumps({"source": "Acme" if doc[0] == "a" else "Brio"})
    return attrs


def _export(tmp_path, requests=80):
    """Each request reranks 20 candidates (10 Acme, 10 Brio, scores at random) and serves 5: Acme's best one and
    Brio's best four, so Acme gets 20 % of the exposure for 50 % of the candidates and about half the merit."""
    rng = np.random.default_rng(7)
    exports = []
    for r in range(requests):
        docs = [f"a{r}-{i}" for i in range(10)] + [f"b{r}-{i}" for i in range(10)]
        scores = rng.random(20)
        order = np.argsort(-scores)
        served = [next(int(i) for i in order if i < 10), *[int(i) for i in order if i >= 10][:4]]
        served.sort(key=lambda i: -scores[i])
        trace, start = f"{r:032x}", T0 + r * 10
        reranker = {"openinference.span.kind": "RERANKER", "reranker.query": f"question {r}",
                    **_flat("reranker.input_documents", docs, scores),
                    **_flat("reranker.output_documents", [docs[i] for i in served], scores[served])}
        exports.append(export(
            span(trace, f"{r:016x}", {"openinference.span.kind": "CHAIN", "fairrag.query_id": f"q{r}",
                                      "input.value": f"question {r}"}, start=start),
            span(trace, f"{r + 1000:016x}", reranker, parent=f"{r:016x}", start=start + 1, name="Reranker"),
            span(trace, f"{r + 2000:016x}", {"openinference.span.kind": "LLM", "output.value": "An answer."},
                 parent=f"{r:016x}", start=start + 2)))
    return write_lines(tmp_path, exports)


def test_audit_log_of_a_reranked_trace_export_finds_presence_and_merit(tmp_path):
    path = str(_export(tmp_path))
    argv = ["audit-log", path, "--provider-from", "metadata.source", "--seed", "3", "--no-store", "--boot", "200"]
    out = io.StringIO()
    assert main(argv, out=out) == 0
    text = out.getvalue()
    findings = text.split("\nFindings")[1].split("\nHeadline")[0]
    assert ("[serious] Acme is under-exposed for its presence: 20.0 % [20.0, 20.0] of retrieval exposure vs a "
            "presence share (of the logged candidates) of 50.0 % [50.0, 50.0] (2.5× under-exposed for its presence;"
            in findings)
    assert ("[serious] Acme is under-exposed for its merit: 20.0 % [20.0, 20.0] of retrieval exposure vs a fair "
            "share by merit (merit = the system's own scores, quartiles per query) of " in findings)
    assert "No test of retrieval exposure against presence" not in text
    out = io.StringIO()
    assert main([*argv, "--json", "--merit-threshold", "0.5"], out=out) == 0
    payload = json.loads(out.getvalue())
    by = {(f["metric"], f["subject"]): f for f in payload["findings"]}
    presence = by[("retrieval share − presence share", "Acme")]
    assert presence["kind"] == "under-exposed" and presence["reference"]["estimate"] == 0.5
    assert presence["p_adjusted"] <= 0.05 and presence["correction"] == "Holm over 2 providers"
    merit = by[("retrieval share − merit share", "Acme")]
    assert merit["kind"] == "under-exposed" and "score ≥ 0.5 meritorious" in merit["text"]
    assert 0.4 < merit["reference"]["estimate"] < 0.6
    assert "--merit-threshold 0.5" in payload["command"]
