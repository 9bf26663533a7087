"""Charts, grid and pages at 2,000 providers (issue 30): the top TOP_PROVIDERS plus one "all others" bar, a
distribution view over all of them (Lorenz curve, Gini), tables of fixed height that can be searched, and at most
TOP_PROVIDERS colours plus grey. At ≤ TOP_PROVIDERS providers every chart is the one drawn before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from many_providers import PROVIDERS, QUERY, write_collection

from fairrag_core import RankingConfig, load_collection, run_ranking
from fairrag_core.audit.ledger import TOP_PROVIDERS, exposure_ledger
from fairrag_core.retrieval import build_retriever
from fairrag_studio import charts
from fairrag_studio.charts.distribution import gini, lorenz_points
from fairrag_studio.charts.style import OTHERS_COLOUR, middle_ellipsis
from fairrag_studio.panels.providers import TABLE_HEIGHT, matching
from fairrag_studio.views.grid_html import rankings_grid_html


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_collection(tmp_path_factory.mktemp("many") / "solar")


@pytest.fixture(scope="module")
def ranking(folder):
    collection = load_collection(folder)
    retriever = build_retriever("bm25", collection.texts, store=False)
    return run_ranking(collection, retriever, QUERY, RankingConfig(alpha=1.0, n_samples=30, seed=1, candidates=None,
                                                                   k=20))


def test_provider_bars_show_the_top_and_all_others(ranking):
    providers = ranking.providers_table()
    assert len(providers) == PROVIDERS
    fig = charts.provider_bars(providers)
    assert all(len(bar.y) == TOP_PROVIDERS + 1 for bar in fig.data)  # ≤ N + 1 bars per series
    assert fig.data[0].y[-1] == "all others (1,986 providers)" and fig.layout.height <= 800
    assert list(fig.data[0].marker.pattern.shape).count("/") == 1
    others = providers.sort_values(["exposure", "provider"], ascending=[False, True])["exposure"].iloc[14:].sum()
    assert fig.data[0].x[-1] == pytest.approx(others)
    # the sum dwarfs the top provider: the axis ends past the largest, and a note gives the sum
    assert fig.layout.xaxis.range[1] == pytest.approx(1.25 * providers["exposure"].max())
    assert f"{others:.2f}" in fig.layout.annotations[0].text
    # a long name loses its middle on the axis and is whole in the hover
    long = [y for y in fig.data[0].y if y.startswith("Debian Solar")]
    assert all(len(y) <= 32 and "…" in y for y in long)


def test_provider_bars_at_fourteen_providers_are_unchanged():
    providers = pd.DataFrame({"provider": [f"P{i}" for i in range(14)], "exposure": np.linspace(1, 0, 14),
                              "deterministic_exposure": [1.0] + [0.0] * 13, "target_exposure": [0.5] * 14})
    fig = charts.provider_bars(providers)
    assert [len(bar.y) for bar in fig.data] == [14, 14, 14] and not fig.layout.annotations
    assert fig.data[0].marker.pattern.shape is None and fig.layout.title.subtitle.text is None
    assert fig.to_json() == charts.provider_bars(providers, top=None).to_json()


def test_ledger_chart_of_two_thousand_providers_is_horizontal_and_bounded(folder, ranking):
    docs = ranking.documents_table()
    ledger = exposure_ledger(docs.assign(target_exposure=docs["target_exposure"]), ranking.collection)
    fig = charts.exposure_ledger_chart(ledger)
    bars = [t for t in fig.data if t.type == "bar"]
    assert bars and all(t.orientation == "h" and len(t.y) == TOP_PROVIDERS + 1 for t in bars)
    assert bars[0].y[-1] == "all others (1,986 providers)"
    assert fig.layout.height <= 230 + 34 * (TOP_PROVIDERS + 1)
    assert {t.type for t in fig.data} == {"bar", "scatter"}  # the gaps beside the bars
    small = ledger.head(5)
    assert charts.exposure_ledger_chart(small).data[0].x == tuple(small["group"])  # vertical, as before


def test_lorenz_and_gini_by_hand():
    assert gini([1, 1, 1, 1]) == 0 and gini([0, 0, 0, 4]) == 0.75 and np.isnan(gini([0, 0]))
    p, s = lorenz_points(np.arange(10_000, dtype=float), points=100)
    assert len(p) == 101 and p[0] == 0 and p[-1] == 1 and s[-1] == pytest.approx(1)
    table = pd.DataFrame({"provider": list("abcd"), "exposure": [0.0, 0.0, 0.0, 4.0], "target_exposure": np.nan})
    fig = charts.lorenz_chart(table, [("sampled", "exposure", "#0072B2"), ("target", "target_exposure", "#009E73")])
    assert [t.name for t in fig.data] == ["equality (Gini 0)", "sampled (Gini 0.75)"]  # target: no values, left out


def test_grid_colours_at_most_fourteen_providers_and_grey(ranking):
    docs = ranking.documents_table()
    html = rankings_grid_html(docs["doc_id"].tolist(), docs["provider"].tolist(), docs["doc_id"].tolist(),
                              ranking.rankings, ranking.deterministic, fit=True)
    colours = set(re.findall(r"background:(#[0-9A-F]{6})", html))
    assert len(colours - {OTHERS_COLOUR}) <= TOP_PROVIDERS and OTHERS_COLOUR in colours
    assert "all others (" in html and "table-layout:fixed" in html and "min-width:4.2em" not in html


def test_search_and_ellipsis():
    table = pd.DataFrame({"provider": ["Debian Games Team", "Maintainer 0001"]})
    assert matching(table, "provider", "games")["provider"].tolist() == ["Debian Games Team"]
    assert middle_ellipsis("x" * 10, 5) == "xx…xx" and TABLE_HEIGHT <= 400


# -- the app at 2,000 providers -------------------------------------------------------------------------------------
APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture()
def upload(folder, tmp_path, monkeypatch):
    """The collection as this browser's upload, the way the sidebar's "Load this collection" keeps it."""
    from fairrag_studio.services import owners, resources, uploads

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_DATA_DIR", raising=False)
    monkeypatch.setattr(resources, "UPLOAD_ROOT", tmp_path / "uploads")
    resources.run_store.clear()
    owner = owners.new_key()
    saved = resources.save_upload(*[(name, (folder / name).read_bytes())
                                    for name in ("corpus.jsonl", "queries.jsonl", "qrels.txt")])
    uploads.remember_collection(resources.UPLOAD_ROOT, owner, saved)
    yield owner
    resources.run_store.clear()


def _elements(node) -> int:
    children = getattr(node, "children", None)
    if not children:
        return 1
    return 1 + sum(_elements(child) for child in children.values())


def test_the_provider_view_at_two_thousand_providers_stays_bounded(upload):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["owner"] = upload
    at.run()
    assert not at.exception, at.exception
    at.sidebar.select_slider(key="candidates").set_value("all").run()
    assert not at.exception, at.exception
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    bars = [s for s in specs if s["layout"].get("title", {}).get("text") == "Expected exposure per provider"]
    assert len(bars) == 1 and all(len(t["y"]) <= TOP_PROVIDERS + 1 for t in bars[0]["data"])
    assert any("How exposure is spread over all 2,000 providers" in s["layout"]["title"]["text"] for s in specs)
    tables = [t for t in at.dataframe if len(t.value) == PROVIDERS]
    assert len(tables) == 1  # every provider, in one table (of TABLE_HEIGHT px: Streamlit draws the rows in view)
    assert at.text_input(key="providers_search").value == ""
    at.text_input(key="providers_search").set_value("solar packaging").run()
    searched = [t.value for t in at.dataframe if "provider" in t.value and len(t.value) < PROVIDERS]
    assert [len(t) for t in searched] == [len(range(0, PROVIDERS, 97))]  # every 97th provider is a Debian Solar team
    assert searched[0]["provider"].str.startswith("Debian Solar Packaging Team").all()
    assert _elements(at._tree) < 150  # 89 here: no element per provider beyond the top N


def test_the_plotly_grid_names_the_grey_providers_once(ranking):
    docs = ranking.documents_table()
    fig = charts.rankings_grid(docs["doc_id"].tolist(), docs["provider"].tolist(), docs["doc_id"].tolist(),
                               ranking.rankings, ranking.deterministic)
    shown = [t for t in fig.data if t.showlegend is not False]
    assert len(shown) <= TOP_PROVIDERS + 1 and sum(t.marker.color == OTHERS_COLOUR for t in shown) == 1
    assert next(t.name for t in shown if t.marker.color == OTHERS_COLOUR).startswith("all others (")
    assert len({t.marker.color for t in fig.data} - {OTHERS_COLOUR}) <= TOP_PROVIDERS


def test_the_report_lists_the_top_providers_and_all_others(folder):
    from fairrag_core.ranking import SweepConfig, exposure_sweep
    from fairrag_studio.views.audit import build_report

    collection = load_collection(folder)
    retriever = build_retriever("bm25", collection.texts, store=False)
    run = exposure_sweep(collection, retriever, SweepConfig(alphas=(1.0,), n_samples=20, seed=1, candidates=None))
    html = build_report(run, collection, figures="static")
    assert html.count("all others (1,986 providers)") == 1  # the table's last row (the figure is an image)
    assert f"Showing the top {TOP_PROVIDERS} of 2,000 providers by retrieval exposure" in html
    assert "all others (26 region groups)" in html
    assert html.count("Maintainer 1") < 200  # not a row per provider (1,000 of them start so)
