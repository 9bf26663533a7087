"""The sampled-rankings grid as plain HTML: a few kB that the browser lays out in milliseconds.

The Plotly version (:func:`fairrag_studio.charts.rankings_grid`) stays for downloads; on the α slider's hot
path a coloured table is far cheaper to serialise and to draw than a figure with one bar per cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np

from fairrag_core.audit.ledger import others_label

from ..charts import provider_colours, text_colour_on
from ..charts.style import OTHERS_COLOUR

__all__ = ["TITLE_CHARS", "rankings_grid_html", "short_title"]

_CELL = ("padding:2px 4px;border:1px solid #fff;font:12px/1.3 ui-monospace,monospace;text-align:center;"
         "white-space:nowrap;min-width:4.2em")
# A title cell: proportional type reads better than monospace, and the width stays bounded.
_TITLE_CELL = ("padding:2px 4px;border:1px solid #fff;font:12px/1.3 sans-serif;text-align:center;"
               "white-space:nowrap;overflow:hidden;text-overflow:ellipsis")
TITLE_CHARS = 24  # longest title shown in a cell; longer ones are cut at a word boundary and end in "…"


def short_title(title: str, limit: int = TITLE_CHARS) -> str:
    """``title`` cut to at most ``limit`` characters for a grid cell, at a word boundary where one falls in
    the second half, ending in "…" when anything was cut (whitespace runs become single spaces).

    >>> short_title("The Complete Guide to Trail Running Shoes for Wet Weather")
    'The Complete Guide to…'
    >>> short_title("A very long title about running shoes")
    'A very long title about…'
    >>> short_title("Short title"), short_title("Supercalifragilisticexpialidocious", 10)
    ('Short title', 'Supercali…')
    """
    text = " ".join(str(title).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if text[limit - 1] != " " and space >= limit // 2:  # don't end in half a word
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"


def rankings_grid_html(doc_ids: Sequence[str], providers: Sequence[str], titles: Sequence[str],
                       rankings: np.ndarray, deterministic: np.ndarray, *, max_rows: int = 30,
                       repeats: int | None = None, show_titles: bool = False, font_px: int = 12,
                       fit: bool = False) -> str:
    """One row per ranking (deterministic first), one column per rank, each cell coloured by provider.

    Cells show the document id; hovering shows title and provider. ``repeats`` labels a single sampled row
    that stands for that many identical samples. Every text is HTML-escaped.

    For a projector: ``show_titles=True`` puts the document's title in each cell instead of its id (cut to
    :data:`TITLE_CHARS` characters by :func:`short_title`; the tooltip then gives the full title, the id and the
    provider; a document without a title keeps its id), and ``font_px`` sets the type size of the whole grid
    (legend swatches grow with it). The defaults give exactly the grid drawn before these options existed.

    ``fit`` (many columns, k up to 20; issue 30): the table takes the full width and its k columns share it
    equally, a cell's id ending in "…" where it does not fit (the tooltip starts with the whole id), so every rank
    stays in view instead of behind a horizontal scroll. Titles (``show_titles``) always fit.

    At most :data:`~fairrag_core.audit.ledger.TOP_PROVIDERS` providers get their own colour (those with the most
    cells; :func:`~fairrag_studio.charts.provider_colours`); the others' cells are grey, and the legend names them
    in one entry.

    >>> html = rankings_grid_html(["d1", "d2"], ["A", "B"], ["T1", "<T2>"], np.array([[1, 0]]), np.array([0, 1]))
    >>> html.count("<td title=")
    4
    >>> "&lt;T2&gt;" in html and "<T2>" not in html
    True
    >>> html = rankings_grid_html(["d1"], ["A"], ["A <b>bold</b> title"], np.array([[0]]), np.array([0]),
    ...                           show_titles=True, font_px=18)
    >>> ">A &lt;b&gt;bold&lt;/b&gt; title</td>" in html and "font:18px" in html and "12px" not in html
    True
    """
    if isinstance(font_px, bool) or not isinstance(font_px, int) or font_px < 6:
        raise ValueError(f"font_px must be a whole number of pixels, at least 6; got {font_px!r}")
    rankings = np.asarray(rankings)
    if rankings.ndim != 2 or np.asarray(deterministic).shape != (rankings.shape[1],):
        raise ValueError("rankings must be (N, k) and deterministic (k,)")
    cells_of = np.concatenate([rankings[:max_rows].ravel(), np.asarray(deterministic)]).astype(int)
    counts: dict[str, int] = {}
    for position in cells_of.tolist():
        counts[str(providers[position])] = counts.get(str(providers[position]), 0) + 1
    colours = provider_colours(providers, counts=counts)

    px = f"{font_px}px"  # "12px" by default, as before
    plain_cell, title_cell = _CELL.replace("12px", px), _TITLE_CELL.replace("12px", px)
    if fit:  # k columns share the width: no minimum, little padding, the id cut with "…"
        plain_cell = plain_cell.replace("padding:2px 4px", "padding:2px 0").replace(
            "min-width:4.2em", "overflow:hidden;text-overflow:ellipsis").replace(px, f"{font_px - 1}px")

    def cell(position: int) -> str:
        colour = colours[str(providers[position])]
        title = str(titles[position] or "").strip()
        if show_titles and title:
            tip = escape(f"{title} ({doc_ids[position]}) — {providers[position]}", quote=True)
            return (f'<td title="{tip}" style="{title_cell};background:{colour};color:{text_colour_on(colour)}">'
                    f"{escape(short_title(title))}</td>")
        tip = escape(f"{doc_ids[position]}: {titles[position]} — {providers[position]}" if fit and titles[position]
                     else f"{titles[position] or doc_ids[position]} — {providers[position]}", quote=True)
        return (f'<td title="{tip}" style="{plain_cell};background:{colour};color:{text_colour_on(colour)}">'
                f"{escape(str(doc_ids[position]))}</td>")

    head = "".join(f'<th style="font:600 {px} sans-serif;padding:2px 4px">{r}</th>'
                   for r in range(1, rankings.shape[1] + 1))
    label = f'style="font:{px} sans-serif;padding:2px 8px 2px 0;text-align:right;white-space:nowrap;color:#555"'
    rows = [f'<tr><td {label}><b>deterministic</b></td>{"".join(cell(int(p)) for p in deterministic)}</tr>',
            f'<tr><td colspan="{rankings.shape[1] + 1}" style="border-bottom:2px dashed #999;padding:0"></td></tr>']
    shown = rankings[:max_rows]
    for i, row in enumerate(shown, start=1):
        name = f"sample 1 (×{repeats})" if repeats and len(shown) == 1 else f"sample {i}"
        rows.append(f"<tr><td {label}>{name}</td>{''.join(cell(int(p)) for p in row)}</tr>")
    used = sorted({str(providers[int(p)]) for p in np.concatenate([rankings.ravel(), np.asarray(deterministic)])})
    grey = [p for p in used if colours[p] == OTHERS_COLOUR]
    entries = [(colours[p], escape(p)) for p in used if colours[p] != OTHERS_COLOUR]
    if grey:
        entries.append((OTHERS_COLOUR, escape(others_label(len(grey)))))
    legend = " ".join(
        f'<span style="display:inline-block;margin:2px 8px 2px 0;font:{px} sans-serif">'
        f'<span style="display:inline-block;width:{px};height:{px};background:{colour};vertical-align:middle">'
        f"</span> {name}</span>" for colour, name in entries)
    more = (f'<div style="font:{px} sans-serif;color:#555">showing {len(shown)} of {len(rankings)} samples</div>'
            if len(rankings) > len(shown) else "")
    # Titles: the table takes the full width and its k columns share it equally (a cell's title ends in "…" where
    # it does not fit), so every position stays in view on a projector instead of behind a horizontal scroll.
    table, corner = (("border-collapse:collapse;width:100%;table-layout:fixed", f' style="width:{7 * font_px}px"')
                     if show_titles or fit else ("border-collapse:collapse", ""))
    return (f'<div style="overflow-x:auto"><table style="{table}"><thead><tr><th{corner}></th>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>{more}<div style="margin-top:6px">{legend}</div></div>')
