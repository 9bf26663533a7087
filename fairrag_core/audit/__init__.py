"""Audit: who got exposure over a query set, which α to recommend, and the store of saved runs.

* :mod:`.ledger` — the exposure ledger per provider or fairness group: retrieval exposure (Kim & Diaz 2025,
  Eq. 5), attributed exposure (§3.4) and the fair target (Eq. 6), as totals and shares, with the gap;
* :mod:`.recommend` — the α recommender (the paper's Table 2 trade-off as a decision rule);
* :mod:`.store` — the DuckDB run store: save, list, reopen, compare and reproduce runs.
"""

from .ledger import LEDGER_COLUMNS, exposure_ledger
from .recommend import AlphaRecommendation, recommend_alpha
from .store import RunStore, default_store_path

__all__ = ["LEDGER_COLUMNS", "exposure_ledger", "AlphaRecommendation", "recommend_alpha", "RunStore",
           "default_store_path"]
