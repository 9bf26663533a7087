import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairrag_core import InvalidParameterError
from fairrag_core.rag.tables import disparity_quality_table, utility_by_disparity_table


def _table(rows):
    return pd.DataFrame(rows, columns=["query_id", "system", "alpha", "fairness_question", "ee_d", "ee_r", "eu"])


def test_table1_slope_and_auc_golden():
    rows = []
    for q in ("a", "b"):
        for alpha, d in ((0.0, 0.1), (2.0, 0.5), (8.0, 0.9)):
            rows.append([q, "stochastic", alpha, True, d, 0.5 * d + 0.1, 0.3])
    rows.append(["c", "stochastic", 0.0, False, 0.9, 0.0, 0.3])  # no fairness question: left out
    out = disparity_quality_table(_table(rows))
    assert out.loc[0, "slope"] == pytest.approx(0.5)
    assert out.loc[0, "auc"] == pytest.approx(0.5 * 0.5 + 0.1)  # mean of a line over [0.1, 0.9]
    assert out.loc[0, "runs"] == 6


def test_table2_differences_and_welch_test():
    rows = [["q1", "deterministic", np.inf, True, 1.0, 0.6, 0.40],
            ["q2", "deterministic", np.inf, True, 1.0, 0.6, 0.50]]
    low = [0.20, 0.25, 0.30]
    rows += [[f"q{i}", "stochastic", 0.0, True, 0.1, 0.3, u] for i, u in enumerate(low)]
    rows += [["q1", "stochastic", 8.0, True, 0.95, 0.6, 0.44]]
    out = utility_by_disparity_table(_table(rows)).set_index("ee_d_interval")
    assert out.attrs["baseline_mean"] == pytest.approx(0.45)
    assert out.loc["[0.0, 0.2)", "difference"] == pytest.approx(0.25 - 0.45)
    expected_p = stats.ttest_ind(low, [0.40, 0.50], equal_var=False).pvalue
    assert out.loc["[0.0, 0.2)", "p_value"] == pytest.approx(expected_p)
    assert out.loc["[0.8, 1.0]", "runs"] == 1 and np.isnan(out.loc["[0.8, 1.0]", "p_value"])
    assert out.loc["[0.4, 0.6)", "runs"] == 0


def test_tables_need_enough_runs():
    with pytest.raises(InvalidParameterError, match="≥ 2 α values"):
        disparity_quality_table(_table([["q", "stochastic", 1.0, True, 0.5, 0.5, 0.1]]))
    with pytest.raises(InvalidParameterError, match="deterministic baseline"):
        utility_by_disparity_table(_table([["q", "stochastic", 1.0, True, 0.5, 0.5, 0.1]]))


def test_tables_on_runs_that_do_not_vary():
    # Every α served the same ranking and every answer scored the same (to the last bits): defined values, no warning.
    third = 1 / 3
    rows = [[q, "deterministic", np.inf, True, 0.7, 0.6, third] for q in ("q1", "q2")]
    rows += [[f"q{i}", "stochastic", a, True, 0.7, 0.6, 0.1 + 0.2 + third - 0.3] for i in (1, 2) for a in (0.0, 8.0)]
    table = _table(rows)
    assert np.isnan(disparity_quality_table(table).loc[0, "slope"])
    out = utility_by_disparity_table(table).set_index("ee_d_interval")
    assert out.loc["[0.6, 0.8)", "p_value"] == 1.0 and not out.loc["[0.6, 0.8)", "significant"]
