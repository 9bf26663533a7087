"""The one rule for "top N + all others" (issue 30, thousands of providers): golden values worked by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fairrag_core.audit.ledger import TOP_PROVIDERS, exposure_ledger, others_label, top_with_others
from fairrag_core.errors import InvalidParameterError


@pytest.fixture()
def table():
    # by hand: exposure 5, 3, 2, 2, 1, 0.5 (total 13.5); "c" and "d" tie at 2
    return pd.DataFrame({"provider": ["b", "e", "d", "c", "a", "f"],
                         "exposure": [3.0, 1.0, 2.0, 2.0, 5.0, 0.5],
                         "documents": [1, 2, 3, 4, 5, 6],
                         "low": [0.1] * 6})


def test_the_top_three_and_the_rest_summed(table):
    top = top_with_others(table, group="provider", by="exposure", summed=["exposure", "documents"], n=3)
    # a (5), b (3), then the tie c/d at 2 goes to "c" (alphabetical); shown in the table's own order
    assert top.shown["provider"].tolist() == ["b", "c", "a"]
    assert top.others == {"exposure": 3.5, "documents": 11.0}  # d 2 + e 1 + f 0.5; documents 3 + 2 + 6
    assert top.n_others == 3 and top.total == 6 and top.truncated
    assert top.shown["exposure"].sum() + top.others["exposure"] == pytest.approx(table["exposure"].sum())
    assert top.rule == "the top 3 of 6 providers by exposure, the other 3 summed as “all others”"
    drawn = top.with_others("provider")
    assert drawn["provider"].tolist() == ["b", "c", "a", "all others (3 providers)"]
    assert drawn["exposure"].iloc[-1] == 3.5 and math.isnan(drawn["low"].iloc[-1])  # an interval is not summed


def test_ties_do_not_depend_on_the_table_order(table):
    shuffled = table.iloc[[5, 3, 1, 0, 4, 2]]
    for frame in (table, shuffled):
        top = top_with_others(frame, group="provider", by="exposure", summed=["exposure"], n=3)
        assert sorted(top.shown["provider"]) == ["a", "b", "c"]


def test_n_at_least_the_table_shows_every_row_as_it_was(table):
    for n in (6, 7, None):
        top = top_with_others(table, group="provider", by="exposure", summed=["exposure"], n=n)
        pd.testing.assert_frame_equal(top.shown, table.reset_index(drop=True))
        assert top.others is None and not top.truncated and top.rule == "all 6 providers"
        assert top.with_others("provider") is top.shown


def test_named_groups_are_never_hidden_and_absolute_gaps(table):
    top = top_with_others(table, group="provider", by="exposure", summed=["exposure"], n=2, named={"f", "zz"})
    assert top.shown["provider"].tolist() == ["b", "a", "f"] and top.others == {"exposure": 5.0}
    assert "and 1 more that the findings name" in top.rule
    gaps = pd.DataFrame({"group": ["x", "y", "z"], "gap": [0.1, -0.4, 0.2]})
    top = top_with_others(gaps, group="group", by="gap", summed=["gap"], n=1, absolute=True, noun="groups")
    assert top.shown["group"].tolist() == ["y"] and top.others["gap"] == pytest.approx(0.3)


def test_refuses_n_below_one_and_words(table):
    with pytest.raises(InvalidParameterError, match="at least one provider"):
        top_with_others(table, group="provider", by="exposure", summed=[], n=0)
    assert others_label(2110) == "all others (2,110 providers)" and others_label(1) == "all others (1 provider)"
    assert TOP_PROVIDERS == 14


def test_the_ledger_knows_what_its_groups_are():
    from fairrag_core import load_collection

    shoes = load_collection("running-shoes")
    docs = pd.DataFrame({"doc_id": shoes.doc_ids[:3], "exposure": [1.0, 0.5, 0.5]})
    assert exposure_ledger(docs, shoes).attrs["by"] == "provider"
