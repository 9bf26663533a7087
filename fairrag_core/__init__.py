"""FairRAG core: fair stochastic retrieval, exposure metrics and RAG fairness audits.

Imports without Streamlit (and without torch: model wrappers load it on first use).

>>> import numpy as np
>>> import fairrag_core as fr
>>> rankings = fr.sample_rankings(np.array([3.0, 2.0, 1.0, 0.0]), alpha=0, n_samples=1000, k=2, seed=7)
>>> eps = fr.expected_exposure(rankings, 4)
>>> round(float(eps.sum()), 6)
2.0
"""

from .corpus import (
    DEMO_COLLECTIONS,
    Aspect,
    Collection,
    Document,
    Query,
    load_collection,
    load_corpus,
    load_qrels,
    load_queries,
)
from .errors import (
    DataFormatError,
    FairRAGError,
    InvalidParameterError,
    MissingGroupLabelError,
    ModelUnavailableError,
    UnknownCollectionError,
)
from .exposure import (
    ConfidenceInterval,
    ExposureSummary,
    bootstrap_exposure_ci,
    ee_disparity,
    ee_relevance,
    expected_exposure,
    summarise_exposure,
    target_exposure,
)
from .audit import AlphaRecommendation, exposure_ledger, recommend_alpha
from .attribution import Attributor, CrossEncoderAttributor, LLMJudgeAttributor, default_attributor
from .fairqr import CorpusKeywordRefiner, FairQRConfig, FairQRResult, LLMRefiner, fair_qr
from .generation import Generator, build_prompt
from .labels import UtilityLabelConfig, label_utility, load_utility_labels
from .metrics import UtilityMetric, utility
from .metrics.group_fairness import TargetKind, awrf, ndcg, target_distribution
from .pipeline import RagConfig, RagRun, run_rag
from .ranking import RankingConfig, RankingRun, run_ranking
from .retrieval import BM25Retriever, Retriever, RetrieverKind, build_retriever
from .sampling import deterministic_ranking, normalise_scores, sample_rankings, sample_rankings_batch
from .store import RunStore
from .sweep import (
    RagSweep,
    RagSweepConfig,
    SweepConfig,
    disparity_quality_table,
    exposure_sweep,
    rag_sweep,
    summarise_sweep,
    utility_by_disparity_table,
)

__all__ = [
    "DEMO_COLLECTIONS", "Aspect", "Collection", "Document", "Query",
    "load_collection", "load_corpus", "load_qrels", "load_queries",
    "FairRAGError", "InvalidParameterError", "DataFormatError", "MissingGroupLabelError",
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
    "CorpusKeywordRefiner", "LLMRefiner",
]
