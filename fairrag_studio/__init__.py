"""FairRAG Studio: the Streamlit app's package. ``app.py`` is the entrypoint, ``app_pages/`` holds one thin page
each, and the logic they show comes from ``fairrag_core`` (which never imports Streamlit). The folders say which
side of Streamlit a module is on, and the import arrows point one way: pages → panels → services and views →
charts; views and charts never import Streamlit, and no view, chart or service imports a panel or a page
(``tests/test_package.py`` checks both)::

    fairrag_studio/
      views/      pure view models and report builders, no Streamlit: the tables, texts and HTML reports
                  audit.py        the Audit page's simulated audits: summaries, ledgers, the audit report
                  served.py       the Audit page's served tab: reading a log or run, its tables, the log report
                  what_if.py      the what-if replay's table, figure and report section (served tab, log report)
                  compare.py      the Audit page's run comparison: tables, chart, comparison report
                  grid_html.py    the Playground's rankings grid
                  explain.py      every page's explainers and glossary notes
                  methodology.py  the reports' methodology section (models, settings, reproduce command)
                  report.py       the self-contained HTML report and CSV tables every download uses
      panels/     Streamlit rendering that pages share
                  sidebar.py      every page: collection, models, presenter mode, the jobs panel
                  jobs.py         the sidebar's jobs panel; FAIR-QR and Multi-faceted queue notes
                  answers.py      the Playground's Generate (answers as a background job)
                  sweeps.py       Disparity curves and the Audit page: planning and running exposure/RAG sweeps
                  served.py       the Audit page's served tab
                  what_if.py      the served tab's what-if replay form and result
                  compare.py      the Audit page's comparison of stored runs
                  widgets.py      charts with downloads, explainers, glossary notes (every page)
      services/   state and resources that pages and panels use, no page rendering
                  state.py        session settings, page widgets kept across pages, this browser's owner key
                  resources.py    cached collections, retrievers and models (st.cache_resource)
                  jobs.py         background jobs (worker threads, the job table)
                  owners.py       owner keys for a browser's jobs and runs
                  run_scope.py    this browser's view of the run store
                  uploads.py      uploaded collections kept per owner
                  data_dir.py     the server's data folder of served logs and runs
                  identity.py     what a run was made from (fingerprints, inputs, reproduce commands)
                  preload.py      ``make app``'s background preload of the Fast preset's models
      charts/     Plotly figures for every page and report, no Streamlit
"""
