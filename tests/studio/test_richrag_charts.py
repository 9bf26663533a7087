"""RichRAG charts: the documents × aspects coverage heatmap, NCOM per list, Com-ROUGE per aspect."""

import numpy as np
import pytest

from fairrag_studio.charts import aspect_coverage_bars, coverage_heatmap, ncom_bars
from fairrag_studio.charts.style import DETERMINISTIC_COLOUR, TARGET_COLOUR


def test_heatmap_rows_are_documents_columns_aspects_on_a_fixed_unit_scale():
    fig = coverage_heatmap(np.array([[0.9, 0.1], [0.2, 0.6]]), ["d1", "d2"], ["bins", "a" * 40])
    heat = fig.data[0]
    assert heat.zmin == 0 and heat.zmax == 1 and list(heat.y) == ["d1", "d2"]
    assert heat.x[1].endswith("…") and len(heat.x[1]) == 28
    with pytest.raises(ValueError, match="expected"):
        coverage_heatmap(np.zeros((2, 2)), ["d1"], ["a", "b"])


def test_ncom_bars_colour_the_ranker_and_the_oracle_apart():
    fig = ncom_bars({"relevance": 0.8, "ranker-dpo": 0.9, "oracle": 1.0}, k=5)
    colours = list(fig.data[0].marker.color)
    assert colours[1] == DETERMINISTIC_COLOUR and colours[2] == TARGET_COLOUR
    assert fig.layout.yaxis.title.text == "NCOM@5"


def test_aspect_bars_show_rouge2_and_rougel_with_the_weights():
    fig = aspect_coverage_bars(["bins", "smells"], [(0.5, 0.2, 0.4), (0.1, 0.0, 0.1)], [0.25, 0.75])
    assert [t.name for t in fig.data] == ["ROUGE-2 recall", "ROUGE-L recall"]
    assert list(fig.data[1].y) == [0.4, 0.1] and "δ=0.75" in fig.data[0].x[1]


def test_compact_heatmap_drops_the_colour_bar_and_axis_titles():
    fig = coverage_heatmap(np.eye(2), ["d1", "d2"], ["a", "b"], title="oracle", compact=True)
    assert fig.data[0].showscale is False and fig.layout.xaxis.title.text == ""
