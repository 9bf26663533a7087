"""The Ray backend gives the local backend's tables for the same seed (issue 14, item 1: "results are identical").

One local Ray runtime (2 CPUs, no dashboard) serves the whole module; every workload runs once here and once on
two Ray actors, and the frames must be equal: the exposure sweep, a RAG sweep and utility labelling with the
stand-in models (built inside the actors from :class:`fakes.FakeModels`), FAIR-QR with the corpus-keyword refiner,
the judge of ``audit-log``, and ``exposure-sweep --backend ray`` on the command line. Each comparison starts two
actors (a few seconds each on 2 cores); the fast suite keeps the two sweeps and the command, the rest are ``slow``.
"""

import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from fakes import FakeModels, FirstDocumentModel, SubstringAttributor

from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.backends import workloads as wl
from fairrag_core.cli import main
from fairrag_core.data import load_collection, load_rag_log
from fairrag_core.data.disk_cache import DiskCache
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
    from fairrag_core.backends.ray_backend import RayBackend

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


@pytest.mark.slow
def test_sweep_command_with_backend_ray_matches_local_and_saves_the_run(backend, tmp_path, monkeypatch):
    """``sweep --backend ray`` end to end: the stand-ins replace the catalog's models here (local run) and in the spec
    the actors build from (Ray run); the driver saves the run to the store."""
    from fairrag_core.cli import rag as rag_cli
    from fairrag_core.rag import attribution

    monkeypatch.setattr(rag_cli, "_generator", lambda args: Generator(FirstDocumentModel()))
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
