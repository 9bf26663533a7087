"""Thousands of providers on one page (issue 30): beside a top-N chart, the spread over all of them (a Lorenz curve
with its Gini) and every row in a table that can be searched and downloaded in full.

Drawn only when a table has more rows than :data:`~fairrag_core.audit.ledger.TOP_PROVIDERS`: below that the
chart already shows every provider, and the page stays as it was. The table keeps a fixed height (Streamlit draws
only the rows in view), so the page does not grow with the number of providers.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from fairrag_core.audit.ledger import TOP_PROVIDERS

from ..charts import lorenz_chart
from ..charts.style import ATTRIBUTED_COLOUR, DETERMINISTIC_COLOUR, STOCHASTIC_COLOUR, TARGET_COLOUR
from ..views.report import table_csv

__all__ = ["TABLE_HEIGHT", "PROVIDER_SERIES", "LEDGER_SERIES", "many_providers", "matching"]

TABLE_HEIGHT = 320  # px: about ten rows in view, the rest scrolled
#: The Lorenz curves of one query's provider table (``RankingRun.providers_table``), in the bar chart's colours.
PROVIDER_SERIES = (("sampled", "exposure", STOCHASTIC_COLOUR), ("deterministic", "deterministic_exposure",
                                                                DETERMINISTIC_COLOUR),
                   ("target", "target_exposure", TARGET_COLOUR))
#: The Lorenz curves of a ledger (:func:`~fairrag_core.audit.ledger.exposure_ledger`), in the ledger chart's colours.
LEDGER_SERIES = (("retrieval", "retrieval_share", STOCHASTIC_COLOUR), ("attributed", "attributed_share",
                                                                      ATTRIBUTED_COLOUR),
                 ("target", "target_share", TARGET_COLOUR))


def matching(table: pd.DataFrame, column: str, text: str) -> pd.DataFrame:
    """The rows of ``table`` whose ``column`` contains ``text`` (case-insensitive, literal: no pattern syntax);
    every row for empty text.

    >>> t = pd.DataFrame({"provider": ["Debian Games Team", "Maintainer 0001", "games.org (a+b)"]})
    >>> matching(t, "provider", "GAMES")["provider"].tolist(), len(matching(t, "provider", " "))
    (['Debian Games Team', 'games.org (a+b)'], 3)
    >>> matching(t, "provider", "(a+b")["provider"].tolist()
    ['games.org (a+b)']
    """
    text = text.strip()
    if not text:
        return table
    return table[table[column].astype(str).str.contains(text, case=False, regex=False)]


def many_providers(table: pd.DataFrame, *, column: str, series: Sequence[tuple[str, str, str]], name: str,
                   key: str, shown: pd.DataFrame | None = None, noun: str = "providers") -> bool:
    """Under a top-N chart of ``table`` (one row per provider or group in ``column``): the Lorenz curve of each
    ``(name, column, colour)`` of ``series`` with its Gini, a search box, and ``shown`` (``table`` as the page
    shows it, same rows and order; default ``table``) filtered by it in a fixed-height table, with the whole of
    ``table`` as CSV (``name``.csv). Nothing when ``table`` has at most ``TOP_PROVIDERS`` rows. Whether it drew."""
    if len(table) <= TOP_PROVIDERS:
        return False
    shown = table if shown is None else shown
    st.plotly_chart(lorenz_chart(table, series, noun=noun), key=f"{key}_lorenz", config={"displaylogo": False})
    label_column = shown.columns[0] if column not in shown else column
    search = st.text_input(f"Search all {len(table):,} {noun}", key=f"{key}_search",
                           placeholder="part of a name, any case")
    found = matching(shown, label_column, search)
    st.dataframe(found, hide_index=True, height=TABLE_HEIGHT, key=f"{key}_table")
    with st.container(horizontal=True):
        st.caption(f"{len(found):,} of {len(table):,} {noun}" + (f" contain “{search.strip()}”" if search.strip()
                                                                else "") + ".")
        st.download_button(f"All {len(table):,} {noun} (CSV)", table_csv(table), file_name=f"{name}_all.csv",
                           mime="text/csv", key=f"{key}_all_csv")
    return True
