"""Audit: who got exposure over a query set, which α to recommend, and the store of saved runs.

* :mod:`.ledger` — the exposure ledger per provider or fairness group: retrieval exposure (Kim & Diaz 2025,
  Eq. 5), attributed exposure (§3.4) and the fair target (Eq. 6), as totals and shares, with the gap;
* :mod:`.recommend` — the α recommender (the paper's Table 2 trade-off as a decision rule);
* :mod:`.store` — the DuckDB run store: save, list, reopen, compare and reproduce runs; :mod:`.jobs` — the
  table of background jobs (who started what, progress, ETA, the run it left) beside it;
* :mod:`.rag_log` — the audit of a served RAG log: exposure of what was retrieved, attribution of what was
  answered (logged citations and/or an NLI judge), EAR, EAE-D and the fair target; :mod:`.log_report` — its
  headline numbers and ledgers with intervals;
* :mod:`.what_if` — what if a served system had sampled: its logged candidates and scores replayed under the fair
  Plackett-Luce sampler at each α, the exposure it would have delivered against what it served, and the α to pick;
* :mod:`.query_bootstrap` — percentile bootstrap intervals over queries for headline means and ledger shares;
* :mod:`.served` — served stochastic runs judged with expeval's expected exposure (gerr, rbp, step), TREC Fair
  2022 nDCG/AWRF, intervals over samples and queries, and the paired comparison of two runs.
"""

from .jobs import Job, JobStatus, JobTable
from .ledger import LEDGER_COLUMNS, exposure_ledger
from .log_report import default_ledger_scope, log_ledger, log_summary
from .rag_log import AttributionSource, LogAuditConfig, LogAuditRun, audit_rag_log
from .recommend import AlphaRecommendation, recommend_alpha
from .served import bootstrap_run, compare_runs, evaluate_run, evaluate_run_awrf, summarise_run
from .store import RunStore, default_store_path
from .what_if import WhatIf, what_if_findings, what_if_sampling

__all__ = ["LEDGER_COLUMNS", "exposure_ledger", "AlphaRecommendation", "recommend_alpha", "RunStore",
           "default_store_path", "Job", "JobStatus", "JobTable", "AttributionSource", "LogAuditConfig", "LogAuditRun",
           "audit_rag_log", "log_ledger",
           "log_summary", "default_ledger_scope", "evaluate_run", "evaluate_run_awrf", "bootstrap_run", "summarise_run",
           "compare_runs", "WhatIf", "what_if_sampling", "what_if_findings"]
