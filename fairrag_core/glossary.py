"""One glossary for every metric the product shows: its name, one-line meaning, direction and source.

The words are declared once, in the metric registry (:mod:`fairrag_core.metrics.registry`, one entry per metric);
this module gives them in the shapes the pages need. The app's tiles (their help text), explainers, chart labels and
the HTML report all read their words from here, so a metric means the same thing everywhere. A :class:`Term` gives
its words in the shapes they are needed:

* :attr:`Term.line` — ``EE-D — <meaning>; lower = fairer (Kim & Diaz 2025, Eq. 16 …).`` (reports, explainers);
* :attr:`Term.help` — the same sentence without the name (a tile's tooltip);
* :attr:`Term.label` — ``EE-D (lower = fairer)`` (a tile's or an axis's label).

:func:`term` resolves what a page or a table prints (``EE-D 95% interval``, ``EAR (cited by the system)``,
``NCOM@5``, ``disparity (gerr, patience 0.5; expeval-normalised)``) to its entry. Pure Python: no Streamlit.

>>> term("EE-D").direction
'lower = fairer'
>>> term("NCOM@5").key, term("EAR (cited by the system)").key, term("EE-D 95% interval").key
('NCOM', 'EAR', 'EE-D')
>>> term("relevance (gerr, patience 0.5; expeval-normalised)").key
'relevance (expeval)'
>>> term("seconds") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .metrics.registry import DIAZ_2020, KIM_DIAZ, METRICS, Metric

__all__ = ["Term", "GLOSSARY", "term", "terms_in", "help_text", "glossary_rows", "KIM_DIAZ", "DIAZ_2020"]


@dataclass(frozen=True)
class Term:
    """One metric's words, read from its entry in :data:`fairrag_core.metrics.registry.METRICS` (declared there
    once): ``key`` (its printed name, the registry's label), ``meaning`` (one line, no final full stop),
    ``direction`` (``lower = fairer``, ``higher = better``…), ``source`` (paper and section), the other ``aliases``
    the product prints for it, and ``long`` (what the abbreviation stands for, e.g. ``expected exposure
    disparity``)."""

    metric: Metric

    @property
    def key(self) -> str:
        return self.metric.label

    @property
    def meaning(self) -> str:
        return self.metric.meaning

    @property
    def direction(self) -> str:
        return self.metric.direction

    @property
    def source(self) -> str:
        return self.metric.source

    @property
    def aliases(self) -> tuple[str, ...]:
        return self.metric.aliases

    @property
    def long(self) -> str:
        return self.metric.long

    @property
    def help(self) -> str:
        """Meaning, direction and source in one sentence (a tile's tooltip)."""
        return f"{self.meaning[:1].upper()}{self.meaning[1:]}; {self.direction} ({self.source})."

    @property
    def gloss(self) -> str:
        """``meaning; direction (source).``: what follows the name in a glossary line."""
        return f"{self.meaning}; {self.direction} ({self.source})."

    @property
    def line(self) -> str:
        """``name — meaning; direction (source).`` (a report's or an explainer's glossary line)."""
        return f"{self.key} — {self.gloss}"

    @property
    def label(self) -> str:
        """``name (direction)``: a tile's label."""
        return f"{self.key} ({self.direction})"

    @property
    def axis_title(self) -> str:
        """``EE-D (expected exposure disparity; lower = fairer)``: a chart axis's title."""
        return f"{self.key} ({self.long}; {self.direction})" if self.long else self.label


_TERMS = tuple(Term(metric) for metric in METRICS.values())

#: Every metric the product shows, by canonical name.
GLOSSARY: dict[str, Term] = {t.key: t for t in _TERMS}
_BY_NAME: dict[str, Term] = {name.casefold(): t for t in _TERMS
                              for name in (t.key, *t.aliases, t.metric.short, t.metric.tile) if name}
_TAIL = re.compile(r"\s*(?:\([^()]*\)|\[[^\[\]]*\]|95% interval|@\d+)\s*$")


def term(label: str) -> Term | None:
    """The glossary entry a printed label stands for, or None: the exact name or an alias first, then with its
    tail taken off one piece at a time (``@5``, ``95% interval``, a parenthesis or a bracket), and expeval's
    ``disparity (gerr, …; expeval-normalised)`` by its first word."""
    text = str(label).strip()
    if "expeval" in text.casefold():
        first = text.split(" ", 1)[0].casefold()
        return GLOSSARY.get(f"{first} (expeval)")
    while text:
        found = _BY_NAME.get(text.casefold())
        if found is not None:
            return found
        shorter = _TAIL.sub("", text)
        if shorter == text:
            return None
        text = shorter
    return None


def help_text(label: str, extra: str = "") -> str:
    """The tooltip of a tile named ``label``: the glossary's sentence, then ``extra`` (what this tile adds)."""
    found = term(label)
    if found is None:
        raise KeyError(f"{label!r} is not in fairrag_core.glossary; add it there (one meaning for every page)")
    return found.help + (f" {extra}" if extra else "")


def terms_in(labels: Iterable[str]) -> list[Term]:
    """The distinct entries the ``labels`` (column headers, metric names) stand for, in order of appearance."""
    out: dict[str, Term] = {}
    for name in labels:
        found = term(name)
        if found is not None:
            out.setdefault(found.key, found)
    return list(out.values())


def glossary_rows(names: Iterable[str] | None = None) -> list[dict[str, str]]:
    """``metric, meaning, direction, defined in`` rows for ``names`` (labels are resolved) or every entry."""
    chosen = terms_in(names) if names is not None else list(GLOSSARY.values())
    return [{"metric": t.key, "meaning": t.meaning, "direction": t.direction, "defined in": t.source} for t in chosen]
