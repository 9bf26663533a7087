"""Are the label-free findings calibrated? Simulated deployments the size of issue 29's, with known truth.

The deployment (issue 29): 200 requests, each a different question served once (one line per query), top k = 5,
six publishers holding 34, 20, 15, 14, 11 and 6 % of the corpus, citations logged. Each query has its own topic
mix: the publishers of its 5 slots are drawn from θ_q ~ Dirichlet(c · shares) (c = 6: queries differ a lot in
whom they retrieve), so E[θ_q] = shares and exposure varies from query to query as in a real log. Each shown slot is
cited with probability 0.3 (1.5 citations per answer; the demo log has 0.22 per slot), independently of its
publisher at equality.

Two findings of :mod:`fairrag_core.audit.label_free`:

* **citations given exposure** — at equality every slot is cited at the same rate, so each publisher's citation
  share equals its exposure share; the alternative cites one publisher's slots at the rate r_g = r · ½(1 − e)/(1 − ½e)
  (e its exposure share), which makes its expected citation share exactly half its expected exposure share;
* **exposure against a stated target** (the corpus shares as the stated shares) — at equality E[θ_q] = shares; the
  alternative halves one publisher's θ_q,g (the others rescaled), so its expected exposure share is half its stated
  share.

Two more, on the same deployment where each request logs 20 candidates with scores (a reranker's input; publishers
drawn from the query's θ_q, scores uniform on [0, 1] whatever the publisher) and serves 5 of them:

* **exposure against presence** (the logged candidates) — at equality the system shows 5 of the 20 candidates at
  random whatever their publisher; the alternative replaces each shown candidate of one publisher, with probability
  ½, by a candidate of another publisher that was not shown, so its expected exposure is exactly half its presence;
* **exposure against merit from the system's own scores** (tiers by score quantile per query, quartiles by default;
  halves too) — at equality the system orders the tiers and samples within them (quartiles of 20: the top 5 are the
  top tier, so it serves exactly them); the alternative replaces, with probability ½, each shown candidate of one
  publisher by the best-scored unshown candidate of another, so its expected exposure is half its fair share.

For each scenario: the share of audits with any under-/over- finding of that family (false alarms at equality) or
with the halved publisher flagged in the right direction (power), with Wilson 95 % intervals; also at smaller sizes,
down to where the findings say "insufficient evidence (n = …)".

Writes ``benchmarks/results/calibrate_label_free.json`` and ``.md``; asserts nothing.
Run: python benchmarks/calibrate_label_free.py [--audits 1000] [--seed 29]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from fairrag_core.audit.findings import FindingKind
from fairrag_core.audit.label_free import (
    attribution_findings,
    merit_findings,
    presence_findings,
    stated_target_findings,
)
from fairrag_core.audit.merit import DEFAULT_GRADES, merit_tiers, tier_target
from fairrag_core.audit.share_findings import ShareTable
from fairrag_core.metrics.significance import wilson_interval

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PUBLISHERS = ("Harbor Daily", "Northern Ledger", "Valley Post", "Metro Wire", "Capital Courier", "Coastal Times")
SHARES = np.array([0.34, 0.20, 0.15, 0.14, 0.11, 0.06])
K = 5
CITE_RATE = 0.3
CONCENTRATION = 6.0
LEVEL = 0.95
CANDIDATES = 20
EXPOSED = {FindingKind.UNDER_EXPOSED, FindingKind.OVER_EXPOSED}
FLAGS = {"cited": {FindingKind.UNDER_CITED, FindingKind.OVER_CITED}, "stated": EXPOSED, "presence": EXPOSED,
         "merit": EXPOSED}
#: The families read against a per-query reference (the logged candidates, their merit tiers).
REFERENCED = ("presence", "merit")
NAMES = {"cited": "citations given exposure", "stated": "exposure vs stated share",
         "presence": "exposure vs presence (candidates)", "merit": "exposure vs merit (own scores)"}


class Referenced(NamedTuple):
    """A simulated deployment with logged candidates: its table and the per-query reference of its family
    (``n_qg`` the publishers' candidates, or ``t_qg`` their merit tier target)."""

    table: ShareTable
    reference: np.ndarray
    grades: int = DEFAULT_GRADES


def _served(rng: np.random.Generator, publisher: np.ndarray, order: np.ndarray, halved: int | None,
            best_first: bool) -> np.ndarray:
    """The publishers' slots of one query: the first K candidates of ``order``, then each shown candidate of
    ``halved`` replaced with probability ½ by an unshown candidate of another publisher (the best in ``order`` when
    ``best_first``, else one at random)."""
    shown, rest = list(order[:K]), [c for c in order[K:] if publisher[c] != halved]
    if halved is not None:
        for i, c in enumerate(shown):
            if publisher[c] == halved and rest and rng.random() < 0.5:
                shown[i] = rest.pop(0 if best_first else int(rng.integers(len(rest))))
    return np.bincount(publisher[shown], minlength=SHARES.size).astype(float)


def _with_candidates(rng: np.random.Generator, theta: np.ndarray, family: str, halved: int | None,
                     grades: int) -> Referenced:
    """Each query logs 20 candidates (publishers from θ_q, uniform scores) and serves 5 (module docstring)."""
    requests, n_g = theta.shape
    retrieval, reference = np.zeros((requests, n_g)), np.zeros((requests, n_g))
    for q in range(requests):
        publisher = rng.choice(n_g, size=CANDIDATES, p=theta[q] / theta[q].sum())
        if family == "presence":
            order = rng.permutation(CANDIDATES)  # shown whatever the publisher
            reference[q] = np.bincount(publisher, minlength=n_g)
        else:
            tiers = merit_tiers(rng.random(CANDIDATES), grades=grades)
            order = np.lexsort((rng.random(CANDIDATES), -tiers))  # tiers best first, shuffled within
            reference[q] = np.bincount(publisher, weights=tier_target(tiers, K), minlength=n_g)
        retrieval[q] = _served(rng, publisher, order, halved, best_first=family == "merit")
    table = ShareTable(groups=PUBLISHERS, query_ids=tuple(f"q{i}" for i in range(requests)), retrieval=retrieval,
                       target=np.zeros_like(retrieval), attributed=None, lines=np.ones(requests))
    return Referenced(table, reference, grades)


def simulate(rng: np.random.Generator, *, requests: int = 200, shares: np.ndarray = SHARES,
             cite_rate: float = CITE_RATE, exposure_halved: int | None = None,
             cite_halved: int | None = None, family: str | None = None,
             grades: int = DEFAULT_GRADES) -> ShareTable | Referenced:
    """One simulated deployment (module docstring): ``requests`` queries served once each, retrieval ε and cited
    ε^a summed per publisher; ``exposure_halved``: that publisher at half its share of exposure; ``cite_halved``: that
    publisher cited at half its share of exposure. ``family`` ``"presence"`` or ``"merit"``: with 20 logged
    candidates per query, and the reference of that family (``grades`` merit tiers per query)."""
    n_g = shares.size
    if family in REFERENCED:
        return _with_candidates(rng, rng.dirichlet(CONCENTRATION * shares, size=requests), family, exposure_halved,
                                grades)
    theta = rng.dirichlet(CONCENTRATION * shares, size=requests)
    if exposure_halved is not None:
        g = exposure_halved
        rest = (1 - theta[:, g] / 2) / np.where(theta[:, g] < 1, 1 - theta[:, g], 1.0)
        theta = theta * rest[:, None]
        theta[:, g] = theta[:, g] / rest / 2
    retrieval = np.array([rng.multinomial(K, t / t.sum()) for t in theta], dtype=float)
    rate = np.full(n_g, cite_rate)
    if cite_halved is not None:
        e = shares[cite_halved]
        rate[cite_halved] = cite_rate * 0.5 * (1 - e) / (1 - 0.5 * e)
    attributed = rng.binomial(retrieval.astype(int), rate).astype(float)
    return ShareTable(groups=PUBLISHERS, query_ids=tuple(f"q{i}" for i in range(requests)), retrieval=retrieval,
                      target=np.zeros_like(retrieval), attributed=attributed, lines=np.ones(requests))


def findings_of(table: ShareTable | Referenced, family: str, rng: np.random.Generator,
                n_test: int | None = None) -> list:
    """The findings of one family on a simulated deployment (the stated shares are the corpus shares)."""
    test = {"n_boot": 100, "n_test": n_test, "seed": rng}
    if family == "cited":
        return attribution_findings(table, **test)
    if family == "presence":
        return presence_findings(table.table, table.reference, **test)
    if family == "merit":
        return merit_findings(table.table, table.reference, grades=table.grades, **test)
    return stated_target_findings(table, dict(zip(PUBLISHERS, SHARES)), **test)


def rate(successes: int, trials: int) -> dict:
    p, low, high = wilson_interval(successes, trials, level=0.95)
    return {"rate": round(p, 4), "low": round(low, 4), "high": round(high, 4), "count": successes, "audits": trials}


def fmt(r: dict) -> str:
    return f"{100 * r['rate']:.1f} % [{100 * r['low']:.1f}, {100 * r['high']:.1f}] ({r['count']}/{r['audits']})"


def scenario(family: str, audits: int, rng: np.random.Generator, *, requests: int = 200,
             halved: int | None = None, grades: int = DEFAULT_GRADES) -> dict:
    """``audits`` simulated deployments: any finding of the family, the halved publisher caught, publishers
    testable."""
    start = time.perf_counter()
    under = FindingKind.UNDER_CITED if family == "cited" else FindingKind.UNDER_EXPOSED
    any_flag = caught = testable = 0
    for _ in range(audits):
        table = simulate(rng, requests=requests, **({"cite_halved": halved} if family == "cited"
                                                    else {"exposure_halved": halved}),
                         **({"family": family, "grades": grades} if family in REFERENCED else {}))
        found = findings_of(table, family, rng)
        any_flag += any(f.kind in FLAGS[family] for f in found)
        if halved is not None:
            caught += any(f.kind is under and f.subject == PUBLISHERS[halved] for f in found)
        testable += sum(f.subject in PUBLISHERS and f.kind is not FindingKind.INSUFFICIENT_EVIDENCE for f in found)
    out = {"family": family, **({"grades": grades} if family == "merit" else {}), "requests": requests,
           "audits": audits,
           "halved": None if halved is None else f"{PUBLISHERS[halved]} ({SHARES[halved]:.0%})",
           "seconds": round(time.perf_counter() - start, 1), "testable_mean": round(testable / audits, 2),
           "any_finding": rate(any_flag, audits)}
    if halved is not None:
        out["halved_flagged_under"] = rate(caught, audits)
    return out


def markdown(results: dict) -> str:
    lines = ["# Calibration of the label-free findings (`benchmarks/calibrate_label_free.py`)", "",
             f"Level {results['level']}, k = {K}, six publishers {', '.join(f'{s:.0%}' for s in SHARES)}, "
             f"citation rate {CITE_RATE} per shown slot, {CANDIDATES} logged candidates (presence, merit), "
             f"Dirichlet concentration {CONCENTRATION}, seed "
             f"{results['seed']}, {results['machine']}, {results['seconds']} s"
             + (f" (the families not rerun: seed {results['earlier']['seed']}, {results['earlier']['seconds']} s)"
                if "earlier" in results else "") + ". Rates with Wilson 95 % intervals.", "",
             "| family | requests | truth | audits | any finding | halved publisher flagged | testable (of 6) |",
             "|---|---|---|---|---|---|---|"]
    for r in results["scenarios"]:
        family = NAMES[r["family"]] + (f", {r['grades']} tiers" if "grades" in r else "")
        truth = "equality" if r["halved"] is None else f"{r['halved']} at half"
        caught = fmt(r["halved_flagged_under"]) if "halved_flagged_under" in r else "—"
        lines.append(f"| {family} | {r['requests']} | {truth} | {r['audits']} | {fmt(r['any_finding'])} | {caught} "
                     f"| {r['testable_mean']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=1000, help="audits per scenario at equality at full size (half "
                                                                 "under an alternative, a quarter at smaller sizes)")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--families", nargs="+", choices=list(FLAGS), default=list(FLAGS),
                        help="the families to simulate; the others' results already written are kept")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    results = {"machine": f"{platform.machine()}, {platform.python_version()}", "level": LEVEL, "seed": args.seed,
               "scenarios": []}
    started = time.perf_counter()
    half, quarter = max(args.audits // 2, 1), max(args.audits // 4, 1)
    runs = []  # (family, audits, requests, halved publisher, merit grades)
    for family in args.families:
        for grades in ((DEFAULT_GRADES, 2) if family == "merit" else (DEFAULT_GRADES,)):
            runs += [(family, args.audits, 200, None, grades)]
            runs += [(family, half, 200, g, grades) for g in (4, 5, 0)]  # 11 %, 6 %, 34 %
            runs += [(family, quarter, n, None, grades) for n in (50, 10)]
            runs += [(family, quarter, n, 4, grades) for n in (100, 50, 10)]
    for family, audits, requests, halved, grades in runs:
        r = scenario(family, audits, rng, requests=requests, halved=halved, grades=grades)
        results["scenarios"].append(r)
        print(f"{family:8} {requests:4} requests, {r['halved'] or 'equality':22} any {fmt(r['any_finding'])}"
              + (f"; halved flagged {fmt(r['halved_flagged_under'])}" if halved is not None else "")
              + f"; testable {r['testable_mean']} ({r['seconds']} s)", flush=True)
    results["seconds"] = round(time.perf_counter() - started, 1)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        written = RESULTS / "calibrate_label_free.json"
        if set(args.families) != set(FLAGS) and written.exists():  # keep the other families' results, and say so
            kept = json.loads(written.read_text(encoding="utf-8"))
            results["scenarios"] = [r for r in kept["scenarios"] if r["family"] not in args.families] + \
                results["scenarios"]
            results["earlier"] = {k: kept.get(k) for k in ("machine", "seed", "seconds")}
        (RESULTS / "calibrate_label_free.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                                           encoding="utf-8")
        (RESULTS / "calibrate_label_free.md").write_text(markdown(results), encoding="utf-8")
        print(f"wrote {RESULTS / 'calibrate_label_free.json'} and .md")


if __name__ == "__main__":
    main()
