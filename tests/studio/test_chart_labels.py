"""User text in charts is escaped (issue 19, item 10): Plotly draws labels, legends, bar texts, hover boxes and titles
from a subset of HTML, so a provider named ``<a href=…>`` must not become a live link. Every chart builder that
takes providers, groups, document ids or titles, queries, aspects or list names is built with such names; its
figure holds the escaped text (``&lt;a``) and never a tag, while the tables given to it stay as they were."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairrag_studio import charts
from fairrag_studio.charts.style import label

EVIL = '<a href="https://evil.example">x</a>'
BOLD = "<b>big</b> & <span style='font-size:80px'>loud</span>"


def strings(node) -> list[str]:
    """Every string in a figure's data and layout (without the template's), however deep."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for key, value in node.items() if key != "template" for s in strings(value)]
    if isinstance(node, (list, tuple, np.ndarray)):
        return [s for value in node for s in strings(value)]
    return []


def assert_escaped(fig, evil: str = EVIL) -> None:
    texts = strings(fig.to_plotly_json())
    assert not [t for t in texts if "<a " in t or "<span" in t or "<b>big" in t], "a user's tag reached the figure"
    assert any(label(evil) in t for t in texts)


def test_the_helper_escapes_tags_and_ampersands_and_keeps_quotes():
    assert label(EVIL) == '&lt;a href="https://evil.example"&gt;x&lt;/a&gt;'
    assert label("A & B <i>") == "A &amp; B &lt;i&gt;" and label(3) == "3"


def test_rankings_grid_escapes_providers_ids_and_titles():
    fig = charts.rankings_grid([EVIL, "d1", "d2"], [EVIL, BOLD, "ok"], [BOLD, EVIL, "t"],
                               np.array([[0, 1, 2], [2, 1, 0]]), np.array([0, 1, 2]))
    assert_escaped(fig)
    assert label(EVIL) in {t.name for t in fig.data}  # the legend entry, shown as typed
    assert len({t.marker.color for t in fig.data}) == 3  # colours still by the raw names


@pytest.fixture()
def documents():
    return pd.DataFrame({"doc_id": [EVIL, "d2", BOLD], "provider": [EVIL, BOLD, "ok"],
                         "exposure": [0.5, 0.3, 0.2], "deterministic_exposure": [1.0, 0.0, 0.0],
                         "target_exposure": [0.4, 0.4, 0.2]})


def test_document_and_provider_bars_escape_their_categories(documents):
    before = documents.copy()
    assert_escaped(charts.exposure_bars(documents))
    providers = documents.drop(columns="doc_id")
    assert_escaped(charts.provider_bars(providers))
    pd.testing.assert_frame_equal(documents, before)  # the table (and its CSV download) keeps the real names


def test_the_ledger_escapes_groups():
    ledger = pd.DataFrame({"group": [EVIL, BOLD, "ok"], "retrieval_share": [0.5, 0.3, 0.2],
                           "attributed_share": [0.4, 0.4, 0.2], "target_share": [0.3, 0.3, 0.4]})
    fig = charts.exposure_ledger_chart(ledger)
    assert_escaped(fig)
    assert list(fig.data[0].x) == [label(EVIL), label(BOLD), "ok"] and ledger["group"][0] == EVIL


def test_sweep_charts_escape_query_ids():
    rows = [(q, a, e, u, d) for q in (EVIL, BOLD) for a, e, u, d in ((0.0, 0.1, 0.3, 0.1), (2.0, 0.5, 0.5, 0.4),
                                                                   (float("inf"), 0.9, 0.7, 0.8))]
    table = pd.DataFrame(rows, columns=["query_id", "alpha", "ee_d", "eu", "eae_d"])
    for fig in (charts.ee_d_by_alpha(table), charts.metric_vs_disparity(table, "eu"),
                charts.attributed_vs_retrieval_disparity(table)):
        assert_escaped(fig)


def test_fairqr_escapes_groups_and_iteration_labels():
    target = {EVIL: 0.5, BOLD: 0.5}
    assert_escaped(charts.fairqr_distributions([{EVIL: 0.8, BOLD: 0.2}], target, labels=[BOLD]))


def test_richrag_charts_escape_documents_aspects_and_list_names():
    phi = np.array([[0.1, 0.9], [0.5, 0.5]])
    assert_escaped(charts.coverage_heatmap(phi, [EVIL, "d2"], [BOLD, EVIL], title=BOLD + EVIL))
    assert_escaped(charts.ncom_bars({EVIL: 0.5, "oracle": 1.0, BOLD: 0.2}))
    short = '<a href="//e.x">x</a>'  # aspects are cut at 28 characters
    assert_escaped(charts.aspect_coverage_bars([short, BOLD], [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], [0.5, 0.5]), short)
