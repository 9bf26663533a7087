"""The sampled-rankings grid as plain HTML: a few kB that the browser lays out in milliseconds.

The Plotly version (:func:`fairrag_studio.charts.rankings_grid`) stays for downloads; on the α slider's hot
path a coloured table is far cheaper to serialise and to draw than a figure with one bar per cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np

from .charts import provider_colours, text_colour_on

__all__ = ["rankings_grid_html"]

_CELL = ("padding:2px 4px;border:1px solid #fff;font:12px/1.3 ui-monospace,monospace;text-align:center;"
         "white-space:nowrap;min-width:4.2em")


def rankings_grid_html(doc_ids: Sequence[str], providers: Sequence[str], titles: Sequence[str],
                       rankings: np.ndarray, deterministic: np.ndarray, *, max_rows: int = 30,
                       repeats: int | None = None) -> str:
    """One row per ranking (deterministic first), one column per rank, each cell coloured by provider.

    Cells show the document id; hovering shows title and provider. ``repeats`` labels a single sampled row
    that stands for that many identical samples. Every text is HTML-escaped.

    >>> html = rankings_grid_html(["d1", "d2"], ["A", "B"], ["T1", "<T2>"], np.array([[1, 0]]), np.array([0, 1]))
    >>> html.count("<td title=")
    4
    >>> "&lt;T2&gt;" in html and "<T2>" not in html
    True
    """
    rankings = np.asarray(rankings)
    if rankings.ndim != 2 or np.asarray(deterministic).shape != (rankings.shape[1],):
        raise ValueError("rankings must be (N, k) and deterministic (k,)")
    colours = provider_colours(providers)

    def cell(position: int) -> str:
        colour = colours[str(providers[position])]
        tip = escape(f"{titles[position] or doc_ids[position]} — {providers[position]}", quote=True)
        return (f'<td title="{tip}" style="{_CELL};background:{colour};color:{text_colour_on(colour)}">'
                f"{escape(str(doc_ids[position]))}</td>")

    head = "".join(f'<th style="font:600 12px sans-serif;padding:2px 4px">{r}</th>'
                   for r in range(1, rankings.shape[1] + 1))
    label = 'style="font:12px sans-serif;padding:2px 8px 2px 0;text-align:right;white-space:nowrap;color:#555"'
    rows = [f'<tr><td {label}><b>deterministic</b></td>{"".join(cell(int(p)) for p in deterministic)}</tr>',
            f'<tr><td colspan="{rankings.shape[1] + 1}" style="border-bottom:2px dashed #999;padding:0"></td></tr>']
    shown = rankings[:max_rows]
    for i, row in enumerate(shown, start=1):
        name = f"sample 1 (×{repeats})" if repeats and len(shown) == 1 else f"sample {i}"
        rows.append(f"<tr><td {label}>{name}</td>{''.join(cell(int(p)) for p in row)}</tr>")
    used = sorted({str(providers[int(p)]) for p in np.concatenate([rankings.ravel(), np.asarray(deterministic)])})
    legend = " ".join(
        f'<span style="display:inline-block;margin:2px 8px 2px 0;font:12px sans-serif">'
        f'<span style="display:inline-block;width:12px;height:12px;background:{colours[p]};vertical-align:middle">'
        f"</span> {escape(p)}</span>" for p in used)
    more = (f'<div style="font:12px sans-serif;color:#555">showing {len(shown)} of {len(rankings)} samples</div>'
            if len(rankings) > len(shown) else "")
    return (f'<div style="overflow-x:auto"><table style="border-collapse:collapse"><thead><tr><th></th>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>{more}<div style="margin-top:6px">{legend}</div></div>')
