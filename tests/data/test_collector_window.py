"""A `collect` store selected by service and time window (fairrag_core.data.store_window): a store of two services
across three hours; only the files that can hold the window are opened; traces are kept by their root span's start
in [since, until); a selection that finds nothing says what the store holds; times read as ISO 8601 UTC or before
now."""

import copy
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from fairrag_core.data import assets_dir, load_served
from fairrag_core.data.collector import TraceStore
from fairrag_core.data.store_window import (
    StoreWindow,
    is_store,
    load_selected,
    load_store,
    parse_when,
    select_files,
    services,
    store_hours,
    store_summary,
    when_arg,
)
from fairrag_core.data.traces import slim_export
from fairrag_core.errors import InvalidParameterError
from tests.data.test_traces import served

HOUR = datetime(2026, 11, 27, 10, tzinfo=UTC)
DEMO_TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"


def _at(export: dict, service: str, start: datetime) -> dict:
    """The export with every trace moved to start at ``start`` (+ one second per trace) and its resource named."""
    export = copy.deepcopy(export)
    traces: dict[str, list] = {}
    for rs in export["resourceSpans"]:
        rs["resource"] = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
        for scope in rs["scopeSpans"]:
            for span in scope["spans"]:
                traces.setdefault(span["traceId"], []).append(span)
    for j, spans in enumerate(traces.values()):
        delta = int((start + timedelta(seconds=j)).timestamp()) * 10**9 - min(int(s["startTimeUnixNano"])
                                                                               for s in spans)
        for span in spans:
            for key in ("startTimeUnixNano", "endTimeUnixNano"):
                if key in span:
                    span[key] = str(int(span[key]) + delta)
    return export


def make_store(folder):
    """The demo export's 33 lines as two services (even lines svc-a, odd svc-b), line i received in hour i % 3 from
    10:00 UTC, its traces starting at 10 minutes past, one second apart. Returns {line: (service, hour)}."""
    store = TraceStore(folder)
    placed = {}
    lines = [json.loads(text) for text in DEMO_TRACES.read_text(encoding="utf-8").splitlines() if text.strip()]
    for i, export in enumerate(lines):
        service, hour = ("svc-a" if i % 2 == 0 else "svc-b"), HOUR + timedelta(hours=i % 3)
        start = hour + timedelta(minutes=10, seconds=i)
        store.append([slim_export(_at(export, service, start))], now=start)
        placed[i] = (service, hour)
    return placed


@pytest.fixture
def store(tmp_path):
    make_store(tmp_path / "store")
    return tmp_path / "store"


def _starting(log, since, until):
    return [e for e in log.entries if since <= parse_when(e.timestamp) < until]


def test_a_service_and_window_open_only_their_hours_and_keep_traces_by_root_start(store):
    window = StoreWindow("svc-a", "2026-11-27T11", "2026-11-27T12")
    # hour 10 ends at the window's start: not opened; hour 12 begins at its end: opened (spans received late)
    assert [p.relative_to(store).as_posix() for p in select_files(store, window)] == [
        "svc-a/2026-11-27T11.jsonl", "svc-a/2026-11-27T12.jsonl"]
    log = load_store(store, window)
    every = load_served(store / "svc-a")  # the whole service, read as before
    expected = _starting(every, HOUR + timedelta(hours=1), HOUR + timedelta(hours=2))
    assert len(log) == len(expected) > 10
    assert [s[1:] for s in served(log)] == [s[1:] for s in served(replace(every, entries=tuple(expected)))]
    assert [e.line for e in log.entries] == list(range(1, len(log) + 1)) and log.format == "otlp"
    outside = [n for n in log.notes if "started outside the window" in n]
    assert outside == [f"{len(_starting(every, HOUR + timedelta(hours=2), HOUR + timedelta(hours=3))):,} of the "
                       f"{len(log) + len(_starting(every, HOUR + timedelta(hours=2), HOUR + timedelta(hours=3))):,} "
                       "traces read started outside the window (service svc-a, 2026-11-27T11:00:00Z to "
                       "2026-11-27T12:00:00Z); they are left out"]
    # the sha256 is of the files opened: another window of other hours is another input
    assert log.sha256 != every.sha256 != load_store(store, StoreWindow("svc-a", until="2026-11-27T11")).sha256


def test_no_window_reads_the_store_as_before_and_a_window_alone_spans_every_service(store):
    assert served(load_selected(store, StoreWindow())) == served(load_served(store))
    since = HOUR + timedelta(hours=2)
    both = load_store(store, StoreWindow(since=since.isoformat()))
    assert len(both) == len(_starting(load_served(store), since, since + timedelta(days=1)))
    assert {p.parent.name for p in select_files(store, StoreWindow(since=since.isoformat()))} == {"svc-a", "svc-b"}


def test_the_store_and_one_service_folder_are_stores_and_say_what_they_hold(store, tmp_path):
    hours = store_hours(store)
    assert {s: [h.hour for h, _ in files] for s, files in hours.items()} == {"svc-a": [10, 11, 12],
                                                                             "svc-b": [10, 11, 12]}
    assert store_summary(hours) == "the store holds services svc-a, svc-b from 2026-11-27T10 to 2026-11-27T12"
    assert is_store(store) and is_store(store / "svc-b") and services(store / "svc-b") == ["svc-b"]
    assert not is_store(DEMO_TRACES) and not is_store(tmp_path) and services(tmp_path) == ()
    assert served(load_store(store / "svc-b", StoreWindow("svc-b"))) == served(load_served(store / "svc-b"))


@pytest.mark.parametrize(("window", "what"), [
    (StoreWindow("svc-c"), "no service 'svc-c'"),
    (StoreWindow(since="2026-11-28"), "no hour of the store is in the window (2026-11-28T00:00:00Z to the end)"),
    (StoreWindow("svc-a", "2026-11-27T10:30", "2026-11-27T10:40"),
     "none of the 32 traces read started in the window (service svc-a, 2026-11-27T10:30:00Z to 2026-11-27T10:40:00Z)"),
])
def test_a_selection_of_nothing_names_what_the_store_holds(store, window, what):
    with pytest.raises(InvalidParameterError) as err:
        load_store(store, window)
    assert str(err.value) == (f"{store}: {what}; the store holds services svc-a, svc-b from 2026-11-27T10 to "
                              "2026-11-27T12; choose --service and --since/--until among them")
    assert "\n" not in str(err.value)


def test_a_window_of_no_store_and_a_backward_window_are_refused(store):
    with pytest.raises(InvalidParameterError, match=r"select from a `collect` store; .* is not one .*: drop them"):
        load_selected(DEMO_TRACES, StoreWindow(since="2026-11-27"))
    with pytest.raises(InvalidParameterError, match="--since 2026-11-28 is not before --until 2026-11-27"):
        StoreWindow(since="2026-11-28", until="2026-11-27")


def test_times_read_as_iso_utc_or_before_now():
    now = datetime(2026, 11, 28, 6, 30, tzinfo=UTC)
    assert parse_when("24h", now) == now - timedelta(hours=24)
    assert parse_when("7d", now) == now - timedelta(days=7) and parse_when("90m", now) == now - timedelta(minutes=90)
    assert when_arg("2026-11-27T10:30:00+02:00") == "2026-11-27T08:30:00Z"
    assert when_arg("2026-11-27T10") == "2026-11-27T10:00:00Z"
    relative = parse_when(when_arg("1h"))  # resolved when read: the reproduce command names the same window
    assert timedelta(minutes=59) < datetime.now(UTC) - relative < timedelta(minutes=61)
    with pytest.raises(Exception, match="cannot read the time 'yesterday'"):
        when_arg("yesterday")
