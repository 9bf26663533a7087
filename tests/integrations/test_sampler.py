"""The components' shared sampler (fairrag_core/integrations/sampler.py) and the integrations' registry: the same
draws as the core's sample_rankings, Plackett-Luce's first-position law over many requests, seeds that replay, the
span it writes, the extras, the configuration line, and no framework imported by the core."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from fairrag_core.errors import InvalidParameterError
from fairrag_core.integrations import INTEGRATIONS, MissingExtraError, RequestSampler, configuration_line, replay
from fairrag_core.ranking.sampling import normalise_scores, sample_rankings

ROOT = Path(__file__).resolve().parents[2]
SCORES = [9.0, 7.5, 7.5, 4.0, 2.0, 1.0, -3.0, 0.5]
IDS = [f"d{i}" for i in range(len(SCORES))]


def first_position_law(scores, alpha):
    """Plackett-Luce's first draw (Kim & Diaz 2025, Eq. 2): p_i = exp(s̄_i^α) / Σ_j exp(s̄_j^α)."""
    logits = normalise_scores(np.asarray(scores, dtype=float)) ** alpha
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def test_each_request_is_the_core_samplers_draw_with_its_logged_seed():
    sampler = RequestSampler(2.0, 3, seed=11)
    for _ in range(20):
        draw = sampler.draw(IDS, SCORES)
        expected = sample_rankings(np.asarray(SCORES), alpha=2.0, n_samples=1, k=3, seed=draw.seed)[0].tolist()
        assert draw.positions == expected == replay(SCORES, alpha=2.0, k=3, seed=draw.seed)
    # the seeds are the counter's, from the base seed: a second component with the same base seed serves the same
    one, two = RequestSampler(2.0, 3, seed=11), RequestSampler(2.0, 3, seed=11)
    assert [one.draw(IDS, SCORES) for _ in range(5)] == [two.draw(IDS, SCORES) for _ in range(5)]
    assert len({sampler.request_seed() for _ in range(200)}) == 200


@pytest.mark.parametrize("alpha", [0.0, 2.0, 8.0])
def test_the_first_position_over_many_requests_follows_plackett_luce(alpha):
    sampler = RequestSampler(alpha, 3, seed=5)
    n = 6000
    counts = np.bincount([sampler.draw(IDS, SCORES).positions[0] for _ in range(n)], minlength=len(SCORES))
    expected = first_position_law(SCORES, alpha) * n
    kept = expected >= 5  # chi-square needs expected counts of 5 or more: pool the rest
    observed = np.append(counts[kept], counts[~kept].sum())
    expected = np.append(expected[kept], expected[~kept].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    if alpha == 0:
        assert np.allclose(first_position_law(SCORES, alpha), 1 / len(SCORES))
    # the two tied documents (7.5) are drawn first equally often, at any α
    assert abs(counts[1] - counts[2]) < 5 * math.sqrt(counts[1] + counts[2] + 1)


def test_a_named_request_gets_its_own_seed_whatever_the_order():
    a, b = RequestSampler(2.0, 3, seed=3), RequestSampler(2.0, 3, seed=3)
    forward = [a.request_seed("q", f"r{i}") for i in range(10)]
    backward = [b.request_seed("q", f"r{i}") for i in reversed(range(10))][::-1]
    assert forward == backward and len(set(forward)) == 10
    assert a.request_seed("q", "r1") != a.request_seed("other query", "r1")
    assert RequestSampler(2.0, 3, seed=4).request_seed("q", "r1") != forward[1]


def test_the_base_seed_is_drawn_and_kept_when_not_given():
    sampler = RequestSampler(1.0, 2)
    assert isinstance(sampler.seed, int) and 0 <= sampler.seed < 2**63
    assert RequestSampler(1.0, 2, seed=sampler.seed).request_seed() == sampler.request_seed()


def test_fewer_candidates_than_k_are_all_passed_on_sampled():
    draw = RequestSampler(2.0, 10, seed=1).draw(IDS[:3], SCORES[:3])
    assert sorted(draw.positions) == [0, 1, 2]


@pytest.mark.parametrize("bad", [None, math.nan])
def test_a_candidate_without_a_score_is_refused_naming_the_fix(bad):
    with pytest.raises(InvalidParameterError, match="no finite score.*retriever that scores"):
        RequestSampler(2.0, 3, seed=1).draw(IDS[:3], [1.0, bad, 2.0])


def test_bad_settings_are_refused():
    with pytest.raises(InvalidParameterError, match="alpha=-1.0 is negative"):
        RequestSampler(-1, 3)
    with pytest.raises(InvalidParameterError, match="k=0"):
        RequestSampler(1.0, 0)


def test_the_span_carries_what_the_trace_reader_reads():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ids = [f"doc-{i}" for i in range(100)]  # K = 100: more than the SDK's 128 attributes if written flat
    scores = [float(100 - i) for i in range(100)]
    metadata = [{"source": f"p{i % 3}", "title": "not logged"} for i in range(100)]
    sampler = RequestSampler(2.0, 5, seed=9, metadata_keys=("source",), name="FairNodePostprocessor",
                             tracer_provider=provider)
    draw = sampler.draw(ids, scores, query="shoes", query_id="q7", metadata=metadata)
    (span,) = exporter.get_finished_spans()
    attrs = dict(span.attributes)
    assert span.name == "FairNodePostprocessor" and span.dropped_attributes == 0
    assert {k: attrs[k] for k in ("openinference.span.kind", "reranker.query", "fairrag.query_id", "fairrag.alpha",
                                  "fairrag.seed", "fairrag.k")} == {
        "openinference.span.kind": "RERANKER", "reranker.query": "shoes", "fairrag.query_id": "q7",
        "fairrag.alpha": 2.0, "fairrag.seed": draw.seed, "fairrag.k": 5}
    candidates = json.loads(attrs["reranker.input_documents"])
    assert candidates == [{"id": d, "score": s, "metadata": {"source": m["source"]}}
                          for d, s, m in zip(ids, scores, metadata)]
    chosen = json.loads(attrs["reranker.output_documents"])
    assert chosen == [candidates[p] for p in draw.positions]
    assert replay([c["score"] for c in candidates], alpha=attrs["fairrag.alpha"], k=attrs["fairrag.k"],
                  seed=attrs["fairrag.seed"]) == draw.positions


def test_the_extras_are_the_registrys_packages():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras == {i.extra: list(i.packages) for i in INTEGRATIONS}


@pytest.mark.parametrize("integration", INTEGRATIONS, ids=lambda i: i.extra)
def test_each_component_implements_its_frameworks_extension_point(integration):
    pytest.importorskip(integration.imports)
    import importlib

    import fairrag_core.integrations as package

    component = getattr(package, integration.component)
    assert component.__module__ == f"fairrag_core.integrations{integration.module}"
    module_name, _, name = integration.extension_point.rpartition(".")
    point = getattr(importlib.import_module(module_name), name)
    if isinstance(point, type):
        assert issubclass(component, point)
    else:  # Haystack's @component decorator registers the class as a component
        from haystack.core.component import Component

        assert isinstance(component(alpha=1.0, k=2, seed=1), Component)


def test_the_core_imports_no_framework_and_a_missing_one_names_its_extra():
    code = ("import sys; import fairrag_core.integrations, fairrag_core.integrations.sampler, "
            "fairrag_core.audit.what_if; "
            "print(sorted(m for m in ('llama_index', 'langchain_core', 'haystack') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    code = ("import sys; sys.modules['haystack'] = None\n"
            "try:\n    from fairrag_core.integrations import FairSampler\n"
            "except ImportError as err:\n    print(type(err).__name__, err)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == (f"{MissingExtraError.__name__} FairSampler needs Haystack (haystack), which is not "
                                  "installed; pip install 'fairrag-core[haystack]'")


def test_the_configuration_line_names_every_component():
    line = configuration_line(2)
    assert line.startswith("To deploy it, set `alpha=2.0` in `FairNodePostprocessor(...)` (LlamaIndex)")
    assert all(f"`{i.component}(...)` ({i.framework})" in line for i in INTEGRATIONS)
    assert "`alpha=0.5`" in configuration_line(0.5)


def test_the_what_if_recommendation_ends_with_the_configuration_line(shoes, shoes_bm25, tmp_path):
    from fairrag_core.audit.rag_log import LogAuditConfig, audit_served
    from fairrag_core.audit.what_if import what_if_sampling, what_if_text
    from fairrag_core.data import load_served
    from fairrag_core.data.served import load_run

    lines = []
    for query in shoes.queries:
        scores = shoes_bm25.score(query.text)
        top = np.argsort(-scores, kind="stable")[:20]
        lines += [f"{query.query_id} Q0 {shoes.doc_ids[i]} {r} {scores[i]:.4f} bm25" for r, i in enumerate(top, 1)]
    path = tmp_path / "bm25.trec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    audit = audit_served(load_served(path, collection=shoes), shoes, LogAuditConfig(k=5, seed=1, n_boot=100))
    result = what_if_sampling(load_run(path), shoes, alphas=(0, 2, 4, 8, math.inf), n_samples=40, audit=audit)
    chosen = result.recommended_alpha
    assert chosen is not None
    assert result.recommendation_text.startswith(f"α = {chosen:g}: the lowest mean EE-D")
    assert result.recommendation_text.endswith("(m > 1). " + configuration_line(chosen))
    assert f"Recommender: {result.recommendation_text}" in what_if_text(result)  # the CLI's text
    assert result.to_dict()["recommendation"] == result.recommendation_text  # the JSON, the app and the report
