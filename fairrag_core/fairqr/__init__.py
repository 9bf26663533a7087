"""FAIR-QR: group-fair retrieval by iterative query refinement (Chen & Fang, "FAIR-QR: Enhancing
Fairness-aware Information Retrieval through Query Refinement").

An LLM (or the corpus-keyword ablation) appends keywords about the most under-represented group to the query,
iteration by iteration, until the KL divergence of the top-K group distribution from the target stops
decreasing (§2.2, Fig. 1); the kept list is re-ranked by BM25 with the original query. Evaluated as the
paper's Table 1 with nDCG@20 and AWRF@20 (TREC Fair 2022) against BM25, dense, MMR and FA*IR.

Modules: :mod:`.refiners` (LLM and corpus-keyword refiners, the Appendix prompt, sanitising), :mod:`.loop`
(the refinement loop and its trace), :mod:`.evaluate` (baselines per query, Table 1, paired tests).
"""

from .evaluate import FairQREvalConfig, compare_systems, evaluate_fair_qr
from .loop import FairQRConfig, FairQRResult, Iteration, fair_qr
from .refiners import KEYWORDS_REFINER, CorpusKeywordRefiner, LLMRefiner, Refiner, build_refiner

__all__ = [
    "FairQRConfig", "FairQRResult", "Iteration", "fair_qr",
    "KEYWORDS_REFINER", "CorpusKeywordRefiner", "LLMRefiner", "Refiner", "build_refiner",
    "FairQREvalConfig", "compare_systems", "evaluate_fair_qr",
]
