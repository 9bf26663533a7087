"""'What am I looking at?' — one short paragraph per panel, written for students."""

import math

RANKINGS = (
    "Each row is one ranking the stochastic retriever drew; each cell is a document, coloured by its provider. "
    "The top row is the deterministic retriever: it shows the same k documents to the generator every time, "
    "so equally useful documents further down never get seen. With α small the rows differ a lot (exposure is "
    "spread); with α large they look like the deterministic row. α is the fairness knob: the sampling "
    "probability of a document grows with (score)^α (Plackett-Luce; Kim & Diaz 2025, Eq. 2)."
)

EXPOSURE = (
    "Exposure is the chance that a document lands in the top k that the generator reads. The bars compare "
    "the stochastic retriever (over the N samples), the deterministic one (1 for its k documents, 0 for the "
    "rest) and the fair target: every useful document gets the same exposure (Kim & Diaz 2025, Eq. 6). "
    "Provider bars add up the exposure of each provider's documents."
)

METRICS = (
    "EE-D (expected exposure disparity) is ‖ε‖²/k: it is 1 when the same k documents are always shown and "
    "falls as exposure spreads — lower is fairer. EE-R (expected exposure relevance) says how much of the "
    "exposure goes to useful documents, normalised to [0, 1]: higher is better. The intervals are 95% "
    "bootstrap intervals over the N rankings (Diaz et al. 2020; Kim & Diaz 2025, §3)."
)

ANSWERS = (
    "The generator answers once for every distinct ranking (identical rankings share an answer). A citation "
    "chip is green when the NLI model judges that the document entails the answer; grey, struck-through chips "
    "are documents the generator saw but the answer does not rest on. EU is the expected utility of the "
    "answers against the gold answer, EAR the share of retrieved documents the answers actually use, and "
    "EAE-D the disparity of that attributed exposure (Kim & Diaz 2025, §3.4)."
)

CURVES = (
    "Each point is one query at one α. The paper's picture: as α grows, rankings become deterministic and "
    "EE-D rises towards 1 (Figure 3); quality (EE-R) changes little over much of the range (Figure 4), and "
    "answer utility can often be kept while exposure is spread (Figure 5 and Table 2). Points below the "
    "y = x line in the EAE-D chart mean the answers cite documents more evenly than they were retrieved."
)

RECOMMENDER = (
    "The recommender picks the fairest α (lowest mean EE-D) whose mean utility stays within your tolerance of "
    "the deterministic retriever. It is a summary of this sweep only: with few queries or few samples its "
    "choice is noisy, so read it with the Table 2 p-values."
)

LEDGER = (
    "The ledger adds up, per provider or group, how much of the top-k exposure it received (retrieval), how "
    "much of the answers' citations (attributed) and what it would receive under the fair target. A positive "
    "gap means the group is shown more than its useful documents warrant; a negative gap means less."
)

FAIRQR = (
    "FAIR-QR makes a ranking fairer to groups (e.g. gender, region) by changing the query, not the ranker. Each "
    "iteration counts the groups in the top K, compares them with the target (by default: the groups of the "
    "relevant documents), finds the group that is most missing, and asks a language model for a few keywords "
    "about that group to add to the query. It stops when the distance Δ to the target stops shrinking, then "
    "re-ranks the kept documents by the original query so relevance comes back to the top. AWRF (higher = "
    "fairer) compares the attention-weighted group shares with the target; nDCG measures relevance "
    "(Chen & Fang; TREC Fair 2022)."
)


def recommendation_context(table, k: int, metric: str) -> str:
    """One sentence on why the recommender says what it says: how many queries gain or lose ``metric`` as α
    falls, compared with the deterministic retriever, and why EE-R moves the way it does."""
    kept = table[table["fairness_question"]] if table["fairness_question"].any() else table
    stochastic = kept[kept["system"] == "stochastic"].dropna(subset=[metric])
    baseline = kept[kept["system"] == "deterministic"].dropna(subset=[metric]).set_index("query_id")[metric]
    if stochastic.empty or baseline.empty:
        return ""
    lowest = stochastic.loc[stochastic.groupby("query_id")["alpha"].idxmin()].set_index("query_id")[metric]
    lowest, baseline = lowest.align(baseline, join="inner")
    up, down = int((lowest > baseline + 1e-9).sum()), int((lowest < baseline - 1e-9).sum())
    name = {"ee_r": "EE-R", "eu": "EU"}.get(metric, metric)
    text = (f"Over these {len(lowest)} queries, {up} gain {name} at the lowest α and {down} lose it, compared with "
            "the deterministic retriever; the recommender weighs the whole set, so it follows the majority")
    if metric == "ee_r":
        text += (". Lowering α raises EE-R only where the deterministic top k spends exposure on documents that are "
                 "not useful (as for the Playground's marathon query); elsewhere it moves exposure from useful "
                 "documents at the top to less useful ones further down")
    return text + "."


def citation_reason(entails: bool, probability: float, support: float | None, policy, degenerate: bool) -> str:
    """Why one document is or is not cited for an answer, in the words of the citation rule ``policy``
    (a :class:`~fairrag_core.rag.citations.CitationPolicy`)."""
    words = "" if support is None else f"{support:.0%} of the answer's own words occur in this document"
    needs = []
    if policy.min_support is not None:
        needs.append(f"at least {policy.min_support:.0%} of the answer's own words in the document")
    needs.append(f"P(entailment) ≥ {policy.threshold:g}" if policy.threshold is not None
                 else "entailment the NLI judge's most likely class")
    if policy.control_margin is not None:
        needs.append(f"P(entailment) at least {policy.control_margin:g} above an unseen on-topic document's")
    rule = "A citation needs " + ", ".join(needs) + "."
    if entails:
        return f"Cited: P(entailment) = {probability:.2f}" + (f"; {words}" if words else "") + f". {rule}"
    if math.isnan(probability):
        if degenerate and policy.skip_degenerate:
            return "Not cited: the answer is degenerate, so it is not checked against any document."
        return f"Not cited, not sent to the judge: {words or 'too few of its words occur here'}. {rule}"
    return f"Not cited: P(entailment) = {probability:.2f}" + (f"; {words}" if words else "") + f". {rule}"
