"""The paper's summary tables of a RAG sweep (Kim & Diaz 2025, §5).

* Table 1 — disparity vs quality: the slope of the linear fit of EE-R on EE-D and the area under the α-wise
  EE-R–EE-D curve;
* Table 2 — utility vs disparity: mean EU per EE-D interval minus the deterministic baseline's EU, with an
  unpaired (Welch) t-test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError
from ..metrics.t_tests import welch_p_value

__all__ = ["disparity_quality_table", "utility_by_disparity_table", "EE_D_BINS"]


def disparity_quality_table(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 of the paper: slope of the linear fit of EE-R on EE-D, and the area under the EE-R–EE-D curve.

    Uses the stochastic runs of queries with a fairness question (m > 1). The curve is the α-wise mean
    (EE-D, EE-R), sorted by EE-D; the slope is NaN when every run has the same EE-D. The AUC is trapezoidal
    over that EE-D range, divided by its width so that it reads as the mean EE-R along the curve.
    """
    runs = table[(table["system"] == "stochastic") & table["fairness_question"]].dropna(subset=["ee_r"])
    if runs.empty or runs["alpha"].nunique() < 2:
        raise InvalidParameterError("Table 1 needs stochastic runs at ≥ 2 α values on queries with ≥ 2 useful items")
    # All runs at one EE-D (every α served the same rankings) leave the slope undefined, not a RankWarning.
    flat = float(np.ptp(runs["ee_d"].to_numpy())) <= 1e-12
    slope = np.nan if flat else float(np.polyfit(runs["ee_d"], runs["ee_r"], 1)[0])
    curve = runs.groupby("alpha")[["ee_d", "ee_r"]].mean().sort_values("ee_d")
    width = curve["ee_d"].iloc[-1] - curve["ee_d"].iloc[0]
    area = float(np.trapezoid(curve["ee_r"], curve["ee_d"]) / width) if width > 0 else float(curve["ee_r"].mean())
    return pd.DataFrame([{"runs": len(runs), "slope": slope, "auc": area}])


EE_D_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0 + 1e-9)


def utility_by_disparity_table(table: pd.DataFrame, *, column: str = "eu", alpha_level: float = 0.05) -> pd.DataFrame:
    """Table 2 of the paper: mean utility per EE-D interval minus the deterministic baseline, with an unpaired t-test.

    Queries without a fairness question are left out. Each stochastic run falls into one interval
    [0, .2), …, [.8, 1.0]. ``difference`` is the mean of ``column`` in the interval minus the mean over
    the deterministic runs of the same queries. ``p_value`` comes from Welch's unpaired t-test
    (:func:`~fairrag_core.metrics.t_tests.welch_p_value`; 1.0 when neither side varies and the means
    agree), and ``significant`` means p < ``alpha_level``.
    """
    kept = table[table["fairness_question"]].dropna(subset=[column])
    baseline = kept[kept["system"] == "deterministic"][column]
    stochastic = kept[kept["system"] == "stochastic"]
    if baseline.empty:
        raise InvalidParameterError("Table 2 needs the deterministic baseline runs (deterministic_baseline=True)")
    labels = ["[0.0, 0.2)", "[0.2, 0.4)", "[0.4, 0.6)", "[0.6, 0.8)", "[0.8, 1.0]"]
    bins = pd.cut(stochastic["ee_d"], EE_D_BINS, right=False, labels=labels)
    rows = []
    for label in labels:
        values = stochastic.loc[bins == label, column]
        if len(values) == 0:
            rows.append({"ee_d_interval": label, "runs": 0, "mean": np.nan, "difference": np.nan, "p_value": np.nan,
                         "significant": False})
            continue
        p = welch_p_value(values.to_numpy(), baseline.to_numpy())
        rows.append({"ee_d_interval": label, "runs": len(values), "mean": float(values.mean()),
                     "difference": float(values.mean() - baseline.mean()), "p_value": p,
                     "significant": bool(p < alpha_level) if not np.isnan(p) else False})
    out = pd.DataFrame(rows)
    out.attrs["baseline_mean"] = float(baseline.mean())
    return out
