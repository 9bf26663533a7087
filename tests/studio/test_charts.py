import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from fairrag_studio import charts
from fairrag_studio.charts import (
    attributed_vs_retrieval_disparity,
    ee_d_by_alpha,
    exposure_bars,
    exposure_ledger_chart,
    figure_html,
    figure_png,
    metric_vs_disparity,
    provider_bars,
    provider_colours,
    rankings_grid,
)

INF = float("inf")


# -- fixtures ------------------------------------------------------------------------------------------------------
@pytest.fixture
def candidates():
    doc_ids = [f"d{i}" for i in range(6)]
    # "hidden" owns only d5, which appears only in sample 5 (not shown with max_rows=3)
    providers = ["acme", "bolt", "acme", "cobra", "bolt", "hidden"]
    titles = [f"Title of d{i}" for i in range(6)]
    rankings = np.array([[0, 1, 2], [3, 4, 0], [2, 3, 1], [4, 0, 3], [5, 1, 0]])
    deterministic = np.array([0, 1, 2])
    return doc_ids, providers, titles, rankings, deterministic


@pytest.fixture
def documents():
    return pd.DataFrame(
        {
            "doc_id": ["a", "b", "c", "d", "e"],
            "provider": ["p1", "p2", "p1", "p3", "p2"],
            "exposure": [0.2, 0.9, 0.5, 0.1, 0.7],
            "deterministic_exposure": [0.0, 1.0, 1.0, 0.0, 1.0],
            "target_exposure": [0.4, 0.6, 0.6, 0.0, 0.4],
        }
    )


@pytest.fixture
def sweep():
    """Two queries × α ∈ {0, 2, 4} plus a deterministic row per query (α = inf)."""
    rows = [
        ("q1", 0.0, 0.10, 0.30, 0.05),
        ("q2", 0.0, 0.20, 0.40, 0.25),
        ("q1", 2.0, 0.40, 0.50, 0.30),
        ("q2", 2.0, 0.60, np.nan, 0.50),
        ("q1", 4.0, 0.80, 0.70, 0.60),
        ("q2", 4.0, 0.70, 0.60, 0.75),
        ("q1", INF, 1.00, 0.65, 0.90),
        ("q2", INF, 0.90, 0.75, 0.95),
    ]
    table = pd.DataFrame(rows, columns=["query_id", "alpha", "ee_d", "eu", "eae_d"])
    table["system"] = np.where(np.isinf(table["alpha"]), "deterministic", "stochastic")
    return table


def trace(fig: go.Figure, name: str):
    matches = [t for t in fig.data if t.name == name]
    assert len(matches) == 1, f"expected one trace named {name!r}, got {[t.name for t in fig.data]}"
    return matches[0]


def assert_projector_ready(fig: go.Figure) -> None:
    assert fig.layout.template == pio.templates["plotly_white"]
    assert fig.layout.font.size >= 14
    assert fig.layout.height and fig.layout.height >= 300
    assert fig.layout.title.text
    assert fig.layout.xaxis.title.text


# -- palette -------------------------------------------------------------------------------------------------------
def test_provider_colours_deterministic_and_distinct():
    names = [f"provider-{i:02d}" for i in range(14)]
    colours = provider_colours(names)
    assert list(colours) == sorted(names)
    assert len(set(colours.values())) == 14
    assert provider_colours(list(reversed(names)) + names[:3]) == colours
    # the projector palette first, in sorted-name order
    assert provider_colours(["zeta", "alpha"]) == {"alpha": "#4000DC", "zeta": "#9A9A00"}
    assert all(c.startswith("#") and len(c) == 7 for c in colours.values())


# -- rankings grid -------------------------------------------------------------------------------------------------
def grid_cells(fig: go.Figure) -> dict[tuple[str, int], tuple[str, str]]:
    """(row label, rank) → (provider, doc id) read back from the figure data."""
    cells = {}
    for bar in fig.data:
        for doc_id, _title, provider, rank, row in bar.customdata:
            assert provider == bar.name
            assert (row, rank) not in cells
            cells[(row, int(rank))] = (bar.name, doc_id)
    return cells


def test_rankings_grid_cells_match_input(candidates):
    doc_ids, providers, titles, rankings, deterministic = candidates
    fig = rankings_grid(doc_ids, providers, titles, rankings, deterministic, max_rows=3)
    cells = grid_cells(fig)
    rows = {row for row, _ in cells}
    assert rows == {"deterministic", "sample 1", "sample 2", "sample 3"}  # min(N, max_rows) + 1
    assert len(cells) == 4 * 3
    for rank, position in enumerate(deterministic, start=1):
        assert cells[("deterministic", rank)] == (providers[position], doc_ids[position])
    for i in range(3):
        for j in range(3):
            position = rankings[i, j]
            assert cells[(f"sample {i + 1}", j + 1)] == (providers[position], doc_ids[position])
    # the legend lists exactly the providers shown; "hidden" is only in the 5th (unshown) sample
    assert {t.name for t in fig.data} == {"acme", "bolt", "cobra"}
    colours = provider_colours(providers)
    assert all(t.marker.color == colours[t.name] for t in fig.data)
    assert fig.layout.title.subtitle.text == "showing 3 of 5 samples"
    # deterministic row is on top: first tick, and the y axis runs downwards
    assert "deterministic" in fig.layout.yaxis.ticktext[0]
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 3]
    assert_projector_ready(fig)


def test_rankings_grid_all_samples_and_hover(candidates):
    doc_ids, providers, titles, rankings, deterministic = candidates
    fig = rankings_grid(doc_ids, providers, titles, rankings, deterministic)
    cells = grid_cells(fig)
    assert len({row for row, _ in cells}) == 5 + 1
    assert cells[("sample 5", 1)] == ("hidden", "d5")
    assert "showing" not in fig.layout.title.subtitle.text
    hidden = trace(fig, "hidden")
    assert list(hidden.text) == ["d5"]
    assert hidden.customdata[0][1] == "Title of d5"
    assert "customdata[1]" in hidden.hovertemplate  # the title is in the hover


@pytest.mark.parametrize(
    ("rankings", "deterministic", "message"),
    [
        (np.array([0, 1, 2]), np.array([0, 1, 2]), r"\(N, k\)"),
        (np.array([[0, 1, 2]]), np.array([0, 1]), "shape"),
        (np.array([[0, 1, 9]]), np.array([0, 1, 2]), "outside"),
        (np.array([[0.0, 1.0, 2.0]]), np.array([0, 1, 2]), "integer"),
    ],
)
def test_rankings_grid_rejects_bad_input(candidates, rankings, deterministic, message):
    doc_ids, providers, titles, _, _ = candidates
    with pytest.raises(ValueError, match=message):
        rankings_grid(doc_ids, providers, titles, rankings, deterministic)


# -- exposure per document / provider ------------------------------------------------------------------------------
def test_exposure_bars_sorted_top_and_values(documents):
    fig = exposure_bars(documents, top=3)
    assert [t.name for t in fig.data] == ["stochastic (sampled)", "deterministic", "target"]
    sampled = trace(fig, "stochastic (sampled)")
    assert list(sampled.y) == ["b", "e", "c"] and sampled.orientation == "h"
    assert list(sampled.x) == [0.9, 0.7, 0.5]
    assert list(trace(fig, "deterministic").x) == [1.0, 1.0, 1.0]
    assert list(trace(fig, "target").x) == [0.6, 0.4, 0.6]
    assert fig.layout.xaxis.title.text == "expected exposure (P[in top k])"
    assert "top 3 of 5" in fig.layout.title.subtitle.text
    assert_projector_ready(fig)
    assert len(exposure_bars(documents, top=None).data[0].y) == 5


def test_exposure_bars_omits_all_nan_target(documents):
    fig = exposure_bars(documents.assign(target_exposure=np.nan))
    assert [t.name for t in fig.data] == ["stochastic (sampled)", "deterministic"]


def test_exposure_bars_missing_columns_named(documents):
    with pytest.raises(ValueError, match="'deterministic_exposure', 'target_exposure'"):
        exposure_bars(documents.drop(columns=["deterministic_exposure", "target_exposure"]))
    with pytest.raises(ValueError, match="top"):
        exposure_bars(documents, top=0)
    with pytest.raises(ValueError, match="no rows"):
        exposure_bars(documents.iloc[:0])


def test_provider_bars(documents):
    providers = documents.groupby("provider", as_index=False)[
        ["exposure", "deterministic_exposure", "target_exposure"]
    ].sum()
    fig = provider_bars(providers)
    sampled = trace(fig, "stochastic (sampled)")
    assert list(sampled.y) == ["p2", "p1", "p3"]
    assert sampled.x == pytest.approx([1.6, 0.7, 0.1])
    assert list(trace(fig, "deterministic").x) == [2.0, 1.0, 0.0]
    assert fig.layout.xaxis.title.text == "expected # in the top k"
    assert [t.name for t in provider_bars(providers.assign(target_exposure=np.nan)).data] == [
        "stochastic (sampled)",
        "deterministic",
    ]
    with pytest.raises(ValueError, match="'provider'"):
        provider_bars(providers.drop(columns="provider"))


# -- EE-D by α (Fig. 3) --------------------------------------------------------------------------------------------
def test_ee_d_by_alpha_means_band_and_deterministic(sweep):
    fig = ee_d_by_alpha(sweep)
    mean = trace(fig, "mean over queries")
    assert list(mean.x) == [0.0, 2.0, 4.0]
    assert mean.y == pytest.approx([0.15, 0.50, 0.75])
    se = [np.std(pair, ddof=1) / math.sqrt(2) for pair in ([0.1, 0.2], [0.4, 0.6], [0.8, 0.7])]
    band = trace(fig, "±1 standard error")
    assert band.mode == "lines" and band.fill == "toself"
    means = [0.15, 0.5, 0.75]
    upper = [m + s for m, s in zip(means, se)]
    lower = [m - s for m, s in zip(means, se)]
    assert band.y == pytest.approx(upper + lower[::-1])
    deterministic = trace(fig, "deterministic")
    assert deterministic.y == pytest.approx([0.95, 0.95])
    assert deterministic.line.dash == "dash"
    assert list(deterministic.x) == [0.0, 4.0]
    assert any(a.text == "deterministic" for a in fig.layout.annotations)
    queries = trace(fig, "individual queries")
    assert [y for y in queries.y if y is not None] == pytest.approx([0.1, 0.4, 0.8, 0.2, 0.6, 0.7])
    assert list(fig.layout.yaxis.range) == [0, 1.05]
    assert fig.layout.xaxis.type == "linear"
    assert_projector_ready(fig)


def test_ee_d_by_alpha_without_system_uses_inf_alpha(sweep):
    fig = ee_d_by_alpha(sweep.drop(columns="system"))
    assert trace(fig, "mean over queries").y == pytest.approx([0.15, 0.50, 0.75])
    assert trace(fig, "deterministic").y == pytest.approx([0.95, 0.95])
    only_stochastic = ee_d_by_alpha(sweep[np.isfinite(sweep["alpha"])].drop(columns="system"))
    assert "deterministic" not in {t.name for t in only_stochastic.data}


def test_ee_d_by_alpha_missing_column(sweep):
    with pytest.raises(ValueError, match="'query_id'"):
        ee_d_by_alpha(sweep.drop(columns="query_id"))


# -- metric vs disparity (Figs. 4–5) -------------------------------------------------------------------------------
def test_metric_vs_disparity_points_and_mean_curve(sweep):
    fig = metric_vs_disparity(sweep, "eu", label="EU")
    points = [t for t in fig.data if t.mode == "markers"]
    assert [t.name for t in points] == ["α = 0", "α = 2", "α = 4", "deterministic"]
    assert sum(len(t.x) for t in points) == 7  # the NaN-eu row is dropped
    assert list(trace(fig, "α = 2").x) == [0.4]
    assert trace(fig, "deterministic").marker.symbol == "diamond"
    curve = trace(fig, "mean per α")
    assert curve.x == pytest.approx([0.15, 0.4, 0.75])  # α = 2 mean EE-D uses only the non-NaN row
    assert list(curve.x) == sorted(curve.x)
    assert curve.y == pytest.approx([0.35, 0.5, 0.65])
    assert fig.layout.yaxis.title.text == "EU"
    assert fig.layout.xaxis.title.text.startswith("EE-D")
    assert_projector_ready(fig)


def test_metric_vs_disparity_curve_sorted_by_ee_d_not_alpha():
    table = pd.DataFrame({"alpha": [0.0, 1.0, 2.0], "ee_d": [0.5, 0.2, 0.9], "eu": [0.1, 0.2, 0.3]})
    curve = trace(metric_vs_disparity(table, "eu"), "mean per α")
    assert list(curve.x) == [0.2, 0.5, 0.9]
    assert list(curve.y) == [0.2, 0.1, 0.3]
    assert list(curve.customdata) == ["1", "0", "2"]


def test_metric_vs_disparity_errors(sweep):
    with pytest.raises(ValueError, match="'alpha', 'ee_r'"):
        metric_vs_disparity(sweep.drop(columns="alpha"), "ee_r")
    with pytest.raises(ValueError, match="no eu values to plot"):
        metric_vs_disparity(sweep.assign(eu=np.nan), "eu")


def test_attributed_vs_retrieval_disparity_has_identity_line(sweep):
    fig = attributed_vs_retrieval_disparity(sweep)
    identity = trace(fig, "y = x (citations as fair as retrieval)")
    assert list(identity.x) == list(identity.y)
    assert identity.x[0] == 0 and identity.x[-1] >= 1
    assert identity.line.dash == "dash"
    assert trace(fig, "mean per α").y == pytest.approx([0.15, 0.4, 0.675])
    assert fig.layout.yaxis.title.text.startswith("EAE-D")
    with pytest.raises(ValueError, match="'eae_d'"):
        attributed_vs_retrieval_disparity(sweep.drop(columns="eae_d"))


# -- exposure ledger -----------------------------------------------------------------------------------------------
def test_exposure_ledger_chart():
    ledger = pd.DataFrame(
        {
            "provider": ["a", "b"],
            "retrieval_share": [0.7, 0.3],
            "attributed_share": [np.nan, np.nan],
            "target_share": [0.5, 0.5],
        }
    )
    fig = exposure_ledger_chart(ledger, group_column="provider")
    assert [t.name for t in fig.data] == ["retrieval (exposure share)", "target (fair share)",
                                          "gap (retrieval − target) (no interval computed)"]
    assert list(fig.data[0].x) == ["a", "b"]
    assert list(fig.data[0].y) == [0.7, 0.3]
    assert list(fig.data[2].y) == pytest.approx([0.2, -0.2]) and fig.data[2].yaxis == "y2"  # the lower panel
    assert fig.layout.yaxis.tickformat == ".0%" and fig.layout.yaxis2.tickformat == "+.0%"
    assert fig.layout.xaxis2.title.text == "provider" and fig.layout.height >= 600 and "gaps" in fig.layout.title.text
    bars_only = exposure_ledger_chart(ledger, group_column="provider", gaps=False)
    assert len(bars_only.data) == 2 and bars_only.layout.xaxis.title.text == "provider"
    assert_projector_ready(bars_only)
    full = exposure_ledger_chart(ledger.rename(columns={"provider": "group"}).assign(
        attributed_share=[0.9, 0.1], share_gap_low=[0.1, -0.3], share_gap_high=[0.3, -0.1]))
    assert [t.name for t in full.data][3:] == ["gap (retrieval − target) with its 95% interval",
                                               "gap (attributed − target) (no interval computed)"]
    gap = full.data[3]
    assert list(gap.error_y.array) == pytest.approx([0.1, 0.1]) and list(gap.error_y.arrayminus) == pytest.approx(
        [0.1, 0.1])
    assert list(full.data[4].y) == pytest.approx([0.4, -0.4]) and full.data[4].error_y.array is None
    low, high = full.layout.yaxis2.range
    assert low < -0.4 and high > 0.4  # every gap and interval is inside the panel
    no_target = exposure_ledger_chart(ledger.rename(columns={"provider": "group"}).assign(target_share=np.nan))
    assert [t.name for t in no_target.data] == ["retrieval (exposure share)"]  # no labels: no gap to draw
    assert no_target.layout.title.subtitle.text == "No gap to draw: the fair target needs relevance labels"
    legend_top = full.layout.legend
    assert (legend_top.yanchor, legend_top.y) == ("bottom", 1.02)  # above the panels: clear of long group names
    with pytest.raises(ValueError, match="'group'"):
        exposure_ledger_chart(ledger)


# -- export --------------------------------------------------------------------------------------------------------
def test_figure_html_is_self_contained(documents):
    page = figure_html(exposure_bars(documents))
    assert "<html" in page
    assert page.count("plotly.js v") == 1
    assert "<script src=" not in page


def test_figure_png_renders(documents, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", "")  # so that monkeypatch restores the caller's value afterwards
    monkeypatch.delenv("BROWSER_PATH")
    png = figure_png(exposure_bars(documents), width=500, scale=1)
    assert png[:4] == b"\x89PNG"


def test_figure_png_explains_missing_chromium(documents, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("no browser")

    monkeypatch.setattr(charts.pio, "to_image", broken)
    with pytest.raises(RuntimeError, match="apt-get install chromium"):
        figure_png(exposure_bars(documents))


def test_style_gives_the_same_figure_as_plotlys_validated_template():
    from fairrag_studio.charts.style import TEMPLATE, style

    def bars():
        return go.Figure(go.Bar(x=[0.2, 0.5], y=["A", "B"], orientation="h"))

    fast = style(bars(), title="t", x_title="x", y_title="y", height=300, subtitle="s", legend_title="l")
    checked = style(bars(), title="t", x_title="x", y_title="y", height=300, subtitle="s", legend_title="l")
    checked.update_layout(template=TEMPLATE)  # the validated assignment style() avoids
    assert fast.to_dict() == checked.to_dict()
    fast.layout.template.layout.font.size = 99  # the figure's copy, not the registered template
    assert pio.templates[TEMPLATE].layout.font.size != 99
