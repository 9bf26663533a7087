"""FairRAG Studio: the Streamlit app's helpers (charts, report, state). fairrag_core stays Streamlit-free."""
