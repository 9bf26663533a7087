"""Compare audited systems on the same queries: is B fairer than A, at what cost, and for which providers.

A *system* is what one audit measured: a served log or run (:func:`~fairrag_core.audit.rag_log.audit_served`), or
one α of a simulated sweep or audit (:mod:`fairrag_core.ranking.sweep`, :mod:`fairrag_core.rag.sweep`). Any mix can
be compared, over the queries they share. Each system is compared with a baseline (the first, unless named):

* **metrics** — per query the difference system − baseline of EE-D (the bias-corrected estimate, as everywhere),
  EE-R, and, when both systems measured the same attribution source, EAR, EAE-D and EAE-D/cited; the mean
  difference with a percentile bootstrap interval over queries and the two-sided p-value of a paired randomization
  (sign-flip) test (:func:`~fairrag_core.metrics.intervals.paired_comparison`; Fisher 1935; Smucker, Allan &
  Carterette, CIKM 2007), Holm-adjusted across the metrics of the pair (Holm 1979);
* **shares** — per provider (or group), its share of retrieval exposure (and of attributed exposure) in the system
  minus in the baseline, pooled over the shared queries, with a paired bootstrap interval over queries and the
  p-value of a paired permutation test that swaps the two systems within queries (exact for ≤ 12 queries, else
  random swaps), Holm-adjusted across the groups.

The result is a :class:`Comparison` (tables, and a :class:`~fairrag_core.record.RunRecord` of kind ``comparison``
that the run store keeps like any run).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..checks import MAX_RESAMPLES, check_at_most, check_open_unit, rows_in_budget
from ..data import Collection
from ..data.rag_log import RagLog
from ..data.traces import LogDocuments, MultipleRetrievals, TraceMap
from ..errors import InvalidParameterError
from ..metrics.bootstrap import resample_counts
from ..metrics.intervals import paired_comparison
from ..metrics.registry import COMPARISON, keys
from ..metrics.registry import METRICS as REGISTRY
from ..metrics.significance import holm_adjust
from ..option_types import level_arg, positive_arg
from ..options import (
    MIN_REL,
    MULTI_RETRIEVAL,
    PROVIDER_FROM,
    PROVIDER_MAP,
    SEED,
    TRACE_MAP,
    Kind,
    no_option,
    option,
    options_of,
)
from ..record import RunKind, RunRecord, SweepRun
from ..seeds import SeedLike, as_generator, derive_seed, new_seed
from ..settings import Settings
from .merit import DEFAULT_GRADES
from .query_bootstrap import check_share_resamples, percentile_bounds, pooled_shares
from .rag_log import LogAuditConfig

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["System", "systems_of", "stored_systems", "STORED", "ComparisonConfig", "Comparison", "compare_systems",
           "share_differences", "METRICS",
           "documents_of_logs", "logs_of_audits"]

#: The per-query metrics a comparison reads, with their names and which way is better (the metric registry's
#: comparison list, :mod:`fairrag_core.metrics.registry`).
METRICS = {key: (REGISTRY[key].label, REGISTRY[key].in_comparison) for key in keys(COMPARISON)}
_ATTRIBUTION = tuple(key for key in METRICS if REGISTRY[key].per_source)  # measured per attribution source
_EXACT_SWAPS = 12
#: How a stored run is named among the systems (and on ``compare-runs``' command line): ``run:ID``.
STORED = "run:"
#: audit-log's options, of which a comparison takes the store selection and the stated shares (declared there once)
_AUDIT = options_of(LogAuditConfig)


@dataclass(frozen=True)
class System:
    """One audited system: a run, and which α of it when the run is a sweep (None for a served log or run).

    ``source`` is the attribution source its attribution metrics come from (``cited``: logged citations,
    ``entailed``: the NLI judge), None when it measured none."""

    label: str
    run: SweepRun
    alpha: float | None = None

    def _rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        if self.alpha is None or "alpha" not in frame:
            return frame
        return frame[np.isclose(frame["alpha"].astype(float), self.alpha)]  # α = ∞ is close to itself

    @property
    def source(self) -> str | None:
        table = self.run.table
        for name in ("cited", "entailed"):  # a log audit names its sources
            if f"ear_{name}" in table and table[f"ear_{name}"].notna().any():
                return name
        return "entailed" if "ear" in table and table["ear"].notna().any() else None

    def per_query(self) -> pd.DataFrame:
        """One row per query: the metrics of :data:`METRICS` this system measured (attribution under common names)."""
        import pandas as pd

        rows = self._rows(self.run.table)
        out = pd.DataFrame(index=pd.Index(rows["query_id"].astype(str), name="query_id"))
        for metric in METRICS:
            named = f"{metric}_{self.source}"  # a log audit's attribution metrics carry their source's name
            column = named if metric in _ATTRIBUTION and self.source and named in rows else metric
            if column in rows:
                out[metric] = pd.to_numeric(rows[column], errors="coerce").to_numpy()
        return out

    def documents(self) -> pd.DataFrame:
        """Per (query, document): retrieval exposure and, when measured, attributed exposure."""
        import pandas as pd

        docs = self._rows(self.run.documents)
        if docs.empty or "doc_id" not in docs:
            raise InvalidParameterError(f"{self.label}: the run has no per-document exposure to compare shares with "
                                        "(runs saved without their details cannot be compared per provider)")
        out = pd.DataFrame({"query_id": docs["query_id"].astype(str), "doc_id": docs["doc_id"],
                            "exposure": docs["exposure"].astype(float)})
        attributed = f"{self.source}_exposure" if self.source and f"{self.source}_exposure" in docs else (
            "attributed_exposure" if "attributed_exposure" in docs else None)
        if attributed is not None and docs[attributed].notna().any():
            out["attributed_exposure"] = docs[attributed].astype(float).fillna(0.0).to_numpy()
        return out


def stored_systems(run: SweepRun, run_id: str | None = None) -> list[System]:
    """A stored run's systems (:func:`systems_of`), named ``run:ID`` and, for an audit of a served file, by that file
    too (``run:ID · a.jsonl``), so that a comparison names what each system audited."""
    name = (run.record.extra.get("inputs") or [{}])[0].get("name") if run.record.kind is RunKind.AUDIT_LOG else None
    return systems_of(run, label=f"{STORED}{run_id or run.run_id}" + (f" · {name}" if name else ""))


def systems_of(run: SweepRun, label: str | None = None) -> list[System]:
    """The systems a stored or fresh run holds: one per α of a sweep or audit (labelled ``α = 2``, ``deterministic``),
    one for a served log or run."""
    name = label or run.run_id or run.record.kind.value
    if "alpha" not in run.table:
        return [System(name, run)]
    alphas = sorted(set(run.table["alpha"].astype(float)), key=lambda a: (math.isinf(a), a))
    return [System(f"{name} · {'deterministic' if math.isinf(a) else f'α = {a:g}'}", run, float(a)) for a in alphas]


@dataclass(frozen=True, kw_only=True)
class ComparisonConfig(Settings):
    """How systems are compared: which systems (labels, and the files or stored runs they came from), the
    baseline, the grouping for shares, how a served file is audited (k, attribution source, usefulness grade) and
    the statistics (bootstrap resamples, random swaps, level, seed).

    ``inputs`` are ``compare-runs``' positional INPUTs (a file's absolute path, or a stored run ``run:ID``), so the
    reproduce command names them from the settings; ``systems`` are the labels the comparison gave them (set by
    :func:`compare_systems`, no input).

    How every served file is read — ``trace_map``, ``multi_retrieval``, ``provider_from`` or ``provider_map`` (the
    providers from the logs themselves, no collection), and ``service``, ``since`` and ``until`` (a ``collect`` store's
    selection) — and ``target_shares`` and ``merit_grades``/``merit_threshold`` (the stated shares and the merit rule
    of each system's label-free findings) are
    :class:`~fairrag_core.audit.rag_log.LogAuditConfig`'s fields with the same options (:mod:`fairrag_core.options`),
    so ``compare-runs`` reads a file as ``audit-log`` does and its reproduce command holds them."""

    systems: tuple[str, ...] = no_option(default=())
    inputs: tuple[str, ...] = option("inputs", kind=Kind.APPEND, default=(), path=True, metavar="INPUT",
                                     help="with --collection (or --provider-from/--provider-map): two or more RAG "
                                          "logs, trace exports, run files or stored runs (run:ID); without: QRELS "
                                          "RUN_A RUN_B")
    baseline: str = option("--baseline", default="", default_text="the first system",
                           help="the system the others are compared with (its label: the file name, or run:ID)")
    by: str = option("--by", default="provider", help="share differences per provider (default) or per group of a "
                                                       "category of the collection")
    k: int | None = option("-k", default=None, parse=positive_arg, default_text="each file's longest ranking",
                           help="documents the generator read, for every served file")
    attribution: str = option("--attribution", default="auto", choices=("auto", "none", "logged"),
                              help="attribution of the served logs: their logged citations (auto: when they have "
                                   "them), or none")
    min_rel: int = MIN_REL.field(default=1)
    n_boot: int = option("--n-boot", default=1000, parse=positive_arg, help="bootstrap resamples over queries")
    n_permutations: int = option("--n-permutations", default=10000, parse=positive_arg,
                                 help="random swaps and sign flips of the permutation tests (exact when few queries)")
    level: float = option("--level", default=0.95, parse=level_arg, help="interval level")
    seed: int | None = SEED.field(default=None)
    # how each served file is read, as audit-log reads it (printed in this order after the seed)
    trace_map: tuple[str, ...] = TRACE_MAP.field(default=())
    multi_retrieval: MultipleRetrievals = MULTI_RETRIEVAL.field(default=MultipleRetrievals.SKIP)  # noqa: RUF009
    provider_from: str | None = PROVIDER_FROM.field(default=None)
    provider_map: str | None = PROVIDER_MAP.field(default=None)
    # a `collect` store's service and window, and the stated shares of the label-free findings: audit-log's options
    service: str | None = _AUDIT["service"].field(default=None)
    since: str | None = _AUDIT["since"].field(default=None)
    until: str | None = _AUDIT["until"].field(default=None)
    target_shares: str | None = _AUDIT["target_shares"].field(default=None)
    # the merit rule of exposure against merit from the system's own scores: audit-log's options, for every system
    merit_grades: int = _AUDIT["merit_grades"].field(default=DEFAULT_GRADES)
    merit_threshold: float | None = _AUDIT["merit_threshold"].field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "trace_map", TraceMap.parse(self.trace_map).items())

    @property
    def providers_from_logs(self) -> bool:
        """The providers come from the logs themselves (``provider_from`` or ``provider_map``): no collection."""
        return self.provider_from is not None or self.provider_map is not None


def documents_of_logs(logs: Sequence[RagLog], *, provider_from: str | None = None,
                      provider_map: str | None = None) -> LogDocuments:
    """One collection of the documents every log in ``logs`` names, with their providers from the logs themselves
    (:func:`~fairrag_core.data.traces.documents_from_log` over the logs' entries together, so a document two logs
    name has one provider: the first that says), for comparing logs audited without a collection.
    ``provider_from`` is a :class:`~fairrag_core.data.traces.ProviderSource` text, ``provider_map`` a CSV's path."""
    from ..data.traces import ProviderSource, documents_from_log, load_provider_map

    together = RagLog(" + ".join(log.name for log in logs), tuple(e for log in logs for e in log.entries),
                      format=logs[0].format if len({log.format for log in logs}) == 1 else "jsonl")
    return documents_from_log(together,
                              provider_from=None if provider_from is None else ProviderSource.parse(provider_from),
                              provider_map=None if provider_map is None else load_provider_map(provider_map))


def logs_of_audits(records: Sequence[RunRecord]) -> list[RagLog]:
    """The logs that stored log audits read, read again from their recorded paths as they were read (their trace map,
    retrieval choice and store selection), for the documents of audits made without a collection
    (:func:`documents_of_logs`).

    Raises:
        InvalidParameterError: a record is no log audit.
        FairRAGError: a log is no longer readable where it was (the loader's message).
    """
    from ..data.store_window import StoreWindow, load_selected

    logs = []
    for record in records:
        if record.kind is not RunKind.AUDIT_LOG:
            raise InvalidParameterError(f"a {record.kind.value} run has no log to take providers from; compare it "
                                        "against a collection")
        config = record.config
        logs.append(load_selected(config.log, StoreWindow.of(config),
                                  trace_map=TraceMap.parse(config.trace_map, multiple=config.multi_retrieval)))
    return logs


@dataclass(frozen=True)
class Comparison(SweepRun):
    """The comparison's tables: ``table`` one row per (system, metric) against the baseline, ``documents`` one row
    per (system, share kind, group); ``per_query`` the per-query values behind them; ``findings`` what they say
    (:func:`~fairrag_core.audit.comparison_findings.with_findings` fills them)."""

    per_query: pd.DataFrame | None = None
    findings: tuple = field(default=())


def group_matrix(documents: pd.DataFrame, column: str, queries: pd.Index, groups: pd.Index,
                 group_of: dict[str, str]) -> np.ndarray:
    """``(queries, groups)`` sums of ``column`` over each group's documents (``group_of``: doc id → group)."""
    frame = documents[documents["query_id"].isin(queries)]
    matrix = np.zeros((queries.size, groups.size))
    q = queries.get_indexer(frame["query_id"])
    g = groups.get_indexer(frame["doc_id"].map(group_of))
    np.add.at(matrix, (q, g), frame[column].to_numpy(dtype=np.float64))
    return matrix


#: float64 arrays of G groups that one permutation of :func:`_share_test` holds at once (four products, two sums, two
#: shares with their temporaries, the difference).
_SWAP_ARRAYS = 10


def _share_test(a: np.ndarray, b: np.ndarray, counts: np.ndarray, swaps: np.ndarray, level: float
                ) -> pd.DataFrame:
    """Per group: share in ``a`` − share in ``b`` (Q × G exposure per query and group), its percentile bootstrap
    interval over queries (the same resampled queries for both) and the paired permutation p-value. The resampled
    shares are checked against the memory budget; the permutations are taken in pieces within it (10,000 × 2,098
    providers at once would be 1.7 GB), which leaves the counts of the test, and so its p-values, as they are."""
    import pandas as pd

    check_share_resamples(counts.shape[0], counts.shape[1], a.shape[1])
    point = pooled_shares(a.sum(axis=0)) - pooled_shares(b.sum(axis=0))
    low, high = percentile_bounds(point, pooled_shares(counts @ a) - pooled_shares(counts @ b), level)
    step = rows_in_budget(8 * _SWAP_ARRAYS * a.shape[1], f"one permutation of {a.shape[1]:,} groups' shares",
                          fix="compare fewer groups (a coarser grouping than provider)")
    hits = np.zeros(a.shape[1], dtype=np.int64)
    for start in range(0, swaps.shape[0], step):
        part = swaps[start:start + step]
        stay = 1.0 - part
        flipped = pooled_shares(stay @ a + part @ b) - pooled_shares(stay @ b + part @ a)
        hits += (np.abs(flipped) >= np.abs(point) - 1e-12).sum(axis=0)
    exact = swaps.shape[0] == 2 ** swaps.shape[1]
    p = hits / swaps.shape[0] if exact else (1 + hits) / (1 + swaps.shape[0])
    return pd.DataFrame({"difference": point, "low": low, "high": high, "p_value": p})


def share_differences(a: np.ndarray, b: np.ndarray, *, n_boot: int = 1000, n_permutations: int = 10000,
                      level: float = 0.95, seed: SeedLike = None) -> pd.DataFrame:
    """Per group, the share of exposure in system ``a`` minus that in ``b`` on the same queries — the test
    :func:`compare_systems` runs on every pair — from two (queries × groups) exposure matrices.

    ``share_g = Σ_q x_qg / Σ_q Σ_h x_qh`` per system; the difference's percentile bootstrap interval resamples
    queries (the same resample for both); its p-value comes from the paired permutation test that swaps the two
    systems within queries (exact for ≤ 12 queries), Holm-adjusted over the groups (``p_holm``).

    >>> a = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]); b = np.array([[2.0, 0.0], [2.0, 0.0], [2.0, 0.0]])
    >>> share_differences(a, b, seed=0)[["difference", "p_value"]].round(3).to_dict("list")
    {'difference': [-0.5, 0.5], 'p_value': [0.25, 0.25]}
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[0] < 2:
        raise InvalidParameterError(f"a and b must be (queries × groups) matrices of the same shape with two or more "
                                    f"queries; got {a.shape} and {b.shape}")
    level = check_open_unit(level, "level", hint="e.g. 0.95")
    rng = as_generator(seed)
    table = _share_test(a, b, resample_counts(a.shape[0], n_boot, rng), _swap_matrix(a.shape[0], n_permutations, rng),
                        level)
    table["p_holm"] = holm_adjust(table["p_value"].to_numpy())
    return table


def _swap_matrix(n_queries: int, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    if n_queries <= _EXACT_SWAPS:
        return np.array(list(itertools.product((0.0, 1.0), repeat=n_queries)))
    return rng.integers(0, 2, size=(n_permutations, n_queries)).astype(np.float64)


def compare_systems(systems: Sequence[System], collection: Collection, config: ComparisonConfig = ComparisonConfig()
                    ) -> Comparison:
    """Compare every system with the baseline (``config.baseline``, a label; default the first) over the queries
    they share (module docstring: what is compared and how).

    Raises:
        InvalidParameterError: fewer than two systems, an unknown baseline, or systems that share no query.
    """
    import pandas as pd

    started = time.perf_counter()
    if len(systems) < 2:
        raise InvalidParameterError("compare at least two systems (two runs, logs or α values)")
    labels = [s.label for s in systems]
    if len(set(labels)) != len(labels):
        raise InvalidParameterError(f"two systems have the same label {labels}; give each its own")
    base_label = config.baseline or labels[0]
    if base_label not in labels:
        raise InvalidParameterError(f"baseline {base_label!r} is not one of the systems: {', '.join(labels)}")
    check_at_most(config.n_boot, "n_boot", MAX_RESAMPLES, hint="bootstrap resamples, e.g. 1000",
                  fix="1,000 resamples are the usual number")
    check_at_most(config.n_permutations, "n_permutations", MAX_RESAMPLES, hint="random swaps, e.g. 10000",
                  fix="10,000 swaps are the usual number")
    level = check_open_unit(config.level, "level", hint="e.g. 0.95")
    seed = config.seed if config.seed is not None else new_seed()
    baseline = systems[labels.index(base_label)]
    group_of = dict(zip(collection.doc_ids, collection.owners(config.by)))
    base_q, base_docs = baseline.per_query(), baseline.documents()
    metric_rows, share_rows, long = [], [], []
    for s_index, system in enumerate(systems):
        values = system.per_query()
        long.append(values.reset_index().melt(id_vars="query_id", var_name="metric").assign(system=system.label))
        if system is baseline:
            continue
        shared = values.index.intersection(base_q.index)
        if shared.empty:
            raise InvalidParameterError(f"{system.label} and {base_label} share no query; compare audits of the same "
                                        "query set")
        rng = np.random.default_rng(derive_seed(seed, s_index))
        same_source = system.source == baseline.source  # else logged citations vs the judge's verdicts: not compared
        rows = []
        for metric in METRICS:
            if metric not in values or metric not in base_q or (metric in _ATTRIBUTION and not same_source):
                continue
            pair = pd.DataFrame({"a": values.loc[shared, metric], "b": base_q.loc[shared, metric]}).dropna()
            if len(pair) < 2:
                continue
            test = paired_comparison(pair["a"].to_numpy(), pair["b"].to_numpy(), n_boot=config.n_boot,
                                     n_permutations=config.n_permutations, level=level, seed=rng)
            name, direction = METRICS[metric]
            rows.append({"system": system.label, "baseline": base_label, "metric": metric, "label": name,
                         "direction": direction, "mean_system": test.mean_a, "mean_baseline": test.mean_b,
                         "difference": test.difference.estimate, "low": test.difference.low,
                         "high": test.difference.high, "p_value": test.p_value, "n_queries": test.n_queries,
                         "test": test.test})
        adjusted = holm_adjust(np.array([r["p_value"] for r in rows]))
        metric_rows += [{**row, "p_holm": p} for row, p in zip(rows, adjusted)]
        sys_docs = system.documents()
        groups = pd.Index(sorted({group_of[d] for d in pd.concat([sys_docs, base_docs])["doc_id"]}))
        counts = resample_counts(len(shared), config.n_boot, rng)
        swaps = _swap_matrix(len(shared), config.n_permutations, rng)
        for kind, column in (("retrieval", "exposure"), ("attributed", "attributed_exposure")):
            if column not in sys_docs or column not in base_docs or (kind == "attributed" and not same_source):
                continue
            a = group_matrix(sys_docs, column, shared, groups, group_of)
            b = group_matrix(base_docs, column, shared, groups, group_of)
            if a.sum() <= 0 or b.sum() <= 0:
                continue
            test = _share_test(a, b, counts, swaps, level)
            share_rows.append(pd.DataFrame({"system": system.label, "baseline": base_label, "kind": kind,
                                            "group": groups}).assign(
                **test, share_system=a.sum(axis=0) / a.sum(), share_baseline=b.sum(axis=0) / b.sum(),
                p_holm=holm_adjust(test["p_value"].to_numpy()), n_queries=len(shared)))
    metrics = pd.DataFrame(metric_rows)
    shares = pd.concat(share_rows, ignore_index=True) if share_rows else pd.DataFrame()
    resolved = replace(config, systems=tuple(labels), baseline=base_label, level=level, seed=seed)
    record = RunRecord(kind=RunKind.COMPARISON, collection=collection.source or collection.name, retriever="compared",
                       config=resolved, seed=seed, query_ids=tuple(base_q.index),
                       wall_seconds=time.perf_counter() - started,
                       extra={"systems": labels, "baseline": base_label,
                              "inputs": [{"role": "system", "label": s.label, "run_id": s.run.run_id,
                                          "alpha": s.alpha, **{k: v for k, v in (s.run.record.extra.get("inputs")
                                                                                 or [{}])[0].items()
                                                               if k in ("name", "sha256", "kind")}}
                                         for s in systems]})
    return Comparison(record=record, table=metrics, documents=shares,
                      per_query=pd.concat(long, ignore_index=True) if long else None)
