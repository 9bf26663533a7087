"""Stored runs per browser (issue 19, item 10): an app served to a network lists, reopens and deletes only the runs
saved from this browser; an app on this machine only shares the whole store with the CLI and says so."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from fairrag_core import InvalidParameterError, SweepConfig
from fairrag_core.audit.store import RunStore
from fairrag_core.record import RunKind, RunRecord, SweepRun
from fairrag_studio.services import owners
from fairrag_studio.services.run_scope import SHARED_ENV, BrowserRuns, shared_store

APP = str(Path(__file__).resolve().parents[2] / "app.py")
AUDIT = "app_pages/audit.py"
SECRET = bytes(range(32))
ALICE, BOB = owners.sign("a" * 32, SECRET), owners.sign("b" * 32, SECRET)


@pytest.fixture(autouse=True)
def _stores(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_JOBS", raising=False)
    monkeypatch.delenv(SHARED_ENV, raising=False)
    owners.secret_path().write_bytes(SECRET)
    resources.run_store.clear()
    yield
    resources.run_store.clear()


@pytest.fixture()
def three_runs(tmp_path):
    """Alice's and Bob's runs saved by the app, and one saved by the CLI (no owner)."""
    store = RunStore(tmp_path / "runs.duckdb")

    def run(tag):
        record = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection="running-shoes", retriever="bm25",
                           config=SweepConfig(alphas=(0.0, 2.0), seed=1), seed=1)
        return SweepRun(record=record, table=pd.DataFrame({"query_id": ["rs-q01"], "alpha": [2.0], "ee_d": [0.25]}),
                        documents=pd.DataFrame())

    return {"alice": store.save(run("a"), label="Alice's audit", owner=ALICE),
            "bob": store.save(run("b"), label="Bob's uploaded log", owner=BOB),
            "cli": store.save(run("c"), label="a CLI sweep")}


@pytest.fixture()
def address():
    """Set Streamlit's server.address for the test (as `make app ADDRESS=…` does), then put it back."""
    before = st_config.get_option("server.address")
    yield lambda value: st_config.set_option("server.address", value)
    st_config.set_option("server.address", before)


def stored_tab(owner: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["owner"] = owner
    at.run()
    at.switch_page(AUDIT).run()
    assert not at.exception
    return at


def listed(at: AppTest) -> list[str]:
    """The run ids the Stored runs tab offers to open ([] when it says there are none)."""
    if any(i.value.startswith("No stored runs yet") for i in at.info):
        return []
    return [option.split(" — ")[0] for option in at.multiselect(key="stored_pick").options]


def test_a_browser_on_a_network_served_app_sees_only_its_own_runs(three_runs, monkeypatch):
    monkeypatch.setenv(SHARED_ENV, "0")
    at = stored_tab(ALICE)
    assert listed(at) == [three_runs["alice"]]
    shown = [d.value for d in at.dataframe if "run_id" in d.value.columns]
    assert shown and shown[0]["run_id"].tolist() == [three_runs["alice"]]
    assert any(c.value.startswith("Only the runs saved from this browser are listed") for c in at.caption)
    other = stored_tab(BOB)
    assert listed(other) == [three_runs["bob"]]


def test_an_app_on_this_machine_only_shares_the_store_and_says_so(three_runs, address):
    address("localhost")  # make app's default
    at = stored_tab(ALICE)
    assert set(listed(at)) == set(three_runs.values())
    caption = [c.value for c in at.caption if c.value.startswith("This is the whole run store")]
    assert caption and "shared with the command line" in caption[0] and "every browser" in caption[0]


def test_the_address_decides_unless_the_variable_does(three_runs, address, monkeypatch):
    address("0.0.0.0")  # make app ADDRESS=0.0.0.0: a classroom network
    assert listed(stored_tab(ALICE)) == [three_runs["alice"]]
    monkeypatch.setenv(SHARED_ENV, "1")
    assert len(listed(stored_tab(ALICE))) == 3
    assert [shared_store(a) for a in ("localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0", "", None)] == \
        [True, True, True, True, True, True, True]
    monkeypatch.setenv(SHARED_ENV, "0")
    assert not shared_store("localhost")
    monkeypatch.delenv(SHARED_ENV)
    assert [shared_store(a) for a in ("localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0", "", None, "10.0.0.5")] \
        == [True, True, True, True, False, False, False, False]
    monkeypatch.setenv(SHARED_ENV, "maybe")
    with pytest.raises(InvalidParameterError, match=r"FAIRRAG_SHARED_STORE is 'maybe'; set it to 1 .* or 0"):
        shared_store("localhost")


def test_another_browsers_run_is_refused_when_reopened_or_deleted(three_runs, tmp_path):
    mine = BrowserRuns(RunStore(tmp_path / "runs.duckdb"), ALICE, shared=False)
    assert mine.load(three_runs["alice"]).run_id == three_runs["alice"]
    for other in (three_runs["bob"], three_runs["cli"]):
        with pytest.raises(InvalidParameterError, match="was not saved from this browser"):
            mine.load(other)
        with pytest.raises(InvalidParameterError, match="was not saved from this browser"):
            mine.delete(other)
    assert len(RunStore(tmp_path / "runs.duckdb").list()) == 3


def test_runs_saved_from_the_app_carry_the_browsers_key(monkeypatch, tmp_path):
    monkeypatch.setenv(SHARED_ENV, "0")
    at = stored_tab(ALICE)
    at.text_input(key="audit_alphas").set_value("2").run()
    at.button(key="audit_run").click().run()
    assert not at.exception
    store = RunStore(tmp_path / "runs.duckdb")
    (saved,) = store.list()["run_id"]
    assert store.owner_of(saved) == ALICE
    assert listed(at) == [saved]
    assert listed(stored_tab(BOB)) == []


def test_the_app_reopens_the_sweeps_and_the_rank_the_cli_stored(monkeypatch, tmp_path):
    """Issue 30: an exposure sweep and a rank saved by the CLI open in the app's Stored runs (one at a time, and two
    sweeps side by side), with the reproduce command the CLI printed."""
    import io
    import json

    from fairrag_core.cli import main

    def cli(*argv: str) -> dict:
        out = io.StringIO()
        assert main([*argv, "--json"], out=out) == 0
        return json.loads(out.getvalue())

    store = str(tmp_path / "runs.duckdb")
    sweeps = [cli("exposure-sweep", "--collection", "running-shoes", "--alphas", alphas, "--samples", "6", "--seed",
                  "3", "--queries", "rs-q01,rs-q02", "--store", store) for alphas in ("0,2", "2,8")]
    ranked = cli("rank", "--collection", "running-shoes", "--query", "best shoes for a first marathon", "--samples",
                 "6", "--seed", "3", "--store", store)
    monkeypatch.setenv(SHARED_ENV, "1")
    at = stored_tab(ALICE)
    assert set(listed(at)) == {sweeps[0]["run_id"], sweeps[1]["run_id"], ranked["run_id"]}
    for payload in (sweeps[0], ranked):
        at.multiselect(key="stored_pick").set_value([payload["run_id"]]).run()
        assert not at.exception
        assert payload["command"] in [code.value for code in at.code]
    at.multiselect(key="stored_pick").set_value([s["run_id"] for s in sweeps]).run()
    assert not at.exception
