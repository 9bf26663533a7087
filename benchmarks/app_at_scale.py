"""Is the app responsive on a 60,000-document collection? (issue 30, Must have 5)

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/app_at_scale.py /tmp/debian-collection/debian \\
        [--stops 8] [--profile prof.out]

The collection is a folder in the loaders' format (corpus.jsonl, queries.jsonl, qrels.txt); its parent folder is
served as ``$FAIRRAG_DATA_DIR``, so the app offers it in the sidebar as ``<folder> (data folder)`` — the way a
server opens it (issue 30, Must have 4). The same steps run on the demo collection (running-shoes) first, and the
figures are printed side by side.

Everything is timed server side, in this process, with Streamlit's AppTest driving the real app (app.py and its
pages, the same services and caches a browser session uses; no browser, no network):

* **open**: the first run of a fresh session with the collection selected, with cold Streamlit caches but the
  retrieval index already on disk (built before timing: ``index_store``) — loading the collection, opening its index,
  and the Playground for its first example query;
* **open again**: the same in a second session of the same server (the collection and its index are then shared
  from Streamlit's caches: what every later visitor waits);
* **first query**: typing another query of the collection (scoring, the query's α stops, sampling, the page);
* **α stop**: each of the query's α stops in turn at the default K (the sidebar's Candidates K, 20), as the slider
  steps through them. ``fragment`` is the Playground's α fragment alone (what moving the slider runs in a browser:
  the page's ``@st.fragment``); ``page`` is AppTest's whole-script rerun, an upper bound (AppTest cannot rerun a
  fragment alone);
* **Audit**: the Audit page's default run (every labelled query, α = 0, 2, 8 and deterministic, exposure only):
  its time, the peak of memory traced while it runs (``tracemalloc``: Python and NumPy allocations) against the
  memory budget one step may allocate (``fairrag_core.checks.max_memory_bytes``), whether any step refused, and the
  time of the next rerun of the page (any widget moved there).

The targets (issue 30): first query ≤ 2 s with a warm index, each α stop ≤ 150 ms of server time at the default K,
the Audit's default run within the resource budget. ``--profile FILE`` writes cProfile statistics of the α fragments
on the large collection. Results: docs/scale.md.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
AUDIT = "app_pages/audit.py"
DEMO = "running-shoes"


@dataclass
class Figures:
    """What one collection measured."""

    name: str
    documents: int = 0
    providers: int = 0
    open_s: float = 0.0
    open_again_s: float = 0.0
    first_query_s: float = 0.0
    first_query_fragment_s: float = 0.0
    stop_fragment_ms: list[float] = field(default_factory=list)
    stop_page_ms: list[float] = field(default_factory=list)
    audit_s: float = 0.0
    audit_peak_mb: float = 0.0
    audit_refused: str = ""
    audit_rerun_s: float = 0.0
    budget_mb: float = 0.0


class FragmentClock:
    """Times every ``@st.fragment`` function the pages define (their own run, in the script thread), and profiles
    them while ``profile`` is set."""

    def __init__(self) -> None:
        import streamlit as st

        self.seconds: list[float] = []
        self.profile: cProfile.Profile | None = None
        real = st.fragment

        def fragment(func=None, **options):
            if func is None:
                return lambda f: fragment(f, **options)

            @functools.wraps(func)
            def timed(*args, **kwargs):
                start = time.perf_counter()
                if self.profile is not None:
                    self.profile.enable()
                try:
                    return func(*args, **kwargs)
                finally:
                    if self.profile is not None:
                        self.profile.disable()
                    self.seconds.append(time.perf_counter() - start)

            return real(timed, **options)

        st.fragment = fragment

    def last(self) -> float:
        return self.seconds[-1] if self.seconds else float("nan")


def _timed_run(at, clock: FragmentClock) -> tuple[float, float]:
    """Run ``at`` once; (whole run, its fragment) in seconds. Raises when the page failed."""
    clock.seconds.clear()
    start = time.perf_counter()
    at.run()
    took = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"the app failed: {at.exception[0].value}")
    return took, (clock.seconds[-1] if clock.seconds else float("nan"))


def _open(clock: FragmentClock, choice: str | None = None):
    """A fresh session of the app (what a new browser tab starts), with the sidebar's collection set to ``choice``,
    run once: (the session, the seconds its first run took). Raises when the page failed."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=600)
    if choice is not None:
        at.session_state["collection_choice"] = choice
    return at, _timed_run(at, clock)[0]


def _clear_caches() -> None:
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()


def measure(choice: str, source: str, clock: FragmentClock, *, stops: int, profile: cProfile.Profile | None
            ) -> Figures:
    """Open ``choice`` (the sidebar's entry for ``source``) in a fresh session and time the steps of the module
    docstring."""
    from fairrag_core import load_collection
    from fairrag_core.checks import max_memory_bytes
    from fairrag_core.retrieval import build_retriever

    coll = load_collection(source)
    build_retriever("bm25", coll.texts, collection=coll.name)  # the index on disk: "with a warm index"
    figures = Figures(coll.name, len(coll), len(set(coll.providers)))
    queries = [q.text for q in coll.queries]
    _clear_caches()
    at, figures.open_s = _open(clock, choice)
    assert at.session_state["settings"].collection == source, at.session_state["settings"].collection
    _, figures.open_again_s = _open(clock, choice)  # a second session of the same server
    at.text_input(key="query").set_value(queries[1] if len(queries) > 1 else "a query typed by hand")
    figures.first_query_s, figures.first_query_fragment_s = _timed_run(at, clock)
    options = list(at.select_slider(key="alpha").options)
    current = at.select_slider(key="alpha").value
    walk = [o for o in options if float(o) != float(current)][:stops]
    clock.profile = profile
    for stop in walk:
        at.select_slider(key="alpha").set_value(float(stop))
        page, fragment = _timed_run(at, clock)
        figures.stop_page_ms.append(page * 1000)
        figures.stop_fragment_ms.append(fragment * 1000)
    clock.profile = None

    at.switch_page(AUDIT)
    _timed_run(at, clock)
    tracemalloc.start()
    try:
        at.button(key="audit_run").click()
        figures.audit_s, _ = _timed_run(at, clock)
        figures.audit_peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    refused = [e.value for e in at.error if "FAIRRAG_MAX_MEMORY_MB" in e.value or "more than" in e.value]
    figures.audit_refused = refused[0] if refused else ""
    if not at.dataframe:
        raise RuntimeError("the audit showed no table; " + "; ".join(e.value for e in at.error))
    figures.audit_rerun_s, _ = _timed_run(at, clock)
    figures.budget_mb = max_memory_bytes() / 1e6
    return figures


def _ms(values: list[float], how: str) -> str:
    if not values:
        return "—"
    if how == "median":
        return f"{statistics.median(values):,.0f}"
    if how == "p90":
        return f"{sorted(values)[max(0, round(0.9 * len(values)) - 1)]:,.0f}"
    return f"{max(values):,.0f}"


def table(rows: list[Figures]) -> str:
    """The figures side by side, as a Markdown table."""
    lines = [("", *[f"{f.name}" for f in rows], "target"),
             ("documents · providers", *[f"{f.documents:,} · {f.providers:,}" for f in rows], ""),
             ("open the collection (s)", *[f"{f.open_s:.2f}" for f in rows], ""),
             ("open it again, a second session (s)", *[f"{f.open_again_s:.2f}" for f in rows], ""),
             ("first query, page (s)", *[f"{f.first_query_s:.2f}" for f in rows], "≤ 2 s"),
             ("first query, α fragment (s)", *[f"{f.first_query_fragment_s:.2f}" for f in rows], ""),
             ("α stops timed", *[f"{len(f.stop_fragment_ms)}" for f in rows], ""),
             ("α stop, fragment median (ms)", *[_ms(f.stop_fragment_ms, "median") for f in rows], "≤ 150 ms"),
             ("α stop, fragment p90 (ms)", *[_ms(f.stop_fragment_ms, "p90") for f in rows], ""),
             ("α stop, fragment max (ms)", *[_ms(f.stop_fragment_ms, "max") for f in rows], ""),
             ("α stop, whole page median (ms)", *[_ms(f.stop_page_ms, "median") for f in rows], ""),
             ("Audit default run (s)", *[f"{f.audit_s:.2f}" for f in rows], ""),
             ("Audit peak traced memory (MB)", *[f"{f.audit_peak_mb:,.0f} of {f.budget_mb:,.0f}" for f in rows],
              "≤ budget"),
             ("Audit refused by a check", *[f.audit_refused[:40] or "no" for f in rows], "no"),
             ("Audit page rerun after it (s)", *[f"{f.audit_rerun_s:.2f}" for f in rows], "")]
    out = [f"| {' | '.join(lines[0])} |", "|" + "---|" * len(lines[0])]
    out += [f"| {' | '.join(row)} |" for row in lines[1:]]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collection", type=Path, help="a collection folder (corpus.jsonl, queries.jsonl, qrels.txt)")
    parser.add_argument("--stops", type=int, default=8, help="α stops to time per collection (default 8)")
    parser.add_argument("--profile", type=Path, help="write cProfile statistics of the large collection's α stops")
    args = parser.parse_args(argv)
    folder = args.collection.resolve()
    scratch = Path(tempfile.mkdtemp(prefix="app-at-scale-"))
    os.environ["FAIRRAG_DATA_DIR"] = str(folder.parent)
    os.environ["FAIRRAG_RUNS"] = str(scratch / "runs.duckdb")
    os.environ.setdefault("FAIRRAG_UPLOADS", str(scratch / "uploads"))
    sys.path.insert(0, str(ROOT))

    from streamlit import logger

    logger.set_log_level("error")  # AppTest's "no ScriptRunContext" and widget-state notes
    clock = FragmentClock()
    _open(clock)  # imports and the first page once, untimed
    profile = cProfile.Profile() if args.profile else None
    rows = [measure(DEMO, DEMO, clock, stops=args.stops, profile=None),
            measure(f"{folder.name} (data folder)", str(folder), clock, stops=args.stops, profile=profile)]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; Streamlit caches cleared before each "
          "collection; indexes on disk")
    print(table(rows))
    if profile is not None:
        profile.dump_stats(args.profile)
        print(f"cProfile of the α stops: {args.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
