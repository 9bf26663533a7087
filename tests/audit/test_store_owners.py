"""Runs with an owner (issue 19): the app saves a browser's runs under its key, lists and reopens only those; the
CLI saves without one and lists everything. (A store made before the column existed: test_store.py.)"""

import pandas as pd
import pytest

from fairrag_core import InvalidParameterError, SweepConfig
from fairrag_core.audit.store import RunStore
from fairrag_core.record import RunKind, RunRecord, SweepRun

ALICE, BOB = "a" * 48, "b" * 48


def _run(tag: str) -> SweepRun:
    record = RunRecord(kind=RunKind.EXPOSURE_SWEEP, collection=tag, retriever="bm25",
                       config=SweepConfig(alphas=(0.0, 2.0), seed=1), seed=1)
    return SweepRun(record=record, table=pd.DataFrame({"query_id": ["q1"], "alpha": [2.0], "ee_d": [0.25]}),
                    documents=pd.DataFrame())


def test_each_owner_lists_and_opens_only_its_runs_and_the_cli_sees_all(tmp_path):
    store = RunStore(tmp_path / "runs.duckdb")
    mine, theirs, cli = (store.save(_run("alice"), owner=ALICE), store.save(_run("bob"), owner=BOB),
                         store.save(_run("cli")))
    assert store.list(owner=ALICE)["run_id"].tolist() == [mine]
    assert store.list(owner=BOB)["run_id"].tolist() == [theirs]
    assert set(store.list()["run_id"]) == {mine, theirs, cli}  # the CLI's `runs list`: the whole store
    assert list(store.list(owner=ALICE).columns) == list(store.list().columns)  # no owner column to print
    assert (store.owner_of(mine), store.owner_of(theirs), store.owner_of(cli)) == (ALICE, BOB, None)
    assert store.load(mine, owner=ALICE).record.collection == "alice"
    for other in (theirs, cli):
        with pytest.raises(InvalidParameterError, match="was not saved from this browser"):
            store.load(other, owner=ALICE)
        with pytest.raises(InvalidParameterError, match="was not saved from this browser"):
            store.load_record(other, owner=ALICE)
    with pytest.raises(InvalidParameterError, match="was not saved from this browser"):
        store.delete(theirs, owner=ALICE)
    assert theirs in store.list()["run_id"].tolist()  # refused: still there
    store.delete(mine, owner=ALICE)
    assert store.list(owner=ALICE).empty and store.load(theirs).record.collection == "bob"
