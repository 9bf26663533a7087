import pytest


def test_win_tie_loss_and_table1_layout_on_a_hand_made_table():
    import pandas as pd

    from fairrag_core.fairqr.evaluate import paired_tests, table1, win_tie_loss

    rows = []
    for q, (bm25, fqr) in enumerate([(0.8, 0.9), (0.7, 0.7), (0.9, 0.85), (0.6, 0.8)]):
        for system, a in (("BM25", bm25), ("FAIR-QR", fqr)):
            rows.append({"query_id": f"q{q}", "category": "gender", "system": system, "ndcg": 1.0, "awrf": a,
                         "ndcg_x_awrf": a})
    results = pd.DataFrame(rows)
    counts = win_tie_loss(results).set_index("metric")
    assert counts.loc["awrf", ["better", "same", "worse"]].tolist() == [2, 1, 1]
    assert counts.loc["ndcg", ["better", "same", "worse"]].tolist() == [0, 4, 0]
    means = table1(results)
    assert means.loc["FAIR-QR", ("gender", "awrf")] == pytest.approx((0.9 + 0.7 + 0.85 + 0.8) / 4)
    tests = paired_tests(results).set_index("metric")
    from scipy import stats

    assert tests.loc["awrf", "p_value"] == pytest.approx(stats.ttest_rel([0.9, 0.7, 0.85, 0.8],
                                                                         [0.8, 0.7, 0.9, 0.6]).pvalue)
    assert tests.loc["ndcg", "p_value"] == 1.0  # identical: no test needed
