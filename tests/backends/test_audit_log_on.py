"""``audit_rag_log_on`` on the local backend: the judge's planned pairs go to the workers, and the audit runs once
with their judgements, giving :func:`~fairrag_core.audit.rag_log.audit_rag_log`'s tables (issue 28, Must have 5).
The Ray backend's comparison is ``test_ray_backend.py`` (slow)."""

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd
import pytest
from fakes import SubstringAttributor

from fairrag_core.audit import rag_log
from fairrag_core.audit.rag_log import LogAuditConfig, audit_rag_log
from fairrag_core.backends import LocalBackend
from fairrag_core.backends import workloads as wl
from fairrag_core.data import assets_dir, load_rag_log
from fairrag_core.rag.attribution import Attributor

DEMO_LOG = assets_dir() / "logs" / "running-shoes.jsonl"


@dataclass(frozen=True)
class _Worker:
    """A judge spec whose worker is one attributor the test can look into."""

    attributor: Attributor
    uses_models: ClassVar[bool] = True

    def build(self) -> Attributor:
        return self.attributor


@pytest.mark.parametrize("attribution", ["judge", "both"])
def test_a_backend_judges_the_planned_pairs_once_and_audits_once_with_the_local_tables(shoes, monkeypatch,
                                                                                       attribution):
    log = load_rag_log(DEMO_LOG, collection=shoes)
    config = LogAuditConfig(attribution=attribution, seed=3, n_boot=100)
    judge = SubstringAttributor()
    local = audit_rag_log(log, shoes, config, attributor=judge)

    calls = Counter()

    def counted(module, name):
        step = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[name] += 1
            return step(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    counted(rag_log, "measure_queries")  # exposure, intervals and attribution of every query
    counted(rag_log, "plan_log_audit")
    counted(wl, "plan_log_audit")
    counted(wl, "judge_log")
    worker, chunks = SubstringAttributor(), []
    remote = wl.audit_rag_log_on(LocalBackend(), log, shoes, config, _Worker(worker), SubstringAttributor.name,
                                 chunk=16, progress=lambda done, total: chunks.append((done, total)))
    assert calls == {"plan_log_audit": 1, "judge_log": 1, "measure_queries": 1}
    # every distinct pair the local judge scored went to the worker once, 16 to a chunk
    assert worker.scored == judge.scored > 100
    assert chunks[-1] == (-(-judge.scored // 16),) * 2
    for frame in ("table", "documents", "lines"):
        pd.testing.assert_frame_equal(getattr(remote, frame), getattr(local, frame))
    assert remote.record.attributor == local.record.attributor == SubstringAttributor.name
    assert remote.record.extra == local.record.extra and remote.record.config == local.record.config
