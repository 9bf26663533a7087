"""A store written by every command that stores (and by the app's saves) reads back in a fresh process that imported
nothing first (issue 28): ``runs``, ``runs list``, ``runs show ID`` and ``RunStore.list()``.

Settings types register when their module is imported; before issue 28 a fresh ``runs list`` stopped with
``unknown settings type 'LogAuditConfig'; known: ['SamplingSettings']``.
"""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fairrag_core import load_collection
from fairrag_core.audit.store import RunStore
from fairrag_core.cli import main
from fairrag_core.ranking import SweepConfig, exposure_sweep
from fairrag_core.record import RunKind
from fairrag_core.retrieval import BM25Retriever
from fairrag_core.settings import Settings, _settings_modules, settings_class

ROOT = Path(__file__).resolve().parents[2]
DEMO_LOG = ROOT / "assets" / "logs" / "running-shoes.jsonl"
TRACES = ROOT / "assets" / "logs" / "running-shoes.otlp.jsonl"


def _cli(argv: list[str]) -> dict:
    out = io.StringIO()
    assert main([*argv, "--json"], out=out) == 0
    return json.loads(out.getvalue())


def _fresh(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    """A new interpreter: nothing of the package is imported before the command runs."""
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "fairrag_core", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """One store holding a run of each kind that is stored: audit-log, compare-runs (a stored run against a trace
    export), an Audit-page sweep, an exposure sweep saved through the API, two saved by the CLI and a rank saved
    with --store."""
    path = tmp_path_factory.mktemp("store") / "runs.duckdb"
    ids = {}
    ids["audit-log"] = _cli(["audit-log", str(DEMO_LOG), "--collection", "running-shoes", "--seed", "1",
                             "--boot", "50", "--store", str(path)])["run_id"]
    ids["compare-runs"] = _cli(["compare-runs", f"run:{ids['audit-log']}", str(TRACES), "--collection",
                                "running-shoes", "--seed", "2", "--n-boot", "50", "--n-permutations", "50",
                                "--store", str(path)])["run_id"]
    shoes = load_collection("running-shoes")
    sweep = exposure_sweep(shoes, BM25Retriever(shoes.texts),
                           SweepConfig(alphas=(0.0, 2.0), n_samples=5, seed=3, query_ids=("rs-q01",)))
    with RunStore(str(path)) as opened:
        ids["audit"] = opened.save(sweep.as_kind(RunKind.AUDIT), label="as the Audit page saves it")
        ids["exposure-sweep"] = opened.save(sweep, label="saved through the API")
    for name, alphas in (("cli-sweep", "0,2"), ("cli-sweep-2", "2,4")):
        ids[name] = _cli(["exposure-sweep", "--collection", "running-shoes", "--alphas", alphas, "--samples", "8",
                          "--seed", "5", "--queries", "rs-q01,rs-q02", "--store", str(path)])["run_id"]
    ids["rank"] = _cli(["rank", "--collection", "running-shoes", "--query", "best shoes for a first marathon",
                        "--samples", "8", "--seed", "6", "--store", str(path)])["run_id"]
    return path, ids


def test_runs_list_and_show_read_every_kind_in_a_fresh_process(store):
    path, ids = store
    for words in (["runs", "--store", str(path)], ["runs", "list", "--store", str(path)]):
        done = _fresh(*words)
        assert done.returncode == 0, done.stderr
        assert all(run_id in done.stdout for run_id in ids.values())
    for kind, run_id in ids.items():
        done = _fresh("runs", "show", run_id, "--store", str(path), "--json")
        assert done.returncode == 0, f"{kind}: {done.stderr}"
        shown = json.loads(done.stdout)
        assert shown["command"].startswith("python -m fairrag_core"), kind


def test_the_python_store_lists_every_kind_in_a_fresh_process(store):
    path, ids = store
    code = ("from fairrag_core.audit.store import RunStore\n"
            f"with RunStore({str(path)!r}) as s:\n"
            "    runs = s.list()\n"
            "    print(sorted(runs['run_id']))\n"
            "    print(sorted(type(s.load_record(r).config).__name__ for r in runs['run_id']))")
    done = _fresh(code=code)
    assert done.returncode == 0, done.stderr
    listed, types = done.stdout.splitlines()
    assert listed == str(sorted(ids.values()))
    assert types == str(sorted(["LogAuditConfig", "ComparisonConfig", "SweepConfig", "SweepConfig", "SweepConfig",
                                "SweepConfig", "RankingConfig"]))


def test_a_stored_sweep_and_rank_reopen_with_their_provenance_in_a_fresh_process(store):
    """Issue 30: a sweep or rank stored by the CLI reopens in a new process with the package version and commit
    that made it and its inputs' sha256, and its reproduce command is the one the command printed."""
    from fairrag_core.data.demo import demo_folder
    from fairrag_core.data.identity import collection_sha256
    from fairrag_core.record import software

    path, ids = store
    for name in ("cli-sweep", "rank", "exposure-sweep"):
        done = _fresh("runs", "show", ids[name], "--store", str(path), "--json")
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        assert shown["config"]["software"] == software(), name
        inputs = {item["role"]: item["sha256"] for item in shown["config"]["extra"]["inputs"]}
        assert inputs["collection"] == collection_sha256(demo_folder("running-shoes")), name
        assert set(inputs) == {"collection", "queries", "qrels"}, name
    shown = json.loads(_fresh("runs", "show", ids["rank"], "--store", str(path), "--json").stdout)
    assert shown["command"] == ("python -m fairrag_core rank --collection running-shoes --retriever bm25 --query "
                                "'best shoes for a first marathon' --samples 8 --seed 6 --alpha 2")


def test_two_stored_sweeps_compare_and_export_in_a_fresh_process(store, tmp_path):
    import pandas as pd

    from fairrag_core.data.export import read_header

    path, ids = store
    first, second = ids["cli-sweep"], ids["cli-sweep-2"]
    done = _fresh("runs", "compare", first, second, "--store", str(path), "--json")
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    assert table["index"] == [0.0, 2.0, 4.0]
    at_two = dict(zip(map(tuple, table["columns"]), table["data"][1], strict=True))
    assert at_two[f"{second} − {first}", "ee_d"] == pytest.approx(at_two[second, "ee_d"] - at_two[first, "ee_d"])
    assert at_two[f"{second} − {first}", "ee_d"] != 0  # each α draws from its own stream (seed, α's index)
    exported = tmp_path / "sweep.csv"
    done = _fresh("runs", "export", first, "--store", str(path), "--output", str(exported))
    assert done.returncode == 0, done.stderr
    header = read_header(exported)
    assert header["kind"] == "exposure-sweep" and header["seed"] == 5 and header["settings"]["alphas"] == [0.0, 2.0]
    assert len(pd.read_csv(exported, comment="#")) == 4


def test_every_settings_class_is_found_from_its_definition():
    found = _settings_modules()
    assert {"SamplingSettings", "LogAuditConfig", "ComparisonConfig", "SweepConfig", "RagSweepConfig",
            "RankingConfig", "CitationPolicy"} <= set(found)
    for name in found:
        cls = settings_class(name)
        assert issubclass(cls, Settings) and cls.__name__ == name and cls.__module__ == found[name]


def test_an_unknown_settings_type_names_the_known_ones():
    with pytest.raises(Exception, match=r"unknown settings type 'NoSuchConfig'; known: \[.*'LogAuditConfig'"):
        settings_class("NoSuchConfig")
