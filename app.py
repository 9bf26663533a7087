"""FairRAG Studio: `streamlit run app.py` (or `make app`).

Pages live in app_pages/, not pages/: Streamlit still treats a folder named pages/ as a legacy (v1) multipage
app, and its AppTest then reruns a page without this entrypoint (no sidebar). Logic lives in fairrag_core.
"""

import streamlit as st

from fairrag_core import FairRAGError
from fairrag_studio.panels.jobs import apply_pending_open
from fairrag_studio.panels.sidebar import render_sidebar
from fairrag_studio.services.preload import start_preload
from fairrag_studio.services.state import init_session, keep_page_widgets

# Material icons ship with Streamlit: no emoji font needed on a classroom machine or a projector PC.
st.set_page_config(page_title="FairRAG Studio", page_icon=":material/balance:", layout="wide")
start_preload()  # make app: the Fast preset's models load while the class reads the page (once per process)
init_session(st.session_state)
keep_page_widgets(st.session_state)  # a page's controls survive a visit to another page

# Presenter mode (sidebar): type readable from the back of a room, answers in black, wider metric values.
PRESENTER_CSS = """<style>
[data-testid="stMain"] { font-size: 1.3rem; }
[data-testid="stMain"] p, [data-testid="stMain"] li { font-size: 1.3rem; line-height: 1.5; color: #000; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] p { font-size: 1.05rem; color: #222; }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * { font-size: 3rem !important; line-height: 1.2; }
[data-testid="stMetricLabel"] p { font-size: 1.2rem; color: #000; }
[data-testid="stMain"] h1 { font-size: 3rem; }
</style>"""

PAGES = [
    st.Page("app_pages/playground.py", title="Playground", icon=":material/casino:", default=True),
    st.Page("app_pages/disparity_curves.py", title="Disparity curves", icon=":material/show_chart:"),
    st.Page("app_pages/audit.py", title="Audit", icon=":material/fact_check:"),
    st.Page("app_pages/fair_qr.py", title="FAIR-QR", icon=":material/autorenew:", url_path="fair_qr"),
    st.Page("app_pages/multi_faceted.py", title="Multi-faceted (RichRAG)", icon=":material/view_module:",
            url_path="multi_faceted"),
    st.Page("app_pages/monitor.py", title="Monitor", icon=":material/monitoring:", url_path="monitor"),
]
page = st.navigation(PAGES)
apply_pending_open()  # "Show the result" in the jobs panel: that job's settings, on its page
st.session_state["settings"] = render_sidebar()
if st.session_state["presenter"]:
    st.html(PRESENTER_CSS)
try:
    page.run()
except FairRAGError as err:  # e.g. the run store held by another process too long: the message names the fix
    st.error(f"{err}", icon=":material/error:")
