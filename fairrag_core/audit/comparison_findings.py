"""What a comparison found, in sentences: per system against the baseline, whether it is fairer (EE-D) and at what
cost (EE-R, EU), and which providers' shares moved beyond noise — and, for a simulated audit or sweep, each α against
the deterministic retriever plus each system's providers against their fair share. Built on the tables of
:mod:`fairrag_core.audit.compare` (so a stored comparison finds the same) and the finding type and share tests of
:mod:`fairrag_core.audit.findings`. Significance: Holm-adjusted p ≤ 1 − level (Holm 1979).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from ..data import Collection
from ..record import SweepRun
from .compare import Comparison, ComparisonConfig, System, compare_systems, systems_of
from .findings import (
    Direction,
    Finding,
    FindingKind,
    Severity,
    Verdict,
    harm_severity,
    merge_insufficient,
    noise_verdict,
    sort_findings,
)
from .share_findings import ledger_findings
from .share_gaps import alpha_of
from .wording import num, p_pair, p_text

__all__ = ["comparison_findings", "sweep_findings", "system_findings", "with_findings", "stored_findings",
           "NO_RELEVANCE", "SYSTEM_FINDINGS"]

#: Where a comparison's record keeps each system's own findings (:func:`system_findings`, as
#: :meth:`~fairrag_core.audit.findings.Finding.to_dict`): they need the systems' per-document tables, which a stored
#: comparison does not hold, so that a reopened comparison (``runs show``, the app's Stored runs) says the same.
SYSTEM_FINDINGS = "system_findings"

#: What a comparison's headline says of relevance when neither system has relevance labels (no EE-R, no EU).
NO_RELEVANCE = "relevance was not measured (no relevance labels)"

# a comparison's sentences write every p-value with three decimals, and a change that rounds to 0 with its sign
_p_text = partial(p_text, exact_one=False, digits=3)
_signed = partial(num, signed=True, zero_sign=True)
_p_pair = partial(p_pair, write=_p_text)
#: The metrics of a comparison that fall when a system improves (fairer, less disparity); the rest rise.
LOWER_IS_BETTER = ("ee_d", "eae_d", "eae_d_per_cited")


def _change(x: float, low: float, high: float, digits: int = 3) -> str:
    """``−0.120 [−0.200, −0.050]``: a change with its interval."""
    return f"{_signed(x, digits)} [{_signed(low, digits)}, {_signed(high, digits)}]"


def comparison_findings(result: SweepRun) -> list[Finding]:
    """What a comparison found, as typed findings (:class:`~fairrag_core.audit.findings.Finding`), from its tables
    alone (a stored comparison gives the same): per system against the baseline, a headline on EE-D with the cost
    or gain in relevance and utility, each tested metric (details), and the providers whose share moved beyond
    noise (or that none did). Significance: Holm-adjusted p ≤ 1 − level."""
    config = result.record.config
    alpha = alpha_of(config.level)
    metrics, shares = result.table, result.documents
    out = []
    for system in dict.fromkeys(metrics["system"]) if not metrics.empty else ():
        rows = metrics[metrics["system"] == system].set_index("metric")
        base = rows["baseline"].iloc[0]
        over = f"over {len(rows)} metric{'' if len(rows) == 1 else 's'}"
        common = {"level": config.level, "alpha": alpha, "correction": f"Holm {over}",
                  "family": f"{system} vs {base}: metrics"}
        verdicts, harms = {}, {}
        for metric, row in rows.iterrows():
            significant = row["p_holm"] <= alpha
            verdict = verdicts[metric] = noise_verdict(significant, row["low"], row["high"])
            lower = row["difference"] < 0
            better = lower if metric in LOWER_IS_BETTER else not lower
            relative = row["difference"] / abs(row["mean_baseline"]) if row["mean_baseline"] else math.nan
            good, bad = ((FindingKind.FAIRER, FindingKind.LESS_FAIR) if metric == "ee_d"
                         else (FindingKind.GAIN, FindingKind.COST))
            moved = "falls" if lower else "rises"
            verb = {Verdict.BEYOND: moved, Verdict.WITHIN: "does not change beyond noise",
                    Verdict.MARGIN: f"{moved}, at the margin of noise"}[verdict]
            text = (f"{row['label']} {verb}: {_change(row['difference'], row['low'], row['high'])} "
                    f"({row['mean_system']:.3f} in {system} vs {row['mean_baseline']:.3f} in {base}), "
                    f"{_p_pair(row['p_value'], row['p_holm'], over)}, {row['n_queries']} queries.")
            severity = harms[metric] = harm_severity(verdict is Verdict.BEYOND, not better, relative)
            kind = {Verdict.BEYOND: good if better else bad, Verdict.WITHIN: FindingKind.NO_DIFFERENCE,
                    Verdict.MARGIN: FindingKind.AT_THE_MARGIN}[verdict]
            out.append(Finding(kind, f"{system} vs {base}", metric, text, severity=severity,
                               direction=(Direction.BELOW if lower else Direction.ABOVE) if significant else
                               Direction.NONE, estimate=row["difference"], low=row["low"], high=row["high"],
                               relative=relative, p_value=row["p_value"], p_adjusted=row["p_holm"], test=row["test"],
                               n_queries=int(row["n_queries"]), detail=True, **common))
        if "ee_d" in rows.index:
            ee_d = rows.loc["ee_d"]
            change = f"{ee_d['label']} {_change(ee_d['difference'], ee_d['low'], ee_d['high'])}"
            p_words = _p_pair(ee_d["p_value"], ee_d["p_holm"], over)

            def cost(r, margin: bool) -> str:
                return (f"{r['label']} {'falls' if r['difference'] < 0 else 'rises'} {abs(r['difference']):.3f} "
                        f"[{abs(r['high'] if r['difference'] < 0 else r['low']):.3f}, "
                        f"{abs(r['low'] if r['difference'] < 0 else r['high']):.3f}]"
                        + (", at the margin of noise" if margin else ""))
            costs = [cost(r, verdicts[m] is Verdict.MARGIN) for m, r in rows.iterrows()
                     if m in ("ee_r", "eu") and verdicts[m] is not Verdict.WITHIN]
            # never a sentence about a quantity that was not measured: no relevance labels, no EE-R or EU row
            unchanged = ("relevance does not change beyond noise" if {"ee_r", "eu"} & set(rows.index)
                         else NO_RELEVANCE)
            verdict = verdicts["ee_d"]
            lower = ee_d["difference"] < 0
            # the harm a headline reports: less fair, or the relevance and utility it costs (good news is INFO)
            severity = min((harms[m] for m in ("ee_d", "ee_r", "eu") if m in harms), key=lambda s: s.rank)
            if verdict is Verdict.BEYOND:
                text = (f"{system} is {'fairer' if lower else 'less fair'} than {base}: {change}, {p_words}"
                        + f"; {'; '.join(costs) if costs else unchanged}.")
                kind = FindingKind.HEADLINE
            elif 2.0 ** (1 - int(ee_d["n_queries"])) > alpha:  # the smallest p a sign-flip test can give
                text = (f"Too little evidence to tell whether {system} is fairer than {base}: on "
                        f"{int(ee_d['n_queries'])} queries no paired test can reach p ≤ {alpha:g} ({change}); "
                        "compare the systems on more queries.")
                kind, severity = FindingKind.INSUFFICIENT_EVIDENCE, Severity.INFO
            elif verdict is Verdict.MARGIN:
                text = (f"{system} may be {'fairer' if lower else 'less fair'} than {base}, at the margin of noise "
                        f"(its interval and its Holm-adjusted test disagree): {change}, {p_words}.")
                kind, severity = FindingKind.AT_THE_MARGIN, Severity.INFO
            else:
                text = f"{system} is not fairer than {base} beyond noise: {change}, {p_words}."
                kind, severity = FindingKind.NO_DIFFERENCE, Severity.INFO
            out.append(Finding(kind, f"{system} vs {base}", "ee_d", text, severity=severity,
                               estimate=ee_d["difference"], low=ee_d["low"], high=ee_d["high"],
                               p_value=ee_d["p_value"], p_adjusted=ee_d["p_holm"], test=ee_d["test"],
                               n_queries=int(ee_d["n_queries"]), **common))
    noun = config.by  # "provider", or the category: "segment"
    for (system, kind), part in shares.groupby(["system", "kind"], sort=False) if not shares.empty else ():
        base = part["baseline"].iloc[0]
        verdicts = [noise_verdict(p <= alpha, lo, hi) for p, lo, hi in zip(part["p_holm"], part["low"], part["high"])]
        metric, over = f"{kind} share ({system} − {base})", f"over {len(part)} {noun}s"
        correction = f"Holm {over}"
        common = {"level": config.level, "alpha": alpha, "family": f"{system} vs {base}: {kind} shares"}
        moved, margin = [], []
        for row, verdict in zip(part.itertuples(), verdicts):
            if verdict is Verdict.WITHIN:
                continue
            lower = row.difference < 0
            numbers = (f"{row.share_system:.1%} vs {row.share_baseline:.1%} "
                       f"(Δ {_change(row.difference * 100, row.low * 100, row.high * 100, 1)} points, "
                       f"{_p_pair(row.p_value, row.p_holm, over)})")
            if verdict is Verdict.BEYOND:
                moved.append(row.group)
                text = (f"In {system}, {row.group}'s {kind} share is {abs(row.difference) * 100:.1f} points "
                        f"{'lower' if lower else 'higher'} than in {base}: {numbers}.")
                found_kind = FindingKind.LESS_EXPOSED if lower else FindingKind.MORE_EXPOSED
                # a provider losing exposure is the harm; one gaining it is not (its gain is others' loss, said so)
                severity = Severity.NOTABLE if lower else Severity.INFO
            else:
                margin.append(row.group)
                text = (f"In {system}, {row.group}'s {kind} share may be {'lower' if lower else 'higher'} than in "
                        f"{base}, at the margin of noise: {numbers}.")
                found_kind, severity = FindingKind.AT_THE_MARGIN, Severity.INFO
            out.append(Finding(found_kind, row.group, metric, text, severity=severity,
                               direction=(Direction.BELOW if lower else Direction.ABOVE) if row.p_holm <= alpha
                               else Direction.NONE, estimate=row.difference, low=row.low, high=row.high,
                               p_value=row.p_value, p_adjusted=row.p_holm,
                               test="paired permutation test (systems swapped within queries)",
                               correction=correction, n_queries=int(row.n_queries),
                               detail=verdict is Verdict.MARGIN, **common))
        if not moved:
            at_margin = f"; at the margin of noise: {', '.join(margin)}" if margin else ""
            out.append(Finding(FindingKind.NO_DIFFERENCE, f"every {noun}", metric,
                               f"No {noun}'s {kind} share differs between {system} and {base} beyond noise "
                               f"({len(part)} {noun}s, Holm-adjusted{at_margin}).",
                               n_queries=int(part["n_queries"].iloc[0]), **common))
    return sort_findings(out)


def sweep_findings(run: SweepRun, collection: Collection, *, by: str = "provider") -> list[Finding]:
    """What a simulated audit or sweep found: each α against the deterministic retriever (when the run has it, else
    against its largest α) as a comparison (:func:`comparison_findings`), then, per system, which providers' shares
    differ from their fair share beyond noise (:func:`~fairrag_core.audit.share_findings.ledger_findings`, counting its
    N sampled rankings per query, not lines); most severe first, the "too little evidence" lines merged into one
    (:func:`~fairrag_core.audit.findings.merge_insufficient`). Uses the run's seed, so the same run finds the same."""
    systems = [System(s.label.rsplit(" · ", 1)[-1], s.run, s.alpha)  # "α = 2", "deterministic"
               for s in systems_of(run)]
    found = []
    if len(systems) > 1:
        base = systems[-1].label  # sorted: the deterministic system (α = ∞) last, else the largest α
        found += comparison_findings(compare_systems(systems, collection, ComparisonConfig(
            baseline=base, by=by, seed=run.record.seed, n_boot=500, n_permutations=2000)))
    n = getattr(run.record.config, "n_samples", None)
    for system in systems:
        docs = system.documents()
        found += [replace(f, subject=f"{f.subject} ({system.label})", text=f"{system.label}: {f.text}")
                  for f in ledger_findings(docs.assign(target_exposure=system._rows(run.documents)[
                      "target_exposure"].to_numpy()), collection, by=by, lines=n, seed=run.record.seed,
                      n_boot=500, unit="sampled ranking")]  # a simulated audit has no served lines
    return sort_findings(merge_insufficient(found))


def system_findings(systems: Sequence[System], collection: Collection, config: ComparisonConfig) -> list[Finding]:
    """What each served system's audit finds on its own, as ``audit-log`` finds it
    (:func:`~fairrag_core.audit.log_report.log_findings`: the shares against the fair target where there are
    relevance labels, and the findings that need none, citations given exposure and the stated shares of
    ``config.target_shares``, exposure against presence and against merit by ``config.merit_grades``/
    ``merit_threshold``), per ``config.by``, each sentence led by the system's name. Systems of a simulated
    sweep (one per α) are left to :func:`sweep_findings`."""
    from ..record import RunKind
    from .log_report import log_findings

    found = []
    for system in systems:
        record = system.run.record
        if system.alpha is not None or record.kind is not RunKind.AUDIT_LOG:
            continue
        if config.target_shares is not None:  # the comparison's stated shares reach every system's findings
            record = replace(record, config=replace(record.config, target_shares=config.target_shares))
        # and its merit rule, so that every system's merit findings use one rule
        record = replace(record, config=replace(record.config, merit_grades=config.merit_grades,
                                                merit_threshold=config.merit_threshold))
        found += [replace(f, subject=f"{f.subject} ({system.label})", text=f"{system.label}: {f.text}")
                  for f in log_findings(replace(system.run, record=record), collection, groupings=[config.by])]
    return found


def with_findings(result: Comparison, systems: Sequence[System] = (), collection: Collection | None = None
                  ) -> Comparison:
    """``result`` with its findings: the comparison's (:func:`comparison_findings`) and, given the systems compared
    and their collection, each served system's own (:func:`system_findings`), most severe first; the latter are kept
    in the record (``extra[SYSTEM_FINDINGS]``) so that the stored comparison finds the same
    (:func:`stored_findings`)."""
    if not (systems and collection is not None):
        return replace(result, findings=tuple(comparison_findings(result)))
    own = system_findings(systems, collection, result.record.config)
    record = replace(result.record, extra={**result.record.extra, SYSTEM_FINDINGS: [f.to_dict() for f in own]})
    result = replace(result, record=record)
    return replace(result, findings=tuple(stored_findings(result)))


def stored_findings(result: SweepRun) -> list[Finding]:
    """A comparison's findings from what its record holds (a fresh or a stored comparison alike): the comparison's
    own from its tables (:func:`comparison_findings`) and each system's kept by :func:`with_findings`, most severe
    first."""
    kept = [Finding.from_dict(f) for f in result.record.extra.get(SYSTEM_FINDINGS, ())]
    return sort_findings(merge_insufficient(comparison_findings(result) + kept))

