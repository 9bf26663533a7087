"""'What am I looking at?' — one short paragraph per panel, written for students, followed by the glossary's line
for each metric it shows (:mod:`fairrag_core.glossary`: the same words as the tiles' help and the report)."""

import math

from fairrag_core.audit.findings import INTERVAL_RULE
from fairrag_core.glossary import GLOSSARY
from fairrag_core.metrics.registry import METRICS as REGISTERED

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

def glossary_lines(*names: str) -> str:
    """The glossary's line for each metric (:mod:`fairrag_core.glossary`) as a Markdown list: the words every page
    and the report share."""
    return "\n".join(f"- **{GLOSSARY[name].key}** — {markdown_gloss(GLOSSARY[name].gloss)}" for name in names)


def markdown_gloss(text: str) -> str:
    """Glossary text as Markdown shows it literally (``ε*`` is not the start of emphasis)."""
    return text.replace("*", "\\*").replace("_", "\\_")


def _with_glossary(text: str, *names: str) -> str:
    return f"{text}\n\n{glossary_lines(*names)}"


METRICS = _with_glossary(
    "The two numbers above summarise the N sampled rankings. The intervals are 95% bootstrap intervals over the N "
    "rankings; the EE-D tile shows the bias-corrected estimate (its caption gives the plug-in).",
    "EE-D", "EE-R")

ANSWERS = _with_glossary(
    "The generator answers once for every distinct ranking (identical rankings share an answer). A citation "
    "chip is green when the NLI judge finds that the document supports the answer as an answer to the question "
    "(mentioning what the answer names is not enough); grey, struck-through chips "
    "are documents the generator saw but the answer does not rest on.",
    "EU", "EU (normalised)", "EAR", "EAE-D")

CURVES = _with_glossary(
    "Each point is one query at one α. The paper's picture: as α grows, rankings become deterministic and "
    "EE-D rises towards 1 (Figure 3); quality (EE-R) changes little over much of the range (Figure 4), and "
    "answer utility can often be kept while exposure is spread (Figure 5 and Table 2). Points below the "
    "y = x line in the EAE-D chart mean the answers cite documents more evenly than they were retrieved.",
    "EE-D", "EE-R", "EU (normalised)", "EAR", "EAE-D")

RECOMMENDER = _with_glossary(
    "The recommender picks the fairest α (lowest mean EE-D) whose mean utility (EU, or EE-R without answers) stays "
    "within your tolerance of the deterministic retriever. It is a summary of this sweep only: with few queries or "
    "few samples its choice is noisy, so read it with the Table 2 p-values.",
    "EE-D", "EU", "EE-R")

LEDGER = _with_glossary(
    "The ledger adds up, per provider or group, how much of the top-k exposure it received (retrieval), how "
    "much of the answers' citations (attributed) and what it would receive under the fair target. The chart's "
    "lower panel draws the gaps with their 95% intervals: a dot right of (above) zero means the group is shown "
    "or credited more than its useful documents warrant; below zero, less.",
    "retrieval share", "attributed share", "target share", "gap (retrieval − target)", "gap (attributed − target)")

FAIRQR = _with_glossary(
    "FAIR-QR makes a ranking fairer to groups (e.g. gender, region) by changing the query, not the ranker. Each "
    "iteration counts the groups in the top K, compares them with the target (by default: the groups of the "
    "relevant documents), finds the group that is most missing, and asks a language model for a few keywords "
    "about that group to add to the query. It stops when the distance Δ to the target stops shrinking, then "
    "re-ranks the kept documents by the original query so relevance comes back to the top (Chen & Fang; TREC "
    "Fair 2022).",
    "Δ", "AWRF", "nDCG")

RICHRAG = _with_glossary(
    """* **Aspects** come from you (edit the box), from the collection (its queries ship with aspects and
  sub-answers), or from an LLM asked to list them as `[s1] … [sn]` (the paper's format); a reply without usable
  aspects falls back with a note.
* **Coverage φ(d, aᵢ)** is the ROUGE recall of aspect i's *sub-answer* by document d (max of ROUGE-1/2/L, as the
  authors' released code). It needs the sub-answers, so it exists for the collection's own queries only — and it
  always uses the collection's aspects, whatever aspects drove retrieval (the paper's evaluation does the same).
* **NCOM@k** compares a list's coverage gains (each pick weighted by what the list had not covered yet) with those
  of the greedy **oracle** list, which reads the sub-answers: oracle = 1 by definition, an upper bound.
* **Round robin** lets the aspects take turns picking their best document; **MMR** trades relevance against
  similarity to the documents already picked; **relevance** ranks by the query alone.""",
    "NCOM", "Com-ROUGE")

#: The opening of every audit report: how the report is built and how to read its numbers (the metrics' lines
#: follow, from the glossary).
REPORT_INTRO = (
    "A deterministic retriever always shows the generator the same top-k documents; a stochastic retriever with "
    "fairness knob α spreads that exposure over equally useful sources. Each number comes with a 95% interval. "
    + INTERVAL_RULE + " The ledgers show, per provider and group, who was "
    "shown (retrieval), who the answers credit (attributed) and who a fair ranker would show (target), with the "
    "gaps. Every metric is explained in one line where it first appears, above its table; the methodology lists "
    "them all with their sources. Metrics follow Kim & Diaz (2025).")

SERVED_REPORT_INTRO = (
    "This report audits what a deployed system served: every {unit} is one ranking shown to the generator, and the "
    "rankings of a query are its N. Each number comes with a 95% interval. " + INTERVAL_RULE
    + " The ledgers show, per provider and group, who was shown (retrieval), who the answers "
    "credit (attributed) and who a fair ranker would show (target), with the gaps. Every metric is explained in "
    "one line where it first appears, above its table; the methodology lists them all with their sources. Metrics "
    "follow Kim & Diaz (2025).")


#: Below this change of EE-R (plug-in, two decimals shown) the Playground says it is the same as the deterministic one.
EE_R_SAME = 0.005


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
    name = REGISTERED[metric].label if metric in REGISTERED else metric
    which = " with a fairness question" if table["fairness_question"].any() else ""  # the recommender's queries
    text = (f"Over the {len(lowest)} queries{which}, {up} gain {name} at the lowest α and {down} lose it, compared "
            "with the deterministic retriever; the recommender compares the means over all of them, not these counts")
    if metric == "ee_r":
        text += (". Lowering α raises EE-R only where the deterministic top k spends exposure on documents that are "
                 "not useful (as for the Playground's marathon query); elsewhere it moves exposure from useful "
                 "documents at the top to less useful ones further down")
    return text + "."


def citation_reason(entails: bool, probability: float, support: float | None, policy, degenerate: bool) -> str:
    """Why one document is or is not cited for an answer, in the words of the citation rule ``policy``
    (a :class:`~fairrag_core.rag.citations.CitationPolicy`)."""
    words = "" if support is None else f"{support:.0%} of the answer's own words occur in this document"
    judged = "P(the document supports it as the answer to the question)"  # the judge's statement, docs/answers.md
    needs = []
    if policy.min_support is not None:
        needs.append(f"at least {policy.min_support:.0%} of the answer's own words in the document")
    needs.append(f"{judged} ≥ {policy.entail_threshold:g}" if policy.entail_threshold is not None
                 else "entailment the NLI judge's most likely class")
    if policy.control_margin is not None:
        needs.append(f"that probability at least {policy.control_margin:g} above an unseen on-topic document's")
    rule = "A citation needs " + ", ".join(needs) + "."
    if entails:
        return f"Cited: {judged} = {probability:.2f}" + (f"; {words}" if words else "") + f". {rule}"
    if math.isnan(probability):
        if degenerate and policy.skip_degenerate:
            return "Not cited: the answer is degenerate, so it is not checked against any document."
        return f"Not cited, not sent to the judge: {words or 'too few of its words occur here'}. {rule}"
    return f"Not cited: {judged} = {probability:.2f}" + (f"; {words}" if words else "") + f". {rule}"


def ee_r_direction(ranking, alpha: float) -> str:
    """One sentence, from this query's data, on whether EE-R rose, fell or stayed between the deterministic retriever
    and α, and why — each "so" only where the data show it (a rise where the deterministic top k leaves useful
    candidates out, a fall where it already shows them) — and how that links to the recommender on Disparity curves
    (which weighs all queries)."""
    labels = ranking.labels
    now, det = ranking.summary.ee_r_plug_in, ranking.deterministic_summary.ee_r_plug_in
    if labels is None or now is None or det is None or math.isinf(alpha):
        return ""
    k, m, n = ranking.deterministic.size, int(labels.sum()), labels.size
    in_top = int(labels[ranking.deterministic].sum())
    left_out, not_useful = m - in_top, n - m
    useful = f"useful candidate{'' if m == 1 else 's'}"
    if abs(now - det) < EE_R_SAME:
        moved = f"EE-R is the same as the deterministic retriever's ({det:.2f}) at α = {alpha:g}"
        why = f"the deterministic top {k} holds {in_top} of the {m} {useful}"
    elif now > det:
        moved = f"EE-R rose from {det:.2f} (deterministic) to {now:.2f} at α = {alpha:g}"
        why = (f"the deterministic top {k} holds only {in_top} of the {m} {useful}, so spreading exposure reaches "
               f"the {left_out} useful ones it leaves out" if left_out > 0 else
               f"spreading exposure gave the {m} {useful} more than the deterministic top {k} did")
    else:
        moved = f"EE-R fell from {det:.2f} (deterministic) to {now:.2f} at α = {alpha:g}"
        why = (f"the deterministic top {k} already shows {in_top} of the {m} {useful}, so spreading exposure moves "
               f"some of it to the {not_useful} candidates that are not useful" if not_useful > 0 else
               f"spreading exposure gave the {m} {useful} less than the deterministic top {k} did")
    link = ("the recommender on Disparity curves asks the same of every query: it keeps the fairest α whose mean "
            "quality stays within the tolerance of the deterministic retriever, so where quality falls as α falls "
            "it stops at a high α, and at 0 % tolerance (no loss at all) it may find none")
    return f"{moved}: {why}. {link[:1].upper()}{link[1:]}."
