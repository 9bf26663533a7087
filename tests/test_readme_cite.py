"""README's "How to cite" reads the metric registry: its table is the registry's sources row for row, every work a
source names has a full reference, and the package's citation carries the version records print (issue 30)."""

import re
from pathlib import Path

from fairrag_core.metrics.registry import METRICS
from fairrag_core.record import PACKAGE, software

README = Path(__file__).resolve().parents[1] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## How to cite\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _references() -> list[str]:
    """The short names of the references listed (``- **Kim & Diaz 2025** — …``)."""
    return re.findall(r"^- \*\*(.+?)\*\* — ", _section(), flags=re.MULTILINE)


def test_the_cite_table_is_the_registry_row_for_row():
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", _section(), flags=re.MULTILINE)
    assert rows[0] == ("metric", "source")
    assert rows[1:] == [(metric.label, metric.source) for metric in METRICS.values()]


def test_every_work_a_metric_cites_has_a_full_reference():
    names = _references()
    assert {"Kim & Diaz 2025", "Diaz et al. 2020", "Chen & Fang", "Wang et al.", "Singh & Joachims 2018"} <= set(names)
    for metric in METRICS.values():
        cited = [name for name in names if name in metric.source]
        own = metric.source.startswith(("this app", "the exposure ledger"))
        assert cited or own, f"{metric.label}: no reference for {metric.source!r}"
    for name in names:  # each reference is cited by a metric, or by the findings (Singh & Joachims' exposure parity)
        assert any(name in m.source for m in METRICS.values()) or name == "Singh & Joachims 2018", name


def test_the_package_citation_names_the_version_records_print():
    section = _section()
    assert f"version = {{{software()['version']}}}" in section and PACKAGE in section
