"""FairRAG Studio: `streamlit run app.py` (or `make app`). Pages live in pages/; logic lives in fairrag_core."""

import streamlit as st

from fairrag_studio.sidebar import render_sidebar
from fairrag_studio.state import init_session

st.set_page_config(page_title="FairRAG Studio", page_icon="⚖️", layout="wide")
init_session(st.session_state)

PAGES = [
    st.Page("pages/playground.py", title="Playground", icon="🎲", default=True),
    st.Page("pages/disparity_curves.py", title="Disparity curves", icon="📈"),
    st.Page("pages/audit.py", title="Audit", icon="📋"),
]
page = st.navigation(PAGES)
st.session_state["settings"] = render_sidebar()
page.run()
