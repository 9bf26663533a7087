"""The issue's crash story end to end through the CLI: ``python -m fairrag_core sweep`` is SIGKILLed mid-run (a real
subprocess), the run store lists nothing of it, and the same command run again finishes from the answers the killed
process had cached, saves exactly one run, and gives the same table as an uninterrupted run.

Stand-in models (tests/fakes.py) slowed to 50 ms per prompt, so the kill lands midway; marked slow (real processes,
about 20 s on 2 busy cores)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from fairrag_core.audit.store import RunStore
from fairrag_core.data.disk_cache import DiskCache

ROOT = Path(__file__).resolve().parents[2]

_SWEEP_CLI = """
import sys
sys.path.insert(0, sys.argv[1])
from fakes import SlowFirstDocumentModel, SubstringAttributor
from fairrag_core.cli import main
from fairrag_core.models import catalog
from fairrag_core.rag import attribution

model = SlowFirstDocumentModel("fake-gen")  # slow enough to be killed midway
catalog.load_language_model = lambda name, device=None: model
attribution.load_attributor = lambda name=None, device=None: SubstringAttributor()
code = main(["sweep", "--collection", "running-shoes", "--queries", "rs-q01,rs-q02,rs-q03,rs-q04",
             "--alphas", "0,2", "--samples", "10", "-k", "3", "--candidates", "15", "--labels", "relevance",
             "--seed", "11", "--json"])
print("PROMPTS", model.prompts_seen, file=sys.stderr, flush=True)
sys.exit(code)
"""


def _argv() -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(_SWEEP_CLI), str(ROOT / "tests")]


def _env(tmp_path: Path, cache: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "FAIRRAG_CACHE_DB": str(tmp_path / cache),
            "FAIRRAG_RUNS": str(tmp_path / "runs.duckdb"), "HF_HUB_OFFLINE": "1"}


def _finish(env: dict[str, str]) -> tuple[dict, int]:
    """Run the sweep to the end: its JSON output and how many prompts the generator saw."""
    done = subprocess.run(_argv(), capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    prompts = int(next(line for line in done.stderr.splitlines() if line.startswith("PROMPTS")).split()[1])
    return json.loads(done.stdout), prompts


def _table(payload: dict) -> pd.DataFrame:
    keys = ["query_id", "system", "alpha"]
    return pd.DataFrame(payload["rows"]).sort_values(keys).reset_index(drop=True)


@pytest.mark.slow
def test_a_sigkilled_cli_sweep_lists_nothing_and_resumes_from_its_cache(tmp_path):
    env = _env(tmp_path, "cache.sqlite")
    killed = subprocess.Popen(_argv(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in killed.stderr:  # the CLI prints "  done/total (query, α) runs" as it goes
            parts = line.split()
            if len(parts) >= 2 and parts[1:3] == ["(query,", "α)"] and int(parts[0].split("/")[0]) >= 3:
                break
        else:
            pytest.fail("the sweep ended before it could be killed")
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=60)
    finally:
        if killed.poll() is None:
            killed.kill()
        killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL

    store = RunStore(tmp_path / "runs.duckdb", timeout=30)
    assert store.list().empty  # nothing of the killed run is listed
    kept = DiskCache(tmp_path / "cache.sqlite").stats().entries.get("answer", 0)
    assert kept > 0  # but its finished answers are on disk

    resumed, resumed_prompts = _finish(env)
    listed = store.list()
    assert listed["run_id"].tolist() == [resumed["run_id"]]  # exactly one run, the finished one
    clean, clean_prompts = _finish(_env(tmp_path, "fresh-cache.sqlite"))  # the same command, uninterrupted
    assert resumed_prompts == clean_prompts - kept  # only the answers the killed process had not made
    pd.testing.assert_frame_equal(_table(resumed), _table(clean))
    stored = store.load(resumed["run_id"]).table
    assert len(stored) == len(resumed["rows"])
