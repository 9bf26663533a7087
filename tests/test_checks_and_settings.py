"""The shared argument checks, the user-text parsers (one for the CLI and the app) and typed settings."""

import math
from dataclasses import FrozenInstanceError

import numpy as np
import pytest

from fairrag_core import InvalidParameterError, RagConfig, RagSweepConfig, RankingConfig, SweepConfig
from fairrag_core.checks import (
    check_alpha,
    check_non_negative,
    check_open_unit,
    check_positive_int,
    parse_alpha,
    parse_alphas,
    parse_list,
)
from fairrag_core.metrics.utility import UtilityMetric
from fairrag_core.rag.pipeline import PromptOrder
from fairrag_core.rag.sweep import Usefulness
from fairrag_core.settings import SamplingSettings, fields_of, settings_class


@pytest.mark.parametrize("text, value", [("0", 0.0), (" 2.5 ", 2.5), ("inf", math.inf), ("∞", math.inf),
                                         ("Deterministic", math.inf), ("1e3", 1000.0)])
def test_parse_alpha_accepts_numbers_and_the_deterministic_limit(text, value):
    assert parse_alpha(text) == value


@pytest.mark.parametrize("text", ["-1", "nan", "x", "", "-inf"])
def test_parse_alpha_refuses_with_the_fix(text):
    with pytest.raises(InvalidParameterError, match=r"α must be a number ≥ 0 \(or 'inf'"):
        parse_alpha(text)


def test_parse_alphas_keeps_order_and_drops_repeats():
    assert parse_alphas("8, 0;2,8, inf") == (8.0, 0.0, 2.0, math.inf)
    with pytest.raises(InvalidParameterError, match="at least one α"):
        parse_alphas(" , ;")


def test_cli_and_app_read_alpha_the_same_way():
    """The two α parsers used to disagree on 'inf'; now both go through parse_alphas."""
    from fairrag_core.cli.common import alphas_arg
    from fairrag_studio.panels.sweeps import parse_alphas as page_alphas

    assert alphas_arg("0,2,inf") == parse_alphas("0,2,inf")
    assert page_alphas("2, 0, inf") == (0.0, 2.0)  # the page adds the deterministic baseline itself


def test_parse_list():
    assert parse_list(None) == () and parse_list("a, b,,c ") == ("a", "b", "c")


@pytest.mark.parametrize("call, message", [
    (lambda: check_alpha(float("nan")), "alpha is NaN"),
    (lambda: check_alpha(-0.5), "negative"),
    (lambda: check_alpha("2"), "real number"),
    (lambda: check_positive_int(0, "n_samples", hint="rankings"),
     r"n_samples=0; n_samples must be a positive integer \(rankings\)"),
    (lambda: check_positive_int(2.0, "k"), "k must be a positive integer, got 2.0"),
    (lambda: check_positive_int(True, "k"), "got True"),
    (lambda: check_non_negative(float("inf"), "tolerance"), "finite number ≥ 0"),
    (lambda: check_open_unit(1.0, "level", hint="e.g. 0.95"), r"strictly between 0 and 1 \(e.g. 0.95\)"),
])
def test_checks_word_each_mistake_once(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()


def test_numpy_integers_pass_the_integer_checks():
    assert check_positive_int(np.int64(4), "k") == 4


def test_configs_share_the_sampling_settings():
    for cls in (RankingConfig, RagConfig, SweepConfig, RagSweepConfig):
        assert issubclass(cls, SamplingSettings)
    assert RankingConfig(alpha=1).n_samples == 100 and RagConfig(alpha=1).n_samples == 20
    assert SweepConfig().n_samples == 100 and RagSweepConfig().n_samples == 20
    rag = RagConfig(alpha=2.0, k=3, seed=4, candidates=10, metric="f1")
    ranking = RankingConfig(alpha=2.0, **fields_of(rag, SamplingSettings))
    assert (ranking.k, ranking.seed, ranking.candidates, ranking.n_samples) == (3, 4, 10, 20)
    with pytest.raises(TypeError):
        RankingConfig(2.0)  # keyword-only: settings are named where they are given
    with pytest.raises(FrozenInstanceError):
        rag.k = 4


def test_string_options_become_enums_and_unknown_values_are_refused():
    config = RagSweepConfig(metric="f1", usefulness="relevance", prompt_order="retrieval")
    assert config.metric is UtilityMetric.F1 and config.usefulness is Usefulness.RELEVANCE
    assert config.prompt_order is PromptOrder.RETRIEVAL
    with pytest.raises(InvalidParameterError, match="usefulness='qrels' is not one of: utility, relevance"):
        RagSweepConfig(usefulness="qrels")


def test_settings_round_trip_and_refuse_unknown_keys():
    config = RagSweepConfig(alphas=(0.0, math.inf), query_ids=("q1",), oracle=False, metric="rouge1")
    data = config.to_dict()
    assert data["alphas"] == [0.0, "inf"] and data["metric"] == "rouge1" and data["query_ids"] == ["q1"]
    assert settings_class("RagSweepConfig").from_dict(data) == config
    with pytest.raises(InvalidParameterError, match="has no setting"):
        SweepConfig.from_dict({"alphas": [1.0], "colour": "red"})
    with pytest.raises(InvalidParameterError, match="unknown settings type"):
        settings_class("NoSuchConfig")


def test_sampling_settings_refuse_huge_n_and_bad_k_when_made():
    from functools import partial

    for make in (partial(RankingConfig, alpha=2.0), RagSweepConfig, SweepConfig):
        with pytest.raises(InvalidParameterError, match="lower N"):
            make(n_samples=10**9)
        with pytest.raises(InvalidParameterError, match="k"):
            make(k=0)
