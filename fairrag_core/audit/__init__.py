"""Audit: who got exposure over a query set, which α to recommend, and the store of saved runs.

* :mod:`.ledger` — the exposure ledger per provider or fairness group: retrieval exposure (Kim & Diaz 2025,
  Eq. 5), attributed exposure (§3.4) and the fair target (Eq. 6), as totals and shares, with the gap;
* :mod:`.recommend` — the α recommender (the paper's Table 2 trade-off as a decision rule);
* :mod:`.store` — the DuckDB run store: save, list, reopen, compare and reproduce runs; :mod:`.jobs` — the
  table of background jobs (who started what, progress, ETA, the run it left) beside it;
* :mod:`.rag_log` — the audit of a served RAG log: exposure of what was retrieved, attribution of what was
  answered (logged citations and/or an NLI judge), EAR, EAE-D and the fair target; :mod:`.log_report` — its
  headline numbers and ledgers with intervals;
* :mod:`.log_shards` — a large log cut into shards, read and aggregated per query by workers (Ray), merged on the
  driver for the exposure audit;
* :mod:`.what_if` — what if a served system had sampled: its logged candidates and scores replayed under the fair
  Plackett-Luce sampler at each α, the exposure it would have delivered against what it served, and the α to pick;
* :mod:`.query_bootstrap` — percentile bootstrap intervals over queries for headline means and ledger shares;
* :mod:`.served` — served stochastic runs judged with expeval's expected exposure (gerr, rbp, step), TREC Fair
  2022 nDCG/AWRF, intervals over samples and queries, and the paired comparison of two runs.
"""

from __future__ import annotations

from ..lazy import lazy_exports

#: Where each public name lives, imported on first use (PEP 562): one audit module does not import them all.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    ".compare": ("compare_systems",),
    ".jobs": ("Job", "JobStatus", "JobTable"),
    ".ledger": ("LEDGER_COLUMNS", "exposure_ledger"),
    ".log_report": ("default_ledger_scope", "log_ledger", "log_summary"),
    ".rag_log": ("AttributionSource", "LogAuditConfig", "LogAuditRun", "audit_rag_log", "audit_served"),
    ".recommend": ("AlphaRecommendation", "recommend_alpha"),
    ".served": ("evaluate_run",),
    ".served_stats": ("bootstrap_run", "compare_runs", "evaluate_served", "summarise_run"),
    ".served_awrf": ("evaluate_run_awrf",),
    ".store": ("RunStore", "default_store_path"),
    ".what_if": ("WhatIf", "WhatIfSettings", "what_if_findings", "what_if_sampling"),
}.items() for name in names}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


__all__ = list(_EXPORTS)
