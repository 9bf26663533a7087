"""One glossary for every metric the product shows: its name, one-line meaning, direction and source.

The app's tiles (their help text), explainers, chart labels and the HTML report all read their words from here,
so a metric means the same thing everywhere. A :class:`Term` gives its words in the shapes they are needed:

* :attr:`Term.line` — ``EE-D — <meaning>; lower = fairer (Kim & Diaz 2025, Eq. 16 …).`` (reports, explainers);
* :attr:`Term.help` — the same sentence without the name (a tile's tooltip);
* :attr:`Term.label` — ``EE-D (lower = fairer)`` (a tile's or an axis's label).

:func:`term` resolves what a page or a table prints (``EE-D 95% interval``, ``EAR (cited by the system)``,
``NCOM@5``, ``disparity (gerr, patience 0.5; expeval-normalised)``) to its entry. Pure Python: no Streamlit.

>>> term("EE-D").direction
'lower = fairer'
>>> term("NCOM@5").key, term("EAR (cited by the system)").key, term("EE-D 95% interval").key
('NCOM', 'EAR', 'EE-D')
>>> term("relevance (gerr, patience 0.5; expeval-normalised)").key
'relevance (expeval)'
>>> term("seconds") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Term", "GLOSSARY", "term", "terms_in", "help_text", "glossary_rows", "KIM_DIAZ", "DIAZ_2020"]

KIM_DIAZ = "Kim & Diaz 2025, Towards Fair RAG"
DIAZ_2020 = "Diaz et al. 2020, Evaluating Stochastic Rankings with Expected Exposure"


@dataclass(frozen=True)
class Term:
    """One metric: ``key`` (its canonical name), ``meaning`` (one line, no final full stop), ``direction``
    (``lower = fairer``, ``higher = better``…), ``source`` (paper and section), the other ``aliases`` the product
    prints for it, and ``long`` (what the abbreviation stands for, e.g. ``expected exposure disparity``)."""

    key: str
    meaning: str
    direction: str
    source: str
    aliases: tuple[str, ...] = ()
    long: str = ""

    @property
    def help(self) -> str:
        """Meaning, direction and source in one sentence (a tile's tooltip)."""
        return f"{self.meaning[:1].upper()}{self.meaning[1:]}; {self.direction} ({self.source})."

    @property
    def gloss(self) -> str:
        """``meaning; direction (source).``: what follows the name in a glossary line."""
        return f"{self.meaning}; {self.direction} ({self.source})."

    @property
    def line(self) -> str:
        """``name — meaning; direction (source).`` (a report's or an explainer's glossary line)."""
        return f"{self.key} — {self.gloss}"

    @property
    def label(self) -> str:
        """``name (direction)``: a tile's label."""
        return f"{self.key} ({self.direction})"

    @property
    def axis_title(self) -> str:
        """``EE-D (expected exposure disparity; lower = fairer)``: a chart axis's title."""
        return f"{self.key} ({self.long}; {self.direction})" if self.long else self.label


_TERMS = (
    Term("EE-D", "expected exposure disparity ‖ε‖²/k: how concentrated the exposure of the k shown slots is; 1 = "
         "the same k documents every time, about k/n = spread evenly over n candidates", "lower = fairer",
         f"{KIM_DIAZ}, Eq. 16; {DIAZ_2020}", aliases=("EE-D (plug-in)", "expected exposure disparity"),
         long="expected exposure disparity"),
    Term("EE-D (bias-corrected)", "EE-D of the ranking policy, corrected for the upward bias of a plug-in from few "
         "rankings: its unbiased estimate over the N rankings (no resampling, so the same number for every seed), "
         "with the basic bootstrap interval over the rankings", "lower = fairer",
         f"{KIM_DIAZ}, Eq. 16; U-statistic over pairs of rankings; basic interval (Efron & Tibshirani 1993, §13)",
         aliases=("EE-D, bias-corrected", "EE-D, bias-corrected [95% over lines]")),
    Term("EE-D (unbiased)", "unbiased estimate of the policy's EE-D from its N rankings (the product of two "
         "different rankings' exposures, never a ranking with itself); needs N ≥ 2", "lower = fairer",
         f"{KIM_DIAZ}, Eq. 16; U-statistic over pairs of rankings"),
    Term("EE-R", "expected exposure relevance ⟨ε, ε*⟩/‖ε*‖²: how much exposure goes where the fair oracle would "
         "put it (the useful documents, in random order); needs relevance labels", "higher = better",
         f"{KIM_DIAZ}, Eq. 28; {DIAZ_2020}", aliases=("EE-R [95% over lines]", "expected exposure relevance"),
         long="expected exposure relevance"),
    Term("EU", "expected utility: mean score of the answers against the gold answer — short-answer match (1 when "
         "the answer names an acceptable short answer) where the collection has short answers, else ROUGE-L; a "
         "degenerate answer scores 0; needs a gold answer", "higher = better", f"{KIM_DIAZ}, Eq. 7",
         aliases=("EU (utility)", "mean EU"), long="expected utility"),
    Term("EU (normalised)", "EU divided by the best utility seen, from the oracle's rankings in a sweep or among "
         "the answers of this run in the Playground", "higher = better", f"{KIM_DIAZ}, App. C.3",
         aliases=("EU normalised", "EU, normalised")),
    Term("EAR", "expected attribution rate: the share of the k shown documents the answer rests on (the NLI judge "
         "finds that the document supports it as the answer to the question, or the system cited it)",
         "higher = answers use more of what they were shown", f"{KIM_DIAZ}, Eq. 9",
         aliases=("EAR (attribution rate)",), long="expected attribution rate"),
    Term("EAE-D", "disparity of attributed exposure ‖εᵃ‖²/k: EE-D counted only where a document was credited; "
         "never above EE-D, and small when little is cited, so compare EAE-D/cited with EE-D, not EAE-D",
         "lower = fairer", f"{KIM_DIAZ}, Eq. 11", long="attributed exposure disparity"),
    Term("EAE-D/cited", "disparity of attributed exposure per cited document ‖εᵃ‖²/‖εᵃ‖₁, on EE-D's scale: above "
         "EE-D, the answers concentrate their citations on fewer documents than retrieval concentrates exposure",
         "lower = citations spread more evenly", f"this app, after {KIM_DIAZ}, Eq. 11 (normalised by what is "
         "cited instead of by k)", aliases=("EAE-D per cited",), long="attributed exposure disparity per citation"),
    Term("retrieval share", "a provider's or group's share of all exposure in the shown top k",
         "compare with the target share", f"{KIM_DIAZ}, Eq. 5, summed per group",
         aliases=("retrieval exposure",)),
    Term("attributed share", "a provider's or group's share of the credited (cited or entailing) exposure",
         "compare with the retrieval and target shares", f"{KIM_DIAZ}, §3.4, summed per group",
         aliases=("attributed exposure",)),
    Term("target share", "the share the fair oracle would give: the k slots spread evenly over the useful "
         "documents", "the reference for both gaps", f"{KIM_DIAZ}, Eq. 6, summed per group",
         aliases=("target exposure",)),
    Term("gap (retrieval − target)", "retrieval share minus target share",
         "positive = over-exposed, negative = under-exposed, 0 = fair", "the exposure ledger, from Eq. 5 and 6",
         aliases=("share gap",)),
    Term("gap (attributed − target)", "attributed share minus target share: who the answers credit beyond or "
         "below a fair share", "positive = over-credited, negative = under-credited, 0 = fair",
         "the exposure ledger, from §3.4 and Eq. 6"),
    Term("disparity (expeval)", "expeval's disparity ‖ε‖² under the chosen user model (gerr or rbp), normalised "
         "to [0, 1] between the query's best and worst possible values", "lower = fairer",
         f"{DIAZ_2020}, Eq. 7; expeval's normalisation", aliases=("disparity",)),
    Term("relevance (expeval)", "expeval's relevance ⟨ε, ε*⟩ under the chosen user model, normalised to [0, 1]",
         "higher = better", f"{DIAZ_2020}, Eq. 8; expeval's normalisation", aliases=("relevance",)),
    Term("difference (expeval)", "expeval's expected exposure loss ‖ε − ε*‖² under the chosen user model, "
         "normalised to [0, 1]", "lower = closer to the fair target", f"{DIAZ_2020}, Eq. 9; expeval's normalisation",
         aliases=("difference",)),
    Term("NCOM", "normalised coverage of the query's aspects by a list's top k: the coverage gains of its picks "
         "divided by those of the greedy silver list", "higher = covers more aspects",
         "Wang et al., RichRAG, Eq. 13", aliases=("COM",), long="normalised aspect coverage"),
    Term("Com-ROUGE", "ROUGE recall of each aspect's sub-answer by the response, weighted by the sub-answer's share "
         "of words (δ)", "higher = the answer covers more aspects", "Wang et al., RichRAG, Eq. 11",
         aliases=("Com-ROUGE-L", "Com-ROUGE-1", "Com-ROUGE-2", "CR-L", "CR-2")),
    Term("AWRF", "attention-weighted rank fairness 1 − JSD(attention-weighted group shares of the top K, target "
         "shares)", "higher = fairer; 1 = the target", "TREC Fair Ranking 2022 (Ekstrand et al. 2023); FAIR-QR",
         long="attention-weighted rank fairness"),
    Term("nDCG", "normalised discounted cumulative gain of the ranking, as trec_eval and ir_measures compute it "
         "(discount 1/log2(rank + 1), linear gains)", "higher = more relevant", "Järvelin & Kekäläinen 2002; "
         "trec_eval, ir_measures", long="normalised discounted cumulative gain"),
    Term("TF22-nDCG", "nDCG with TREC Fair Ranking 2022's discount 1/log2(max(rank, 2)) (ranks 1 and 2 weigh "
         "alike), linear gains; differs from nDCG by up to a few hundredths", "higher = more relevant",
         "TREC Fair Ranking 2022 (Ekstrand et al. 2023); FAIR-QR", aliases=("TF22-nDCG*AWRF",),
         long="TREC Fair 2022 nDCG"),
    Term("Δ", "KL divergence of the top K's group shares from the target shares (smoothed)",
         "lower = closer to the target", "Chen & Fang, FAIR-QR", aliases=("delta",)),
    Term("providers reached", "providers with at least one document in some shown top k",
         "higher = exposure reaches more sources", "this app", aliases=("providers",)),
    Term("citations the judge supports", "of the documents the system cited, the share the NLI judge finds "
         "entailing the answer", "higher = the logged citations agree with the judge", "this app, §3.4's two "
         "attribution sources side by side"),
    Term("entailing documents the system cited", "of the shown documents the NLI judge finds entailing the answer, "
         "the share the system cited", "higher = the system cites what supports its answer",
         "this app, §3.4's two attribution sources side by side"),
)

#: Every metric the product shows, by canonical name.
GLOSSARY: dict[str, Term] = {t.key: t for t in _TERMS}
_BY_NAME: dict[str, Term] = {name.casefold(): t for t in _TERMS for name in (t.key, *t.aliases)}
_TAIL = re.compile(r"\s*(?:\([^()]*\)|\[[^\[\]]*\]|95% interval|@\d+)\s*$")


def term(label: str) -> Term | None:
    """The glossary entry a printed label stands for, or None: the exact name or an alias first, then with its
    tail taken off one piece at a time (``@5``, ``95% interval``, a parenthesis or a bracket), and expeval's
    ``disparity (gerr, …; expeval-normalised)`` by its first word."""
    text = str(label).strip()
    if "expeval" in text.casefold():
        first = text.split(" ", 1)[0].casefold()
        return GLOSSARY.get(f"{first} (expeval)")
    while text:
        found = _BY_NAME.get(text.casefold())
        if found is not None:
            return found
        shorter = _TAIL.sub("", text)
        if shorter == text:
            return None
        text = shorter
    return None


def help_text(label: str, extra: str = "") -> str:
    """The tooltip of a tile named ``label``: the glossary's sentence, then ``extra`` (what this tile adds)."""
    found = term(label)
    if found is None:
        raise KeyError(f"{label!r} is not in fairrag_core.glossary; add it there (one meaning for every page)")
    return found.help + (f" {extra}" if extra else "")


def terms_in(labels: Iterable[str]) -> list[Term]:
    """The distinct entries the ``labels`` (column headers, metric names) stand for, in order of appearance."""
    out: dict[str, Term] = {}
    for name in labels:
        found = term(name)
        if found is not None:
            out.setdefault(found.key, found)
    return list(out.values())


def glossary_rows(names: Iterable[str] | None = None) -> list[dict[str, str]]:
    """``metric, meaning, direction, defined in`` rows for ``names`` (labels are resolved) or every entry."""
    chosen = terms_in(names) if names is not None else list(GLOSSARY.values())
    return [{"metric": t.key, "meaning": t.meaning, "direction": t.direction, "defined in": t.source} for t in chosen]
