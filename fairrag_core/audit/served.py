"""Audit what a deployed system served: expeval-compatible expected exposure per query. The intervals a reviewer
can trust (bootstrap over samples and over queries, paired comparisons) and ``evaluate-run``'s headline in one call
are in :mod:`.served_stats`; TREC Fair 2022's nDCG/AWRF in :mod:`.served_awrf`.

:func:`evaluate_run` reproduces expeval (Diaz et al., CIKM 2020; github.com/diazf/expeval) per query — the same
queries (those of the qrels with at least one judged document), the same values for ``gerr`` and ``rbp``,
normalised or not, graded or binarised, complete or incomplete, individual or group — and adds the step model
of Fair RAG (Kim & Diaz 2025). The formulas, and where expeval is odd, are in
:mod:`fairrag_core.metrics.expeval`. Runs and qrels come as paths, loaded objects (:mod:`fairrag_core.data.served`)
or a :class:`~fairrag_core.data.Collection` (its qrels, groups by provider or one category).

The inputs are taken by name, in the CLI's order (``evaluate_run(qrels=…, run=…)``, as ``evaluate-run QRELS RUN``):
a run and qrels given the wrong way round fail with the call to write instead of evaluating the wrong thing, and
the user model is one :class:`~fairrag_core.metrics.expeval.ExposureSettings` (``settings=``; its field names as
keywords override it, e.g. ``user_model="gerr"``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..data import Collection, load_collection
from ..data.demo import DEMO_COLLECTIONS
from ..data.judgments import Judgments, judgments_from_collection, load_judgments
from ..data.served import QueryRankings, ServedRankings, load_run
from ..errors import DataFormatError, FairRAGError, InvalidParameterError
from ..metrics.expeval import (
    METRICS,
    ExposureSettings,
    MetricBounds,
    UserModel,
    bounds,
    expected_exposure,
    exposure_matrix,
    group_bounds,
    judged_grades,
    missing_values,
    raw_values,
    target_exposure_graded,
)

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["evaluate_run", "evaluate_rows", "rows_table", "unjudged_queries", "inputs_by_name", "with_depth", "as_run",
           "as_judgments", "QrelsLike", "RunLike"]

RunLike = ServedRankings | str | os.PathLike | Mapping
QrelsLike = Judgments | Collection | str | os.PathLike


def inputs_by_name(*names: str) -> Callable[[Callable], Callable]:
    """Make a function's data inputs ``names`` (qrels first, then the run(s): the CLI's order) keyword-only, with
    one-line errors that give the Python call to write: for inputs passed by position, for a missing one, and, when
    loading fails, for a qrels file given as a run (and a run given as the qrels: "swap them")."""

    def decorate(function: Callable) -> Callable:
        call = f"{function.__name__}({', '.join(f'{name}=…' for name in names)})"

        @functools.wraps(function)
        def by_name(*positional, **kwargs):
            if positional:
                raise InvalidParameterError(f"{function.__name__} takes its inputs by name, in the CLI's order "
                                            f"(qrels first): {call}")
            missing = [name for name in names if name not in kwargs]
            if missing:
                raise InvalidParameterError(f"{function.__name__} needs {', '.join(f'{n}=' for n in missing)}: {call}")
            try:
                return function(**kwargs)
            except DataFormatError as error:
                qrels = kwargs["qrels"]
                for name in names[1:]:
                    if _reads(load_judgments, kwargs[name]) and not _reads(load_run, kwargs[name]):
                        what = (f"qrels={qrels} is a run and {name}={kwargs[name]} is qrels: swap them"
                                if _reads(load_run, qrels) else f"{name}={kwargs[name]} is qrels, not a run: give "
                                f"the run as {name}=")
                        raise InvalidParameterError(f"{what}, {call}") from error
                raise

        return by_name

    return decorate


def _reads(load: Callable, path: object) -> bool:
    """Whether ``load`` reads the file ``path`` (asked only once a load has failed: correct calls read each file
    once)."""
    if not isinstance(path, str | os.PathLike) or not Path(path).is_file():
        return False
    try:
        load(path)
    except (FairRAGError, OSError):
        return False
    return True


def as_run(run: RunLike, *, run_format: str = "auto") -> ServedRankings:
    """A loaded run from a path, a :class:`ServedRankings`, or ``{query_id: [[doc, …] per sample]}``."""
    if isinstance(run, ServedRankings):
        return run
    if isinstance(run, Mapping):
        return ServedRankings.from_lists(run)
    if isinstance(run, str | os.PathLike):
        return load_run(run, format=run_format)
    if isinstance(run, Judgments | Collection):
        raise InvalidParameterError(f"the run is a {type(run).__name__}, which judges runs: pass it as qrels= and "
                                    "the run as run=")
    raise InvalidParameterError(f"run must be a path, a ServedRankings or a dict of rankings, got {type(run).__name__}")


def as_judgments(qrels: QrelsLike, *, groups_by: str = "provider") -> Judgments:
    """Judgments from a qrels path, a :class:`Judgments`, a :class:`Collection`, or a collection's name/folder
    (then every document's group is its provider or its group in the category ``groups_by``)."""
    if isinstance(qrels, Judgments):
        return qrels
    if isinstance(qrels, Collection):
        return judgments_from_collection(qrels, groups_by=groups_by)
    if isinstance(qrels, str | os.PathLike):
        if str(qrels) in DEMO_COLLECTIONS or Path(qrels).is_dir():
            return judgments_from_collection(load_collection(qrels), groups_by=groups_by)
        return load_judgments(qrels)
    if isinstance(qrels, ServedRankings):
        raise InvalidParameterError("the qrels are a ServedRankings, a run: pass it as run= and the qrels as qrels=")
    raise InvalidParameterError(f"qrels must be a path, Judgments or a Collection, got {type(qrels).__name__}")


@dataclass(frozen=True)
class _Query:
    """One query prepared for evaluation: judged documents, target and bounds; when the run ranks it, its rankings
    over the V documents (ranked or judged) and, in group mode, their V × K group membership."""

    query_id: str
    n_judged: int
    n_relevant: int
    n_levels: int
    n_groups: int | None
    target: np.ndarray            # individual: over the V documents; groups: over the K groups
    bounds: dict[str, MetricBounds]
    ranked: QueryRankings | None  # None: not in the run
    relevant: np.ndarray          # V: grade > 0
    member: np.ndarray | None     # V × K in group mode
    settings: ExposureSettings

    @property
    def in_run(self) -> bool:
        return self.ranked is not None

    @property
    def n_samples(self) -> int:
        return 0 if self.ranked is None else self.ranked.n_samples

    @cached_property
    def matrix(self) -> object:
        """N × V per-sample exposure (N × K in group mode): what the bootstraps resample. Built on first use only;
        the point values need just :meth:`exposure`."""
        matrix = exposure_matrix(self.ranked.positions, self.relevant, self.settings)
        return matrix if self.member is None else np.asarray(matrix @ self.member)

    def exposure(self) -> np.ndarray:
        """The expected exposure (mean over samples), summed straight from the positions."""
        mean = expected_exposure(self.ranked.positions, self.relevant, self.settings)
        return mean if self.member is None else mean @ self.member


def _prepare(run: RunLike, qrels: QrelsLike, settings: ExposureSettings, *, run_format: str, groups_by: str
             ) -> tuple[ExposureSettings, list[_Query]]:
    """The run and qrels loaded, ``settings`` with the step user's k resolved (:func:`with_depth`), and the qrels'
    queries prepared."""
    run, judgments = as_run(run, run_format=run_format), as_judgments(qrels, groups_by=groups_by)
    settings = with_depth(settings, run)
    prepared = []
    for qid, judged in judgments.relevance.items():
        docs = list(judged)
        grades = judged_grades(np.fromiter(judged.values(), dtype=np.float64, count=len(docs)), settings)
        keep = ~np.isnan(grades)
        if not keep.any():
            continue  # expeval: a query without judged documents is not evaluated
        docs, grades = [d for d, k in zip(docs, keep) if k], grades[keep]
        target = target_exposure_graded(grades, settings)
        n_levels = int(np.unique(grades).size)
        n_relevant = int((grades > 0).sum())
        ranked = run.queries.get(qid)
        vocab = {d: i for i, d in enumerate(ranked.doc_ids)} if ranked is not None else {}
        for d in docs:
            vocab.setdefault(d, len(vocab))
        where = np.fromiter((vocab[d] for d in docs), dtype=np.int64, count=len(docs))
        relevant = np.zeros(len(vocab), dtype=bool)
        relevant[where] = grades > 0
        if settings.groups:
            names: dict[str, int] = {}
            pairs = [(i, names.setdefault(g, len(names))) for i, d in enumerate(docs)
                     for g in judgments.groups[qid][d]]
            member = np.zeros((len(vocab), len(names)))
            member[where[[i for i, _ in pairs]], [g for _, g in pairs]] = 1.0
            target = target @ member[where]
            query_bounds = group_bounds(target, n_relevant, settings, n_judged=len(docs))
        else:
            member, query_bounds = None, bounds(target, n_levels, settings)
            target = np.bincount(where, weights=target, minlength=len(vocab))  # over the V documents
        prepared.append(_Query(qid, len(docs), n_relevant, n_levels, None if member is None else len(names), target,
                               query_bounds, ranked, relevant, member, settings))
    return settings, prepared


def _settings(settings: ExposureSettings, overrides: Mapping[str, object]) -> ExposureSettings:
    """``settings`` (None: the defaults, the step user) with ``overrides`` (its field names as keywords, e.g.
    ``user_model="gerr"``) applied."""
    settings = ExposureSettings() if settings is None else settings
    if not isinstance(settings, ExposureSettings):
        raise InvalidParameterError(f"settings must be an ExposureSettings (fairrag_core.metrics.expeval), got "
                                    f"{type(settings).__name__}")
    if "seed" in overrides:  # only evaluate_run passes a caller's keywords here: the others take seed themselves
        raise InvalidParameterError("evaluate_run's plug-in values draw nothing, so it takes no seed; evaluate-run's "
                                    "--seed seeds its headline's bootstraps: fr.evaluate_served(qrels=…, run=…, "
                                    "seed=S).mean")
    unknown = sorted(set(overrides) - set(ExposureSettings.__dataclass_fields__))
    if unknown:
        known = ", ".join(ExposureSettings.__dataclass_fields__)
        raise InvalidParameterError(f"unknown option(s) {unknown}; the user model takes: {known}")
    return replace(settings, **overrides) if overrides else settings


def _undefined(query: _Query, settings: ExposureSettings) -> str:
    """The metrics whose normalised value is expeval's stand-in because their bounds coincide (e.g. relevance of a
    query with one relevance level: every ranking scores 1), comma-separated; "" when all are measured."""
    if not settings.normalize:
        return ""
    return ",".join(m for m in METRICS if query.bounds[m].low == query.bounds[m].high)


def _values(query: _Query, settings: ExposureSettings) -> dict[str, float]:
    quirk = settings.groups and not settings.corrected  # expeval's util.l2: no mass is +inf (group mode)
    raw = (raw_values(query.exposure(), query.target, zero_disparity_is_inf=quirk) if query.in_run
           else missing_values(query.bounds, query.target, settings))
    if not settings.normalize:
        return raw
    return {m: float(query.bounds[m].normalise(raw[m])) for m in METRICS}


def with_depth(settings: ExposureSettings, *runs: ServedRankings) -> ExposureSettings:
    """``settings`` with the step user's k resolved: when it is None, the longest ranking of ``runs`` (the generator
    reads the whole ranking, as :func:`~fairrag_core.audit.rag_log.audit_served` assumes)."""
    if settings.user_model is not UserModel.STEP or settings.k is not None:
        return settings
    return replace(settings, k=max(q.depth for run in runs for q in run.queries.values()))


@inputs_by_name("qrels", "run")
def evaluate_run(*, qrels: QrelsLike, run: RunLike, settings: ExposureSettings | None = None,
                 run_format: str = "auto", groups_by: str = "provider", **overrides) -> pd.DataFrame:
    """Expected-exposure metrics of a served run, per query, as expeval computes them: the plug-in values (for the
    CLI's headline, the bias-corrected estimates and their mean, see :func:`~.served_stats.evaluate_served`).

    Args:
        qrels: path to qrels (``qid gid[|gid…] docno rel``), :class:`~fairrag_core.data.served.Judgments`, or a
            :class:`~fairrag_core.data.Collection` / collection name (groups from ``groups_by``).
        run: path to a run (expeval/TREC with a sample column, or TREC Fair 2022), a loaded
            :class:`~fairrag_core.data.served.ServedRankings`, or ``{query_id: [[doc, …], …]}``.
        settings: the user model, expeval's flags (:class:`~fairrag_core.metrics.expeval.ExposureSettings`, the
            CLI's ``-u -p -r -k -B -C -U -G --bounds``): ``step`` by default (Fair RAG's machine user, the package's
            user model everywhere; ``k`` None means the run's longest ranking), or expeval's ``gerr`` (expeval's
            own default) or ``rbp``.
        overrides: fields of ``settings`` by name (``user_model="gerr"``, ``patience=0.8``, …).

    Returns:
        DataFrame indexed by ``query_id`` (qrels order) with ``disparity``, ``relevance``, ``difference`` and
        ``n_samples``, ``n_judged`` (judged documents as read), ``n_relevant``, ``relevance_levels`` (1 with
        expeval bounds ⇒ normalised relevance is the constant 1), ``in_run`` (False ⇒ expeval's default values for
        a query the run lacks), ``undefined`` (the metrics whose normalised value is only expeval's stand-in, its
        bounds being equal: e.g. "relevance" for a query with a single relevance level; the values are kept for
        parity with expeval, and :mod:`.served_stats`' means and comparisons and the CLI's reports leave them out),
        and ``n_groups`` in group mode. Queries of the run without judged documents are left out, as expeval
        does (:func:`unjudged_queries` lists them).

    >>> from fairrag_core.data.judgments import parse_judgments
    >>> qrels = parse_judgments("q1 0 a 1\\nq1 0 b 1\\nq1 0 c 0\\n")
    >>> run = {"q1": [["a", "b", "c"], ["b", "a", "c"]]}
    >>> table = evaluate_run(qrels=qrels, run=run, settings=ExposureSettings(user_model="rbp", normalize=False))
    >>> table.loc["q1", ["disparity", "relevance", "difference"]].round(4).tolist()
    [1.1875, 1.125, 0.0625]
    """
    settings = _settings(settings, overrides)
    # loaded here, so that an error names this function's call
    loaded, judged = as_run(run, run_format=run_format), as_judgments(qrels, groups_by=groups_by)
    return rows_table(evaluate_rows(qrels=judged, run=loaded, settings=settings), settings)


def rows_table(rows: list[dict], settings: ExposureSettings) -> pd.DataFrame:
    """:func:`evaluate_rows`' rows as :func:`evaluate_run`'s table (indexed by ``query_id``)."""
    import pandas as pd

    columns = ["query_id", *METRICS, "n_samples", "n_judged", "n_relevant", "relevance_levels", "in_run", "undefined"]
    return pd.DataFrame(rows, columns=columns + (["n_groups"] if settings.groups else [])).set_index("query_id")


@inputs_by_name("qrels", "run")
def evaluate_rows(*, qrels: QrelsLike, run: RunLike, settings: ExposureSettings | None = None,
                  run_format: str = "auto", groups_by: str = "provider") -> list[dict]:
    """:func:`evaluate_run`'s rows as plain dicts (``query_id`` first), for callers that print them without pandas
    (``evaluate-run --trec-eval`` on a large run: pandas would add a quarter of a second to its start)."""
    settings, queries = _prepare(run, qrels, _settings(settings, {}), run_format=run_format, groups_by=groups_by)
    return [{"query_id": query.query_id, **_values(query, settings), "n_samples": query.n_samples,
             "n_judged": query.n_judged, "n_relevant": query.n_relevant, "relevance_levels": query.n_levels,
             "in_run": query.in_run, "undefined": _undefined(query, settings),
             **({"n_groups": query.n_groups} if settings.groups else {})} for query in queries]


@inputs_by_name("qrels", "run")
def unjudged_queries(*, qrels: QrelsLike, run: RunLike, settings: ExposureSettings | None = None,
                     run_format: str = "auto", groups_by: str = "provider") -> list[str]:
    """Queries of the run that expeval skips: not in the qrels, or without a judged document there (under
    ``settings``' ``binarize`` and ``complete``)."""
    settings = _settings(settings, {})
    loaded, judged = as_run(run, run_format=run_format), as_judgments(qrels, groups_by=groups_by)
    kept = {qid for qid, grades in judged.relevance.items()
            if not np.isnan(judged_grades(np.array(list(grades.values()), dtype=float), settings)).all()}
    return [q for q in loaded.query_ids if q not in kept]
