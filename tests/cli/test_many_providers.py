"""``rank`` and ``audit-log`` at 2,000 providers (issue 30): the text prints the top TOP_PROVIDERS and one line for
all others (every one with ``--all-providers``); the JSON lists every provider, and names the ones the text shows."""

from __future__ import annotations

import io
import json
import re

import pytest
from many_providers import PROVIDERS, QUERY, write_collection, write_log

from fairrag_core.audit.ledger import TOP_PROVIDERS
from fairrag_core.cli import main


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_collection(tmp_path_factory.mktemp("many") / "solar")


def run(argv):
    out = io.StringIO()
    assert main(argv, out=out) == 0
    return out.getvalue()


def section(text: str, start: str, end: str) -> list[str]:
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    last = next(i for i in range(first + 1, len(lines)) if lines[i].startswith(end))
    return lines[first:last]


def rank_argv(folder):
    return ["rank", "--collection", str(folder), "--query", QUERY, "--candidates", "all", "--alpha", "1",
            "--samples", "30", "--seed", "1"]


def test_rank_text_prints_the_top_and_all_others(folder):
    text = run(rank_argv(folder))
    lines = section(text, "Exposure by provider", "Providers reached")
    assert len(lines) <= TOP_PROVIDERS + 5  # title, rule, header, 14 providers, all others, blank
    rule = lines[1]
    assert rule == (f"  Showing the top {TOP_PROVIDERS} of {PROVIDERS:,} providers by sampled exposure, the other "
                    f"{PROVIDERS - TOP_PROVIDERS:,} summed as “all others” (--all-providers prints every one).")
    others = [line for line in lines if line.startswith("  all others (1,986 providers): ")]
    assert len(others) == 1 and "documents, sampled" in others[0] and "of the sampled exposure" in others[0]
    rows = [line for line in lines if re.match(r"  (Maintainer|Debian Solar)", line)]
    assert len(rows) == TOP_PROVIDERS


def test_rank_all_providers_and_json(folder):
    text = run([*rank_argv(folder), "--all-providers"])
    lines = section(text, "Exposure by provider", "Providers reached")
    assert not any("all others" in line or "Showing" in line for line in lines)
    assert sum(1 for line in lines if re.match(r"  (Maintainer|Debian Solar)", line)) == PROVIDERS
    payload = json.loads(run([*rank_argv(folder), "--json"]))
    assert payload["providers_total"] == PROVIDERS and len(payload["providers"]) == PROVIDERS  # every one, always
    assert len(payload["providers_shown"]) == TOP_PROVIDERS
    ranked = sorted(payload["providers"], key=lambda p: (-p["exposure"], p["provider"]))
    assert set(payload["providers_shown"]) == {p["provider"] for p in ranked[:TOP_PROVIDERS]}
    assert payload["providers_rule"].startswith(f"the top {TOP_PROVIDERS} of 2,000 providers")
    every = json.loads(run([*rank_argv(folder), "--json", "--all-providers"]))
    assert len(every["providers_shown"]) == PROVIDERS and every["providers_rule"] == "all 2,000 providers"


def test_rank_on_a_demo_collection_prints_every_provider_as_before():
    text = run(["rank", "--collection", "running-shoes", "--query", "best shoes for a first marathon",
                "--candidates", "all", "--alpha", "0.5", "--samples", "50", "--seed", "3"])
    lines = section(text, "Exposure by provider", "Providers reached")
    assert lines[1].startswith("  provider ") and len(lines) == 14 + 3  # title, header, 14 providers, blank
    assert "all others" not in text and "--all-providers" not in text


def test_audit_log_ledger_text_is_bounded_and_json_complete(folder, tmp_path):
    log = write_log(tmp_path / "log.jsonl")
    argv = ["audit-log", str(log), "--collection", str(folder), "--no-store"]
    text = run(argv)
    lines = section(text, "Exposure ledger by provider", "Exposure ledger by region")
    assert lines[1].startswith(f"Showing the top {TOP_PROVIDERS} of 2,000 providers by retrieval exposure")
    assert lines[-2].startswith("all others (1,986 providers): retrieval share ")
    assert len(lines) == TOP_PROVIDERS + 5  # title, rule, header, rows, all others, blank
    region = section(text, "Exposure ledger by region", "Per query")
    assert region[-2].startswith("all others (26 region groups): ")
    payload = json.loads(run([*argv, "--json"]))
    assert len(payload["ledgers"]["provider"]) == PROVIDERS and len(payload["ledgers"]["region"]) == 40
    assert len(payload["ledgers_shown"]["provider"]) == TOP_PROVIDERS
    every = section(run([*argv, "--all-providers"]), "Exposure ledger by provider", "Exposure ledger by region")
    assert len(every) == PROVIDERS + 3 and not any(line.startswith("all others") for line in every)
