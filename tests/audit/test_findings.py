"""The Finding object: JSON, sorting and the severity rule."""

import json

import pytest

from fairrag_core import InvalidParameterError
from fairrag_core.audit.findings import (
    Finding,
    FindingKind,
    Severity,
    findings_to_json,
    severity_of,
    sort_findings,
)

K = 5


# -- the Finding object ------------------------------------------------------------------------------------------

def test_finding_json_sorting_and_severity_rule():
    serious = Finding(FindingKind.UNDER_EXPOSED, "X", "retrieval share − fair share", "X is under-exposed.",
                      severity=Severity.SERIOUS, estimate=-0.03, low=-0.05, high=-0.01, p_value=0.001,
                      p_adjusted=0.01)
    info = Finding(FindingKind.NO_DIFFERENCE, "every provider", "retrieval share − fair share", "Nothing.")
    notable = Finding(FindingKind.COST, "B vs A", "ee_r", "Relevance falls.", severity="notable", p_value=0.02)
    assert sort_findings([info, notable, serious]) == [serious, notable, info]
    rows = json.loads(json.dumps(findings_to_json([info, serious]), allow_nan=False))
    assert rows[0]["text"] == "X is under-exposed." and rows[0]["p"] == 0.01 and rows[1]["p"] is None
    assert rows[0]["severity"] == "serious" and rows[0]["estimate"] == -0.03 and rows[1]["estimate"] is None
    assert notable.p == 0.02 and notable.severity is Severity.NOTABLE
    with pytest.raises(InvalidParameterError, match="does not contain its estimate"):
        Finding(FindingKind.UNDER_EXPOSED, "X", "m", "t", estimate=0.5, low=0.0, high=0.1)
    assert severity_of(True, float("nan")) is Severity.SERIOUS  # a share where the fair share is 0
