"""Streamlit rendering that FairRAG Studio's pages share: the sidebar and its jobs panel, the Playground's Generate,
the sweeps of Disparity curves and the Audit page, the Audit page's served tab, what-if replay and comparison, and
the chart and explainer widgets. A panel draws what a view model (:mod:`fairrag_studio.views`) builds, from the state
and resources of :mod:`fairrag_studio.services`; pages (``app_pages/``) call panels, never the reverse."""
