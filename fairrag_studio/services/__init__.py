"""State and resources that FairRAG Studio's pages and panels use, with no page rendering: the session's settings,
cached collections and models (``st.cache_resource``), background jobs, owner keys, this browser's view of the run
store, uploads, the server's data folder, input identities and the models' preload. Services never import a page;
views (:mod:`fairrag_studio.views`) may read them where they draw nothing (identity)."""
