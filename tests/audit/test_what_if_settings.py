"""The what-if takes a settings object (issue 28, Must have 2): :class:`WhatIfSettings` is checked when made, its α
grid and N are the options ``audit-log`` declares for them, and the keyword form gives the same replay."""

import math

import pytest

from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.audit.what_if import WhatIfSettings, what_if_sampling
from fairrag_core.data import Collection, Document
from fairrag_core.data.rag_log import LogEntry, RagLog
from fairrag_core.errors import InvalidParameterError
from fairrag_core.options import options_of


@pytest.fixture(scope="module")
def served():
    docs = Collection("six", tuple(Document(d, "", provider="P" if d in "abd" else "Q") for d in "abcdef"),
                      qrels={"q1": {"a": 1, "b": 1, "c": 0}})
    rows = [("q1", "ab", (3.0, 2.0)), ("q1", "ac", (3.0, 1.0)), ("q2", "fe", (4.0, 2.0)), ("q2", "fd", (4.0, 1.0))]
    log = RagLog("log", tuple(LogEntry(i, q, tuple(r), scores=s) for i, (q, r, s) in enumerate(rows, start=1)))
    return log, docs


def test_the_settings_form_and_the_keyword_form_replay_the_same(served):
    log, docs = served
    settings = WhatIfSettings(alphas=(2, 0, math.inf), n_samples=30, seed=4, n_boot=100, tolerance=0.1)
    by_settings = what_if_sampling(log, docs, settings)
    by_keywords = what_if_sampling(log, docs, alphas=(2, 0, math.inf), n_samples=30, seed=4, n_boot=100,
                                   tolerance=0.1)
    assert by_settings.alphas == (0.0, 2.0, math.inf) and by_settings.n_samples == 30 and by_settings.seed == 4
    assert by_settings.curve.equals(by_keywords.curve) and by_settings.shares.equals(by_keywords.shares)
    # keywords replace the fields of the settings given
    assert what_if_sampling(log, docs, settings, n_samples=20, alphas=(0,)).n_samples == 20


def test_settings_are_checked_when_made_and_round_trip():
    assert WhatIfSettings(alphas=(8, 0, 8, math.inf), tolerance=0).alphas == (0.0, 8.0, math.inf)
    with pytest.raises(InvalidParameterError, match="give at least one α"):
        WhatIfSettings(alphas=())
    with pytest.raises(InvalidParameterError, match="n_samples"):
        WhatIfSettings(n_samples=0)
    with pytest.raises(InvalidParameterError, match="tolerance"):
        WhatIfSettings(tolerance=-0.1)
    with pytest.raises(InvalidParameterError, match="level"):
        WhatIfSettings(level=1.5)
    settings = WhatIfSettings(alphas=(0, math.inf), n_samples=7, level=0.9, seed=3)
    assert settings.to_dict()["alphas"] == [0.0, "inf"]
    assert WhatIfSettings.from_dict(settings.to_dict()) == settings


def test_an_unknown_keyword_names_the_settings(served):
    log, docs = served
    with pytest.raises(InvalidParameterError, match=r"no setting\(s\) \['samples'\]; pass WhatIfSettings"):
        what_if_sampling(log, docs, samples=10)


def test_the_grid_and_n_are_the_options_audit_log_declares():
    """One declaration: the flag, help and parser of the α grid and N are the same Option for the log audit's
    settings (which the CLI reads) and the what-if's."""
    audit, what_if = options_of(LogAuditConfig), options_of(WhatIfSettings)
    assert what_if["alphas"] is audit["what_if_alphas"] and what_if["alphas"].flags == ("--what-if-alphas",)
    assert what_if["n_samples"] is audit["what_if_samples"]
