"""FairRAG core: fair stochastic retrieval, exposure metrics and RAG fairness audits.

Imports without Streamlit (and without torch: model wrappers load it on first use). The package is layered,
and data flows one way — data → retrieval → ranking → rag → audit → cli:

* :mod:`.data` — documents, queries, qrels, loaders, the demo collections;
* :mod:`.retrieval` — BM25 and dense first-stage scorers; :mod:`.models` — every model wrapper (torch lives here);
* :mod:`.metrics` — pure metric functions: exposure (EE-D, EE-R), attribution (EAR, EAE-D), utility, group fairness;
* :mod:`.ranking` — the Plackett-Luce sampler with the fairness knob α, re-rankers, ranking runs and exposure sweeps
  (Kim & Diaz, "Towards Fair RAG", ICTIR 2025);
* :mod:`.rag` — generation, NLI attribution, utility labels (Algorithm 1), the one-query pipeline, the α sweep and
  the paper's tables;
* :mod:`.fairqr` — FAIR-QR's query-refinement loop, refiners and evaluation (Chen & Fang);
* :mod:`.audit` — the exposure ledger, the α recommender, the run store and the audit of served RAG logs;
  :mod:`.cli` — ``python -m fairrag_core``.

Shared kernels at the bottom: :mod:`.errors`, :mod:`.checks`, :mod:`.seeds`, :mod:`.settings`, :mod:`.record`,
:mod:`.text`. RichRAG (Wang et al.) lives in :mod:`.richrag` (coverage φ, the greedy silver list, NCOM).

>>> import numpy as np
>>> import fairrag_core as fr
>>> rankings = fr.sample_rankings(np.array([3.0, 2.0, 1.0, 0.0]), alpha=0, n_samples=1000, k=2, seed=7)
>>> eps = fr.expected_exposure(rankings, 4)
>>> round(float(eps.sum()), 6)
2.0
"""

from .lazy import lazy_exports

#: Where each public name lives: imported on first use (PEP 562), so that `import fairrag_core` and the CLI's
#: commands that need no model, pandas or scipy start fast (issue 22: the CLI's import cost 1.4 s).
_EXPORTS: dict[str, str] = {
    "AlphaRecommendation": ".audit",
    "LogAuditConfig": ".audit",
    "RunStore": ".audit",
    "audit_rag_log": ".audit",
    "audit_served": ".audit",
    "bootstrap_run": ".audit",
    "compare_runs": ".audit",
    "compare_systems": ".audit",
    "evaluate_run": ".audit",
    "evaluate_served": ".audit",
    "evaluate_run_awrf": ".audit",
    "exposure_ledger": ".audit",
    "log_summary": ".audit",
    "recommend_alpha": ".audit",
    "summarise_run": ".audit",
    "WhatIfSettings": ".audit",
    "what_if_sampling": ".audit",
    "DEMO_COLLECTIONS": ".data",
    "Aspect": ".data",
    "Collection": ".data",
    "Document": ".data",
    "Judgments": ".data",
    "Query": ".data",
    "ServedRankings": ".data",
    "load_collection": ".data",
    "load_corpus": ".data",
    "load_judgments": ".data",
    "load_qrels": ".data",
    "load_queries": ".data",
    "load_rag_log": ".data",
    "load_run": ".data",
    "load_served": ".data",
    "DataFormatError": ".errors",
    "FairRAGError": ".errors",
    "InvalidParameterError": ".errors",
    "MissingGroupLabelError": ".errors",
    "ModelUnavailableError": ".errors",
    "UndefinedMetricError": ".errors",
    "UnknownCollectionError": ".errors",
    "CorpusKeywordRefiner": ".fairqr",
    "FairQRConfig": ".fairqr",
    "FairQRResult": ".fairqr",
    "LLMRefiner": ".fairqr",
    "fair_qr": ".fairqr",
    "UtilityMetric": ".metrics",
    "utility": ".metrics",
    "ConfidenceInterval": ".metrics.exposure",
    "ExposureSummary": ".metrics.exposure",
    "bootstrap_exposure_ci": ".metrics.exposure",
    "ee_disparity": ".metrics.exposure",
    "ee_relevance": ".metrics.exposure",
    "expected_exposure": ".metrics.exposure",
    "summarise_exposure": ".metrics.exposure",
    "target_exposure": ".metrics.exposure",
    "unbiased_ee_disparity": ".metrics.exposure",
    "awrf": ".metrics.group_fairness",
    "ndcg": ".metrics.group_fairness",
    "TargetKind": ".metrics.group_targets",
    "target_distribution": ".metrics.group_targets",
    "Attributor": ".rag",
    "CrossEncoderAttributor": ".rag",
    "Generator": ".rag",
    "LLMJudgeAttributor": ".rag",
    "RagConfig": ".rag",
    "RagRun": ".rag",
    "RagSweep": ".rag",
    "RagSweepConfig": ".rag",
    "UtilityLabelConfig": ".rag",
    "build_prompt": ".rag",
    "default_attributor": ".rag",
    "disparity_quality_table": ".rag",
    "label_utility": ".rag",
    "load_utility_labels": ".rag",
    "rag_sweep": ".rag",
    "run_rag": ".rag",
    "utility_by_disparity_table": ".rag",
    "RankingConfig": ".ranking",
    "RankingRun": ".ranking",
    "SweepConfig": ".ranking",
    "deterministic_ranking": ".ranking",
    "exposure_sweep": ".ranking",
    "normalise_scores": ".ranking",
    "run_ranking": ".ranking",
    "sample_rankings": ".ranking",
    "sample_rankings_batch": ".ranking",
    "summarise_sweep": ".ranking",
    "BM25Retriever": ".retrieval",
    "Retriever": ".retrieval",
    "RetrieverKind": ".retrieval",
    "build_retriever": ".retrieval",
    "greedy_coverage": ".richrag",
    "ncom": ".richrag",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


#: The front door is the export table itself (as ir_measures' registry is its ``__all__``): one list, in one place.
__all__ = list(_EXPORTS)
