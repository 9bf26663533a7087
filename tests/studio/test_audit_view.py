import math
import re

import numpy as np
import pandas as pd
import pytest

from fairrag_core import DataFormatError, InvalidParameterError, SweepConfig, exposure_sweep, load_collection
from fairrag_studio.panels.sweeps import parse_alphas
from fairrag_studio.views.audit import build_report, compare_runs, ledger_for, summary_by_system, system_label


def _table():
    return pd.DataFrame({
        "query_id": ["a", "b", "a", "b", "c"], "alpha": [0.0, 0.0, math.inf, math.inf, 0.0],
        "fairness_question": [True, True, True, True, False], "ee_d": [0.2, 0.4, 1.0, 1.0, 0.9],
        "eu": [0.5, 0.7, 0.6, 0.8, 0.0],
    })


def test_summary_means_per_system_over_fairness_questions_only():
    out = summary_by_system(_table())
    assert out["system"].tolist() == ["α = 0", "deterministic"]
    assert out["ee_d"].tolist() == pytest.approx([0.3, 1.0]) and out["eu"].tolist() == pytest.approx([0.6, 0.7])
    assert out["queries"].tolist() == [2, 2]
    assert system_label(2.5) == "α = 2.5"


def test_compare_runs_lines_up_systems_and_takes_differences():
    other = _table().assign(eu=lambda t: t["eu"] + 0.1)
    out = compare_runs(_table(), other, ("r1", "r2"))
    assert out["eu Δ"].tolist() == pytest.approx([0.1, 0.1]) and out["ee_d Δ"].tolist() == pytest.approx([0, 0])


def test_parse_alphas_sorts_dedupes_and_names_the_fix():
    assert parse_alphas("8, 0,2;2 , 4") == (0.0, 2.0, 4.0, 8.0)
    assert parse_alphas("2, inf") == (2.0,)  # the deterministic baseline is added by every sweep anyway
    for bad, message in (("", "at least one"), ("1, two", "α must be a number ≥ 0.*got 'two'"),
                         ("-1", "got '-1'"), ("nan", "got 'nan'"), ("inf", "baseline is added")):
        with pytest.raises(InvalidParameterError, match=message):
            parse_alphas(bad)


@pytest.fixture(scope="module")
def people_audit():
    from fairrag_core.retrieval import BM25Retriever

    people = load_collection("people")
    run = exposure_sweep(people, BM25Retriever(people.texts),
                         SweepConfig(alphas=(1.0, math.inf), n_samples=20, k=5, seed=0,
                                     query_ids=("ppl-q01", "ppl-q02", "ppl-q03")))
    return people, run


def test_ledger_for_selects_one_system(people_audit):
    people, run = people_audit
    documents = run.documents
    det = ledger_for(documents, people, math.inf, "gender")
    assert det["retrieval_exposure"].sum() == pytest.approx(15.0)  # 3 queries × k = 5
    assert ledger_for(documents, people, 1.0, "provider")["retrieval_exposure"].sum() == pytest.approx(15.0)


def _fake_svgs(figures):
    return [b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>' for _ in figures]


def test_report_is_self_contained_and_has_a_ledger_per_system_and_grouping(people_audit):
    people, run = people_audit
    html = build_report(run, people, title="Audit <people>", figures="interactive")
    assert html.startswith("<!doctype html>") or html.lower().startswith("<!doctype html>")
    assert "Audit &lt;people&gt;" in html and "<script src=" not in html
    for by in ("provider", *people.categories()):
        for system in ("α = 1", "deterministic"):
            assert f"Exposure ledger by {by} — {system}" in html
    assert html.index("— deterministic") < html.index("— α = 1")  # the system the tour discusses comes first
    assert html.count("plotly.js v") == 1
    assert "python -m fairrag_core exposure-sweep --collection people" in html  # the reproduce command


def test_static_report_is_small_and_has_methodology_drill_down_and_intervals(people_audit):
    people, run = people_audit
    html = build_report(run, people, renderer=_fake_svgs)
    assert "plotly.js v" not in html and html.count('<img src="data:image/svg+xml;base64,') == 1 + 2 * 3
    assert len(html.encode()) < 300_000
    for heading in ("Methodology", "Models", "What the metrics mean", "Reproduce", "Per query"):
        assert f"<h2>{heading}</h2>" in html
    assert "step model MU(i) = 1[i ≤ k]" in html and "N = 20 rankings per query and system" in html
    assert '<pre class="command"><code>python -m fairrag_core exposure-sweep --collection people' in html
    assert html.count("<details><summary>ppl-q0") == 3
    assert "percentile bootstrap interval over queries" in html
    cells = re.findall(r"<td>(-?\d\.\d{3})</td>\s*<td>\[(-?\d\.\d{3}), (-?\d\.\d{3})\]</td>", html)
    assert len(cells) > 20
    for cell in cells:
        value, low, high = map(float, cell)
        assert low <= value <= high


def test_summary_intervals_contain_the_means(people_audit):
    from fairrag_studio.views.audit import default_system_index, summary_with_intervals

    _, run = people_audit
    out = summary_with_intervals(run.table)
    for metric in ("ee_d", "ee_r"):
        assert (out[f"{metric}_low"] <= out[metric] + 1e-12).all()
        assert (out[metric] <= out[f"{metric}_high"] + 1e-12).all()
    assert default_system_index([0.0, 2.0, math.inf]) == 2 and default_system_index([1.0]) == 0


def test_uploads_go_through_the_core_loaders(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setattr(resources, "UPLOAD_ROOT", tmp_path)
    good = b'{"doc_id": "d1", "text": "a red shoe", "provider": "P"}\n{"doc_id": "d2", "text": "a blue shoe"}\n'
    folder = resources.save_upload(("my.jsonl", good), None, None)
    assert folder.parent.parent == tmp_path and (folder / "corpus.jsonl").read_bytes() == good
    assert resources.save_upload(("my.jsonl", good), None, None) == folder  # same content and name, same folder
    collection = load_collection(folder)
    assert collection.doc_ids == ["d1", "d2"] and collection.name == "my"  # the upload keeps its name
    duplicate = b'{"doc_id": "d1", "text": "x"}\n{"doc_id": "d1", "text": "y"}\n'
    bad = resources.save_upload(("dup.jsonl", duplicate), None, None)
    with pytest.raises(DataFormatError, match="d1"):
        load_collection(bad)
    csv = resources.save_upload(("c.csv", b"doc_id,text\nx,hello\n"), None, None)
    assert (csv / "corpus.csv").exists() and load_collection(csv).doc_ids == ["x"]
    assert np.isfinite(len(collection))
