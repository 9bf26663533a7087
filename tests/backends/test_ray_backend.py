"""The Ray backend gives the local backend's tables for the same seed (issue 14, item 1: "results are identical").

One local Ray runtime (2 CPUs, no dashboard) serves the whole module; every workload runs once here and once on
two Ray actors, and the frames must be equal: the exposure sweep, a RAG sweep and utility labelling with the
stand-in models (built inside the actors from :class:`fakes.FakeModels`), FAIR-QR with the corpus-keyword refiner,
the judge of ``audit-log``, and ``exposure-sweep --backend ray`` on the command line. Each comparison starts two
actors (a few seconds each on 2 cores); the fast suite keeps the two sweeps and the command, the rest are ``slow``.

Fault tolerance on the same runtime: a worker process that dies in the middle of a task is restarted and the task
retried; an actor that cannot restart hands its task to the other one; a worker that cannot start is a
``BackendError``. Without a runtime: the actor plan (CPU and GPU actors), the package Ray ships to a cluster, and
the messages Ray failures become. Addresses and a real two-node cluster: ``test_ray_cluster.py``.
"""

import io
import json
import os
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from fakes import FakeModels, FirstDocumentModel, SubstringAttributor

from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.backends import workloads as wl
from fairrag_core.backends.ray_backend import (
    SHIPPED_ASSETS,
    RayBackend,
    _backend_error,
    actor_plan,
    package_runtime_env,
)
from fairrag_core.cli import main
from fairrag_core.data import load_collection, load_rag_log
from fairrag_core.data.disk_cache import DiskCache
from fairrag_core.errors import BackendError
from fairrag_core.fairqr import build_refiner
from fairrag_core.fairqr.evaluate import FairQREvalConfig, evaluate_fair_qr
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.labels import UtilityLabelConfig, label_utility
from fairrag_core.rag.sweep import RagSweepConfig, Usefulness, rag_sweep
from fairrag_core.ranking.sweep import SweepConfig, exposure_sweep
from fairrag_core.retrieval import BM25Retriever

ray = pytest.importorskip("ray")
TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


@pytest.fixture(scope="module")
def backend():
    """A local Ray runtime with 2 CPUs for the module; its workers import ``fakes`` and the package."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT), *([old] if old else [])])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield RayBackend()  # joins the runtime above and leaves it running
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def test_exposure_sweep_on_ray_equals_local(backend, shoes, shoes_bm25):
    config = SweepConfig(alphas=(0.0, 1.0, 2.0, 8.0, float("inf")), n_samples=40, k=5, seed=11)
    local = exposure_sweep(shoes, shoes_bm25, config)
    seen = []
    remote = wl.exposure_sweep_on(backend, shoes, shoes_bm25, config, progress=lambda d, t: seen.append((d, t)))
    pd.testing.assert_frame_equal(remote.table, local.table)
    pd.testing.assert_frame_equal(remote.documents, local.documents)
    assert remote.record == local.record and seen[-1] == (5, 5)


def test_rag_sweep_on_ray_equals_local_and_fills_the_disk_cache(backend, shoes, shoes_bm25, tmp_path):
    config = RagSweepConfig(alphas=(0.0, 2.0), n_samples=8, k=3, seed=5, usefulness=Usefulness.RELEVANCE,
                            query_ids=("rs-q01", "rs-q02", "rs-q03"))
    local = rag_sweep(shoes, shoes_bm25, Generator(FirstDocumentModel()), SubstringAttributor(), config)
    cache = tmp_path / "cache.sqlite"
    spec = wl.RagSweepSpec(wl.InputsSpec("running-shoes"), FakeModels(), config, cache_db=str(cache))
    remote = wl.rag_sweep_on(backend, spec)
    pd.testing.assert_frame_equal(remote.table, local.table)
    pd.testing.assert_frame_equal(remote.documents, local.documents)
    assert len(remote.table) == 9 and remote.record.complete and remote.record.generator_calls > 0
    stored = DiskCache(cache).stats().entries
    assert stored.get("answer", 0) > 0 and stored.get("nli", 0) > 0  # the actors wrote to the driver's cache file
    assert os.environ["FAIRRAG_CACHE_DB"] == "off"  # building the sweep on the driver left its setting alone


@pytest.mark.slow  # ~7 s each for the actors' start; the fast suite keeps the sweeps' identity
def test_label_utility_on_ray_equals_local(backend, shoes, shoes_bm25):
    config = UtilityLabelConfig(depth=4, query_ids=("rs-q01", "rs-q04"))
    local = label_utility(shoes, Generator(FirstDocumentModel()), shoes_bm25, config)
    remote = wl.label_utility_on(backend, wl.LabelSpec(wl.InputsSpec("running-shoes"), FakeModels(), config))
    pd.testing.assert_frame_equal(remote, local)


@pytest.mark.slow  # ~7 s each for the actors' start; the fast suite keeps the sweeps' identity
def test_fair_qr_eval_on_ray_equals_local(backend):
    people = load_collection("people")
    bm25 = BM25Retriever(people.texts)
    ids = tuple(q.query_id for q in people.queries if q.query_id in people.qrels)[:3]
    config = FairQREvalConfig(categories=("gender", "region"), query_ids=ids, max_iterations=3)
    local, local_traces = evaluate_fair_qr(people, bm25, lambda c: build_refiner("keywords", people, c, bm25), config)
    remote, traces = wl.fair_qr_eval_on(backend, wl.FairQRSpec("people", "keywords", config))
    pd.testing.assert_frame_equal(remote, local)
    assert remote.attrs == local.attrs
    assert [t.to_json() for t in traces] == [t.to_json() for t in local_traces]


@pytest.mark.slow  # ~7 s each for the actors' start; the fast suite keeps the sweeps' identity
def test_audit_log_judge_on_ray_equals_local(backend, shoes):
    log = load_rag_log(ROOT / "assets" / "logs" / "running-shoes.jsonl", collection=shoes)
    config = LogAuditConfig(attribution="judge", seed=3, n_boot=100)
    local = audit_rag_log(log, shoes, config, attributor=SubstringAttributor())
    remote = wl.audit_rag_log_on(backend, log, shoes, config, wl.JudgeSpec(FakeModels()), SubstringAttributor.name)
    pd.testing.assert_frame_equal(remote.table, local.table)
    assert remote.record.attributor == local.record.attributor


def test_exposure_sweep_command_with_backend_ray(backend):
    def run(*extra):
        out = io.StringIO()
        code = main(["exposure-sweep", "--alphas", "0,2,inf", "-N", "30", "--seed", "4", "--json", *extra], out=out)
        assert code == 0
        return json.loads(out.getvalue())

    local, remote = run(), run("--backend", "ray")
    assert remote["rows"] == local["rows"] and remote["summary"] == local["summary"]


def test_a_sharded_log_read_on_ray_audits_as_read_here(backend, shoes, tmp_path):
    """Each shard of a log read, checked and aggregated per query by a Ray worker, merged on the driver in name
    order: the exposure audit is that of the log in one file, digit for digit, on the command line too."""
    import numpy as np

    from fairrag_core.backends.executor import LocalBackend
    from fairrag_core.data.log_columns import read_log_columns

    rows = [{"query_id": f"q{n % 7}", "query": f"question {n % 7}",
             "ranking": [shoes.doc_ids[(n * 3 + j * 5) % 60] for j in range(5)]} for n in range(900)]
    folder = tmp_path / "shards"
    folder.mkdir()
    for i in range(3):
        (folder / f"day-{i}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[i * 300:(i + 1) * 300]),
                                                encoding="utf-8")
    on_ray = wl.read_log_on(backend, folder, shoes, "running-shoes")
    here = wl.read_log_on(LocalBackend(), folder, shoes, "running-shoes")
    assert on_ray.sha256 == here.sha256 and on_ray.query_ids == here.query_ids
    for a, b in zip(on_ray.queries, here.queries):
        np.testing.assert_array_equal(a.rows, b.rows)
        np.testing.assert_array_equal(a.counts, b.counts)
    config = LogAuditConfig(attribution="none", seed=5, n_boot=200)
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    in_one_piece = audit_rag_log(read_log_columns(whole, shoes), shoes, config).table
    pd.testing.assert_frame_equal(audit_rag_log(on_ray, shoes, config).table, in_one_piece)

    def run(*extra):
        out = io.StringIO()
        assert main(["audit-log", str(folder), "--collection", "running-shoes", "--attribution", "none",
                     "--seed", "5", "--json", "--no-store", *extra], out=out) == 0
        return json.loads(out.getvalue())

    local, remote = run(), run("--backend", "ray")
    assert remote["queries"] == local["queries"] and remote["summary"] == local["summary"]


@pytest.mark.slow
def test_sweep_command_with_backend_ray_matches_local_and_saves_the_run(backend, tmp_path, monkeypatch):
    """``sweep --backend ray`` end to end: the stand-ins replace the catalog's models here (local run) and in the spec
    the actors build from (Ray run); the driver saves the run to the store."""
    from fairrag_core.cli import rag as rag_cli
    from fairrag_core.rag import attribution

    monkeypatch.setattr(rag_cli, "load_models", lambda args, attributor=True: (
        Generator(FirstDocumentModel()), SubstringAttributor() if attributor else None))
    monkeypatch.setattr(attribution, "load_attributor", lambda name=None, device=None: SubstringAttributor())
    monkeypatch.setattr(rag_cli, "models_spec", lambda args: FakeModels())  # what the sweep command calls

    def run(*extra):
        out = io.StringIO()
        code = main(["sweep", "--labels", "relevance", "--alphas", "0,2", "-N", "6", "-k", "3",
                     "--queries", "rs-q01,rs-q02", "--seed", "3", "--store", str(tmp_path / "runs.duckdb"), "--json",
                     *extra], out=out)
        assert code == 0
        return json.loads(out.getvalue())

    local, remote = run(), run("--backend", "ray")
    pd.testing.assert_frame_equal(pd.DataFrame(remote["rows"]), pd.DataFrame(local["rows"]))
    assert remote["table1"] == local["table1"] and remote["table2"] == local["table2"]
    assert remote["run_id"] and remote["run_id"] != local["run_id"]  # the driver saved it to the same store


# -- fault tolerance on the local runtime ------------------------------------------------------------------------------
def _square_but_die_once(marker: Path, victim: int):
    """``task²``; the first time ``victim`` comes, the worker process exits hard (a crash, an OOM kill)."""

    def fn(state, task):
        if task == victim and not marker.exists():
            marker.touch()
            os._exit(1)
        return task * task

    return fn


def test_a_worker_that_dies_mid_task_is_restarted_and_the_task_retried(backend, tmp_path):
    fn = _square_but_die_once(tmp_path / "died", victim=3)
    assert backend.map(fn, range(6)) == [0, 1, 4, 9, 16, 25]
    assert (tmp_path / "died").exists()  # it did die
    stats = backend.last_stats
    assert stats.actors == 2 and stats.dead_actors == 0  # Ray restarted it (max_restarts) and retried the call


@pytest.mark.slow  # ~10 s: two more actors, one of them dies for good
def test_an_actor_that_cannot_restart_hands_its_task_to_a_live_one(backend, tmp_path):
    fn = _square_but_die_once(tmp_path / "died", victim=2)
    no_restarts = RayBackend(max_restarts=0, max_task_retries=0)  # joins the module's runtime
    seen = []
    assert no_restarts.map(fn, range(6), progress=lambda d, t: seen.append(d)) == [0, 1, 4, 9, 16, 25]
    stats = no_restarts.last_stats
    assert stats.lost == 1 and stats.dead_actors == 1 and seen == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow  # ~7 s for the actors' start
def test_a_worker_that_cannot_start_is_a_backend_error(backend):
    def refuse():
        raise ModuleNotFoundError("No module named 'missing_dependency'")

    class UnloadableSpec:  # cannot be unpickled on a worker, as when a node lacks a requirement
        uses_models = False

        def __reduce__(self):
            return refuse, ()

    with pytest.raises(BackendError, match=r"^a Ray worker could not start on the local Ray runtime .*"
                                           r"No module named 'missing_dependency'.*Every node needs"):
        backend.map(lambda state, task: task, [1, 2], spec=UnloadableSpec())


# -- without a runtime ---------------------------------------------------------------------------------------------
def test_actor_plan_uses_gpus_and_the_remaining_cpus():
    # 16 CPUs, 4 GPUs, model work: 4 GPU actors (1 CPU each) and 12 CPU actors
    assert actor_plan(cpus=16, gpus=4, uses_models=True, n_tasks=100) == [1.0] * 4 + [0.0] * 12
    assert actor_plan(cpus=16, gpus=4, uses_models=True, n_tasks=100, cpu_actors=False) == [1.0] * 4
    assert actor_plan(cpus=16, gpus=4, uses_models=False, n_tasks=100) == [0.0] * 16  # no model, no GPU
    assert actor_plan(cpus=2, gpus=4, uses_models=True, n_tasks=100) == [1.0, 1.0]  # each GPU actor holds a CPU
    assert actor_plan(cpus=16, gpus=4, uses_models=True, n_tasks=6, num_workers=5) == [1.0] * 4 + [0.0]
    assert actor_plan(cpus=0, gpus=0, uses_models=True, n_tasks=3) == [0.0]  # never fewer than one
    assert actor_plan(cpus=8, gpus=0, uses_models=True, n_tasks=3, cpu_actors=False) == [0.0] * 3


def test_the_shipped_package_has_the_code_and_assets_but_no_caches(tmp_path):
    from ray._private.runtime_env.packaging import _zip_files

    (ROOT / "fairrag_core" / "__pycache__").mkdir(exist_ok=True)  # present in any checkout that ran Python
    env = package_runtime_env(tmp_path)
    package, assets = env["py_modules"]
    assert Path(package) == ROOT / "fairrag_core" and Path(assets) == tmp_path / SHIPPED_ASSETS
    names = set()
    for i, module in enumerate(env["py_modules"]):
        _zip_files(module, env["excludes"], str(tmp_path / f"{i}.zip"), include_gitignore=True,
                   include_parent_dir=True)
        names |= set(zipfile.ZipFile(tmp_path / f"{i}.zip").namelist())
    assert "fairrag_core/backends/ray_backend.py" in names and "fairrag_core/__init__.py" in names
    assert f"{SHIPPED_ASSETS}/answer_presets.json" in names
    assert any(n.startswith(f"{SHIPPED_ASSETS}/collections/running-shoes/") for n in names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_ray_failures_become_backend_errors_that_say_what_to_do():
    ex = ray.exceptions
    lost = _backend_error(ray, ex.NodeDiedError("node 3f2a died"), address="10.0.0.1:6379", done=3, total=6)
    assert str(lost).startswith("lost Ray workers on the Ray cluster at '10.0.0.1:6379' (a node died or a worker "
                                "process was killed) and could not recover (3 of 6 tasks were done): "
                                "NodeDiedError: node 3f2a died. Check the nodes with `ray status`")
    died = _backend_error(ray, ex.ActorDiedError(), address=None)
    assert str(died).startswith("lost Ray workers on the local Ray runtime")
    env = _backend_error(ray, ex.RuntimeEnvSetupError("upload failed"), address="ray://h:10001")
    assert "could not set up the workers' environment on the Ray cluster at 'ray://h:10001'" in str(env)
    oom = _backend_error(ray, ex.OutOfMemoryError("Task was killed due to the node running low on memory"),
                         address="h:6379")
    assert "ran out of memory or disk" in str(oom) and "fewer actors per node" in str(oom)


def test_token_errors_name_the_missing_or_mismatched_token(monkeypatch):
    err = ray.exceptions.AuthenticationError("RPC error: InvalidAuthToken: Authentication token is missing")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    missing = str(_backend_error(ray, err, address="h:6379"))
    assert missing.startswith("the Ray cluster at 'h:6379' requires an authentication token and this driver sends "
                              "none. The cluster uses Ray token authentication: set RAY_AUTH_MODE=token here")
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "0" * 64)
    assert str(_backend_error(ray, err, address="h:6379")).startswith(
        "the Ray cluster at 'h:6379' rejected this machine's authentication token (the tokens differ)")


def test_a_task_error_reaches_the_caller_as_itself(backend):
    def fail(state, task):
        if task == 1:
            raise ArithmeticError(f"task {task} cannot be done")
        return task

    with pytest.raises(ArithmeticError, match="task 1 cannot be done"):
        backend.map(fail, [0, 1, 2])


def test_inside_a_ray_job_with_a_working_dir_the_job_ships_the_code(monkeypatch):
    from fairrag_core.backends.ray_backend import _job_ships_code

    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    assert _job_ships_code() is False
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {"working_dir": "gcs://_ray_pkg_1.zip"}}))
    assert _job_ships_code() is True
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {"env_vars": {"A": "1"}}}))
    assert _job_ships_code() is False


def test_a_worker_takes_the_drivers_settings_but_keeps_its_own_folders(monkeypatch, tmp_path):
    import sys

    from fairrag_core.backends.ray_backend import _Worker

    shipped = tmp_path / SHIPPED_ASSETS
    shipped.mkdir()  # where Ray unpacked the assets py_module on this node
    node = {"FAIRRAG_CACHE": "/opt/fairrag-cache", "FAIRRAG_THREADS": "8"}  # the image's ENV
    monkeypatch.setattr(os, "environ", node)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    driver = {"FAIRRAG_CACHE": "/home/alice/.cache/fairrag", "FAIRRAG_WEIGHTS": "/home/alice/weights",
              "FAIRRAG_THREADS": "1", "HF_HUB_OFFLINE": "1", "FAIRRAG_ASSETS": "/home/alice/assets"}
    _Worker(None, driver, SHIPPED_ASSETS)
    assert node == {"FAIRRAG_CACHE": "/opt/fairrag-cache", "FAIRRAG_WEIGHTS": "/home/alice/weights",
                    "FAIRRAG_THREADS": "1", "HF_HUB_OFFLINE": "1", "FAIRRAG_ASSETS": str(shipped)}
