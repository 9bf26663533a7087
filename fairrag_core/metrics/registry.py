"""The one table of the metrics the product shows: each declared once, every list of metrics derived from it.

Following ir_measures (``ir_measures/measures/__init__.py``: each measure's name, pretty name and description
declared once, then ``register``), a :class:`Metric` holds everything the CLI, the Python API, the app, the HTML
report, the comparisons and the glossary need to say about one metric: its ``key`` (the column and JSON key,
``ee_d``), its ``label`` (``EE-D``), what it stands for, its one-line meaning, direction and source (the glossary
line, :mod:`fairrag_core.glossary`), the per-query columns it has in audits, what it is undefined without, and the
metrics it can be read against. The lists the commands and pages print (:func:`keys`) are read from here, so adding
a metric touches this table and the function that computes it.

Where a place names a metric in other words than its label, the entry says so in one field (``phrase``:
``normalised EU`` in a sentence; ``short``: ``providers`` in a table header; ``tile``: ``EU (utility)`` on the
Playground's tile; ``headline_direction`` and
``comparison_direction``: the words of the log audit's headline and of the comparisons), so every output reads the
same as before the table existed.

>>> METRICS["ee_d"].label, METRICS["ee_d"].better, METRICS["ee_r"].needs
('EE-D', 'lower', 'relevance labels')
>>> keys(SWEEP)
('ee_d', 'ee_r', 'eu', 'eu_normalised', 'ear', 'eae_d')
>>> METRICS["ear"].columns(("cited", "entailed"))
('ear_cited', 'ear_entailed')
>>> METRICS["ee_d"].columns(("cited",))
('ee_d', 'ee_d_low', 'ee_d_high')
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParameterError

__all__ = ["Metric", "METRICS", "register", "keys", "labelled", "by_label", "SWEEP", "COMPARISON", "LOG_QUERY",
           "LOG_HEADLINE", "LEDGER", "KIM_DIAZ", "DIAZ_2020"]

KIM_DIAZ = "Kim & Diaz 2025, Towards Fair RAG"
DIAZ_2020 = "Diaz et al. 2020, Evaluating Stochastic Rankings with Expected Exposure"

#: Where a metric is listed (its ``tables``): the per-system means of sweeps and audits (and ``runs compare``);
SWEEP = "sweep"
#: the per-query differences of ``compare-runs`` and :func:`~fairrag_core.audit.compare.compare_systems`;
COMPARISON = "comparison"
#: the per-query table of a log audit (CLI, app, report);
LOG_QUERY = "log-query"
#: the headline of a log audit (a mean over queries with its interval);
LOG_HEADLINE = "log-headline"
#: the exposure ledger's shares and gaps per provider or group.
LEDGER = "ledger"


@dataclass(frozen=True)
class Metric:
    """One metric as every output names it.

    ``key``: its column and JSON key (``ee_d``); ``label``: its printed name (``EE-D``), also its glossary name;
    ``meaning``: one line, no final full stop; ``direction``: which way is better in words (``lower = fairer``);
    ``better``: ``"lower"``, ``"higher"`` or None (a share, a gap: read against a reference); ``source``: paper and
    section; ``long``: what the abbreviation stands for; ``aliases``: the other names the product prints for it
    (besides those of the fields below).

    ``tables``: the lists it is in (:data:`SWEEP`, :data:`COMPARISON`, :data:`LOG_QUERY`, :data:`LOG_HEADLINE`,
    :data:`LEDGER`).
    ``per_source``: a log audit measures it once per attribution source (column ``<key>_<source>``);
    ``interval``: a log audit gives it a per-query interval (columns ``<key>_low``, ``<key>_high``);
    ``needs``: what it is undefined without (``relevance labels``; empty: always defined); ``on_answers``: it is
    measured on generated answers (an exposure-only sweep has no value for it);
    ``comparable_with``: the keys of the metrics on its scale (compare them, not others).

    Other words for it where a place prints them: ``phrase`` (in a sentence, ``normalised EU``), ``short`` (a
    per-query table's header, ``providers``), ``tile`` (the Playground's tile, ``EU (utility)``),
    ``headline_direction`` (a log audit's headline) and
    ``comparison_direction`` (a comparison's table); each empty when the label or the direction is used."""

    key: str
    label: str
    meaning: str
    direction: str
    better: str | None
    source: str
    long: str = ""
    aliases: tuple[str, ...] = ()
    tables: frozenset[str] = frozenset()
    per_source: bool = False
    interval: bool = False
    needs: str = ""
    on_answers: bool = False
    comparable_with: tuple[str, ...] = ()
    phrase: str = ""
    short: str = ""
    tile: str = ""
    headline_direction: str = ""
    comparison_direction: str = ""

    @property
    def can_be_undefined(self) -> bool:
        """Whether an audit may leave it without a value (it ``needs`` something the input may lack)."""
        return bool(self.needs)

    @property
    def in_words(self) -> str:
        """How a sentence names it (``normalised EU``; else the label)."""
        return self.phrase or self.label

    @property
    def header(self) -> str:
        """A per-query table's header for it (``providers``; else the label)."""
        return self.short or self.label

    @property
    def on_tile(self) -> str:
        """The label of the Playground's tile for it (``EU (utility)``; else the label)."""
        return self.tile or self.label

    @property
    def in_headline(self) -> str:
        """The direction a log audit's headline prints."""
        return self.headline_direction or self.direction

    @property
    def in_comparison(self) -> str:
        """The direction a comparison's table prints."""
        return self.comparison_direction or self.direction

    def columns(self, sources: tuple[str, ...] | list[str]) -> tuple[str, ...]:
        """Its per-query columns in a log audit that measured the attribution ``sources``: ``<key>_<source>`` per
        source, else ``key`` (then ``<key>_low``, ``<key>_high`` when it has an interval)."""
        if self.per_source:
            return tuple(f"{self.key}_{source}" for source in sources)
        return (self.key, f"{self.key}_low", f"{self.key}_high") if self.interval else (self.key,)


#: Every metric the product shows, by key, in the order the tables list them.
METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS` (its key and its label must be new)."""
    if metric.key in METRICS or any(m.label == metric.label for m in METRICS.values()):
        raise InvalidParameterError(f"metric {metric.key!r} ({metric.label}) is registered twice; declare it once")
    if metric.better not in ("lower", "higher", None):
        raise InvalidParameterError(f"metric {metric.key!r}: better is 'lower', 'higher' or None, "
                                    f"not {metric.better!r}")
    METRICS[metric.key] = metric
    return metric


def keys(table: str) -> tuple[str, ...]:
    """The keys of the metrics listed in ``table`` (:data:`SWEEP`, …), in the registry's order."""
    return tuple(key for key, metric in METRICS.items() if table in metric.tables)


def labelled(table: str) -> dict[str, str]:
    """``key → label`` of the metrics listed in ``table``."""
    return {key: METRICS[key].label for key in keys(table)}


def by_label(label: str) -> Metric | None:
    """The metric printed as ``label`` (its label, not an alias), or None."""
    return next((m for m in METRICS.values() if m.label == label), None)


_EE = f"{KIM_DIAZ}, Eq. 16"
_EXPEVAL = "expeval's normalisation"

register(Metric(
    "ee_d", "EE-D", "expected exposure disparity ‖ε‖²/k: how concentrated the exposure of the k shown slots is; 1 = "
    "the same k documents every time, about k/n = spread evenly over n candidates", "lower = fairer", "lower",
    f"{_EE}; {DIAZ_2020}", long="expected exposure disparity",
    aliases=("EE-D (plug-in)", "expected exposure disparity"),
    tables=frozenset({SWEEP, COMPARISON, LOG_QUERY, LOG_HEADLINE}), interval=True,
    comparable_with=("ee_d_bias_corrected", "ee_d_unbiased", "eae_d_per_cited")))
register(Metric(
    "ee_d_bias_corrected", "EE-D (bias-corrected)", "EE-D of the ranking policy, corrected for the upward bias of a "
    "plug-in from few rankings: its unbiased estimate over the N rankings (no resampling, so the same number for "
    "every seed), with the basic bootstrap interval over the rankings", "lower = fairer", "lower",
    f"{_EE}; U-statistic over pairs of rankings; basic interval (Efron & Tibshirani 1993, §13)",
    aliases=("EE-D, bias-corrected", "EE-D, bias-corrected [95% over lines]"), comparable_with=("ee_d",)))
register(Metric(
    "ee_d_unbiased", "EE-D (unbiased)", "unbiased estimate of the policy's EE-D from its N rankings (the product of "
    "two different rankings' exposures, never a ranking with itself); needs N ≥ 2", "lower = fairer", "lower",
    f"{_EE}; U-statistic over pairs of rankings", needs="two or more rankings", comparable_with=("ee_d",)))
register(Metric(
    "ee_r", "EE-R", "expected exposure relevance ⟨ε, ε*⟩/‖ε*‖²: how much exposure goes where the fair oracle would "
    "put it (the useful documents, in random order); needs relevance labels", "higher = better", "higher",
    f"{KIM_DIAZ}, Eq. 28; {DIAZ_2020}", long="expected exposure relevance",
    aliases=("EE-R [95% over lines]", "expected exposure relevance"),
    tables=frozenset({SWEEP, COMPARISON, LOG_QUERY, LOG_HEADLINE}), interval=True, needs="relevance labels",
    comparison_direction="higher = more exposure on useful documents"))
register(Metric(
    "eu", "EU", "expected utility: mean score of the answers against the gold answer — short-answer match (1 when "
    "the answer names an acceptable short answer) where the collection has short answers, else ROUGE-L; a "
    "degenerate answer scores 0; needs a gold answer", "higher = better", "higher", f"{KIM_DIAZ}, Eq. 7",
    long="expected utility", aliases=("mean EU",), tables=frozenset({SWEEP, COMPARISON}),
    needs="a gold answer", on_answers=True, tile="EU (utility)", comparable_with=("eu_normalised",),
    comparison_direction="higher = better answers"))
register(Metric(
    "eu_normalised", "EU (normalised)", "EU divided by the best utility seen, from the oracle's rankings in a sweep or "
    "among the answers of this run in the Playground", "higher = better", "higher", f"{KIM_DIAZ}, App. C.3",
    aliases=("EU, normalised",), tables=frozenset({SWEEP}), needs="a gold answer",
    comparable_with=("eu",), phrase="normalised EU", tile="EU normalised", on_answers=True))
register(Metric(
    "providers_reached", "providers reached", "providers with at least one document in some shown top k",
    "higher = exposure reaches more sources", "higher", "this app", aliases=("providers",),
    tables=frozenset({LOG_QUERY}), short="providers", tile="Providers reached"))
register(Metric(
    "ear", "EAR", "expected attribution rate: the share of the k shown documents the answer rests on (the NLI judge "
    "finds that the document supports it as the answer to the question, or the system cited it)",
    "higher = answers use more of what they were shown", "higher", f"{KIM_DIAZ}, Eq. 9",
    long="expected attribution rate", aliases=("EAR (attribution rate)",),
    tables=frozenset({SWEEP, COMPARISON, LOG_QUERY, LOG_HEADLINE}), per_source=True, needs="attributed answers",
    headline_direction="share of shown documents the answers rest on",
    comparison_direction="higher = answers rest on more of what they were shown", on_answers=True))
register(Metric(
    "eae_d", "EAE-D", "disparity of attributed exposure ‖εᵃ‖²/k: EE-D counted only where a document was credited; "
    "never above EE-D, and small when little is cited, so compare EAE-D/cited with EE-D, not EAE-D",
    "lower = fairer", "lower", f"{KIM_DIAZ}, Eq. 11", long="attributed exposure disparity",
    tables=frozenset({SWEEP, COMPARISON, LOG_QUERY, LOG_HEADLINE}), per_source=True, needs="attributed answers",
    headline_direction="lower = fairer; scales with how much is cited",
    comparison_direction="lower = fairer; scales with how much is cited", on_answers=True))
register(Metric(
    "eae_d_per_cited", "EAE-D/cited", "disparity of attributed exposure per cited document ‖εᵃ‖²/‖εᵃ‖₁, on EE-D's "
    "scale: above EE-D, the answers concentrate their citations on fewer documents than retrieval concentrates "
    "exposure", "lower = citations spread more evenly", "lower",
    f"this app, after {KIM_DIAZ}, Eq. 11 (normalised by what is cited instead of by k)",
    long="attributed exposure disparity per citation", aliases=("EAE-D per cited",),
    tables=frozenset({COMPARISON, LOG_QUERY, LOG_HEADLINE}), per_source=True, needs="attributed answers",
    on_answers=True, comparable_with=("ee_d",),
    headline_direction="comparable with EE-D: above it, citations are more concentrated than retrieval"))
register(Metric(
    "retrieval_share", "retrieval share", "a provider's or group's share of all exposure in the shown top k",
    "compare with the target share", None, f"{KIM_DIAZ}, Eq. 5, summed per group", aliases=("retrieval exposure",),
    comparable_with=("attributed_share", "target_share"), tables=frozenset({LEDGER})))
register(Metric(
    "attributed_share", "attributed share", "a provider's or group's share of the credited (cited or entailing) "
    "exposure", "compare with the retrieval and target shares", None, f"{KIM_DIAZ}, §3.4, summed per group",
    aliases=("attributed exposure",), needs="attributed answers", comparable_with=("retrieval_share", "target_share"),
    tables=frozenset({LEDGER}), on_answers=True))
register(Metric(
    "target_share", "target share", "the share the fair oracle would give: the k slots spread evenly over the useful "
    "documents", "the reference for both gaps", None, f"{KIM_DIAZ}, Eq. 6, summed per group",
    aliases=("target exposure",), needs="relevance labels", comparable_with=("retrieval_share", "attributed_share"),
    tables=frozenset({LEDGER})))
register(Metric(
    "share_gap", "gap (retrieval − target)", "retrieval share minus target share",
    "positive = over-exposed, negative = under-exposed, 0 = fair", None, "the exposure ledger, from Eq. 5 and 6",
    aliases=("share gap",), needs="relevance labels", comparable_with=("attributed_gap",),
    tables=frozenset({LEDGER})))
register(Metric(
    "attributed_gap", "gap (attributed − target)", "attributed share minus target share: who the answers credit "
    "beyond or below a fair share", "positive = over-credited, negative = under-credited, 0 = fair", None,
    "the exposure ledger, from §3.4 and Eq. 6", needs="relevance labels and attributed answers",
    comparable_with=("share_gap",), tables=frozenset({LEDGER}), on_answers=True))
register(Metric(
    "expeval_disparity", "disparity (expeval)", "expeval's disparity ‖ε‖² under the chosen user model (gerr or rbp), "
    "normalised to [0, 1] between the query's best and worst possible values", "lower = fairer", "lower",
    f"{DIAZ_2020}, Eq. 7; {_EXPEVAL}", aliases=("disparity",), tables=frozenset({LOG_QUERY, LOG_HEADLINE}),
    needs="relevance labels"))
register(Metric(
    "expeval_relevance", "relevance (expeval)", "expeval's relevance ⟨ε, ε*⟩ under the chosen user model, normalised "
    "to [0, 1]", "higher = better", "higher", f"{DIAZ_2020}, Eq. 8; {_EXPEVAL}", aliases=("relevance",),
    tables=frozenset({LOG_QUERY, LOG_HEADLINE}), needs="relevance labels"))
register(Metric(
    "expeval_difference", "difference (expeval)", "expeval's expected exposure loss ‖ε − ε*‖² under the chosen user "
    "model, normalised to [0, 1]", "lower = closer to the fair target", "lower", f"{DIAZ_2020}, Eq. 9; {_EXPEVAL}",
    aliases=("difference",), tables=frozenset({LOG_QUERY, LOG_HEADLINE}), needs="relevance labels"))
register(Metric(
    "ncom", "NCOM", "normalised coverage of the query's aspects by a list's top k: the coverage gains of its picks "
    "divided by those of the greedy silver list", "higher = covers more aspects", "higher",
    "Wang et al., RichRAG, Eq. 13", long="normalised aspect coverage", aliases=("COM",), needs="the query's aspects"))
register(Metric(
    "com_rouge", "Com-ROUGE", "ROUGE recall of each aspect's sub-answer by the response, weighted by the sub-answer's "
    "share of words (δ)", "higher = the answer covers more aspects", "higher", "Wang et al., RichRAG, Eq. 11",
    aliases=("Com-ROUGE-L", "Com-ROUGE-1", "Com-ROUGE-2", "CR-L", "CR-2"), needs="the aspects' sub-answers"))
register(Metric(
    "awrf", "AWRF", "attention-weighted rank fairness 1 − JSD(attention-weighted group shares of the top K, target "
    "shares)", "higher = fairer; 1 = the target", "higher", "TREC Fair Ranking 2022 (Ekstrand et al. 2023); FAIR-QR",
    long="attention-weighted rank fairness", needs="groups and their target shares"))
register(Metric(
    "ndcg", "nDCG", "normalised discounted cumulative gain of the ranking, as trec_eval and ir_measures compute it "
    "(discount 1/log2(rank + 1), linear gains)", "higher = more relevant", "higher",
    "Järvelin & Kekäläinen 2002; trec_eval, ir_measures", long="normalised discounted cumulative gain",
    needs="relevance labels", comparable_with=("tf22_ndcg",)))
register(Metric(
    "tf22_ndcg", "TF22-nDCG", "nDCG with TREC Fair Ranking 2022's discount 1/log2(max(rank, 2)) (ranks 1 and 2 weigh "
    "alike), linear gains; differs from nDCG by up to a few hundredths", "higher = more relevant", "higher",
    "TREC Fair Ranking 2022 (Ekstrand et al. 2023); FAIR-QR", long="TREC Fair 2022 nDCG",
    aliases=("TF22-nDCG*AWRF",), needs="relevance labels", comparable_with=("ndcg",)))
register(Metric(
    "delta", "Δ", "KL divergence of the top K's group shares from the target shares (smoothed)",
    "lower = closer to the target", "lower", "Chen & Fang, FAIR-QR", aliases=("delta",),
    needs="groups and their target shares"))
register(Metric(
    "cited_entailed", "citations the judge supports", "of the documents the system cited, the share the NLI judge "
    "finds entailing the answer", "higher = the logged citations agree with the judge", "higher",
    "this app, §3.4's two attribution sources side by side", needs="logged citations and the NLI judge",
    comparable_with=("entailed_cited",), headline_direction="agreement of the two sources", on_answers=True))
register(Metric(
    "entailed_cited", "entailing documents the system cited", "of the shown documents the NLI judge finds entailing "
    "the answer, the share the system cited", "higher = the system cites what supports its answer", "higher",
    "this app, §3.4's two attribution sources side by side", needs="logged citations and the NLI judge",
    comparable_with=("cited_entailed",), headline_direction="agreement of the two sources", on_answers=True))
