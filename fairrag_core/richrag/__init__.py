"""RichRAG: rich answers for multi-faceted queries (Wang et al., "RichRAG: Crafting Rich Responses for
Multi-faceted Queries in Retrieval-Augmented Generation").

A broad query has several sub-aspects; RichRAG finds them (the sub-aspect explorer), retrieves per aspect into a
pool (the multi-faceted retriever), ranks the pool for coverage with a generative list-wise ranker, and writes
a long answer that covers the aspects. Measured by NCOM (normalised comprehensiveness of a list, App. C) and
Com-ROUGE (coverage of the sub-answers by the response, Eq. 11).

Modules: :mod:`.coverage` — the greedy silver list, COM and NCOM on a documents × aspects coverage matrix.
"""

from .coverage import com, greedy_coverage, ncom

__all__ = ["com", "greedy_coverage", "ncom"]
