"""Colours that stay apart on a projector and for the common colour-vision deficiencies.

ΔE00 (CIEDE2000) is checked against the published test data; the provider palette, the FAIR-QR iteration colours
and the HTML rankings grid's projector options are then checked with it.
"""

from __future__ import annotations

import hashlib
from html import escape

import numpy as np
import pytest

from fairrag_core.audit.ledger import TOP_PROVIDERS
from fairrag_studio.charts import fairqr_distributions, provider_colours, text_colour_on
from fairrag_studio.charts.colour_vision import (
    VISIONS,
    contrast_ratio,
    delta_e2000,
    hex_to_lab,
    min_pairwise_distance,
    pairwise_distances,
    simulate,
    simulate_hex,
)
from fairrag_studio.charts.fairqr import iteration_colours
from fairrag_studio.charts.style import _PROVIDER_PALETTE, OTHERS_COLOUR, hex_colour
from fairrag_studio.views.grid_html import TITLE_CHARS, rankings_grid_html, short_title

# -- CIEDE2000 -----------------------------------------------------------------------------------------------------
# All 34 pairs of Sharma, Wu & Dalal (2005), Table 1: (L1, a1, b1), (L2, a2, b2), ΔE00 to four decimals. They
# exercise the hue-angle wrap-around (pairs 9-16), neutral colours (7-8), the rotation term (1-6) and dark colours.
SHARMA_2005 = [
    ((50.0000, 2.6772, -79.7751), (50.0000, 0.0000, -82.7485), 2.0425),
    ((50.0000, 3.1571, -77.2803), (50.0000, 0.0000, -82.7485), 2.8615),
    ((50.0000, 2.8361, -74.0200), (50.0000, 0.0000, -82.7485), 3.4412),
    ((50.0000, -1.3802, -84.2814), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, -1.1848, -84.8006), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, -0.9009, -85.5211), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, 0.0000, 0.0000), (50.0000, -1.0000, 2.0000), 2.3669),
    ((50.0000, -1.0000, 2.0000), (50.0000, 0.0000, 0.0000), 2.3669),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0009), 7.1792),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0010), 7.1792),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0011), 7.2195),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0012), 7.2195),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0009, -2.4900), 4.8045),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0010, -2.4900), 4.8045),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0011, -2.4900), 4.7461),
    ((50.0000, 2.5000, 0.0000), (50.0000, 0.0000, -2.5000), 4.3065),
    ((50.0000, 2.5000, 0.0000), (73.0000, 25.0000, -18.0000), 27.1492),
    ((50.0000, 2.5000, 0.0000), (61.0000, -5.0000, 29.0000), 22.8977),
    ((50.0000, 2.5000, 0.0000), (56.0000, -27.0000, -3.0000), 31.9030),
    ((50.0000, 2.5000, 0.0000), (58.0000, 24.0000, 15.0000), 19.4535),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.1736, 0.5854), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.2972, 0.0000), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 1.8634, 0.5757), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.2592, 0.3350), 1.0000),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((63.0109, -31.0961, -5.8663), (62.8187, -29.7946, -4.0864), 1.2630),
    ((61.2901, 3.7196, -5.3901), (61.4292, 2.2480, -4.9620), 1.8731),
    ((35.0831, -44.1164, 3.7933), (35.0232, -40.0716, 1.5901), 1.8645),
    ((22.7233, 20.0904, -46.6940), (23.0331, 14.9730, -42.5619), 2.0373),
    ((36.4612, 47.8580, 18.3852), (36.2715, 50.5065, 21.2231), 1.4146),
    ((90.8027, -2.0831, 1.4410), (91.1528, -1.6435, 0.0447), 1.4441),
    ((90.9257, -0.5406, -0.9208), (88.6381, -0.8985, -0.7239), 1.5381),
    ((6.7747, -0.2908, -2.4247), (5.8714, -0.0985, -2.2286), 0.6377),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),
]


@pytest.mark.parametrize(("lab1", "lab2", "expected"), SHARMA_2005,
                         ids=[f"pair{i}" for i in range(1, len(SHARMA_2005) + 1)])
def test_ciede2000_matches_sharma_2005(lab1, lab2, expected):
    # the table gives four decimals, so agreement to 1e-4 is agreement with the published values
    assert delta_e2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)
    assert delta_e2000(lab2, lab1) == pytest.approx(expected, abs=1e-4)  # ΔE00 is symmetric


def test_ciede2000_vectorised_and_zero_on_identical_colours():
    first = np.array([p[0] for p in SHARMA_2005])
    second = np.array([p[1] for p in SHARMA_2005])
    assert np.allclose(delta_e2000(first, second), [p[2] for p in SHARMA_2005], atol=1e-4)
    assert np.allclose(delta_e2000(first, first), 0.0)


def test_srgb_to_cielab_reference_values():
    # sRGB primaries and mid grey in CIELAB (D65), as published by Lindbloom's and other calculators
    expected = {
        "#FFFFFF": (100.0, 0.0, 0.0),
        "#FF0000": (53.2408, 80.0925, 67.2032),
        "#00FF00": (87.7347, -86.1827, 83.1793),
        "#0000FF": (32.2970, 79.1875, -107.8602),
        "#808080": (53.5850, 0.0, 0.0),
        "#000000": (0.0, 0.0, 0.0),
    }
    for colour, lab in expected.items():
        assert hex_to_lab(colour) == pytest.approx(lab, abs=2e-3), colour


def test_dichromacy_simulation():
    # Machado et al.'s matrices keep the achromatic axis: greys stay grey for every deficiency
    greys = np.linspace(0, 1, 5)[:, None] * np.ones(3)
    for vision in VISIONS:
        assert np.allclose(simulate(greys, vision), greys, atol=1e-5)
    # the classic red/green confusion: far apart for normal vision, close with protanopia and deuteranopia
    red, green = "#CC3311", "#667700"
    assert min_pairwise_distance([red, green]) > 30
    assert min_pairwise_distance([red, green], "protanopia") < 10
    assert min_pairwise_distance([red, green], "deuteranopia") < 10
    # tritanopia confuses blue with green (both lose the S-cone signal), not red with green
    assert min_pairwise_distance(["#0077BB", "#009988"], "tritanopia") < 0.5 * min_pairwise_distance(
        ["#0077BB", "#009988"])
    assert simulate_hex(["#FFFFFF", "#000000"], "deuteranopia") == ["#FFFFFF", "#000000"]
    # flare lifts dark colours towards white: black and dark blue move closer, white stays where it was
    assert min_pairwise_distance(["#000000", "#000080"], flare=0.1) < min_pairwise_distance(["#000000", "#000080"])
    assert hex_to_lab("#FFFFFF", flare=0.1) == pytest.approx((100.0, 0.0, 0.0), abs=1e-6)
    with pytest.raises(ValueError, match="vision"):
        min_pairwise_distance(["#000000", "#FFFFFF"], "achromatopsia")


def test_pairwise_distances_is_symmetric_with_zero_diagonal():
    colours = list(_PROVIDER_PALETTE[:5])
    distances = pairwise_distances(colours)
    assert distances.shape == (5, 5)
    assert np.allclose(distances, distances.T) and np.allclose(np.diag(distances), 0)
    assert min_pairwise_distance(colours[:1]) == float("inf")


# -- provider palette ----------------------------------------------------------------------------------------------
# Thresholds. ΔE00 ≈ 1 is just noticeable for large patches side by side; legend swatches, thin bars and grid
# cells seen from the back of a lecture room, on a projector that washes colours out, need a margin an order
# of magnitude larger. ΔE00 ≥ 15 with normal vision is a clearly different colour, not a shade of the same one
# (the old Safe + Dark24 palette reached only 9.6 over its first 14 colours); ≥ 8 with each simulated deficiency
# (the old palette: 2.8 protanopia, 2.6 deuteranopia, 4.0 tritanopia). A 10 % veil of white light (linear RGB
# mixed with white: what stray light does on a projection screen) compresses differences among dark colours, so
# the palette must still give ≥ 12 (normal) and ≥ 7 (each deficiency) under it.
NORMAL_MIN, DEFICIENCY_MIN = 15.0, 8.0
VEIL, VEILED_NORMAL_MIN, VEILED_DEFICIENCY_MIN = 0.10, 12.0, 7.0
# WCAG 2.1 success criterion 1.4.11 (non-text contrast): graphical objects needed to understand the content need
# 3:1 against adjacent colours. Bars a few pixels wide and the legend swatches sit on the white background.
WCAG_NON_TEXT = 3.0


@pytest.mark.parametrize("count", [2, 5, 8, 11, 14])
def test_first_provider_colours_stay_apart(count):
    colours = list(provider_colours([f"provider {i:02d}" for i in range(count)]).values())
    assert colours == list(_PROVIDER_PALETTE[:count])
    assert min_pairwise_distance(colours, "normal") >= NORMAL_MIN
    for vision in ("protanopia", "deuteranopia", "tritanopia"):
        assert min_pairwise_distance(colours, vision) >= DEFICIENCY_MIN, vision
    assert min_pairwise_distance(colours, "normal", flare=VEIL) >= VEILED_NORMAL_MIN
    for vision in ("protanopia", "deuteranopia", "tritanopia"):
        assert min_pairwise_distance(colours, vision, flare=VEIL) >= VEILED_DEFICIENCY_MIN, vision


def test_provider_colours_contrast_with_the_white_background():
    for colour in _PROVIDER_PALETTE[:14]:
        assert contrast_ratio(colour, "#FFFFFF") >= WCAG_NON_TEXT, colour
        # and the grid's cell text (black or white, whichever is higher) stays readable on it: WCAG AA large text
        assert contrast_ratio(colour, text_colour_on(colour)) >= 3.0, colour


def test_beyond_fourteen_providers_the_others_are_grey():
    """Issue 30: 17 provider colours included near-identical pinks (plotly's Dark24 past the 14 checked ones). Now
    at most TOP_PROVIDERS colours, all from the checked palette, go to the providers with the most cells, and every
    other provider is the one grey, itself far from each colour with every vision."""
    assert len(_PROVIDER_PALETTE) == len(set(_PROVIDER_PALETTE)) == TOP_PROVIDERS == 14
    assert all(c == hex_colour(c) and len(c) == 7 for c in _PROVIDER_PALETTE)
    names = [f"p{i:02d}" for i in range(40)]
    colours = provider_colours(names)
    assert colours == provider_colours(list(reversed(names)))  # deterministic
    assert set(colours.values()) == {*_PROVIDER_PALETTE, OTHERS_COLOUR}
    assert [n for n in names if colours[n] != OTHERS_COLOUR] == names[:14]  # ties: alphabetical
    # the providers named most often (the grid's cells) win the colours
    busy = provider_colours(names + ["p39"] * 3 + ["p38"] * 2)
    assert busy["p39"] != OTHERS_COLOUR and busy["p38"] != OTHERS_COLOUR and busy["p13"] == OTHERS_COLOUR
    assert provider_colours(names, counts={"p20": 5})["p20"] != OTHERS_COLOUR
    for vision in VISIONS:
        bound = NORMAL_MIN if vision == "normal" else DEFICIENCY_MIN
        assert min(min_pairwise_distance([OTHERS_COLOUR, c], vision) for c in _PROVIDER_PALETTE) >= bound, vision
    assert contrast_ratio(OTHERS_COLOUR, "#FFFFFF") >= WCAG_NON_TEXT


def test_issue_pairs_are_far_apart():
    # the running-shoes collection's 14 providers: the issue named three pairs that looked the same on a projector
    providers = ["Ferrow Labs", "Greyfield Footworks", "Hollow Pine Running Co.", "Ironbark Outfitters",
                 "Kestrel Athletics", "Loam & Leaf", "Northmark", "Pebblepath", "Quillo", "Sprout Running",
                 "Stridewell", "Tidewater Shoe Co.", "Velocore", "Wildmere"]
    colours = provider_colours(providers)
    for first, second in [("Stridewell", "Sprout Running"), ("Northmark", "Greyfield Footworks"),
                          ("Pebblepath", "Kestrel Athletics")]:
        for vision in VISIONS:
            bound = NORMAL_MIN if vision == "normal" else DEFICIENCY_MIN
            assert min_pairwise_distance([colours[first], colours[second]], vision) >= bound, (first, second, vision)


# -- FAIR-QR iterations --------------------------------------------------------------------------------------------
def test_fairqr_iteration_colours_are_distinguishable():
    colours = iteration_colours(6)  # FAIR-QR's default: the original query and up to 5 refinements
    assert len(set(colours)) == 6
    for vision in VISIONS:
        assert min_pairwise_distance(colours, vision) >= 10, vision
    # ordered: lightness falls from the first iteration to the last
    lightness = hex_to_lab(colours)[:, 0]
    assert np.all(np.diff(lightness) < 0)
    assert iteration_colours(1) == iteration_colours(6)[-1:] and iteration_colours(0) == []


def test_fairqr_chart_uses_the_iteration_colours():
    iterations = [{"a": 0.8 - 0.1 * i, "b": 0.2 + 0.1 * i} for i in range(6)]
    fig = fairqr_distributions(iterations, {"a": 0.5, "b": 0.5})
    bars = [t for t in fig.data if t.type == "bar"]
    assert [hex_colour(b.marker.color) for b in bars] == iteration_colours(6)
    assert all(b.marker.line.width >= 1 for b in bars)


# -- HTML rankings grid --------------------------------------------------------------------------------------------
#: sha256 (first 16 hex digits) of the grid's default HTML for :func:`grid_inputs`, taken when ``show_titles`` and
#: ``font_px`` were added and checked then against a verbatim copy of the grid before them (byte for byte): the
#: defaults must keep drawing exactly that grid.
_DEFAULT_GRID_SHA256 = {"": "94412ff02a84a740", "max_rows=3": "a7a4c61c419459ff", "repeats=9": "62a8c0f4c6870c54",
                        "max_rows=100": "f4b7ae8b10bbdecf"}


@pytest.fixture
def grid_inputs():
    rng = np.random.default_rng(7)
    doc_ids = [f"d{i}" for i in range(12)]
    providers = [f'Provider <{i % 5}> & "co"' for i in range(12)]
    titles = [f'Title {i} <script>alert("x")</script> & more words to cut' if i % 3 else "" for i in range(12)]
    rankings = np.array([rng.permutation(12)[:6] for _ in range(40)])
    return doc_ids, providers, titles, rankings, np.arange(6)


@pytest.mark.parametrize("options", [{}, {"max_rows": 3}, {"repeats": 9}, {"max_rows": 100}])
def test_grid_defaults_are_unchanged(grid_inputs, options):
    doc_ids, providers, titles, rankings, deterministic = grid_inputs
    if "repeats" in options:
        rankings = rankings[:1]
    html = rankings_grid_html(doc_ids, providers, titles, rankings, deterministic, **options)
    key = ",".join(f"{k}={v}" for k, v in options.items())
    assert hashlib.sha256(html.encode()).hexdigest()[:16] == _DEFAULT_GRID_SHA256[key]
    assert rankings_grid_html(doc_ids, providers, titles, rankings, deterministic, show_titles=False, font_px=12,
                              **options) == html


def test_grid_shows_escaped_titles(grid_inputs):
    doc_ids, providers, titles, rankings, deterministic = grid_inputs
    html = rankings_grid_html(doc_ids, providers, titles, rankings, deterministic, show_titles=True, max_rows=40)
    assert "<script>" not in html and "&lt;script&gt;" in html
    for position in range(12):
        title = titles[position]
        if title:
            shown = short_title(title)
            assert len(shown) <= TITLE_CHARS and shown.endswith("…")
            assert f">{escape(shown)}</td>" in html
            # the tooltip keeps the whole title, the id and the provider
            assert f'title="{escape(f"{title} ({doc_ids[position]}) — {providers[position]}", quote=True)}"' in html
        else:  # no title: the cell falls back to the id
            assert f">{doc_ids[position]}</td>" in html
    assert html.count("<td title=") == 6 * 41
    # every position in view on a projector: the k columns share the full width, a long title ends in an ellipsis
    assert '<table style="border-collapse:collapse;width:100%;table-layout:fixed">' in html
    title_cells = html.count("font:12px/1.3 sans-serif;text-align:center")
    assert title_cells > 0 and html.count("overflow:hidden;text-overflow:ellipsis") == title_cells
    plain = rankings_grid_html(doc_ids, providers, titles, rankings, deterministic)
    assert "table-layout" not in plain and "ellipsis" not in plain


def test_grid_font_size_for_a_projector(grid_inputs):
    doc_ids, providers, titles, rankings, deterministic = grid_inputs
    html = rankings_grid_html(doc_ids, providers, titles, rankings, deterministic, max_rows=3, font_px=20)
    assert "12px" not in html
    assert "font:20px/1.3 ui-monospace" in html and "font:600 20px sans-serif" in html
    assert "width:20px;height:20px" in html and "showing 3 of 40 samples" in html
    with pytest.raises(ValueError, match="font_px"):
        rankings_grid_html(doc_ids, providers, titles, rankings, deterministic, font_px=0)


def test_short_title():
    assert short_title("Short") == "Short"
    assert short_title("  spaced   out\ttitle ") == "spaced out title"
    assert short_title("x" * 40) == "x" * (TITLE_CHARS - 1) + "…"
    assert short_title("Trail shoes, reviewed: the best of the year") == "Trail shoes, reviewed…"
    assert len(short_title("word " * 20)) <= TITLE_CHARS
