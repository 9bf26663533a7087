"""Audit: a batch run over a query set, or a served log/run; the exposure ledger, stored runs (reopen, compare) and
a report."""

import pandas as pd
import streamlit as st

from fairrag_core import DEMO_COLLECTIONS, FairRAGError, load_collection
from fairrag_core.audit.compare import Comparison
from fairrag_core.audit.comparison_findings import stored_findings
from fairrag_core.audit.ledger import ledger_noun
from fairrag_core.rag.sweep import Usefulness
from fairrag_core.record import RunKind
from fairrag_studio import charts
from fairrag_studio.panels.compare import render_comparison, show_comparison
from fairrag_studio.panels.providers import LEDGER_SERIES, many_providers
from fairrag_studio.panels.served import render_served_tab, show_served
from fairrag_studio.panels.sweeps import SweepRequest, parse_alphas, rag_job, run_exposure_request
from fairrag_studio.panels.widgets import chart_with_downloads, explainer, glossary_note, markdown_text
from fairrag_studio.services import resources
from fairrag_studio.services.identity import (
    audit_inputs,
    collection_label,
    reproduce_command,
    served_counts,
    with_inputs,
)
from fairrag_studio.services.run_scope import browser_runs
from fairrag_studio.services.state import drop_stale
from fairrag_studio.views import explain
from fairrag_studio.views.audit import (
    INTERVAL_NOTE,
    build_report,
    default_system_index,
    display_ledger,
    display_summary,
    groupings,
    ledger_for,
    per_query,
    summary_with_intervals,
    system_label,
)
from fairrag_studio.views.report import table_csv
from fairrag_studio.views.served import audits_collection

settings = st.session_state["settings"]
collection = resources.collection(settings.collection)
store = browser_runs()  # this browser's runs, or the whole store where it is shared (fairrag_studio.services.run_scope)

st.title("Audit")
st.caption("Who gets exposure — in the rankings the generator reads and in the answers it gives? Run a batch "
           "over a query set, or audit what a deployed system served (a RAG log or a run file); read the ledger per "
           "provider and group, keep runs, compare them, export a report.")

tab_run, tab_served, tab_stored = st.tabs(["New audit", "Served log or run", "Stored runs"])

with tab_run:
    labelled = [q for q in collection.queries if q.query_id in collection.qrels]
    if not labelled:
        st.warning(f"{collection.name} has no queries with relevance labels; an audit needs queries.jsonl and "
                   "qrels.txt.")
    else:
        cols = st.columns([3, 2])
        drop_stale(st.session_state, "audit_queries", [q.query_id for q in labelled])
        chosen = cols[0].multiselect("Query set", [q.query_id for q in labelled],
                                     default=[q.query_id for q in labelled], key="audit_queries")
        alphas_text = cols[1].text_input("α values", "0, 2, 8", key="audit_alphas",
                                         help="The deterministic retriever is always included.")
        mode = cols[1].radio("Measure", ["Exposure only", "Exposure + answers"], horizontal=True, key="audit_mode")
        try:
            alphas = parse_alphas(alphas_text)
        except FairRAGError as err:
            st.error(str(err))
            alphas = None
        if alphas and chosen:
            generate = mode == "Exposure + answers"
            request = SweepRequest(settings=settings, query_ids=tuple(chosen), alphas=alphas, generate=generate,
                                   usefulness=Usefulness.RELEVANCE)
            pressed = st.button("Run the audit", type="primary", key="audit_run")
            result, job = None, None
            label = f"{collection_label(settings.collection)} · {len(chosen)} queries · {mode.lower()}"
            try:
                if generate:  # a background job: it saves the audit when every run is in
                    sweep, job, result = rag_job(request, run=pressed, kind="audit", title=f"Audit · {label}",
                                                 label=label, page="app_pages/audit.py", save_as=RunKind.AUDIT)
                    if job is not None and job.error:
                        st.error(job.error)
                    if result is not None and not result.record.complete:
                        st.warning(f"{len(result.table)} of {len(sweep.tasks)} runs finished; "
                                   + ("the rest are on their way." if job.active else
                                      "press **Run the audit** to continue."))
                elif pressed or request in st.session_state["exposure_sweeps"]:
                    result = run_exposure_request(request)
            except FairRAGError as err:
                st.error(str(err))
            if result is None:
                if job is None or not job.active:
                    st.info("Choose queries and α values, then press **Run the audit**.")
            else:
                saved = st.session_state["audit_saved"]
                if not generate and result.record.complete and request not in saved:
                    audit = result.as_kind(RunKind.AUDIT)
                    inputs, fingerprint = audit_inputs(audit.record)
                    found = store.find(fingerprint, kind=RunKind.AUDIT.value, collection=audit.record.collection)
                    if found is not None:  # the same collection and settings: reopen it, add no copy
                        st.session_state["audit_reopened"].add(request)
                    saved[request] = found or store.save(with_inputs(audit, inputs, fingerprint_of=fingerprint),
                                                         label=label)
                if request in saved:
                    result = result.saved_as(saved[request])
                if request in st.session_state["audit_reopened"]:
                    st.caption(f"Reopened stored run **{result.run_id}**: this collection was audited with these "
                               "settings before, so nothing new was saved.")
                elif result.run_id is not None:
                    st.caption(f"Saved in the run store as **{result.run_id}** ({store.path}).")
                table, documents = result.table, result.documents
                st.subheader("Findings")
                found = [f for f in resources.sweep_findings(result, collection) if not f.detail]  # kept per run
                st.markdown("\n".join(f"- **{f.severity.value}** · {f.text}" for f in found))
                st.caption("Each α against the deterministic retriever (paired over queries, Holm-adjusted), then "
                           "each system's providers against their fair share; most severe first.")
                st.subheader("Metrics per system")
                summary_table = display_summary(summary_with_intervals(table, seed=result.record.seed))
                st.dataframe(summary_table, hide_index=True)
                glossary_note(summary_table.columns)
                asked = table.loc[table["fairness_question"], "query_id"].nunique()
                total = table["query_id"].nunique()
                if 0 < asked < total:
                    st.caption(f"*queries* = {asked} of the {total} selected: means are over the queries with a "
                               "fairness question (at least two useful documents); with one useful document there "
                               "is no exposure to share, so those queries would only dilute the means.")
                st.caption(INTERVAL_NOTE)
                st.subheader("Exposure ledger")
                explainer(explain.LEDGER)
                lcols = st.columns(2)
                system_alphas = sorted(float(a) for a in table["alpha"].unique())
                alpha = lcols[0].selectbox("System", system_alphas, index=default_system_index(system_alphas),
                                           format_func=system_label, key="ledger_alpha")
                by = lcols[1].radio("Group by", groupings(collection), horizontal=True, key="ledger_by")
                ledger = ledger_for(documents, collection, alpha, by, intervals=True, seed=result.record.seed)
                chart_with_downloads(charts.exposure_ledger_chart(ledger), ledger, f"ledger_{by}", key="ledger")
                shown_ledger = display_ledger(ledger)
                # thousands of providers: their spread, and every one searchable in a table of fixed height
                if not many_providers(ledger, column="group", series=LEDGER_SERIES, name=f"ledger_{by}",
                                      key="ledger", shown=shown_ledger,
                                      noun=ledger_noun(by)):
                    st.dataframe(shown_ledger, hide_index=True)
                glossary_note(shown_ledger.columns)
                st.subheader("Per query")
                picked = st.selectbox("Drill down into a query", sorted(table["query_id"].unique()),
                                      key="audit_drill")
                st.dataframe(per_query(table, picked), hide_index=True)
                st.subheader("Report")
                left, middle, right = st.columns([1, 1, 2])
                figures = "interactive" if right.toggle("Interactive charts in the report (+4.6 MB)",
                                                        key="report_interactive") else "static"
                left.download_button("Report (HTML)", lambda: build_report(result, collection, figures=figures),
                                     file_name="fairness_audit.html", mime="text/html", key="report_html",
                                     type="primary")
                middle.download_button("Runs (CSV)", table_csv(table), file_name="audit_runs.csv", mime="text/csv",
                                       key="report_csv")


with tab_served:
    render_served_tab(settings, store)


def _described(record) -> dict:
    return {"collection": record.collection, "retriever": record.retriever, "generator": record.generator,
            "n_samples": getattr(record.config, "n_samples", None), "k": getattr(record.config, "k", None),
            "seed": record.seed,
            "alphas": ", ".join(f"{a:g}" for a in getattr(record.config, "alphas", ()))}


def _collection_of(name: str):
    if name in DEMO_COLLECTIONS:
        return resources.collection(name)
    folder = resources.UPLOAD_ROOT / name
    return load_collection(folder) if folder.is_dir() else None


with tab_stored:
    st.caption(store.caption)
    runs = store.list()
    if runs.empty:
        st.info("No stored runs yet: an audit is saved when it finishes; sweeps can be saved from Disparity curves.")
    else:
        runs["when"] = pd.to_datetime(runs["created"]).dt.strftime("%Y-%m-%d %H:%M")
        runs["collection"] = runs["collection"].map(lambda c: collection_label(c) if c else c)  # names, not paths
        runs["alphas"] = runs["alphas"].map(lambda a: ", ".join(map(str, a)) if isinstance(a, list) else a)
        st.dataframe(runs[["run_id", "when", "kind", "collection", "label", "rows", "alphas", "n_samples", "k",
                           "seed", "generator"]], hide_index=True)
        ids = runs["run_id"].tolist()
        describe = dict(zip(ids, runs["when"] + " · " + runs["kind"] + " · " + runs["label"].fillna("")))
        picked = st.multiselect("Open one run, or pick two or more to compare them", ids, max_selections=4,
                                format_func=lambda r: f"{r} — {describe[r]}", key="stored_pick")
        loaded = [store.load(run_id) for run_id in picked]
        if len(loaded) == 1 and loaded[0].record.kind is RunKind.COMPARISON:
            stored = loaded[0]
            stored_collection = _collection_of(stored.record.collection)
            if stored_collection is None and getattr(stored.record.config, "providers_from_logs", False):
                from_logs = audits_collection([store.load(i.removeprefix("run:")).record  # its audits' documents
                                               for i in stored.record.config.inputs if i.startswith("run:")])
                stored_collection = from_logs[0] if from_logs is not None else None
            if stored_collection is None:
                st.warning(f"Collection {stored.record.collection!r} is not available here to show the comparison.")
            else:
                show_comparison(Comparison(record=stored.record, table=stored.table, documents=stored.documents,
                                           run_id=stored.run_id, findings=tuple(stored_findings(stored))),
                                stored_collection, key="stored_comparison")
            st.button("Delete this run", key="stored_delete", on_click=store.delete, args=(stored.run_id,))
        elif len(loaded) == 1:
            stored = loaded[0]
            run_id, table, documents, record = stored.run_id, stored.table, stored.documents, stored.record
            n_text = (served_counts(record) or "size not recorded" if record.kind is RunKind.AUDIT_LOG
                      else f"N {record.config.n_samples}")
            st.markdown(f"**Run {run_id}** · seed {record.seed} · {n_text} · "
                        f"k {record.extra.get('k_used', getattr(record.config, 'k', None))} · "
                        f"retriever {record.retriever}")
            command, where = reproduce_command(record)
            st.code(command, language="bash")
            if where:
                st.caption(markdown_text(where))
            if record.kind is RunKind.AUDIT_LOG:
                from_logs = audits_collection([record])  # an audit with providers from its log: its documents
                stored_collection = from_logs[0] if from_logs is not None else _collection_of(record.collection)
                if stored_collection is None:
                    st.warning(f"Collection {record.collection!r} is not available here to draw the ledger.")
                else:
                    show_served(stored, stored_collection, "stored_served")
            elif "fairness_question" in table:
                st.dataframe(display_summary(summary_with_intervals(table, seed=record.seed)), hide_index=True)
                st.caption(INTERVAL_NOTE)
            run_collection = _collection_of(record.collection)
            if not documents.empty and run_collection is not None and "alpha" in documents:
                by = st.radio("Group by", groupings(run_collection), horizontal=True, key="stored_by")
                stored_alphas = sorted(float(a) for a in documents["alpha"].unique())
                alpha = st.selectbox("System", stored_alphas, index=default_system_index(stored_alphas),
                                     format_func=system_label, key="stored_alpha")
                ledger = ledger_for(documents, run_collection, alpha, by)
                st.plotly_chart(charts.exposure_ledger_chart(ledger), key="stored_ledger")
                many_providers(ledger, column="group", series=LEDGER_SERIES, name=f"ledger_{by}_{run_id}",
                               key="stored_ledger", shown=display_ledger(ledger),
                               noun=ledger_noun(by))
                st.download_button("Report (HTML)", lambda: build_report(stored, run_collection),
                                   file_name=f"fairness_audit_{run_id}.html", mime="text/html", key="stored_report")
            st.button("Delete this run", key="stored_delete", on_click=store.delete, args=(run_id,))
        elif len(loaded) >= 2:
            from_logs = audits_collection([r.record for r in loaded])  # providers from their logs: their documents
            shared_collection = _collection_of(loaded[0].record.collection)
            if from_logs is not None:
                render_comparison(loaded, from_logs[0], store, reading=from_logs[1])
            elif any(r.record.collection != loaded[0].record.collection for r in loaded):
                st.warning("These runs audited different collections; compare runs of one collection.")
            elif shared_collection is None:
                st.warning(f"Collection {loaded[0].record.collection!r} is not available here to compare.")
            else:
                render_comparison(loaded, shared_collection, store)
