"""The app's comparison of stored log audits finds each system's merit findings by the rule they were audited with
(compare-runs' --merit-grades/--merit-threshold, declared on LogAuditConfig), not by a default."""

from types import SimpleNamespace

from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.record import RunKind
from fairrag_studio.panels.compare import merit_rule


def _system(config, kind=RunKind.AUDIT_LOG, alpha=None):
    return SimpleNamespace(alpha=alpha, run=SimpleNamespace(record=SimpleNamespace(kind=kind, config=config)))


def test_the_stored_audits_rule_is_the_comparisons():
    threshold = LogAuditConfig(merit_grades=2, merit_threshold=0.5)
    assert merit_rule([_system(threshold), _system(threshold)]) == {"merit_grades": 2, "merit_threshold": 0.5}
    assert merit_rule([_system(LogAuditConfig(merit_grades=3)), _system(threshold)]) == {"merit_grades": 3,
                                                                                          "merit_threshold": None}
    assert merit_rule([_system(None, kind=RunKind.RAG_SWEEP, alpha=1.0)]) == {}  # a sweep's systems: the default
