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

from .audit import (
    AlphaRecommendation,
    LogAuditConfig,
    RunStore,
    audit_rag_log,
    bootstrap_run,
    compare_runs,
    evaluate_run,
    evaluate_run_awrf,
    exposure_ledger,
    recommend_alpha,
    summarise_run,
)
from .data import (
    DEMO_COLLECTIONS,
    Aspect,
    Collection,
    Document,
    Judgments,
    Query,
    ServedRankings,
    load_collection,
    load_corpus,
    load_judgments,
    load_qrels,
    load_queries,
    load_rag_log,
    load_run,
)
from .errors import (
    DataFormatError,
    FairRAGError,
    InvalidParameterError,
    MissingGroupLabelError,
    ModelUnavailableError,
    UndefinedMetricError,
    UnknownCollectionError,
)
from .fairqr import CorpusKeywordRefiner, FairQRConfig, FairQRResult, LLMRefiner, fair_qr
from .metrics import UtilityMetric, utility
from .metrics.exposure import (
    ConfidenceInterval,
    ExposureSummary,
    bootstrap_exposure_ci,
    ee_disparity,
    ee_relevance,
    expected_exposure,
    summarise_exposure,
    target_exposure,
)
from .metrics.group_fairness import awrf, ndcg
from .metrics.group_targets import TargetKind, target_distribution
from .rag import (
    Attributor,
    CrossEncoderAttributor,
    Generator,
    LLMJudgeAttributor,
    RagConfig,
    RagRun,
    RagSweep,
    RagSweepConfig,
    UtilityLabelConfig,
    build_prompt,
    default_attributor,
    disparity_quality_table,
    label_utility,
    load_utility_labels,
    rag_sweep,
    run_rag,
    utility_by_disparity_table,
)
from .ranking import (
    RankingConfig,
    RankingRun,
    SweepConfig,
    deterministic_ranking,
    exposure_sweep,
    normalise_scores,
    run_ranking,
    sample_rankings,
    sample_rankings_batch,
    summarise_sweep,
)
from .retrieval import BM25Retriever, Retriever, RetrieverKind, build_retriever
from .richrag import greedy_coverage, ncom

__all__ = [
    "DEMO_COLLECTIONS", "Aspect", "Collection", "Document", "Query",
    "load_collection", "load_corpus", "load_qrels", "load_queries",
    "FairRAGError", "InvalidParameterError", "UndefinedMetricError", "DataFormatError", "MissingGroupLabelError",
    "ModelUnavailableError", "UnknownCollectionError",
    "sample_rankings", "sample_rankings_batch", "deterministic_ranking", "normalise_scores",
    "expected_exposure", "target_exposure", "ee_disparity", "ee_relevance",
    "bootstrap_exposure_ci", "summarise_exposure", "ConfidenceInterval", "ExposureSummary",
    "Retriever", "RetrieverKind", "BM25Retriever", "build_retriever",
    "RankingConfig", "RankingRun", "run_ranking",
    "SweepConfig", "exposure_sweep", "summarise_sweep",
    "Attributor", "CrossEncoderAttributor", "LLMJudgeAttributor", "default_attributor",
    "Generator", "build_prompt", "UtilityMetric", "utility",
    "UtilityLabelConfig", "label_utility", "load_utility_labels",
    "RagConfig", "RagRun", "run_rag", "RagSweepConfig", "rag_sweep",
    "disparity_quality_table", "utility_by_disparity_table", "RunStore",
    "RagSweep", "exposure_ledger", "recommend_alpha", "AlphaRecommendation",
    "awrf", "ndcg", "TargetKind", "target_distribution", "fair_qr", "FairQRConfig", "FairQRResult",
    "CorpusKeywordRefiner", "LLMRefiner", "greedy_coverage", "ncom",
    "load_rag_log", "audit_rag_log", "LogAuditConfig",
    "ServedRankings", "Judgments", "load_run", "load_judgments", "evaluate_run", "evaluate_run_awrf",
    "bootstrap_run", "summarise_run", "compare_runs",
]
