"""The app's tables, charts and report sections name metrics by the registry's labels (and the Playground's tiles by
its tile words): a label changed there changes every one of them, and today's words are the registry's."""

import dataclasses

import pandas as pd
import pytest

from fairrag_core.metrics.registry import LEDGER, METRICS, keys
from fairrag_studio.charts.curves import what_if_curve
from fairrag_studio.views.served import _explained
from fairrag_studio.views.what_if import curve_table

CURVE = [{"system": "as served", "label": "as served", "ee_d": 0.5, "ee_d_low": 0.4, "ee_d_high": 0.6, "ee_r": 0.3,
          "ee_r_low": 0.2, "ee_r_high": 0.4, "queries": 3, "ee_d_change": None, "ee_r_change": None},
         {"system": "stochastic", "label": "α = 0", "ee_d": 0.2, "ee_d_low": 0.1, "ee_d_high": 0.3, "ee_r": 0.35,
          "ee_r_low": 0.3, "ee_r_high": 0.4, "queries": 3, "ee_d_change": -0.3, "ee_d_change_low": -0.4,
          "ee_d_change_high": -0.2, "ee_d_p": 0.01, "ee_r_change": None}]


@pytest.fixture()
def relabelled(monkeypatch):
    for key in ("ee_d", "ee_r", "ear", "retrieval_share"):
        monkeypatch.setitem(METRICS, key, dataclasses.replace(METRICS[key], label=f"{METRICS[key].label}*"))


def test_todays_words_come_from_the_registry():
    assert curve_table({"curve": CURVE}).columns.tolist() == [
        "system", "EE-D", "EE-D change", "EE-R", "EE-R change", "queries"]
    assert [t.name for t in what_if_curve(pd.DataFrame(CURVE)).data][::2] == [
        "EE-D sampled at α (lower = fairer)", "EE-R sampled at α (higher = more exposure on useful documents)"]
    assert _explained(False) == ["EE-D", "EE-R"] and _explained(True) == ["EE-D", "EE-R", "EAR", "EAE-D"]
    assert _explained(True, keys(LEDGER)) == [
        "EE-D", "EE-R", "EAR", "EAE-D", "retrieval share", "attributed share", "target share",
        "gap (retrieval − target)", "gap (attributed − target)"]
    assert _explained(False, keys(LEDGER))[2:] == ["retrieval share", "target share", "gap (retrieval − target)"]
    assert [METRICS[k].on_tile for k in ("eu", "eu_normalised", "ear", "eae_d", "eae_d_per_cited",
                                         "providers_reached")] == [
        "EU (utility)", "EU normalised", "EAR", "EAE-D", "EAE-D/cited", "Providers reached"]


def test_a_label_changed_in_the_registry_changes_the_apps_words(relabelled):
    assert curve_table({"curve": CURVE}).columns.tolist()[1:5] == ["EE-D*", "EE-D* change", "EE-R*", "EE-R* change"]
    assert [t.name.split(" ")[0] for t in what_if_curve(pd.DataFrame(CURVE)).data] == ["EE-D*"] * 2 + ["EE-R*"] * 2
    assert _explained(True, keys(LEDGER))[:5] == ["EE-D*", "EE-R*", "EAR*", "EAE-D", "retrieval share*"]
