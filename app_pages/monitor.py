"""Monitor: fairness over time — a collected store audited window by window, deployment changes on the timeline,
and drift alarms (``audit-log STORE --window 1d``)."""

import streamlit as st

from fairrag_core import FairRAGError
from fairrag_core.audit.drift import DRIFT_ALPHA
from fairrag_core.audit.windows import WINDOWS
from fairrag_core.data.store_window import services, store_hours, store_summary
from fairrag_studio.charts.monitor import ee_d_over_time, shares_over_time
from fairrag_studio.panels.widgets import chart_with_downloads, markdown_text
from fairrag_studio.services import resources
from fairrag_studio.services.data_dir import DATA_DIR_ENV, checked_data_store, data_dir, data_stores
from fairrag_studio.views.monitor import changes_table, findings_by_window, monitor_served, windows_table

settings = st.session_state["settings"]
st.title("Monitor")
st.caption("Fairness over time: a store that `fairrag collect` keeps, audited per UTC window as `audit-log STORE "
           "--window 1d` audits it — each provider's share of retrieval exposure, EE-D with its interval, the "
           "findings per window, deployment changes (α, retriever) marked, and drift alarms that stay valid however "
           "many times you look.")

try:
    folder = data_dir()
except FairRAGError as err:
    st.error(str(err))
    st.stop()
stores = data_stores(folder) if folder is not None else []
if not stores:
    st.info(f"No collected store in the data folder (${DATA_DIR_ENV}); run `fairrag collect --store` into a folder "
            "inside it, then come back.")
    st.stop()
cols = st.columns([2, 1, 1])
picked = cols[0].selectbox(f"Store in {folder}", stores, key="monitor_store")
path = checked_data_store(picked, folder)
st.caption(f"{store_summary(store_hours(path))} (hours of receipt, UTC).")
service = cols[1].selectbox("Service", ["every service", *services(path)], key="monitor_service")
size = cols[2].radio("Window", list(WINDOWS), index=list(WINDOWS).index("1d"), horizontal=True,
                     key="monitor_window", format_func=lambda s: WINDOWS[s][1])
cols = st.columns(2)
source = cols[0].radio("Providers from", ["metadata", "domain", "collection"], horizontal=True,
                       key="monitor_providers",
                       format_func={"metadata": "a metadata key", "domain": "a URL's domain",
                                    "collection": f"the collection ({settings.collection})"}.get)
provider_from = None
if source != "collection":
    key = cols[1].text_input("Metadata key", "source" if source == "metadata" else "url", key="monitor_key").strip()
    provider_from = f"metadata.{key}" if source == "metadata" else f"domain:metadata.{key}"

chosen = (str(path), None if service == "every service" else service, size, provider_from,
          settings.collection if source == "collection" else None)
if st.button("Monitor", type="primary", key="monitor_run"):
    with st.spinner("Auditing each window…"):
        collection = resources.collection(chosen[4]) if chosen[4] else None
        st.session_state["monitor_result"] = (chosen, monitor_served(
            chosen[0], window=size, service=chosen[1], provider_from=provider_from, collection=collection))
kept = st.session_state.get("monitor_result")
if kept is None or kept[0] != chosen:
    st.stop()
result = kept[1]

st.subheader(f"Drift alarms ({result.look} looks)")
st.caption(f"Each provider's share after the reference windows ({', '.join(w[:10] for w in result.reference)}) "
           f"against its share in them: an always-valid test (a betting e-process), false alarms ≤ "
           f"{DRIFT_ALPHA:.0%} over the providers and every look (docs/monitor.md).")
for alarm in result.alarms:
    st.error(markdown_text(alarm.text), icon=":material/notifications_active:")
if not result.alarms:
    st.success("No alarm: no provider's share moved beyond noise.", icon=":material/check_circle:")
for note in result.notes:
    st.caption(f"Note: {note}")

changes = [c.to_dict() for c in result.changes]
shares = result.shares_table()
chart_with_downloads(shares_over_time(shares, changes), shares, "monitor_shares", key="monitor_shares")
headline = result.headline_table()
chart_with_downloads(ee_d_over_time(headline, changes), headline, "monitor_ee_d", key="monitor_ee_d")
st.subheader("Deployment changes")
if changes:
    st.dataframe(changes_table(result), hide_index=True)
else:
    st.caption("None: the traces log no change of α or retriever between windows.")
st.subheader("Windows")
st.dataframe(windows_table(result), hide_index=True)
st.subheader("Findings per window")
for start, lines in findings_by_window(result):
    with st.expander(start[:16].replace("T", " ")):
        for line in lines:
            st.markdown(f"- {markdown_text(line)}")
