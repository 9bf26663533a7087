"""Pure view models and report builders of FairRAG Studio: the tables, texts, figures and self-contained HTML reports
that the pages show and download, built from ``fairrag_core`` results. Nothing here imports Streamlit, a panel or
a page (``tests/test_package.py`` checks it), so the CLI's reports (``compare-runs --report``, the log report) and
tests build them without a running app."""
