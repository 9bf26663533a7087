"""Select what a ``collect`` store holds by service and time window: the one selection that ``audit-log``,
``compare-runs`` and the app's Served tab call (``--service NAME --since T --until T``).

A store (:mod:`~fairrag_core.data.collector`) is a folder of ``<service>/<YYYY-MM-DDTHH>[.NNN].jsonl`` files, one
per service and hour of receipt; ``STORE/<service>`` (hour files only) is a store of one service. A selection
(:class:`StoreWindow`) opens only the files of the chosen service whose hour can hold a trace of the window: hour
``H`` holds spans received in ``[H, H + 1 h)``, and a span is received after its trace started, so a file is opened
when ``H + 1 h > since`` and ``H < until +`` :data:`LATE` (the spans of a trace that started just before ``until``
arrive after it: the SDK's batch processor waits up to 5 s, and a trace's root span ends last). Of the traces read,
those whose root span started in ``[since, until)`` are kept (:attr:`LogEntry.timestamp
<fairrag_core.data.traces.LogEntry>`); the others are counted in a note.

Times are UTC: an ISO 8601 date or time (``2026-11-27``, ``2026-11-27T10``, ``2026-11-27T10:30:00Z``, with an offset
converted), or a span before now (``90m``, ``24h``, ``7d``), resolved when read so that a reproduce command names the
same window (:func:`when_arg`). A selection that finds nothing says what the store holds (:func:`store_summary`).

>>> when_arg("2026-11-27T10:30+02:00"), when_arg("2026-11-27")
('2026-11-27T08:30:00Z', '2026-11-27T00:00:00Z')
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..errors import DataFormatError, InvalidParameterError

__all__ = ["StoreWindow", "LATE", "parse_when", "when_arg", "store_hours", "is_store", "store_summary",
           "select_files", "load_store", "load_selected", "services"]

#: How long after a trace's start its spans may still be received (see the module docstring): the hour files up to
#: ``until + LATE`` are opened.
LATE = timedelta(minutes=5)

_HOUR_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2})(?:\.\d{3})?\.jsonl$")
_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhd])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}
_WHEN = ("an ISO 8601 UTC date or time (2026-11-27, 2026-11-27T10:30:00Z) or a span before now (90m, 24h, 7d)")


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """A time as an aware UTC datetime: ISO 8601 (naive means UTC) or ``N[m|h|d]`` before ``now`` (default: now).

    >>> parse_when("24h", now=datetime(2026, 11, 28, 6, tzinfo=UTC)).isoformat()
    '2026-11-27T06:00:00+00:00'
    """
    relative = _RELATIVE.match(str(text))
    if relative:
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[relative[2]]: float(relative[1])})
    try:
        when = datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise InvalidParameterError(f"cannot read the time {text!r}: give {_WHEN}") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _iso(when: datetime) -> str:
    text = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{when.microsecond:06d}".rstrip("0") if when.microsecond else "") + "Z"


def when_arg(text: str) -> str:
    """``--since``/``--until``: the time as ISO 8601 UTC text (a relative time resolved now), for the settings and
    the reproduce command. Raises :class:`argparse.ArgumentTypeError` (argparse's message)."""
    try:
        return _iso(parse_when(text))
    except InvalidParameterError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


@dataclass(frozen=True)
class StoreWindow:
    """A selection of a store: one ``service`` (None: every one) and the window ``[since, until)`` of root-span start
    times (ISO texts or times, :func:`parse_when`; None: unbounded)."""

    service: str | None = None
    since: str | None = None
    until: str | None = None

    def __post_init__(self) -> None:
        if self.since is not None and self.until is not None and self.start >= self.end:
            raise InvalidParameterError(f"--since {self.since} is not before --until {self.until}; give a window "
                                        "that starts before it ends")

    @classmethod
    def of(cls, config: object) -> StoreWindow:
        """The selection a settings object (``audit-log``'s or ``compare-runs``') names."""
        return cls(getattr(config, "service", None), getattr(config, "since", None), getattr(config, "until", None))

    @property
    def given(self) -> bool:
        return self.service is not None or self.since is not None or self.until is not None

    @property
    def start(self) -> datetime | None:
        return None if self.since is None else parse_when(self.since)

    @property
    def end(self) -> datetime | None:
        return None if self.until is None else parse_when(self.until)

    def describe(self) -> str:
        """``service a, 2026-11-27T10:00:00Z to 2026-11-28T00:00:00Z`` (what a label and a message name)."""
        parts = [f"service {self.service}"] if self.service is not None else []
        if self.since is not None or self.until is not None:
            parts.append(f"{_iso(self.start) if self.since else 'the start'} to "
                         f"{_iso(self.end) if self.until else 'the end'}")
        return ", ".join(parts)

    def opens(self, hour: datetime) -> bool:
        """Whether the file of receipt hour ``hour`` can hold a trace that started in the window."""
        return ((self.since is None or hour + timedelta(hours=1) > self.start)
                and (self.until is None or hour < self.end + LATE))

    def keeps(self, timestamp: str | None) -> bool:
        """Whether a trace whose root span started at ``timestamp`` (ISO text; None: unknown) is in the window."""
        if self.since is None and self.until is None:
            return True
        if not timestamp:
            return False
        when = parse_when(timestamp)
        return (self.since is None or when >= self.start) and (self.until is None or when < self.end)


def store_hours(folder: str | os.PathLike) -> dict[str, list[tuple[datetime, Path]]] | None:
    """``{service: [(hour, file), …]}`` of a store (a service folder: its own name), in name order; None when
    ``folder`` is no store (not a folder, no hour files, or files not laid out as ``collect`` writes them)."""
    from .traces import trace_files

    folder = Path(folder)
    if not folder.is_dir():
        return None
    try:
        files = trace_files(folder)
    except DataFormatError:
        return None
    found: dict[str, list[tuple[datetime, Path]]] = {}
    depths = set()
    for file in files:
        parts = file.relative_to(folder).parts
        hour = _HOUR_FILE.match(parts[-1])
        if hour is None or len(parts) > 2:
            return None
        depths.add(len(parts))
        service = parts[0] if len(parts) == 2 else folder.resolve().name
        found.setdefault(service, []).append((datetime.strptime(hour[1], "%Y-%m-%dT%H").replace(tzinfo=UTC), file))
    return found if len(depths) == 1 else None


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a ``collect`` store or one service's folder of it (:func:`store_hours`)."""
    return store_hours(path) is not None


def store_summary(hours: dict[str, list[tuple[datetime, Path]]]) -> str:
    """``the store holds services a, b from 2026-11-27T10 to 2026-11-28T06`` (hours of receipt)."""
    every = [hour for files in hours.values() for hour, _ in files]
    names = sorted(hours)
    return (f"the store holds service{'s' if len(names) > 1 else ''} {', '.join(names)} from "
            f"{min(every):%Y-%m-%dT%H} to {max(every):%Y-%m-%dT%H}")


def _nothing(folder: Path, hours: dict, what: str) -> InvalidParameterError:
    return InvalidParameterError(f"{folder}: {what}; {store_summary(hours)}; choose --service and --since/--until "
                                 "among them")


def select_files(folder: str | os.PathLike, window: StoreWindow) -> list[Path]:
    """The store's files that can hold the window's traces (module docstring), in name order.

    Raises:
        InvalidParameterError: ``folder`` is no store, or the selection opens no file (the message says what the
            store holds).
    """
    folder = Path(folder)
    hours = store_hours(folder)
    if hours is None:
        raise InvalidParameterError(f"--service, --since and --until select from a `collect` store; {folder} is not "
                                    "one (a folder of <service>/<hour>.jsonl files): drop them")
    if window.service is not None and window.service not in hours:
        raise _nothing(folder, hours, f"no service {window.service!r}")
    chosen = [file for service, files in hours.items() if window.service in (None, service)
              for hour, file in files if window.opens(hour)]
    if not chosen:
        raise _nothing(folder, hours, f"no hour of the store is in the window ({window.describe()})")
    return sorted(chosen, key=lambda p: p.relative_to(folder).parts)


def load_store(folder: str | os.PathLike, window: StoreWindow, *, trace_map=None, collection=None):
    """The traces of a store's selection (:func:`select_files`) whose root span started in the window, as one RAG
    log of format ``otlp`` (:func:`~fairrag_core.data.rag_log.load_traces`' log, of the files opened: its sha256 is
    theirs, ``file_lines`` their lines; named by the chosen service's folder); the traces read but outside the window
    are counted in a note.

    Raises:
        InvalidParameterError: the selection opens no file, or no trace of it started in the window (the message says
            what the store holds).
        DataFormatError: as the trace reader (:func:`~fairrag_core.data.traces.read_traces`).
    """
    from .rag_log import RagLog
    from .traces import read_traces

    folder = Path(folder)
    files = select_files(folder, window)
    export = read_traces(folder, trace_map=trace_map, files=files)
    kept = [entry for entry in export.traces if window.keeps(entry.timestamp)]
    if not kept:
        raise _nothing(folder, store_hours(folder), f"none of the {len(export.traces):,} traces read started in the "
                                                    f"window ({window.describe()})")
    notes = list(export.notes)
    if len(kept) < len(export.traces):
        notes.append(f"{len(export.traces) - len(kept):,} of the {len(export.traces):,} traces read started outside "
                     f"the window ({window.describe()}); they are left out")
    # named by its service when one is chosen (STORE/<service> is that service's store: the same selection)
    source = folder / window.service if window.service and (folder / window.service).is_dir() else folder
    log = RagLog(str(source), tuple(replace(entry, line=i) for i, entry in enumerate(kept, start=1)),
                 export.sha256, format="otlp", file_lines=export.file_lines, notes=tuple(notes))
    if collection is not None:
        log.check_against(collection)
    return log


def load_selected(path: str | os.PathLike, window: StoreWindow, *, collection=None, trace_map=None):
    """What ``audit-log``, ``compare-runs`` and the app read: a store's selection when ``window`` selects
    (:func:`load_store`), else the served file or folder as :func:`~fairrag_core.data.rag_log.load_served` reads it.

    Raises:
        InvalidParameterError: a selection of a path that is no store, or one that finds nothing.
    """
    from .rag_log import load_served

    if window.given:
        return load_store(path, window, trace_map=trace_map, collection=collection)
    return load_served(path, collection=collection, trace_map=trace_map)


def services(folder: str | os.PathLike) -> Sequence[str]:
    """The services a store holds, in name order (empty for no store): the app's choices."""
    hours = store_hours(folder)
    return sorted(hours) if hours else ()
