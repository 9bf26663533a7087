"""Core text outputs name metrics by the registry's labels: a label changed there changes every one of them."""

import dataclasses
import io

import pytest

from fairrag_core.cli import main
from fairrag_core.data.demo import assets_dir
from fairrag_core.metrics.registry import METRICS

DEMO_TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"


@pytest.fixture()
def relabelled(monkeypatch):
    for key in ("ee_d", "ee_r"):
        monkeypatch.setitem(METRICS, key, dataclasses.replace(METRICS[key], label=f"{METRICS[key].label}*"))


def run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_rank_and_the_what_if_read_their_labels_from_the_registry(relabelled):
    code, text = run(["rank", "--collection", "running-shoes", "--query", "best shoes for a first marathon",
                      "--alpha", "2", "--samples", "20", "--seed", "1"])
    assert code == 0
    assert "\nEE-D* (disparity, lower is fairer): " in text and "\nEE-R* (exposure on useful docs):    " in text
    code, text = run(["audit-log", str(DEMO_TRACES), "--collection", "running-shoes", "--seed", "3", "--no-store",
                      "--boot", "100", "--what-if-alphas", "0,inf", "--what-if-samples", "20"])
    assert code == 0
    header = next(line for line in text.splitlines() if line.strip().startswith("system "))
    assert header.split()[1:5] == ["EE-D*", "interval", "EE-R*", "interval"]
