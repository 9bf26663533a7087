"""The look shared by every chart: template, fonts for a projector, the colour-blind-safe palette, text colour
for contrast, column checks, and export to PNG (through Chromium) and self-contained HTML."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.colors as pc
import plotly.graph_objects as go
import plotly.io as pio

from fairrag_core.audit.ledger import TOP_PROVIDERS
from fairrag_core.glossary import GLOSSARY

__all__ = [
    "TEMPLATE", "FONT_SIZE", "TITLE_SIZE", "EE_D_TITLE", "ALPHA_TITLE", "STOCHASTIC_COLOUR", "DETERMINISTIC_COLOUR",
    "TARGET_COLOUR", "ATTRIBUTED_COLOUR", "MEAN_COLOUR", "OTHERS_COLOUR", "LABEL_CHARS", "hex_colour",
    "provider_colours", "middle_ellipsis", "axis_labels", "clip_others", "text_colour_on",
    "require_columns", "numeric", "has_values", "style", "alpha_label", "deterministic_mask", "figure_png",
    "figure_html", "label", "labels",
]

TEMPLATE = "plotly_white"
FONT_SIZE = 16
TITLE_SIZE = 22
EE_D_TITLE = GLOSSARY["EE-D"].axis_title  # "EE-D (expected exposure disparity; lower = fairer)"
ALPHA_TITLE = "α (0 = uniform sampling; larger = closer to the deterministic ranking)"

# Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
STOCHASTIC_COLOUR = "#0072B2"
DETERMINISTIC_COLOUR = "#E69F00"
TARGET_COLOUR = "#009E73"
ATTRIBUTED_COLOUR = "#CC79A7"
MEAN_COLOUR = "#222222"

_CHROMIUM = "/usr/bin/chromium"
_PNG_HINT = "PNG export needs Chromium (Debian package `chromium`): run `make install` or `apt-get install chromium`"


def hex_colour(colour: str) -> str:
    if colour.startswith("#"):
        return colour.upper()
    red, green, blue = pc.unlabel_rgb(colour)
    return f"#{int(red):02X}{int(green):02X}{int(blue):02X}"


# Fourteen colours for a projector (the running-shoes collection has 14 providers, the largest common case).
# Chosen by search, not by taste: a max-min search over the sRGB colours that
#   * stand out against the white background: WCAG 2.1 non-text contrast >= 3:1 (SC 1.4.11), so thin bars and
#     legend swatches stay visible; with L* >= 30 (darker colours merge with black on a washed-out screen) and
#     chroma C* >= 35 (no greys: the old #888888 was one of the colours that looked alike);
#   * maximise the smallest CIEDE2000 difference between any two of them, with normal vision (ΔE00 / 15) and
#     with protanopia, deuteranopia and tritanopia simulated (ΔE00 / 8, Machado et al. 2009), also under a 10 %
#     veil of white light (stray light on a projection screen);
# then refined channel by channel and ordered so that every prefix is as spread out as possible (names take the
# colours in order, so a collection with five providers gets the first five). Minimum ΔE00 over the first 8 / 11
# / 14 colours (normal, protanopia, deuteranopia, tritanopia): 19.0, 11.7, 10.1, 11.9 / 18.8, 11.2, 10.1, 11.9 /
# 18.8, 9.9, 9.9, 10.0. The old palette (plotly's Safe, then Dark24) gave 9.6, 2.8, 2.6, 4.0 over its first 14.
# Checked in tests/studio/test_palette.py with fairrag_studio.charts.colour_vision.
_PROJECTOR_PALETTE: tuple[str, ...] = (
    "#4000DC",  # violet blue
    "#9A9A00",  # olive yellow
    "#BB1C42",  # crimson
    "#23A69B",  # teal
    "#8091DB",  # periwinkle
    "#514D03",  # dark olive
    "#197251",  # green
    "#9A6EA6",  # mauve
    "#996E00",  # ochre
    "#91066E",  # plum
    "#BB06FF",  # electric purple
    "#C58263",  # tan
    "#455795",  # slate blue
    "#F95B8F",  # pink
)
# Only these: beyond them a colour would look like one of them (plotly's Dark24, used here before, gave 17
# providers near-identical pinks; issue 30). Every provider past the 14th is drawn in OTHERS_COLOUR.
_PROVIDER_PALETTE: tuple[str, ...] = _PROJECTOR_PALETTE
if len(_PROVIDER_PALETTE) < TOP_PROVIDERS:  # every provider shown one by one needs its own colour
    raise AssertionError(f"{len(_PROVIDER_PALETTE)} provider colours for TOP_PROVIDERS = {TOP_PROVIDERS}")
# "all others": a neutral grey found by the same search, ΔE00 ≥ 19 from every projector colour with normal vision
# and ≥ 10 with each deficiency simulated; 5.4:1 against white.
OTHERS_COLOUR = "#6A6A6E"
LABEL_CHARS = 32  # longest provider or group name on a chart axis; longer ones lose their middle (middle_ellipsis)


def provider_colours(names: Sequence[str], *, counts: Mapping[str, float] | None = None) -> dict[str, str]:
    """Map each distinct provider (or group) name to a hex colour, deterministically.

    Up to 14 names (:data:`~fairrag_core.audit.ledger.TOP_PROVIDERS`): de-duplicated and sorted, they take the
    14 projector colours (distinguishable with normal vision and with the common colour-vision deficiencies; see
    ``_PROJECTOR_PALETTE``) in order, so the same set of names gives every provider the same colour in every chart.
    More names: the 14 that ``names`` lists most often (or with the largest ``counts``; ties alphabetical) take
    the colours, in sorted order, and every other name gets :data:`OTHERS_COLOUR` (grey: "all others").

    >>> provider_colours(["b", "a", "b"])
    {'a': '#4000DC', 'b': '#9A9A00'}
    >>> colours = provider_colours([f"p{i:02d}" for i in range(20)] + ["p19"])
    >>> colours["p19"], colours["p00"], colours["p14"], sum(c == OTHERS_COLOUR for c in colours.values())
    ('#F95B8F', '#4000DC', '#6A6A6E', 6)
    """
    unique = sorted({str(name) for name in names})
    if len(unique) <= len(_PROVIDER_PALETTE):
        return {name: _PROVIDER_PALETTE[i] for i, name in enumerate(unique)}
    if counts is None:
        tally: dict[str, float] = {}
        for name in names:
            tally[str(name)] = tally.get(str(name), 0) + 1
    else:
        tally = {str(name): float(value) for name, value in counts.items()}
    coloured = sorted(sorted(unique, key=lambda name: (-tally.get(name, 0), name))[: len(_PROVIDER_PALETTE)])
    colour_of = dict(zip(coloured, _PROVIDER_PALETTE))
    return {name: colour_of.get(name, OTHERS_COLOUR) for name in unique}


def middle_ellipsis(text: object, limit: int = LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters by dropping its middle, so a long name keeps both its start and its end
    (a team's name and its mailing list); the chart's hover gives the full name.

    >>> middle_ellipsis("Debian Solar Packaging Team <pkg-solar-maintainers@lists.alioth.debian.org>")
    'Debian Solar Pac…oth.debian.org>'
    >>> middle_ellipsis("Maintainer 0007")
    'Maintainer 0007'
    """
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    head = limit // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def label(text: object) -> str:
    """User text (a provider, group, document id or title, query, aspect, list name) made safe to show in a chart.

    Plotly draws tick labels, legend entries, bar texts, hover boxes, titles and annotations from a subset of HTML
    (``<a href>``, ``<b>``, ``<i>``, ``<br>``, ``<span style>``, ...), so a provider named
    ``<a href="https://evil.example">x</a>`` would become a live link in the chart. ``&``, ``<`` and ``>`` become
    entities, which Plotly shows as the characters typed. Only the figure gets the escaped text: the tables (and
    their CSV downloads) keep the data as it is.

    >>> label('<a href="https://evil.example">x</a> & co')
    '&lt;a href="https://evil.example"&gt;x&lt;/a&gt; &amp; co'
    """
    return html.escape(str(text), quote=False)


def labels(values: Iterable[object]) -> list[str]:
    """:func:`label` of each value."""
    return [label(v) for v in values]


def axis_labels(values: Iterable[object], limit: int = LABEL_CHARS) -> list[str]:
    """Names for a categorical axis: :func:`middle_ellipsis` of each, escaped (:func:`label`). A name whose short
    form another name shares keeps its full text, so two providers never merge into one bar.

    >>> axis_labels(["a & b", "x" * 40, "x" * 41])[0], len(axis_labels(["x" * 40])[0])
    ('a &amp; b', 32)
    """
    names = [str(v) for v in values]
    short = [middle_ellipsis(name, limit) for name in names]
    seen: dict[str, set[str]] = {}
    for name, cut in zip(names, short):
        seen.setdefault(cut, set()).add(name)
    return [label(cut if len(seen[cut]) == 1 else name) for name, cut in zip(names, short)]


def clip_others(fig: go.Figure, shown: pd.DataFrame, others: Mapping[str, float],
                series: Sequence[tuple[str, str]], row_label: str, *, value_format: str = ".2f",
                axis: str = "x", y_axis: str = "y") -> list[float] | None:
    """Keep the shown rows readable beside a large "all others" row: when an others value (a sum over thousands
    of providers) is over twice the largest shown value of ``series`` (``(name, column)`` pairs), the value axis
    ``axis`` is to end at 1.25 × that largest value, the others' bars run past its end, and a note on their row
    (``row_label`` of axis ``y_axis``) gives their values. Returns the axis range to set, or None (no clipping)."""
    largest = max((float(numeric(shown, c).max()) for _, c in series if c in shown and has_values(numeric(shown, c))),
                  default=0.0)
    values = [(name, others[c]) for name, c in series if c in others and others[c] == others[c]]
    if not values or largest <= 0 or max(abs(v) for _, v in values) <= 2 * largest:
        return None
    end = 1.25 * largest
    fig.add_annotation(x=end, y=row_label, xref=axis, yref=y_axis, xanchor="right", yanchor="middle",
                       showarrow=False, bgcolor="rgba(255,255,255,0.9)", font={"size": FONT_SIZE - 2},
                       text=" · ".join(f"{name} {format(v, value_format)}" for name, v in values) + " →")
    return [0, end]


def _relative_luminance(colour: str) -> float:
    """WCAG 2 relative luminance of a ``#RRGGBB`` colour."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def text_colour_on(background: str) -> str:
    """Black or white, whichever has the higher WCAG contrast ratio on ``background`` (light yellows and mid
    blues get black text: white on them was unreadable on a projector).

    >>> text_colour_on("#DDCC77"), text_colour_on("#2E91E5"), text_colour_on("#332288")
    ('#000000', '#000000', '#FFFFFF')
    """
    luminance = _relative_luminance(hex_colour(background))
    return "#000000" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "#FFFFFF"


def require_columns(table: pd.DataFrame, columns: Sequence[str], chart: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{chart}: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(
            f"{chart}: missing column(s) {', '.join(repr(c) for c in missing)}; "
            f"the table has {[str(c) for c in table.columns]}"
        )
    if table.empty:
        raise ValueError(f"{chart}: the table has no rows to plot")


def numeric(table: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(table[column], errors="coerce").astype(float)


def has_values(values: pd.Series) -> bool:
    return bool(values.notna().any())


def _use_template(fig: go.Figure) -> None:
    """Give ``fig`` the registered :data:`TEMPLATE` without validating it again, as plotly itself applies its default
    template: ``update_layout(template=...)`` re-validates the whole template, 9 ms per chart, about a tenth of a
    Playground rerun (the figure is the same, ``tests/studio/test_charts.py``)."""
    import plotly.io as pio

    layout = fig.layout
    validate = layout._validate
    layout._validate = False
    try:
        layout.template = pio.templates[TEMPLATE]
    finally:
        layout._validate = validate


def style(
    fig: go.Figure,
    *,
    title: str,
    x_title: str,
    y_title: str,
    height: int,
    subtitle: str | None = None,
    legend_title: str | None = None,
    layout: dict | None = None,
    x_axis: dict | None = None,
    y_axis: dict | None = None,
) -> go.Figure:
    """The studio's look: template, type sizes, title, axis titles. ``layout``, ``x_axis`` and ``y_axis`` add or
    override properties in the same update (a dict value is merged one level deep: ``{"margin": {"b": 120}}`` keeps
    the other margins); every plotly update re-walks the figure, so one update per part keeps a chart cheap."""
    title_spec: dict[str, object] = {"text": title, "font": {"size": TITLE_SIZE}, "x": 0.01, "xanchor": "left"}
    if subtitle:
        title_spec["subtitle"] = {"text": subtitle, "font": {"size": FONT_SIZE - 1}}
    _use_template(fig)
    fig.update_layout(_merged({
        "height": height,
        "font": {"size": FONT_SIZE},
        "title": title_spec,
        "legend": {"title": {"text": legend_title or ""}, "font": {"size": FONT_SIZE - 1}},
        "hoverlabel": {"font": {"size": FONT_SIZE - 1}},
        "margin": {"t": 110 if subtitle else 80, "l": 80, "r": 30, "b": 70},
    }, layout))
    axis = {"title_font": {"size": FONT_SIZE + 1}, "tickfont": {"size": FONT_SIZE - 1}}
    fig.update_xaxes(_merged({"title_text": x_title, **axis}, x_axis))
    fig.update_yaxes(_merged({"title_text": y_title, **axis}, y_axis))
    return fig


def _merged(base: dict, extra: dict | None) -> dict:
    if not extra:
        return base
    out = dict(base)
    for key, value in extra.items():
        out[key] = {**out[key], **value} if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def alpha_label(alpha: float) -> str:
    return "∞" if math.isinf(alpha) else f"{alpha:g}"


def deterministic_mask(table: pd.DataFrame, alpha: pd.Series) -> pd.Series:
    """Rows of the deterministic retriever: ``system == "deterministic"`` or ``alpha == inf``."""
    mask = pd.Series(np.isinf(alpha.to_numpy(dtype=float, na_value=np.nan)), index=table.index)
    if "system" in table.columns:
        mask |= table["system"].astype(str).str.lower().eq("deterministic")
    return mask


def figure_png(fig: go.Figure, *, width: int = 1000, height: int | None = None, scale: float = 2) -> bytes:
    """Render ``fig`` to PNG bytes with kaleido (which drives a headless Chromium).

    Uses ``/usr/bin/chromium`` when ``BROWSER_PATH`` is unset; any failure becomes a ``RuntimeError``
    that says how to install Chromium. ``height`` defaults to the figure's own height.
    """
    if not os.environ.get("BROWSER_PATH") and Path(_CHROMIUM).exists():
        os.environ["BROWSER_PATH"] = _CHROMIUM
    try:
        return pio.to_image(fig, format="png", width=width, height=height, scale=scale)
    except Exception as exc:  # kaleido raises many types (missing browser, timeouts, choreographer errors)
        raise RuntimeError(f"{_PNG_HINT}. Export failed with {type(exc).__name__}: {exc}") from exc


def figure_html(fig: go.Figure, *, include_plotlyjs: bool | str = True) -> str:
    """A complete HTML page for ``fig``; by default plotly.js is inlined, so it works offline (no CDN)."""
    return fig.to_html(full_html=True, include_plotlyjs=include_plotlyjs)
