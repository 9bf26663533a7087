"""Are the drift alarms calibrated? Simulated monitors of issue 29's deployment, with known truth.

The deployment (issue 29, benchmarks/instrumented_deployment.py): 200 requests a day, top k = 5, six providers
holding 34, 24, 15, 11, 10 and 6 % of the corpus. Each request has its own topic mix θ ~ Dirichlet(c · shares)
(c = 6, as benchmarks/calibrate_label_free.py: requests differ a lot in whom they retrieve), its 5 slots' providers
drawn from θ. The monitor (:mod:`fairrag_core.audit.drift`) takes the first ``--reference`` days as the reference
period (the reference shares are *estimated* from them), then looks once a day for ``--days`` days.

* **False alarms at equality**: nothing changes; the share of monitors with any alarm in the 30 looks (the
  family-wise rate over the 6 providers and every look; target ≤ 5 %).
* **Detection delay**: from the first monitored day, one provider's θ component is halved (the others rescaled),
  so its expected share is half its reference share; the delay is the look (days) at which that provider alarms
  (median and 90th percentile; "—" where fewer than that share alarm within the looks), and the share detected.

Writes ``benchmarks/results/calibrate_drift.json`` and ``.md`` (the table in docs/monitor.md); asserts nothing.
Run: python benchmarks/calibrate_drift.py [--monitors 1000] [--seed 32]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fairrag_core.audit.drift import DRIFT_ALPHA, mixture_log_e, reference_band  # noqa: E402

SHARES = (0.34, 0.24, 0.15, 0.11, 0.10, 0.06)
PER_DAY, K, CONCENTRATION = 200, 5, 6.0


def requests(rng: np.random.Generator, monitors: int, days: int, shares, *, halve: int | None = None,
             after: int = 0) -> np.ndarray:
    """``(monitors, days · PER_DAY, P)`` per-request provider shares of the top k; from day ``after`` on, provider
    ``halve``'s topic weight is halved (the others rescaled)."""
    shares = np.asarray(shares, dtype=float)
    theta = rng.dirichlet(CONCENTRATION * shares, size=(monitors, days * PER_DAY))
    if halve is not None:
        late = theta[:, after * PER_DAY:]
        late[..., halve] /= 2
        late /= late.sum(axis=-1, keepdims=True)
    # the k slots' providers from θ: multinomial per request (numpy's multinomial takes one p per row)
    counts = np.empty_like(theta)
    flat_theta, flat_counts = theta.reshape(-1, len(shares)), counts.reshape(-1, len(shares))
    cum = np.cumsum(flat_theta, axis=1)
    draws = rng.random((len(flat_theta), K))
    picked = (draws[:, :, None] > cum[:, None, :]).sum(axis=2).clip(max=len(shares) - 1)
    for j in range(len(shares)):
        flat_counts[:, j] = (picked == j).sum(axis=1)
    return counts / K


def first_alarms(x: np.ndarray, reference_days: int, alpha: float = DRIFT_ALPHA) -> np.ndarray:
    """``(monitors, P)``: the look (1-based day after the reference period) at which each provider first alarms,
    0 for never — the monitor's rule (Bonferroni over providers of the always-valid p at each day's end)."""
    watched = x[:, reference_days * PER_DAY:]
    days = watched.shape[1] // PER_DAY
    out = np.zeros((len(x), x.shape[2]), dtype=int)
    threshold = math.log(2 * x.shape[2] / alpha)
    for m in range(len(x)):
        _, low, high = reference_band(x[m, :reference_days * PER_DAY], alpha)  # estimated as the monitor does
        log_e = np.maximum.accumulate(mixture_log_e(watched[m], low, high), axis=0)
        at_looks = log_e[PER_DAY - 1::PER_DAY][:days]  # (days, P)
        hit = at_looks >= threshold
        out[m] = np.where(hit.any(axis=0), hit.argmax(axis=0) + 1, 0)
    return out


def simulate(monitors: int, *, days: int = 30, reference: int = 7, seed: int = 32, shares=SHARES,
             chunk: int = 20) -> dict:
    """The false-alarm rate at equality and, per provider halved, the detection delays (days)."""
    rng = np.random.default_rng(seed)
    total = reference + days

    def run(halve: int | None) -> np.ndarray:
        parts = []
        for start in range(0, monitors, chunk):
            n = min(chunk, monitors - start)
            parts.append(first_alarms(requests(rng, n, total, shares, halve=halve, after=reference), reference))
        return np.concatenate(parts)

    null = run(None)
    false = int((null > 0).any(axis=1).sum())
    out = {"monitors": monitors, "days": days, "reference_days": reference, "per_day": PER_DAY, "k": K,
           "shares": list(shares), "alpha": DRIFT_ALPHA, "false_alarms": false,
           "false_alarm_rate": false / monitors, "false_alarm_wilson": wilson(false, monitors), "halved": []}
    for g, share in enumerate(shares):
        hits = run(g)[:, g]
        found = np.sort(hits[hits > 0])
        detected = len(found) / monitors

        def quantile(q: float, found: np.ndarray = found) -> float | None:
            rank = math.ceil(q * monitors)
            return float(found[rank - 1]) if rank <= len(found) else None

        out["halved"].append({"share": share, "detected": detected, "median_delay": quantile(0.5),
                              "p90_delay": quantile(0.9)})
    return out


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def markdown(result: dict) -> str:
    low, high = result["false_alarm_wilson"]
    lines = [f"{result['monitors']:,} simulated monitors per row; {result['per_day']} requests a day, top k = "
             f"{result['k']}, {result['reference_days']} reference days, then {result['days']} daily looks; "
             f"α = {result['alpha']:g} over the {len(result['shares'])} providers (Bonferroni).", "",
             f"False alarms at equality (any provider, any look): **{result['false_alarm_rate']:.1%}** "
             f"(Wilson 95 %: {low:.1%}–{high:.1%}).".replace("%", " %").replace("  %", " %"), "",
             "| provider's share | halved to | detected within the looks | median delay (days) | 90th pct (days) |",
             "|---|---|---|---|---|"]
    for row in result["halved"]:
        def days(v):
            return "—" if v is None else f"{v:g}"
        lines.append(f"| {row['share']:.0%} | {row['share'] / 2:.0%} | {row['detected']:.1%} | "
                     f"{days(row['median_delay'])} | {days(row['p90_delay'])} |".replace("%", " %"))
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--reference", type=int, default=7)
    parser.add_argument("--seed", type=int, default=32)
    args = parser.parse_args(argv)
    result = simulate(args.monitors, days=args.days, reference=args.reference, seed=args.seed)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibrate_drift.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "calibrate_drift.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
