"""Are the audit findings calibrated? Simulated audits the size of the demo log, with known truth.

Served rankings are drawn with :func:`fairrag_core.ranking.sampling.sample_rankings` and the fair target is
:func:`fairrag_core.metrics.exposure.target_exposure`; groups are the 14 providers of running-shoes (6–7 documents
each); k = 5. Two designs:

* **pool** (the issue's check): every query's candidates are the 92 documents, all equally useful, so the fair
  target is k/92 for each document and every provider has a fair share in every query; 20 queries with the demo
  log's lines per query (3–29, 200 lines), also at half (10 queries, 91 lines) and double (40 queries, 400 lines);
* **demo qrels** (the demo's own structure): the 18 labelled queries of the demo log, each with its own useful
  documents (m = 5–16) as candidates and its own lines (192 in all); a provider has a fair share in only 3–11 of
  them.

Scenarios: the fair system (Plackett-Luce at α = 0 over equally useful documents: expected exposure = target);
one provider under-exposed by half (its documents get score 0, the others 1, and α is solved exactly so that its
expected exposure is half its fair share, checked by Monte Carlo); citations drawn per shown slot with the demo's
rate (attributed share = retrieval share), and that provider cited at half the rate. For each: the share of audits
with a finding (Wilson 95 % interval), per-provider false-positive rates, and, for the alternatives we rejected,
the same figures (a sign-flip test, a centred percentile-bootstrap test, no Holm correction). Coverage of the
percentile interval of the max over providers of |gap| at equality and away from it, and of each provider's gap.

Prints figures and writes ``benchmarks/results/calibrate_findings.json`` and ``.md``; asserts nothing.
Run: python benchmarks/calibrate_findings.py [--audits 2000] [--seed 20] [--markdown-only]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from fairrag_core import load_collection
from fairrag_core.audit.compare import share_differences
from fairrag_core.audit.findings import FindingKind
from fairrag_core.audit.share_findings import ShareTable, share_findings
from fairrag_core.audit.share_gaps import ATTRIBUTED_TAILS, RETRIEVAL_TAILS
from fairrag_core.metrics.bootstrap import resample_counts
from fairrag_core.metrics.exposure import target_exposure
from fairrag_core.metrics.intervals import percentile_interval
from fairrag_core.metrics.significance import TAILS, bootstrap_t_pvalues, wilson_interval
from fairrag_core.ranking.sampling import sample_rankings

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "assets" / "logs" / "running-shoes.jsonl"
RESULTS = ROOT / "benchmarks" / "results"
K = 5
LEVEL = 0.95
UNFAIR = {FindingKind.UNDER_EXPOSED, FindingKind.OVER_EXPOSED}
CITED = {FindingKind.UNDER_CITED, FindingKind.OVER_CITED}


# -- the demo log's shape ----------------------------------------------------------------------------------

def demo_shape(collection) -> dict:
    """Lines per query, the labelled queries' useful documents and lines, and the citation rate per shown slot."""
    entries = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = Counter(e["query_id"] for e in entries)
    cited = sum(len(set(e.get("citations") or ()) & set(e["ranking"][:K])) for e in entries)
    labelled = [q for q in lines if q in collection.qrels and collection.useful(q).sum() > 0]
    return {"lines": [lines[q] for q in lines], "labelled": labelled,
            "labelled_lines": [lines[q] for q in labelled], "cite_rate": cited / (K * len(entries))}


# -- exact Plackett-Luce inclusion for two classes of items ------------------------------------------------

def expected_in_top_k(g: int, h: int, weight: float, k: int) -> float:
    """E[# of the g items of weight ``weight`` in a Plackett-Luce top k, the h others of weight 1] (exact DP)."""
    dist = {0: 1.0}
    for j in range(k):
        nxt: dict[int, float] = defaultdict(float)
        for a, p in dist.items():
            wa, wb = (g - a) * weight, (h - (j - a)) * 1.0
            if wa + wb == 0:
                nxt[a] += p
                continue
            nxt[a + 1] += p * wa / (wa + wb)
            nxt[a] += p * wb / (wa + wb)
        dist = nxt
    return sum(a * p for a, p in dist.items())


def alpha_for_half(g: int, h: int, k: int) -> float:
    """α at which items with score 0 among items with score 1 get half their fair exposure (g k / (g + h) / 2).

    With two score levels the logits are 1 and 2^α (min-max to [1, 2], then ^α), so the weight ratio is
    c = exp(1 − 2^α); solve E[in top k](c) = half the fair count by bisection on log c, then α = log2(1 − ln c).
    """
    goal = g * k / (g + h) / 2
    lo, hi = -50.0, 0.0  # log c
    for _ in range(200):
        mid = (lo + hi) / 2
        if expected_in_top_k(g, h, math.exp(mid), k) > goal:
            hi = mid
        else:
            lo = mid
    return math.log2(1 - (lo + hi) / 2)


# -- one simulated audit ------------------------------------------------------------------------------------

def simulate(design: dict, rng: np.random.Generator, *, halved: int | None = None, cite_rate: float = 0.0,
             cite_halved: int | None = None) -> ShareTable:
    """One audit: per query, N served rankings, exposure and target summed per provider (and citations)."""
    code, n_groups = design["code"], design["n_groups"]
    q_n = len(design["candidates"])
    retrieval, target, attributed = (np.zeros((q_n, n_groups)) for _ in range(3))
    for q, (cand, lines) in enumerate(zip(design["candidates"], design["lines"])):
        scores = np.zeros(cand.size)
        alpha = 0.0
        if halved is not None and design["alphas"][q] is not None:
            scores = np.where(code[cand] == halved, 0.0, 1.0)
            alpha = design["alphas"][q]
        top = cand[sample_rankings(scores, alpha=alpha, n_samples=lines, k=K, seed=rng)]  # (N, k) doc indices
        groups = code[top]
        retrieval[q] = np.bincount(groups.ravel(), minlength=n_groups) / lines
        target[q] = np.bincount(code[cand], weights=target_exposure(np.ones(cand.size, bool), K),
                                minlength=n_groups)
        if cite_rate:
            rate = np.where(groups == cite_halved, cite_rate / 2, cite_rate) if cite_halved is not None else cite_rate
            cited = rng.random(top.shape) < rate
            attributed[q] = np.bincount(groups[cited], minlength=n_groups) / lines
    return ShareTable(groups=design["groups"], query_ids=tuple(f"q{i}" for i in range(q_n)), retrieval=retrieval,
                      target=target, attributed=attributed if cite_rate else None,
                      lines=np.array(design["lines"], float))


def make_design(collection, candidates: list[np.ndarray], lines: list[int], halved: int | None) -> dict:
    groups, code = np.unique(collection.providers, return_inverse=True)
    alphas = []
    for cand in candidates:
        g = int(np.sum(code[cand] == halved)) if halved is not None else 0
        # α = 0 when the provider has no candidate, or cannot be halved (every candidate is always shown: m = k)
        alphas.append(alpha_for_half(g, cand.size - g, K) if halved is not None and g > 0 and cand.size > K
                      else None)
    return {"groups": tuple(groups), "code": code, "n_groups": len(groups), "candidates": candidates,
            "lines": lines, "alphas": alphas}


# -- statistics of many audits ------------------------------------------------------------------------------

def rate(successes: int, trials: int) -> dict:
    p, low, high = wilson_interval(successes, trials, level=0.95)
    return {"rate": round(p, 4), "low": round(low, 4), "high": round(high, 4), "count": successes,
            "audits": trials}


def fmt(r: dict) -> str:
    return f"{100 * r['rate']:.1f} % [{100 * r['low']:.1f}, {100 * r['high']:.1f}] ({r['count']}/{r['audits']})"


def contributions(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-query terms whose mean is share(x) − share(y) (as in fairrag_core.audit.findings)."""
    q_n = x.shape[0]
    x_tot, y_tot = x.sum(axis=1, keepdims=True), y.sum(axis=1, keepdims=True)
    pooled = (x.sum(axis=0) + y.sum(axis=0)) / (x_tot.sum() + y_tot.sum())
    return q_n * ((x - pooled * x_tot) / x_tot.sum() - (y - pooled * y_tot) / y_tot.sum())


def alternatives(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, n_res: int = 4000) -> dict[str, np.ndarray]:
    """Unadjusted two-sided p-values of the share gaps under the tests and variants we did not choose."""
    d = contributions(x, y)
    q_n = d.shape[0]
    observed = np.abs(d.sum(axis=0))
    signs = rng.choice((-1.0, 1.0), size=(n_res, q_n))
    sign_flip = (1 + np.sum(np.abs(signs @ d) >= observed - 1e-12, axis=0)) / (1 + n_res)
    counts = resample_counts(q_n, n_res, rng)
    gap = x.sum(0) / x.sum() - y.sum(0) / y.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (counts @ x) / (counts @ x).sum(1, keepdims=True) - (counts @ y) / (counts @ y).sum(1, keepdims=True)
    centred = (1 + np.sum(np.abs(boot - gap) >= np.abs(gap), axis=0)) / (1 + n_res)
    return {"sign-flip": sign_flip, "centred percentile bootstrap": centred,
            **{f"bootstrap-t, {tails}": bootstrap_t_pvalues(d, n_resamples=n_res, tails=tails, seed=rng)
               for tails in TAILS}}


def holm_any(p: np.ndarray, alpha: float) -> bool:
    order = np.sort(p)
    m = order.size
    return bool(order[0] <= alpha / m)  # Holm rejects something iff its first step does


def run_scenario(name: str, design: dict, n_audits: int, rng: np.random.Generator, *, halved: int | None = None,
                 cite_rate: float = 0.0, cite_halved: int | None = None, true_gaps: np.ndarray | None = None,
                 extra: int = 0) -> dict:
    """``n_audits`` simulated audits; the first ``extra`` of them also run the alternative tests."""
    start = time.perf_counter()
    alpha = 1 - LEVEL
    any_unfair = any_cited = halved_flag = cited_flag = under_cited = 0
    per_group = np.zeros(design["n_groups"])
    testable = np.zeros(design["n_groups"])
    alt_any: dict[str, int] = defaultdict(int)
    covered_max = covered_gap = 0
    covered_gap_n = 0
    for i in range(n_audits):
        table = simulate(design, rng, halved=halved, cite_rate=cite_rate, cite_halved=cite_halved)
        findings = share_findings(table, level=LEVEL, seed=rng)
        retrieval = [f for f in findings if f.metric.startswith("retrieval")]
        flagged = {f.subject for f in retrieval if f.kind in UNFAIR}
        any_unfair += bool(flagged)
        for j, group in enumerate(design["groups"]):
            per_group[j] += group in flagged
            testable[j] += any(f.subject == group and f.kind is not FindingKind.INSUFFICIENT_EVIDENCE
                               for f in retrieval)
        if halved is not None:
            halved_flag += any(f.subject == design["groups"][halved] and f.kind is FindingKind.UNDER_EXPOSED
                               for f in retrieval)
        cited = [f for f in findings if f.kind in CITED]
        any_cited += bool(cited)
        if cite_halved is not None:
            cited_flag += any(f.subject == design["groups"][cite_halved] and f.kind is FindingKind.UNDER_CITED
                              for f in cited)
        under_cited += any(f.kind is FindingKind.UNDER_CITED for f in cited)
        if i < extra:
            for family, x in (("retrieval", table.retrieval), ("citations", table.attributed)):
                if x is None:
                    continue
                p_values = alternatives(x, table.target, rng)
                for test, p in p_values.items():
                    ours = test == f"bootstrap-t, {RETRIEVAL_TAILS if family == 'retrieval' else ATTRIBUTED_TAILS}"
                    alt_any[f"{family}: {test} + Holm{' (ours, without the evidence rules)' if ours else ''}"] += \
                        holm_any(p, alpha)
                alt_any[f"{family}: sign-flip, no correction"] += bool(np.any(p_values["sign-flip"] <= alpha))
            tested = [f for f in retrieval if f.kind in UNFAIR or f.kind is FindingKind.WITHIN_NOISE]
            alt_any["retrieval: ours (symmetric bootstrap-t), no correction"] += any(f.p_value <= alpha
                                                                                     for f in tested)
        if true_gaps is not None:
            counts = resample_counts(table.retrieval.shape[0], 1000, rng)
            x, y = table.retrieval, table.target
            gap = x.sum(0) / x.sum() - y.sum(0) / y.sum()
            boot = (counts @ x) / (counts @ x).sum(1, keepdims=True) - (counts @ y) / (counts @ y).sum(1,
                                                                                                     keepdims=True)
            m_ci = percentile_interval(float(np.abs(gap).max()), np.abs(boot).max(axis=1), level=LEVEL)
            true_max = float(np.abs(true_gaps).max())
            covered_max += m_ci.low <= true_max <= m_ci.high
            lows, highs = np.quantile(boot, [0.025, 0.975], axis=0)
            covered_gap += int(np.sum((np.fmin(lows, gap) <= true_gaps) & (true_gaps <= np.fmax(highs, gap))))
            covered_gap_n += gap.size
    out = {"scenario": name, "queries": len(design["candidates"]), "lines": int(sum(design["lines"])),
           "audits": n_audits, "seconds": round(time.perf_counter() - start, 1),
           "any_unfair_finding": rate(any_unfair, n_audits),
           "per_provider_flag_rate": {g: round(float(v) / n_audits, 4) for g, v in zip(design["groups"], per_group)},
           "providers_testable_mean": round(float(testable.sum()) / n_audits, 2)}
    if halved is not None:
        out["halved_provider"] = design["groups"][halved]
        out["halved_flagged_under_exposed"] = rate(halved_flag, n_audits)
    if cite_rate:
        out["cite_rate_per_slot"] = round(cite_rate, 4)
        out["any_cited_finding"] = rate(any_cited, n_audits)
        out["any_under_cited_finding"] = rate(under_cited, n_audits)
    if cite_halved is not None:
        out["cite_halved_provider"] = design["groups"][cite_halved]
        out["cite_halved_flagged_under_cited"] = rate(cited_flag, n_audits)
    if extra:
        out["alternatives_any_finding"] = {k: rate(v, min(extra, n_audits)) for k, v in alt_any.items()}
    if true_gaps is not None:
        out["max_abs_gap_true"] = round(float(np.abs(true_gaps).max()), 5)
        out["max_abs_gap_interval_coverage"] = rate(covered_max, n_audits)
        out["per_provider_gap_interval_coverage"] = rate(covered_gap, covered_gap_n)
    return out


def run_comparison(name: str, design: dict, n_audits: int, rng: np.random.Generator, *,
                   halved: int | None = None, level: float = 0.95) -> dict:
    """Two systems audited on the same queries: A fair, B fair (null) or with ``halved`` at half its fair share;
    how often the share test of ``compare-runs`` (:func:`~fairrag_core.audit.compare.share_differences`: paired
    permutation, Holm over the providers) reports a provider whose share changes (and the halved one, lower)."""
    start = time.perf_counter()
    any_change = caught = 0
    for _ in range(n_audits):
        a = simulate(design, rng)
        b = simulate(design, rng, halved=halved)
        table = share_differences(b.retrieval, a.retrieval, n_boot=200, n_permutations=2000, level=level, seed=rng)
        changed = table["p_holm"].to_numpy() <= 1 - level
        any_change += bool(changed.any())
        if halved is not None:
            caught += bool(changed[halved] and table["difference"].iloc[halved] < 0)
    out = {"scenario": name, "queries": len(design["candidates"]), "lines": int(sum(design["lines"])),
           "audits": n_audits, "seconds": round(time.perf_counter() - start, 1),
           "any_share_change_finding": rate(any_change, n_audits)}
    if halved is not None:
        out["halved_provider"] = design["groups"][halved]
        out["halved_flagged_less_exposed"] = rate(caught, n_audits)
    return out


def true_gaps_pool(design: dict, halved: int | None) -> np.ndarray:
    """Exact expected share − fair share per provider in the pool design (the same in every query)."""
    code, n_groups = design["code"], design["n_groups"]
    n = code.size
    fair = np.bincount(code, minlength=n_groups) / n
    if halved is None:
        return np.zeros(n_groups)
    g = int(np.sum(code == halved))
    weight = math.exp(1 - 2 ** design["alphas"][0])
    e_half = expected_in_top_k(g, n - g, weight, K)
    per_doc_other = (K - e_half) / (n - g)
    share = np.bincount(code, minlength=n_groups) * per_doc_other / K
    share[halved] = e_half / K
    return share - fair


def markdown(results: dict) -> str:
    """A short table of the figures, for benchmarks/results/calibrate_findings.md."""
    pct = fmt
    lines = [
        "# Calibration of the audit findings (`benchmarks/calibrate_findings.py`)",
        "",
        f"Level {results['level']}, k = {results['k']}, {results['collection']}, seed {results['seed']}, "
        f"{results['machine']}, {results['seconds']} s. Rates with Wilson 95 % intervals (count/audits). "
        "'Unfair' = an under- or over-exposed finding (Holm-adjusted p ≤ 0.05).",
        "",
        "| scenario | queries / lines | audits | figure | rate |",
        "|---|---|---|---|---|",
    ]
    keys = [("any_unfair_finding", "any unfair (retrieval) finding"),
            ("halved_flagged_under_exposed", "halved provider flagged under-exposed"),
            ("any_under_cited_finding", "any under-cited finding"),
            ("any_cited_finding", "any under- or over-cited finding"),
            ("cite_halved_flagged_under_cited", "provider cited at half rate flagged under-cited"),
            ("any_share_change_finding", "any provider's share changes (B vs A)"),
            ("halved_flagged_less_exposed", "halved provider flagged less exposed under B"),
            ("max_abs_gap_interval_coverage", "percentile interval of max \\|gap\\| covers the truth"),
            ("per_provider_gap_interval_coverage", "percentile interval of each gap covers the truth")]
    for r in results["scenarios"]:
        size = f"{r['queries']} / {r['lines']}"
        for key, label in keys:
            if key in r:
                lines.append(f"| {r['scenario']} | {size} | {r['audits']} | {label} | {pct(r[key])} |")
        if "providers_testable_mean" in r:
            lines.append(f"| {r['scenario']} | {size} | {r['audits']} | providers testable (mean of 14) | "
                         f"{r['providers_testable_mean']} |")
        for test, v in r.get("alternatives_any_finding", {}).items():
            lines.append(f"| {r['scenario']} | {size} | {v['audits']} | alternative — {test}: any finding |"
                         f" {pct(v)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=2000, help="audits per null scenario (half for the others)")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--markdown-only", action="store_true",
                        help="rewrite the .md from the saved .json without simulating")
    args = parser.parse_args()
    if args.markdown_only:
        saved = json.loads((RESULTS / "calibrate_findings.json").read_text(encoding="utf-8"))
        (RESULTS / "calibrate_findings.md").write_text(markdown(saved), encoding="utf-8")
        return
    rng = np.random.default_rng(args.seed)
    shoes = load_collection("running-shoes")
    shape = demo_shape(shoes)
    groups, code = np.unique(shoes.providers, return_inverse=True)
    sizes = np.bincount(code)
    halved = int(np.flatnonzero(sizes == sizes.min())[0])  # a provider with the fewest documents (6 of 92)
    typical = int(np.flatnonzero(sizes == sizes.max())[0])  # one with 7 documents, as 8 of the 14 have
    n_alt = max(args.audits // 2, 1)
    everyone = np.arange(len(shoes))
    half_lines = sorted(shape["lines"])[::2]
    sizes_pool = {"half": half_lines, "demo": shape["lines"], "double": shape["lines"] * 2}
    print(f"demo log: {len(shape['lines'])} queries, {sum(shape['lines'])} lines (per query "
          f"{sorted(shape['lines'])}); labelled {len(shape['labelled'])} queries, {sum(shape['labelled_lines'])} lines;"
          f" citations per shown slot {shape['cite_rate']:.3f}")
    pool_null = {s: make_design(shoes, [everyone] * len(lines), lines, None) for s, lines in sizes_pool.items()}
    pool_alt = {s: make_design(shoes, [everyone] * len(lines), lines, halved) for s, lines in sizes_pool.items()}
    alpha_half = pool_alt["demo"]["alphas"][0]
    members = np.flatnonzero(code == halved)
    drawn = sample_rankings(np.where(code == halved, 0.0, 1.0), alpha=alpha_half, n_samples=20000, k=K, seed=rng)
    check = float(np.isin(drawn, members).sum(axis=1).mean())
    exact = expected_in_top_k(sizes[halved], len(shoes) - sizes[halved], math.exp(1 - 2 ** alpha_half), K)
    fair_count = sizes[halved] * K / len(shoes)
    print(f"halved provider: {groups[halved]} ({sizes[halved]} documents), α = {alpha_half:.4f}; expected count in "
          f"the top {K}: exact {exact:.4f}, Monte Carlo (20,000 rankings) {check:.4f}, fair {fair_count:.4f}")
    results = {"machine": f"{platform.machine()}, {platform.python_version()}", "level": LEVEL, "seed": args.seed,
               "k": K, "collection": "running-shoes (14 providers, 92 documents)",
               "halved_provider": str(groups[halved]), "alpha_half": round(alpha_half, 5), "scenarios": []}
    started = time.perf_counter()

    def record(r: dict) -> None:
        results["scenarios"].append(r)
        bits = [f"{r['scenario']}: {r['queries']} q, {r['lines']} lines, {r['audits']} audits ({r['seconds']} s)"]
        if "any_share_change_finding" in r:
            bits.append(f"  any share-change finding {fmt(r['any_share_change_finding'])}")
            if "halved_flagged_less_exposed" in r:
                bits.append(f"  {r['halved_provider']} flagged less exposed under B "
                            f"{fmt(r['halved_flagged_less_exposed'])}")
            print("\n".join(bits), flush=True)
            return
        bits.append(f"  any unfair finding {fmt(r['any_unfair_finding'])}; testable providers "
                    f"{r['providers_testable_mean']}")
        if "halved_flagged_under_exposed" in r:
            bits.append(f"  {r['halved_provider']} flagged under-exposed {fmt(r['halved_flagged_under_exposed'])}")
        if "any_cited_finding" in r:
            bits.append(f"  any cited finding {fmt(r['any_cited_finding'])}; any under-cited "
                        f"{fmt(r['any_under_cited_finding'])}")
        if "cite_halved_flagged_under_cited" in r:
            bits.append(f"  {r['cite_halved_provider']} flagged under-cited "
                        f"{fmt(r['cite_halved_flagged_under_cited'])}")
        for test, v in r.get("alternatives_any_finding", {}).items():
            bits.append(f"  alternative {test}: any finding {fmt(v)}")
        if "max_abs_gap_interval_coverage" in r:
            bits.append(f"  max|gap| true {r['max_abs_gap_true']}: percentile-interval coverage "
                        f"{fmt(r['max_abs_gap_interval_coverage'])}; per-provider gap coverage "
                        f"{fmt(r['per_provider_gap_interval_coverage'])}")
        rates = r["per_provider_flag_rate"]
        bits.append(f"  per-provider flag rate: min {min(rates.values()):.4f}, max {max(rates.values()):.4f}, "
                    f"mean {np.mean(list(rates.values())):.4f}")
        print("\n".join(bits), flush=True)

    record(run_scenario("pool, fair (null), demo size", pool_null["demo"], args.audits, rng, cite_rate=shape[
        "cite_rate"], true_gaps=true_gaps_pool(pool_null["demo"], None), extra=min(args.audits, 1000)))
    for size in ("half", "double"):
        record(run_scenario(f"pool, fair (null), {size} size", pool_null[size], n_alt, rng))
    for size in ("half", "demo", "double"):
        record(run_scenario(f"pool, {groups[halved]} under-exposed by half, {size} size", pool_alt[size], n_alt, rng,
                            halved=halved, true_gaps=true_gaps_pool(pool_alt[size], halved) if size == "demo"
                            else None))
    pool_typical = make_design(shoes, [everyone] * len(shape["lines"]), shape["lines"], typical)
    record(run_scenario(f"pool, {groups[typical]} under-exposed by half, demo size", pool_typical, n_alt, rng,
                        halved=typical))
    record(run_scenario(f"pool, fair retrieval, {groups[halved]} cited at half rate, demo size", pool_null["demo"],
                        n_alt, rng, cite_rate=shape["cite_rate"], cite_halved=halved))
    record(run_comparison("pool, A fair vs B fair (null), demo size", pool_null["demo"], n_alt, rng))
    record(run_comparison(f"pool, A fair vs B with {groups[typical]} at half, demo size", pool_typical, n_alt, rng,
                          halved=typical))
    qrels_candidates = [np.flatnonzero(shoes.useful(q)) for q in shape["labelled"]]
    qrels_null = make_design(shoes, qrels_candidates, shape["labelled_lines"], None)
    record(run_scenario("demo qrels, fair (null)", qrels_null, args.audits, rng, cite_rate=shape["cite_rate"]))
    most = Counter(int(c) for cand in qrels_candidates for c in np.unique(code[cand])).most_common(1)[0][0]
    qrels_alt = make_design(shoes, qrels_candidates, shape["labelled_lines"], most)
    record(run_scenario(f"demo qrels, {groups[most]} under-exposed by half where m > k", qrels_alt, n_alt, rng,
                        halved=most))
    results["seconds"] = round(time.perf_counter() - started, 1)
    print(f"total {results['seconds']} s")
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "calibrate_findings.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                                         encoding="utf-8")
        (RESULTS / "calibrate_findings.md").write_text(markdown(results), encoding="utf-8")
        print(f"wrote {RESULTS / 'calibrate_findings.json'} and .md")


if __name__ == "__main__":
    main()
