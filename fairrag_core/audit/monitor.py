"""Fairness over time: a ``collect`` store audited window by window (``audit-log STORE --window 1d``, the app's
Monitor page), with the deployment's changes on the timeline and drift alarms.

Each window is UTC-aligned (an hour, a day from midnight, a week from Monday 00:00 UTC: :func:`window_bounds`) and is
audited exactly as ``audit-log STORE --since START --until END`` audits it — the same loader
(:func:`~fairrag_core.data.store_window.load_store`), the same audit
(:func:`~fairrag_core.audit.rag_log.audit_rag_log`), headline (:func:`~fairrag_core.audit.log_report.log_summary`),
ledger (:func:`~fairrag_core.audit.log_report.log_ledger`) and findings
(:func:`~fairrag_core.audit.log_report.log_findings`), with the same seed — so a window's numbers are that command's
numbers: each provider's retrieval-exposure and citation shares with intervals, EE-D (and EE-R where labelled) with
bootstrap intervals over the window's queries, and the findings (the label-free ones among them).

Deployment changes: where the traces carry the fair sampler's ``fairrag.alpha`` (:data:`~fairrag_core.data.traces.
SAMPLER_SPAN`) or a RETRIEVER span's name, the value most requests of a window were served with; a window whose value
differs from the previous window's is marked (:func:`deployment_changes`). A user's ``--changes FILE`` (``time,label``
CSV lines) adds marks. Drift alarms (:mod:`.drift`) compare each provider's per-request share after the reference
windows with the reference, always-valid over the daily (hourly, weekly) looks.
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DataFormatError, InvalidParameterError
from .windows import WINDOWS, window_arg, window_bounds

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["WINDOWS", "window_arg", "window_bounds", "Change", "read_changes", "deployment_changes",
           "WindowResult", "MonitorResult", "monitor_store", "monitor_text", "REFERENCE_WINDOWS"]

#: Windows of the reference period of the drift alarms (a week of daily windows).
REFERENCE_WINDOWS = 7
#: Requests the reference windows must hold for the normal band around the reference shares (:mod:`.drift`).
MIN_REFERENCE_REQUESTS = 100


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Change:
    """A deployment change on the timeline: when (ISO UTC), what (``label``) and who said so (``traces`` or
    ``file``)."""

    at: str
    label: str
    source: str = "file"

    def to_dict(self) -> dict[str, str]:
        return {"at": self.at, "label": self.label, "source": self.source}


def read_changes(path: str | os.PathLike) -> list[Change]:
    """A user's list of changes: CSV lines ``time,label`` (a header line ``time,label`` is skipped; times as
    ``--since`` takes them), or a JSON list of ``{"time", "label"}``.

    Raises:
        DataFormatError: a line without a time and a label, or a time that does not read.
    """
    from ..data.store_window import parse_when

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InvalidParameterError(f"cannot read --changes {path}: {err.strerror}; give a time,label CSV") from None
    if path.suffix.lower() == ".json":
        rows = [(str(item.get("time", "")), str(item.get("label", ""))) for item in json.loads(text)]
    else:
        rows = [tuple(row) for row in csv.reader(text.splitlines()) if row and any(c.strip() for c in row)]
    out = []
    for i, row in enumerate(rows, start=1):
        if i == 1 and [c.strip().lower() for c in row[:2]] == ["time", "label"]:
            continue
        if len(row) < 2 or not row[1].strip():
            raise DataFormatError(f"line {i} is not time,label; write one change a line, e.g. "
                                  "2026-11-20T09:00Z,alpha 2.0", path=str(path))
        try:
            when = parse_when(row[0])
        except InvalidParameterError as err:
            raise DataFormatError(f"line {i}: {err}", path=str(path)) from None
        out.append(Change(_iso(when), ",".join(row[1:]).strip(), "file"))
    return sorted(out, key=lambda c: c.at)


def _deployment_of_traces(files: Sequence[Path]) -> dict[str, dict[str, object]]:
    """``{trace_id: {"start": ns, "alpha": value, "retriever": span name}}`` read from the store's hour files:
    the fair sampler's ``fairrag.alpha`` and the name of a RETRIEVER span (the trace reader keeps neither)."""
    from ..data.traces import SAMPLER_SPAN

    found: dict[str, dict[str, object]] = {}
    for file in files:
        for text in Path(file).read_text(encoding="utf-8").splitlines():
            if not text.strip():
                continue
            for rs in json.loads(text).get("resourceSpans", ()):
                for scope in rs.get("scopeSpans", ()):
                    for span in scope.get("spans", ()):
                        trace = found.setdefault(span.get("traceId", ""), {"start": None})
                        start = int(span.get("startTimeUnixNano", 0) or 0)
                        trace["start"] = start if trace["start"] is None else min(trace["start"], start)
                        attrs = {a.get("key"): next(iter((a.get("value") or {}).values()), None)
                                 for a in span.get("attributes", ())}
                        if SAMPLER_SPAN["alpha"] in attrs:
                            trace["alpha"] = attrs[SAMPLER_SPAN["alpha"]]
                        if attrs.get(SAMPLER_SPAN["kind"]) == "RETRIEVER" and span.get("name"):
                            trace["retriever"] = span["name"]
    return found


#: What a window's deployment records, and its word on the timeline.
_DEPLOYED = {"alpha": "α", "retriever": "retriever"}


def deployment_changes(files: Sequence[Path], bounds: Sequence[tuple[datetime, datetime]]
                       ) -> tuple[list[dict[str, object]], list[Change]]:
    """Each window's deployment (the α and the retriever most of its traces were served with; absent when none
    logged it) and the changes between consecutive windows that have one."""
    traces = _deployment_of_traces(files)
    per_window: list[dict[str, object]] = []
    for start, end in bounds:
        lo, hi = int(start.timestamp()) * 10**9, int(end.timestamp()) * 10**9
        inside = [t for t in traces.values() if t["start"] is not None and lo <= t["start"] < hi]
        deployed = {}
        for key in _DEPLOYED:
            values = Counter(str(t[key]) for t in inside if key in t)
            if values:
                deployed[key] = values.most_common(1)[0][0]
        per_window.append(deployed)
    changes, last = [], {}
    for (start, _), deployed in zip(bounds, per_window):
        moved = [f"{_DEPLOYED[key]} {last[key]} → {value}" for key, value in deployed.items()
                 if key in last and last[key] != value]
        if moved:
            changes.append(Change(_iso(start), "; ".join(moved), "traces"))
        last.update(deployed)
    return per_window, changes


@dataclass(frozen=True)
class WindowResult:
    """One window's audit: its bounds, requests and queries, headline (``log_summary``), provider ledger
    (``log_ledger``), findings (``log_findings``, the headline ones) and the seed it was audited with."""

    start: str
    end: str
    requests: int
    queries: int
    summary: Any  # pd.DataFrame
    ledger: Any  # pd.DataFrame
    findings: tuple = ()
    deployment: dict = field(default_factory=dict)

    def headline(self, metric: str) -> tuple[float, float, float] | None:
        rows = self.summary[self.summary["metric"] == metric]
        if rows.empty:
            return None
        row = rows.iloc[0]
        return float(row["estimate"]), float(row["low"]), float(row["high"])


@dataclass(frozen=True)
class MonitorResult:
    """A store audited window by window: ``size`` (a :data:`WINDOWS` key), the windows with traces, the changes
    (from the traces and the user's file, in time order), the drift alarms, the reference windows' starts, the seed
    and the notes."""

    size: str
    windows: tuple[WindowResult, ...]
    changes: tuple[Change, ...] = ()
    alarms: tuple = ()
    reference: tuple[str, ...] = ()
    seed: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def look(self) -> str:
        return WINDOWS[self.size][1]

    def headline_table(self) -> pd.DataFrame:
        """One row per window: bounds, requests, queries, and EE-D, EE-R (NaN where unlabelled) with their bounds."""
        import pandas as pd

        rows = []
        for w in self.windows:
            row: dict[str, object] = {"window": w.start, "end": w.end, "requests": w.requests, "queries": w.queries}
            for metric in ("ee_d", "ee_r"):
                value = w.headline(metric) or (float("nan"),) * 3
                row |= {metric: value[0], f"{metric}_low": value[1], f"{metric}_high": value[2]}
            row |= {f"deployed_{k}": v for k, v in w.deployment.items()}
            rows.append(row)
        return pd.DataFrame(rows)

    def shares_table(self) -> pd.DataFrame:
        """One row per (window, provider): retrieval-exposure share with its interval, and the citation
        (attributed) share with its interval where citations were measured."""
        import pandas as pd

        columns = ["retrieval_share", "retrieval_share_low", "retrieval_share_high", "attributed_share",
                   "attributed_share_low", "attributed_share_high"]
        parts = []
        for w in self.windows:
            ledger = w.ledger.reindex(columns=["group", *columns])
            parts.append(ledger.rename(columns={"group": "provider"}).assign(window=w.start))
        table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["provider", *columns])
        return table[["window", "provider", *columns]]

    def to_dict(self) -> dict[str, object]:
        def records(table):
            return json.loads(table.to_json(orient="records"))

        return {"window": self.size, "seed": self.seed, "reference_windows": list(self.reference),
                "windows": records(self.headline_table()), "shares": records(self.shares_table()),
                "findings": {w.start: [f.to_dict() for f in w.findings] for w in self.windows},
                "changes": [c.to_dict() for c in self.changes], "alarms": [a.to_dict() for a in self.alarms],
                "notes": list(self.notes)}


#: Reads one window: ``read(config)`` → (log, collection, notes), ``config`` naming the window's service, since and
#: until (audit-log's own loader; the default reads the store against a given collection).
Reader = Callable[[Any], tuple[Any, Any, list]]


def monitor_store(path: str | os.PathLike, config, *, read: Reader | None = None, collection=None,
                  changes: Sequence[Change] = (), reference_windows: int = REFERENCE_WINDOWS) -> MonitorResult:
    """Audit the store at ``path`` window by window (module docstring) under ``config`` (a
    :class:`~fairrag_core.audit.rag_log.LogAuditConfig` with ``window`` set; its ``since``/``until`` bound the
    whole span monitored). ``read`` loads a window as audit-log does (default: :func:`load_store` against
    ``collection``); the first ``reference_windows`` windows with traces (at most half of them) are the drift alarms'
    reference.

    Raises:
        InvalidParameterError: no window size, or nothing in the store's selection (the message says what it holds).
    """
    import numpy as np

    from ..data.store_window import StoreWindow, load_store, parse_when, select_files
    from ..seeds import new_seed
    from .drift import drift_alarms, request_shares
    from .log_report import default_ledger_scope, log_findings, log_ledger, log_summary
    from .rag_log import audit_rag_log

    if not getattr(config, "window", None):
        raise InvalidParameterError(f"monitor_store needs a window size; give one of {', '.join(WINDOWS)}")
    if read is None:
        if collection is None:
            raise InvalidParameterError("monitor_store needs the collection the store's documents come from (or a "
                                        "read function)")

        def read(cfg):
            log = load_store(path, StoreWindow.of(cfg), collection=collection)
            return log, collection, list(log.notes)

    whole = StoreWindow.of(config)
    log, _, _ = read(config)  # every trace of the selection: the span to cut into windows
    times = [parse_when(e.timestamp) for e in log.entries if e.timestamp]
    if not times:
        raise InvalidParameterError(f"{path}: no trace of the selection has a start time; a window needs one")
    bounds = window_bounds(min(times), max(times), config.window)
    seed = config.seed if config.seed is not None else new_seed()
    windows, alarm_rows, notes = [], [], []
    for start, end in bounds:
        since = max(start, whole.start) if whole.since else start
        until = min(end, whole.end) if whole.until else end
        if not any(since <= t < until for t in times):
            continue
        cfg = replace(config, since=_iso(since), until=_iso(until), window=None, changes=None, seed=seed,
                      what_if_alphas=None)
        log_w, coll, _ = read(cfg)
        run = audit_rag_log(log_w, coll, replace(cfg, log=str(path)), collection_source=coll.source)
        groupings = ["provider"]
        findings = tuple(f for f in log_findings(run, coll, groupings=groupings) if not f.detail)
        ledger = log_ledger(run, coll, by="provider", labelled_only=default_ledger_scope(run))
        windows.append(WindowResult(_iso(since), _iso(until), len(log_w), len(run.table), log_summary(run), ledger,
                                    findings))
        provider_of = dict(zip(coll.doc_ids, coll.providers, strict=True))
        order = sorted(range(len(run.lines)), key=lambda i: (str(run.lines["timestamp"].iloc[i]), i))
        alarm_rows.append((provider_of, [run.lines["shown"].iloc[i] for i in order]))
    if not windows:
        raise InvalidParameterError(f"{path}: no window of the selection holds a trace")
    files = select_files(path, whole) if whole.given else select_files(path, StoreWindow(config.service))
    deployed, found = deployment_changes(files, [(parse_when(w.start), parse_when(w.end)) for w in windows])
    windows = [replace(w, deployment=d) for w, d in zip(windows, deployed)]
    every = sorted({*found, *changes}, key=lambda c: (c.at, c.source, c.label))
    # drift: the providers over every window, the first windows the reference, the rest looked at one by one
    providers = sorted({p for mapping, _ in alarm_rows for p in mapping.values()})
    reference_count = min(reference_windows, len(windows) // 2)  # at most half the windows: the rest are looks
    alarms: list = []
    shares = [request_shares(shown, mapping, providers) for mapping, shown in alarm_rows]
    reference = np.concatenate(shares[:max(reference_count, 1)])
    if reference_count >= 1 and len(reference) < MIN_REFERENCE_REQUESTS:
        notes.append(f"the reference windows hold {len(reference):,} requests, fewer than the "
                     f"{MIN_REFERENCE_REQUESTS} the drift test's reference band needs: no drift alarms (monitor a "
                     "longer span)")
    elif reference_count >= 1:
        watched = shares[reference_count:]
        looks = list(np.cumsum([len(s) for s in watched]))
        alarms = drift_alarms(reference, np.concatenate(watched), looks, providers,
                              starts=[w.start for w in windows[reference_count:]], window=WINDOWS[config.window][1])
    else:
        notes.append("one window only: no drift alarms (they compare the windows after the reference windows with "
                     "them)")
    return MonitorResult(config.window, tuple(windows), tuple(every), tuple(alarms),
                         tuple(w.start for w in windows[:reference_count]), seed, tuple(notes))


def _short(iso: str) -> str:
    """``2026-11-27T10:00:00Z`` → ``2026-11-27 10:00``."""
    return iso[:16].replace("T", " ")


def _window_table(headline: pd.DataFrame, shares: pd.DataFrame, column: str, names: list[str], others: bool, *,
                  ee_d: bool) -> list[str]:
    """Windows as rows, the ``names`` providers' ``column`` shares as columns (``others``: the rest summed), and EE-D
    with its interval (``ee_d``)."""
    wide = shares.pivot_table(index="window", columns="provider", values=column, aggfunc="first")
    header = ["window", "requests", *names, *(["all others"] if others else []), *(["EE-D [interval]"] * ee_d)]
    rows = []
    for row in headline.itertuples():
        values = wide.loc[row.window] if row.window in wide.index else None
        cells = [_short(row.window), f"{row.requests:,}"]
        for name in names:
            share = values.get(name) if values is not None else None
            cells.append("—" if share is None or share != share else f"{share:.1%}")
        if others:
            rest = values.drop(labels=names, errors="ignore").sum() if values is not None else float("nan")
            cells.append(f"{rest:.1%}")
        if ee_d:
            interval = "" if row.ee_d_low != row.ee_d_low else f" [{row.ee_d_low:.3f}, {row.ee_d_high:.3f}]"
            cells.append(f"{row.ee_d:.3f}{interval}")
        rows.append(cells)
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    return ["  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
            for cells in (header, *rows)]


def monitor_text(result: MonitorResult, *, every: bool = False) -> list[str]:
    """The text ``audit-log --window`` prints: a table of windows (rows) by the top providers' retrieval shares
    (columns; the rest summed as "all others"), EE-D with its interval, the changes, each window's findings, and the
    alarms."""
    from .ledger import TOP_PROVIDERS, top_with_others

    shares = result.shares_table()
    totals = shares.groupby("provider", as_index=False)["retrieval_share"].sum()
    chosen = top_with_others(totals, group="provider", by="retrieval_share", summed=("retrieval_share",),
                             n=None if every else TOP_PROVIDERS, what="retrieval share summed over windows")
    names = chosen.shown["provider"].tolist()
    headline = result.headline_table()
    lines = [f"Fairness over time: {len(result.windows)} {result.look} windows (UTC), "
             f"shares of retrieval exposure per provider ({chosen.rule}); EE-D with its interval; seed "
             f"{result.seed}.", ""]
    lines += _window_table(headline, shares, "retrieval_share", names, chosen.truncated, ee_d=True)
    if shares["attributed_share"].notna().any():
        lines += ["", "Shares of citations (attributed exposure) per provider:"]
        lines += _window_table(headline, shares, "attributed_share", names, chosen.truncated, ee_d=False)
    if "ee_r" in headline and headline["ee_r"].notna().any():
        lines.append("EE-R per window: " + ", ".join(f"{_short(r.window)} {r.ee_r:.3f}" for r in headline.itertuples()
                                                     if r.ee_r == r.ee_r))
    lines += ["", "Deployment changes:" if result.changes else "Deployment changes: none logged or given."]
    lines += [f"  - {c.at}: {c.label} ({'from the traces' if c.source == 'traces' else 'given'})"
              for c in result.changes]
    lines += ["", "Findings per window (tests over the window's queries, Holm-adjusted across the providers):"]
    for w in result.windows:
        lines += [f"  {_short(w.start)}:"] + [f"    - [{f.severity.value}] {f.text}" for f in w.findings]
    reference = (f"the first {len(result.reference)} window(s), {_short(result.reference[0])} to "
                 f"{_short(result.reference[-1])}" if result.reference else "none")
    lines += ["", f"Drift alarms (always-valid over the {result.look} looks, false alarms ≤ 5 % over providers and "
                  f"looks; reference: {reference}):"]
    lines += [f"  - {a.text}" for a in result.alarms] or ["  - none: no provider's share moved beyond noise."]
    lines += [f"note: {n}" for n in result.notes]
    return lines
