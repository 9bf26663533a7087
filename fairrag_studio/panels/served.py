"""The Audit page's "Served log or run" tab: pick a log or run (demo, upload, a file of the server's data folder
``$FAIRRAG_DATA_DIR``: :mod:`fairrag_studio.services.data_dir`), audit it, show the headline with intervals, the ledger,
the per-query drill-down and the report. Streamlit widgets only; the computing is in :mod:`fairrag_core.audit.rag_log`
and the tables in :mod:`fairrag_studio.views.served`.

Long because the tab offers every option audit-log reads and finds with (providers, trace map, retrieval choice, a
store's service and window, stated shares, merit rule), each a control with its help and its message's wording."""

from __future__ import annotations

import argparse
import re
from dataclasses import replace
from pathlib import Path

import streamlit as st

from fairrag_core import FairRAGError
from fairrag_core.audit.compare import documents_of_logs
from fairrag_core.audit.log_report import default_ledger_scope, log_findings, log_ledger
from fairrag_core.audit.merit import DEFAULT_GRADES, threshold_arg
from fairrag_core.audit.rag_log import SOURCE_LABELS, LogAuditConfig, audit_rag_log
from fairrag_core.audit.target_shares import load_target_shares
from fairrag_core.data.formats import is_log, upload_types
from fairrag_core.data.store_window import StoreWindow, is_store, services, store_hours, store_summary, when_arg
from fairrag_core.data.traces import MultipleRetrievals, TraceMap
from fairrag_core.errors import InvalidParameterError
from fairrag_core.options import COLLECTION, MULTI_RETRIEVAL, PROVIDER_FROM, PROVIDER_MAP, TRACE_MAP, options_of
from fairrag_core.record import RunKind

from .. import charts
from ..services import resources, uploads
from ..services.data_dir import DATA_DIR_ENV, checked_data_file, checked_data_store, data_dir, data_files, data_stores
from ..services.identity import (
    InputIdentity,
    collection_identity,
    collection_label,
    qrels_identity,
    record_inputs,
    reproduce_command,
    served_identity,
    served_kind,
    with_inputs,
)
from ..services.identity import fingerprint as identity_fingerprint
from ..services.state import Settings, owner_key
from ..views import explain
from ..views.audit import display_ledger, groupings
from ..views.report import table_csv
from ..views.served import (
    DEMO_LOG,
    build_log_report,
    headline_table,
    lines_table,
    measured_sources,
    queries_table,
    read_served,
    save_provider_map,
    save_served_upload,
    save_target_shares,
    served_label,
)
from .what_if import render_what_if
from .widgets import chart_with_downloads, explainer, glossary_note, markdown_text

__all__ = ["render_served_tab", "show_served"]


def _served_source(settings: Settings):
    """The log or run the user picked (demo, upload — a new one, or one this browser uploaded before a reload —,
    or a file of the server's data folder when ``$FAIRRAG_DATA_DIR`` names one), the collection to check it
    against, and whether it is an upload."""
    try:
        folder = data_dir()
    except FairRAGError as err:  # the variable names no folder: say so, offer the rest
        st.error(str(err))
        folder = None
    sources = ["Demo log", "Upload", *(["Data folder"] if folder is not None else [])]
    choice = st.radio("Source", sources, horizontal=True, key="served_source",
                      help="A RAG log is JSONL, one served answer per line (query_id, ranking, optional query, "
                           "answer, citations, session, timestamp). A run file is expeval/TREC with a sample column "
                           "or TREC Fair 2022; each sample counts as one served ranking."
                           + (f" Data folder: the files in ${DATA_DIR_ENV} on the server." if folder else ""))
    if choice == "Demo log":
        st.caption("200 answers served by a deterministic BM25 + SmolLM2 help bot over running-shoes "
                   "(assets/logs; provenance in assets/README.md).")
        return (DEMO_LOG if DEMO_LOG.exists() else None), "running-shoes", False
    if choice == "Upload":
        upload = st.file_uploader("Log (.jsonl) or run file", type=upload_types(),
                                  key="served_upload")
        if upload is None:
            return _kept_upload(), settings.collection, True
        try:  # a trace export is slimmed as it is read (uploads.slim_trace_upload); other files are saved as sent
            path = save_served_upload(upload.name, upload, resources.UPLOAD_ROOT)
        except FairRAGError as err:  # too large for the upload limit
            st.error(f"That file was not saved: {err}")
            path = None
        return path, settings.collection, True
    stores = data_stores(folder)
    files = [*(f"{store}/" for store in stores), *data_files(folder)]
    if not files:
        st.info(f"No log or run files in {folder} (${DATA_DIR_ENV}); put .jsonl logs or run files there, or upload "
                "one.")
        return None, settings.collection, False
    picked = st.selectbox(f"File in {folder}", files, key="served_file",
                          format_func=lambda f: f"{f} (collected store)" if f.endswith("/") else f,
                          help=f"The app reads server files from ${DATA_DIR_ENV} only: regular files inside that "
                               "folder, symlinks resolved, and the stores `fairrag collect` writes there.")
    try:
        if picked.endswith("/"):  # a `collect` store: selected by service and window below
            return checked_data_store(picked.rstrip("/") or ".", folder), settings.collection, False
        return checked_data_file(picked, folder), settings.collection, False
    except FairRAGError as err:  # changed on disk since it was listed
        st.error(f"That file was not read: {err}")
        return None, settings.collection, False


def _kept_upload():
    """With the uploader empty (e.g. after a reload): the logs and runs this browser uploaded before, kept under
    its owner key (:mod:`fairrag_studio.services.uploads`); the newest is offered first."""
    kept = {item.path: item for item in uploads.kept_uploads(resources.UPLOAD_ROOT, owner_key()).served}
    if not kept:
        return None
    picked = st.selectbox("Or one of your earlier uploads", list(kept), key="served_kept",
                          format_func=lambda p: f"{kept[p].text} · {kept[p].counts}",
                          help="Kept for this browser (the owner key in this page's address), across reloads.")
    return Path(picked)


#: The :class:`LogAuditConfig` fields the served tab's fingerprints held from the start (issue 20), at any value.
_FIRST_FINGERPRINTED = frozenset({"per_claim", "entail_threshold", "control_margin", "skip_degenerate", "min_support",
                                 "k", "attribution", "min_rel", "user_model", "patience", "utility", "n_boot",
                                 "level", "seed"})


def _settings_fingerprint(config: LogAuditConfig, attribution: str, attributor: str) -> dict:
    """The settings that make two log audits give the same numbers (not where the file lies).

    A field :class:`LogAuditConfig` gained later (the trace map, the provider source, the what-if grid and N…)
    counts only when it is away from its default: an audit stored before the field existed keeps its fingerprint,
    and is reopened instead of re-run, as long as the new option is unused."""
    defaults = LogAuditConfig().to_dict()
    settings = {k: v for k, v in config.to_dict().items()
                if k != "log" and (k in _FIRST_FINGERPRINTED or v != defaults[k])}
    return {"config": settings, "attributor": attributor if attribution in ("judge", "both") else None}


_AUDIT_OPTIONS = options_of(LogAuditConfig)  # audit-log's options: their flags and help, declared once there
#: The page's control for each reading option of audit-log, so that a message written for the command line names
#: what the page offers (:func:`_as_on_page`).
_CONTROLS = {PROVIDER_FROM.flags[0]: "'Providers from'", PROVIDER_MAP.flags[0]: "'Providers from' (a provider map)",
             MULTI_RETRIEVAL.flags[0]: "'Several retrieval spans'", TRACE_MAP.flags[0]: "'Trace map'",
             COLLECTION.flags[0]: "the sidebar's collection",
             _AUDIT_OPTIONS["target_shares"].flags[0]: "'Stated shares'",
             _AUDIT_OPTIONS["merit_grades"].flags[0]: "'Merit tiers'",
             _AUDIT_OPTIONS["merit_threshold"].flags[0]: "'Merit threshold'",
             **{_AUDIT_OPTIONS[name].flags[0]: f"'{name.capitalize()}'" for name in ("service", "since", "until")}}

#: Where the documents' providers come from: the sidebar's collection, or the log itself
#: (:class:`~fairrag_core.data.traces.ProviderSource` text for a metadata key, or a provider map).
_PROVIDERS = {"collection": "the collection", "metadata": "a metadata key", "domain": "the domain of a URL key",
              "map": "a provider map (CSV)"}


def _as_on_page(message: str) -> str:
    """A loader's or the audit's message with each command-line flag replaced by the page's control for it."""
    for flag, control in sorted(_CONTROLS.items(), key=lambda item: -len(item[0])):
        message = re.sub(rf"{re.escape(flag)}(?![\w-])", control, message)
    return message


def _reading() -> tuple[str, str | None, str | None, MultipleRetrievals]:
    """Where the providers come from (a :data:`_PROVIDERS` key) and the retrieval choice, as :class:`LogAuditConfig`'s
    ``provider_from``, ``provider_map`` (an uploaded CSV's saved path; None until one is uploaded) and
    ``multi_retrieval``."""
    cols = st.columns([2, 1, 1])
    source = cols[0].radio("Providers from", list(_PROVIDERS), format_func=_PROVIDERS.get, horizontal=True,
                           key="served_providers",
                           help="Without a collection, each document's provider comes from the log: a key of its "
                                "logged metadata (e.g. source), the domain of a logged URL, or a CSV "
                                "doc_id,provider[,group columns]. EE-R and the fair target then need relevance labels "
                                "the log does not have.")
    multi = MultipleRetrievals(cols[2].selectbox("Several retrieval spans", [m.value for m in MultipleRetrievals],
                                                 key="served_multi", help=MULTI_RETRIEVAL.help))
    if source == "collection":
        return source, None, None, multi
    if source in ("metadata", "domain"):
        key = cols[1].text_input("Metadata key", "source" if source == "metadata" else "url",
                                 key=f"served_{source}_key")
        text = f"metadata.{key.strip()}"
        return source, (text if source == "metadata" else f"domain:{text}"), None, multi
    upload = cols[1].file_uploader("Provider map", type=["csv"], key="served_provider_map")
    if upload is None:
        return source, None, None, multi
    return source, None, str(save_provider_map(upload.name, upload.getvalue(), resources.UPLOAD_ROOT)), multi


def _trace_map_and_targets() -> tuple[tuple[str, ...], str | None]:
    """The trace map (``KEY=ATTRIBUTE`` words, as ``--trace-map`` takes them, comma-separated) and the stated shares
    (an uploaded provider,share file's saved path, as ``--target-shares`` takes it; None until one is uploaded)."""
    cols = st.columns(2)
    text = cols[0].text_input("Trace map", "", key="served_trace_map",
                              placeholder="query_id=app.qid, answer=app.answer", help=TRACE_MAP.help)
    upload = cols[1].file_uploader("Stated shares", type=["csv", "json"], key="served_target_shares",
                                   help=_AUDIT_OPTIONS["target_shares"].help)
    words = tuple(w.strip() for w in text.split(",") if w.strip())
    if upload is None:
        return words, None
    path = save_target_shares(upload.name, upload.getvalue(), resources.UPLOAD_ROOT)
    load_target_shares(path)  # a bad file: its one-line message, before the audit
    return words, str(path)


def _merit_rule() -> tuple[int, float | None]:
    """The merit rule of exposure against merit from the system's own scores, as ``--merit-grades`` and
    ``--merit-threshold`` take it: tiers by score quantile within each query's logged candidates, or (a threshold
    given) meritorious from that score on."""
    cols = st.columns(2)
    grades = int(cols[0].number_input("Merit tiers", 2, 100, DEFAULT_GRADES, key="served_merit_grades",
                                      help=_AUDIT_OPTIONS["merit_grades"].help))
    text = cols[1].text_input("Merit threshold", "", key="served_merit_threshold", placeholder="none (tiers)",
                              help=_AUDIT_OPTIONS["merit_threshold"].help).strip()
    try:
        return grades, (threshold_arg(text) if text else None)
    except argparse.ArgumentTypeError as err:  # its one-line message, before the audit
        raise InvalidParameterError(f"'Merit threshold': {err}") from None


def _window(path) -> StoreWindow:
    """For a ``collect`` store: the service and the window of root-span start times to audit, as ``audit-log
    --service --since --until`` takes them (:class:`~fairrag_core.data.store_window.StoreWindow`); a relative time
    (``24h``) is resolved once per session, so that the audit and its fingerprint stay put across reruns."""
    found = services(path)
    st.caption(f"A collected store: {store_summary(store_hours(path))} (hours of receipt, UTC).")
    cols = st.columns(3)
    service = cols[0].selectbox("Service", ["every service", *found], key="served_service",
                                help="The deployment's service.name: audit only its traces.")
    resolved = st.session_state.setdefault("served_window_times", {})
    times = []
    for col, name in zip(cols[1:], ("since", "until")):
        text = col.text_input(name.capitalize(), "", key=f"served_{name}", placeholder="2026-11-27T10:00 or 24h",
                              help=_AUDIT_OPTIONS[name].help).strip()
        if text and text not in resolved:
            resolved[text] = when_arg(text)
        times.append(resolved[text] if text else None)
    return StoreWindow(None if service == "every service" else service, *times)


def _served_audit(settings: Settings, store, path, source_collection, uploaded: bool = False):
    """Audit the chosen log with the chosen settings (cached per file content and settings, and reopened from the
    store when this browser audited the same input with the same settings before); show its errors."""
    source, provider_from, provider_map, multi = _reading()
    from_log = source != "collection"
    if source == "map" and provider_map is None:
        st.info("Upload the provider map (doc_id,provider[,group columns]).")
        return None, None
    if from_log:
        coll = None
        st.caption("Providers from the log: its documents are the collection; no relevance labels, so EE-R and the "
                   "fair target are not measured.")
    else:
        coll = resources.collection(source_collection)
        st.caption(f"Doc ids are checked against **{markdown_text(collection_label(source_collection))}** "
                   f"({len(coll)} documents); "
                   "its relevance labels give EE-R and the fair target.")
    cols = st.columns(4)
    attribution = cols[0].selectbox("Attribution", ["auto", "none", "logged", "judge", "both"], key="served_attr",
                                    help="logged: the citations the system showed; judge: the sidebar's NLI "
                                         "attributor checks every shown document against the answer (slow); both: "
                                         "side by side; auto: logged if the log has citations.")
    k = int(cols[1].number_input("k (0 = whole ranking)", 0, 100, 0, key="served_k",
                                 help="How many documents the generator read, when rankings are longer."))
    user_model = cols[2].selectbox("Second user model", ["step", "gerr", "rbp"], key="served_model",
                                   help="step: the paper's EE-D/EE-R only; gerr/rbp add expeval's normalised metrics.")
    patience = cols[3].number_input("patience", 0.05, 0.95, 0.5, 0.05, key="served_patience",
                                    disabled=user_model == "step")
    pressed = st.button("Audit the served rankings", type="primary", key="served_run")
    if path is None:
        st.info("Pick a log or a run file.")
        return None, coll
    try:
        trace_map, target_shares = _trace_map_and_targets()
        merit_grades, merit_threshold = _merit_rule()
        window = _window(path) if Path(path).is_dir() and is_store(path) else StoreWindow()
        log, kind = read_served(path, coll, TraceMap.parse(trace_map, multiple=multi), window)
        if log.format != "otlp":  # the retrieval choice reads trace exports only (as audit-log's)
            multi = MultipleRetrievals.SKIP
        notes = ()
        if from_log:
            documents = documents_of_logs([log], provider_from=provider_from, provider_map=provider_map)
            coll, notes = documents.collection, documents.notes
        citation = settings.citation.citation_fields() | {"control_margin": None}  # no pool in a log
        config = LogAuditConfig(log=str(path), k=k or None, attribution=attribution, user_model=user_model,
                                patience=float(patience), seed=settings.seed, multi_retrieval=multi,
                                provider_from=provider_from, provider_map=provider_map, service=window.service,
                                since=window.since, until=window.until, trace_map=trace_map,
                                target_shares=target_shares, merit_grades=merit_grades,
                                merit_threshold=merit_threshold, **citation)
        if from_log and attribution in ("judge", "both"):
            raise InvalidParameterError("the NLI judge reads the documents' texts, which only a collection gives; "
                                        "take providers from the collection, or attribution 'logged'")
        served = (InputIdentity(kind, log.name, log.sha256, str(path), lines=log.file_lines, rankings=len(log),
                                format=log.format) if Path(path).is_dir()  # a store: the files of its selection
                  else served_identity(path, kind, rankings=len(log), sha256=log.sha256, upload=uploaded,
                                       format=log.format))
    except argparse.ArgumentTypeError as err:  # a time the window cannot read
        st.error(f"That window was not read: {err}")
        return None, coll
    except FairRAGError as err:
        st.error(f"That {'log' if is_log(path) else 'file'} was not audited: {_as_on_page(str(err))}")
        return None, coll
    if uploaded:
        _remember(served)
    if from_log:  # the collection is the log's documents, named by their providers' sha256; no qrels
        source_collection = coll.name
        inputs = [served, InputIdentity("collection", coll.name, coll.sha256)]
    else:
        inputs = [served, collection_identity(source_collection)]
        qrels = qrels_identity(source_collection)
        if qrels is not None:
            inputs.append(qrels)
    fingerprint = identity_fingerprint("audit-log", inputs,
                                       _settings_fingerprint(config, attribution, settings.attributor))
    key = (served.sha256, source_collection, fingerprint)
    runs, saved = st.session_state["served_runs"], st.session_state["served_saved"]
    if pressed and key not in runs:
        before = store.find(fingerprint, kind=RunKind.AUDIT_LOG.value, collection=source_collection)
        if before is not None:
            runs[key], saved[key] = store.load(before), before
            st.session_state["served_reopened"].add(key)
        else:
            run = _audit(log, coll, config, settings, attribution, None if from_log else source_collection)
            if run is not None and (log.notes or notes):  # what the loader left out, what was assumed
                extra = {**run.record.extra, "notes": [*log.notes, *notes, *run.record.extra["notes"]]}
                run = replace(run, record=replace(run.record, extra=extra))
            if run is None:
                return None, coll
            runs[key] = with_inputs(run, inputs, fingerprint_of=fingerprint)
            saved[key] = store.save(runs[key], label=f"{kind} · {served_label(runs[key])}")
    if key not in runs:
        what = "Trace export" if log.format == "otlp" else kind.capitalize()
        st.info(f"{what} read: {len(log)} served rankings over {len(log.query_ids)} queries, from "
                f"{markdown_text(served.text)} ({served.counts}). Press **Audit the served rankings**.")
        return None, coll
    if key in st.session_state["served_reopened"]:
        st.caption(f"Reopened stored run **{saved[key]}**: this {kind} ({markdown_text(served.text)}) was audited "
                   "with these settings before, so nothing new was saved.")
    else:
        st.caption(f"Saved in the run store as **{saved[key]}**.")
    run = runs[key]
    return (run.saved_as(saved[key]) if run.run_id is None else run), coll


def _remember(served) -> None:
    """Keep an upload for this browser (once per session and file)."""
    done = st.session_state["served_remembered"]
    if served.path not in done:
        uploads.remember_served(resources.UPLOAD_ROOT, owner_key(), served)
        done.add(served.path)


def _audit(log, coll, config, settings: Settings, attribution: str, source_collection: str | None):
    judge = attribution in ("judge", "both")
    bar = st.progress(0.0, "Judging answers…") if judge else None

    def progress(done, total):
        bar.progress(done / max(total, 1), f"Judged {done} of {total} document-answer pairs")

    try:
        return audit_rag_log(log, coll, config, progress=progress if judge else None,
                             attributor=resources.attributor(settings.attributor, settings.device) if judge
                             else None, collection_source=source_collection)
    except FairRAGError as err:
        st.error(_as_on_page(str(err)))
        return None


def show_served(run, coll, key: str):
    """Headline, ledger, per-query drill-down and report of a log audit (fresh or reopened). Returns the run as
    shown (with a what-if replayed here, :func:`~fairrag_studio.panels.what_if.render_what_if`'s)."""
    for note in run.record.extra.get("notes", []):
        st.warning(_as_on_page(note))
    inputs = record_inputs(run.record)
    words = {"collection": "collection", "qrels": "qrels", "log": "RAG log", "run": "run file"}
    st.caption("Inputs: " + " · ".join(f"{'trace export' if i.format == 'otlp' else words.get(i.role, i.role)} "
                                       f"**{markdown_text(i.text)}**"
                                       + (f" ({i.counts})" if i.counts else "") for i in inputs))
    findings = [f for f in log_findings(run, coll) if not f.detail]
    st.subheader("Findings")
    st.markdown("\n".join(f"- **{f.severity.value}** · {markdown_text(f.text)}" for f in findings))
    st.caption("Most severe first. Each provider's (and group's) share is tested against its fair share over the "
               "queries, Holm-adjusted across the groups; a group with too few queries says so instead of 'fair'.")
    headline = headline_table(run)
    st.subheader("Headline")
    st.dataframe(headline, hide_index=True)
    st.caption(f"Each value is the {headline.attrs['note']}; the interval contains the value.")
    glossary_note(headline["metric"])
    st.subheader("Exposure ledger")
    explainer(explain.LEDGER)
    cols = st.columns(3)
    by = cols[0].radio("Group by", groupings(coll), horizontal=True, key=f"{key}_by")
    sources = list(measured_sources(run))
    source = cols[1].radio("Attribution", sources, format_func=SOURCE_LABELS.get, horizontal=True,
                           key=f"{key}_attribution") if len(sources) > 1 else (sources[0] if sources else None)
    default_scope = default_ledger_scope(run)
    labelled_only = cols[2].toggle("Only queries with relevance labels (for the gap)", value=default_scope,
                                   key=f"{key}_scope")
    ledger = log_ledger(run, coll, by=by, source=source, labelled_only=labelled_only)
    chart_with_downloads(charts.exposure_ledger_chart(ledger), ledger, f"served_ledger_{by}", key=f"{key}_ledger")
    shown = display_ledger(ledger)
    st.dataframe(shown, hide_index=True)
    glossary_note(shown.columns)
    st.subheader("Per query")
    per_query = queries_table(run)
    st.dataframe(per_query, hide_index=True)
    glossary_note(per_query.columns, skip=[*headline["metric"], *shown.columns])
    qid = st.selectbox("Drill down into a query", run.table["query_id"].tolist(), key=f"{key}_query")
    lines = lines_table(run, qid)
    if lines is None:
        served = next((i for i in inputs if i.role in ("log", "run")), None)
        name = markdown_text(served.text if served is not None else str(run.record.config.log))
        st.caption(f"The served rankings stay in the run file ({name})." if served_kind(run.record) == "run"
                   else f"The served lines stay in the log file ({name}).")
    else:
        st.dataframe(lines, hide_index=True)
    run = render_what_if(run, coll, key)
    st.subheader("Report")
    left, middle, right = st.columns([1, 1, 2])
    figures = "interactive" if right.toggle("Interactive charts in the report (+4.6 MB)",
                                            key=f"{key}_interactive") else "static"
    left.download_button("Report (HTML)", lambda: build_log_report(run, coll, figures=figures),
                         file_name="served_audit.html", mime="text/html", key=f"{key}_report", type="primary")
    middle.download_button("Per query (CSV)", table_csv(run.table), file_name="served_queries.csv",
                           mime="text/csv", key=f"{key}_csv")
    command, where = reproduce_command(run.record, inputs)
    st.code(command, language="bash")
    if where:
        st.caption(markdown_text(where))
    return run


def render_served_tab(settings: Settings, store) -> None:
    """The whole tab: source, settings, the audit (saved in ``store``) and its views."""
    path, source_collection, uploaded = _served_source(settings)
    try:
        run, coll = _served_audit(settings, store, path, source_collection, uploaded)
    except FairRAGError as err:
        st.error(str(err))
        return
    if run is not None:
        shown = show_served(run, coll, "served")
        if shown is not run:  # a what-if replayed: this session's audit keeps it, with its grid and N
            runs = st.session_state["served_runs"]
            for key in [key for key in runs if key[2] == shown.record.extra.get("fingerprint")]:
                runs[key] = replace(runs[key], record=shown.record)
