"""RichRAG: rich answers for multi-faceted queries (Wang et al., "RichRAG: Crafting Rich Responses for
Multi-faceted Queries in Retrieval-Augmented Generation").

A broad query has several sub-aspects; RichRAG finds them (the sub-aspect explorer), retrieves per aspect into a
pool (the multi-faceted retriever), ranks the pool for coverage with a generative list-wise ranker, and writes
a long answer that covers the aspects. Measured by NCOM (normalised comprehensiveness of a list, App. C) and
Com-ROUGE (coverage of the sub-answers by the response, Eq. 11).

Modules: :mod:`.rouge` — ROUGE recall as the released code computes it (``rouge==1.0.1``) or with Google's
``rouge-score``; :mod:`.coverage` — φ, the greedy silver list, COM, NCOM and Com-ROUGE; :mod:`.pool` — the
multi-faceted retriever (top N per ``q ∘ s_i``, merged into a pool of capacity M that remembers s(d));
:mod:`.aspects` — the sub-aspect explorer (an LLM's ``[s1] … [sn]`` parsed robustly, with fallbacks);
:mod:`.prompts` — every prompt RichRAG sends to a language model; :mod:`.answer` — rich answers cited per
sentence; :mod:`.baselines` — relevance, MMR, per-aspect round robin and the greedy oracle on a pool.
"""

from .coverage import ComRouge, com, com_rouge, coverage_matrix, coverage_text, gains, greedy_coverage, ncom
from .pool import Pool, PoolSettings, build_pool
from .rouge import RougeVariant, rouge_recall

__all__ = [
    "ComRouge", "Pool", "PoolSettings", "RougeVariant", "build_pool", "com", "com_rouge", "coverage_matrix",
    "coverage_text", "gains", "greedy_coverage", "ncom", "rouge_recall",
]
