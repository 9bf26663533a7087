"""The Playground on a generated 20,000-document collection with 2,000 providers, opened from the server's data folder
(issue 30, Must have 5): it renders, steps through α and reruns without error. No timing is asserted here
(benchmarks/app_at_scale.py measures it on the 63,666-document Debian collection)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
N_DOCS, N_PROVIDERS = 20_000, 2_000
WORDS = "python web framework database server editor library graphics sound network shell tool".split()


@pytest.fixture()
def data(tmp_path, monkeypatch):
    """$FAIRRAG_DATA_DIR holding ``generated/``: 20,000 documents over 2,000 providers, two queries, qrels."""
    from fairrag_studio.services import resources

    folder = tmp_path / "data" / "generated"
    folder.mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for i in range(N_DOCS):
            text = " ".join(WORDS[(i * j + j) % len(WORDS)] for j in range(1, 9))
            out.write(json.dumps({"doc_id": f"d{i}", "title": f"package {i}", "text": text,
                                  "provider": f"team {i % N_PROVIDERS}", "groups": {"section": f"s{i % 7}"}}) + "\n")
    (folder / "queries.jsonl").write_text('{"query_id": "q1", "text": "python web framework"}\n'
                                          '{"query_id": "q2", "text": "sound editor"}\n')
    (folder / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 1\n")
    monkeypatch.setenv("FAIRRAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FAIRRAG_INDEX", str(tmp_path / "index"))
    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.setattr(resources, "UPLOAD_ROOT", tmp_path / "uploads")
    resources.run_store.clear()
    yield folder
    resources.run_store.clear()


def test_the_playground_renders_and_steps_alpha_on_20000_documents(data):
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["collection_choice"] = "generated (data folder)"
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["settings"].collection == str(data)
    assert f"{N_DOCS} documents · 2 queries · {N_PROVIDERS} providers · categories: section" in \
        [c.value for c in at.sidebar.caption]
    assert at.text_input(key="query").value == "python web framework"
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Distinct rankings"].endswith("of 20")
    assert any(f"of the {N_PROVIDERS} providers are among the top K = 20 candidates" in c.value for c in at.caption)
    stops = at.select_slider(key="alpha").options
    assert len(stops) > 1
    for stop in (stops[0], stops[-1]):
        at.select_slider(key="alpha").set_value(float(stop)).run()
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error]
    at.text_input(key="query").set_value("sound editor").run()
    assert not at.exception, at.exception
    assert "EE-D (lower = fairer)" in {m.label for m in at.metric}
