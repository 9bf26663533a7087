"""Playground: one query, an α slider, the sampled rankings, exposure, and answers with citations.

Long because it lays out one page state two ways (the whole page, and Presenter mode's tour steps at 1280×720) and
the steps pick parts of the same state; the parts themselves live in fairrag_studio.panels (presenter, answers,
providers).
"""

import math
import time

import numpy as np
import pandas as pd
import streamlit as st

from fairrag_core import FairRAGError, RagConfig, RankingConfig, run_ranking
from fairrag_core.audit.ledger import TOP_PROVIDERS
from fairrag_core.glossary import GLOSSARY, help_text
from fairrag_core.metrics.attribution import HOW_TO_READ
from fairrag_core.metrics.registry import METRICS as REGISTERED
from fairrag_core.models.catalog import display_name
from fairrag_core.rag.prepared import prepared_class, prepared_note
from fairrag_core.rag.presets import preset_costs
from fairrag_core.ranking.run import providers_among
from fairrag_core.ranking.stops import alpha_stops
from fairrag_core.retrieval import RetrieverKind, top_candidates
from fairrag_core.retrieval.query_check import check_query, collection_language
from fairrag_studio import charts
from fairrag_studio.panels.answers import (
    follow_answers,
    kept_answers,
    latest_answers_job,
    start_answers_job,
    stopped_text,
)
from fairrag_studio.panels.presenter import STEP_CSS, TOUR_STEPS, chip_title
from fairrag_studio.panels.providers import PROVIDER_SERIES, many_providers
from fairrag_studio.panels.widgets import (
    FLAG_WORDS,
    chart_with_downloads,
    explainer,
    fmt,
    glossary_note,
    markdown_text,
    metric_with_ci,
)
from fairrag_studio.services import resources
from fairrag_studio.services.identity import collection_label
from fairrag_studio.services.state import drop_stale, query_after_collection_change
from fairrag_studio.views import explain
from fairrag_studio.views.grid_html import rankings_grid_html

#: Seconds each α stop stays on screen while Animate α plays.
ANIMATION_SECONDS = 1.2
#: Most grid columns (k) drawn beside the exposure chart: at 1400 px the grid's column holds 8 ids of 6 characters;
#: more go full width, the columns sharing it (views/grid_html.py, ``fit``).
GRID_BESIDE_MAX_K = 8
#: Presenter mode's step selector: the README tour's steps, then the whole page as before.
WHOLE_PAGE = "Whole page"
#: Answer cards a presenter step shows (the most frequent first): what fits under the tiles at 1280×720.
STEP_CARDS = 1

settings = st.session_state["settings"]
presenter = bool(st.session_state.get("presenter"))
collection = resources.collection(settings.collection)

step = 0  # 0: every part of the page; 1–5: Presenter mode's tour step, one 1280×720 screen each
if presenter:
    st.html(STEP_CSS)
    step_labels = [label for label, _ in TOUR_STEPS] + [WHOLE_PAGE]
    chosen_step = st.segmented_control("Tour step", step_labels, default=step_labels[0], key="presenter_step",
                                       label_visibility="collapsed",
                                       help="The README's classroom tour, one screen each: " + "; ".join(
                                           f"{label}: {what}" for label, what in TOUR_STEPS))
    step = step_labels.index(chosen_step) + 1 if chosen_step in step_labels[:-1] else 0 if chosen_step else 1
if not step:
    st.title("Playground")
    st.caption("Type a query, slide α, and watch how a stochastic retriever spreads exposure over equally useful "
               "sources — then generate answers and see which documents they actually rest on.")
if step == 5:  # Accountability happens on other pages: say where, in the tour's order
    st.page_link("app_pages/audit.py", label="Audit: run the audit, the ledger by provider, the report (HTML)",
                 icon=":material/fact_check:")
    st.page_link("app_pages/fair_qr.py", label="FAIR-QR: the people collection, change the query instead of α",
                 icon=":material/autorenew:")
    st.stop()

examples = [q.text for q in collection.queries]
if not st.session_state["query_seeded"]:  # start on the first example query, once per session
    st.session_state["query_seeded"] = True
    st.session_state["query_collection"] = settings.collection
    if examples:
        st.session_state["query"] = examples[0]
elif st.session_state["query_collection"] != settings.collection:
    # The collection changed: a query taken from the old collection's examples becomes the new one's first
    # example; a typed query is kept (the note under the box says what it lacks here).
    st.session_state["query"] = query_after_collection_change(
        st.session_state["query"], st.session_state["query_collection"], collection, load=resources.collection)
    st.session_state["query_collection"] = settings.collection
drop_stale(st.session_state, "example", examples)


def _use_example() -> None:
    if st.session_state.get("example"):
        st.session_state["query"] = st.session_state["example"]


if not step:
    with st.container(horizontal=True):  # the glossary and the recommender, one click away
        with st.popover("Glossary", icon=":material/menu_book:"):
            st.markdown(explain.glossary_lines("EE-D", "EE-R", "EU", "EU (normalised)", "EAR", "EAE-D",
                                               "EAE-D/cited"))
        st.page_link("app_pages/disparity_curves.py", label="Recommender (Disparity curves)",
                     icon=":material/show_chart:")

top = st.columns([3, 2])
with top[1]:
    st.selectbox("Example queries", examples, index=None, key="example", on_change=_use_example,
                 placeholder=f"{len(examples)} queries of {collection.name}" if examples else "no example queries",
                 label_visibility="collapsed" if step else "visible")
with top[0]:
    query = st.text_input("Query", key="query", max_chars=2000, label_visibility="collapsed" if step else "visible")
    if query.strip() and collection.find_query(query) is None:
        st.caption(f"Not one of {markdown_text(collection_label(settings.collection))}'s queries: it has no "
                   "relevance labels and no gold answer here, so EE-R and EU are not available. Pick an example "
                   "query to see them.")


@st.cache_data(show_spinner=False, max_entries=16)
def _collection_language(source: str, sha256: str) -> str | None:
    """The collection's language (fairrag_core.retrieval.query_check), guessed once per collection content."""
    return collection_language(resources.collection(source).texts)


def _query_check_messages(text: str) -> list[str]:
    """What the query box says above the grid when no document matches the query or its language is not the
    collection's (fairrag_core.retrieval.query_check); by the BM25 scores of its words, whatever retriever ranks."""
    def term_scores(word: str) -> np.ndarray:
        return resources.query_scores(settings.collection, RetrieverKind.BM25.value, None, settings.device, word)

    try:
        found = check_query(text, term_scores, collection=collection_label(settings.collection),
                            language=_collection_language(settings.collection, collection.sha256))
    except FairRAGError:  # no lexical index to ask: the ranking below says what went wrong
        return []
    return found.messages()


if query.strip():
    for message in _query_check_messages(query):
        st.warning(markdown_text(message), icon=":material/search_off:")



def answer_card(answer, ranking, collection, n_samples: int, *, container=None, live: bool = False) -> None:
    """One distinct ranking's answer with its citation chips (green ✓ entails, grey struck ✗ seen but not used),
    each named by the document's provider (the brand or outlet a class recognises)."""
    box = (container or st).container(border=True, key=None)
    head = f"**{answer.count} of {n_samples} samples**"
    if answer.flags:  # utility 0 by definition: "flagged", never a number above a correct answer's
        head += (" · utility :orange-background[flagged: " + ", ".join(FLAG_WORDS[f.value] for f in answer.flags)
                 + "]")
    elif answer.utility is not None:
        head += f" · utility {answer.utility:.2f}"
    head += f" · uses {sum(answer.entails)} of {len(answer.positions)} documents"
    box.markdown(head)
    # dark text at full size (a grey quote block was unreadable from the back of a room)
    box.markdown(f"**Answer:** {markdown_text(answer.answer) or '*(empty answer)*'}")
    if live:  # while the job runs the cards are redrawn every second: plain chips, no popovers (they come at the end)
        box.markdown(" ".join(
            f":green-background[:green[**✓ \\[{rank}\\]**]]" if entails else f":gray[✗ \\[{rank}\\]]"
            for rank, entails in enumerate(answer.entails, start=1)))
        return
    # Chips as wide as their labels, wrapping to a new line: a chip never cuts its document's name to "…"
    chips = box.container(horizontal=True, gap="small")
    for rank, (position, entails, prob) in enumerate(zip(answer.positions, answer.entails, answer.entail_probability),
                                                     start=1):
        doc = collection.documents[ranking.candidate_indices[position]]
        # On a projector the document's short title (its brand/name part, whole words), else its provider
        name = markdown_text(chip_title(doc.title) if presenter and doc.title else doc.provider)
        label = (f":green-background[:green[**✓ \\[{rank}\\] {name}**]]" if entails
                 else f":gray[✗ \\[{rank}\\] ~~{name}~~]")
        with chips.popover(label, help=f"{doc.title or doc.doc_id} — {doc.provider}"):
            st.markdown(f"**{markdown_text(doc.title or doc.doc_id)}** · {markdown_text(doc.provider)} · "
                        f"`{doc.doc_id}`")
            st.caption(explain.citation_reason(entails, prob, answer.support[rank - 1] if answer.support else None,
                                               settings.citation, answer.degenerate))
            st.write(doc.text)


#: How the page names the utility metric of EU.
METRIC_WORDS = {"short_answer": "short-answer match (1 when the answer names one of the query's acceptable short "
                                "answers)", "rougeL": "ROUGE-L against the descriptive gold answer"}


@st.cache_data(show_spinner=False, max_entries=256)
def query_stops(scores: np.ndarray, k: int, candidates: int | None) -> tuple[float, ...]:
    """This query's α stops (fairrag_core.ranking.stops), from its candidates' scores; cached per query."""
    shown = scores if candidates is None else top_candidates(scores, min(candidates, scores.size)).scores
    stops = alpha_stops(shown, k)
    return stops if len(stops) > 1 else (0.0, 1.0, 2.0, 4.0, 8.0)  # flat scores: every α looks alike; say so below


# Everything that depends on α lives in a fragment: moving the slider reruns this part only, not the sidebar
# and the query box (the interactive-latency budget is a few hundred milliseconds).
@st.fragment
def ranking_and_answers() -> None:
    """The Playground below the query box, in the order it draws: the α knob, the ranking's tiles, the sampled
    rankings and their exposure, Generate, then the answers' tiles and cards (each step a function below)."""
    try:
        scores = resources.scores_for(settings, query)
    except FairRAGError as err:
        st.error(str(err))
        return
    stops, recommended = query_stops(scores, settings.k, settings.candidates), _recommended_alpha()
    if recommended is not None and recommended not in stops:  # the recommender's α is one of the slider's stops
        stops = tuple(sorted({*stops, recommended}))
    if step in (0, 4):
        _apply_recommended(recommended)
    alpha_used = _alpha_knob(stops)

    config = RankingConfig(alpha=alpha_used, n_samples=settings.n_samples, k=settings.k, seed=settings.seed,
                           candidates=settings.candidates)
    try:
        ranking = run_ranking(collection, resources.retriever_for(settings), query, config, scores=scores, n_boot=300)
    except FairRAGError as err:
        st.error(str(err))
        return

    docs = [collection.documents[i] for i in ranking.candidate_indices]
    distinct = len({tuple(r) for r in ranking.rankings.tolist()})
    if step != 3:  # a presenter's step 3 is the answers only
        _ranking_tiles(ranking, docs, distinct, alpha_used)
        _rankings_and_exposure(ranking, docs, distinct)
    if step not in (0, 3):
        return
    rag = _answers(ranking, scores, alpha_used, distinct)
    if rag is not None:
        _answer_tiles(rag)
        _answer_cards(rag, ranking)


def _recommended_alpha() -> float | None:
    """The α that the Disparity curves page last recommended for this collection (None before its sweep)."""
    found = st.session_state.get("recommended_alpha")
    return found[1] if found is not None and found[0] == settings.collection else None


def _set_alpha(alpha: float) -> None:
    st.session_state["alpha"] = alpha
    st.session_state["deterministic"] = False


def _apply_recommended(recommended: float | None) -> None:
    """A button that sets the slider to the recommended α; on a presenter's step 4 also the way to the recommender,
    and without a recommendation where to get one."""
    if recommended is None and step != 4:
        return
    with st.container(horizontal=True, vertical_alignment="center"):
        if step == 4:
            st.page_link("app_pages/disparity_curves.py", label="Disparity curves", icon=":material/show_chart:")
        if recommended is not None:
            st.button(f"Apply the recommended α = {recommended:g}", key="apply_recommended", icon=":material/tune:",
                      on_click=_set_alpha, args=(recommended,),
                      help="The α that Disparity curves recommended for this collection (its α recommender).")
        else:
            st.caption("Run the sweep there (Query set): its recommended α comes back here as a slider stop and "
                       "an *Apply* button.")


def _alpha_knob(stops: tuple[float, ...]) -> float:
    """The α slider over this query's stops, the Deterministic toggle and Animate α; the α to rank at (∞ when
    deterministic)."""
    playing = st.session_state["alpha_animation"]
    if playing:  # Animate α: show the next stop (the slider follows), then come back after a pause
        st.session_state["alpha"] = playing.pop(0)
        st.session_state["deterministic"] = False
    elif st.session_state.get("alpha") not in stops:  # a new query's stops: the nearest one
        st.session_state["alpha"] = min(stops, key=lambda a: abs(a - float(st.session_state.get("alpha") or 0.0)))
    # wide enough for "Deterministic" and "Animate α" in Presenter type
    knob = st.columns([3.2, 1.6, 1.3] if presenter else [4, 1.4, 1.4])
    with knob[1]:
        deterministic = st.toggle("Deterministic", key="deterministic",
                                  help="The classic retriever: always the top k by score (α → ∞).")
    with knob[2]:
        if st.button("Stop" if playing else "Animate α", key="animate_alpha", icon=":material/play_arrow:",
                     disabled=len(stops) < 2,
                     help=f"Plays α from {stops[-1]:g} down to 0, one stop every {ANIMATION_SECONDS:g} s: watch "
                          "the rankings, tiles and exposure spread."):
            st.session_state["alpha_animation"] = [] if playing else list(reversed(stops))
            st.rerun()
    with knob[0]:
        # This query's own stops (fairrag_core.ranking.stops): each step moves EE-D by about the same amount,
        # from uniform (0) to nearly deterministic. The arrow keys step one stop; Animate α plays them all.
        alpha = st.select_slider("α — fairness knob (0 = uniform, large = deterministic)" if presenter else
                                 "α — fairness knob (0 = uniform over candidates, large = deterministic)",
                                 options=list(stops), format_func=lambda a: f"{a:g}", key="alpha",
                                 disabled=deterministic)
    return math.inf if deterministic else float(alpha)


def _ranking_tiles(ranking, docs: list, distinct: int, alpha_used: float) -> None:
    """The ranking's notes and tiles (EE-D, EE-R, providers reached, distinct rankings) with their captions."""
    for note in ranking.notes:  # e.g. K = all on a large collection: α no longer separates the top documents
        st.warning(f"{note[0].upper()}{note[1:]} (the sidebar's K).")
    summary = ranking.summary
    distinct_sets = len({frozenset(r) for r in ranking.rankings.tolist()})
    providers_reached = len({docs[p].provider for p in np.unique(ranking.rankings)})
    in_pool = len({d.provider for d in docs})
    tiles = st.columns(4)
    metric_with_ci(tiles[0], GLOSSARY["EE-D"].label, summary.ee_d,
                   help=help_text("EE-D", "This tile: the bias-corrected estimate from the N sampled rankings; its "
                                          "caption gives the plug-in."),
                   value=summary.ee_d_plug_in, reason=summary.undefined.get("ee_d_interval"), compact=bool(step))
    metric_with_ci(tiles[1], GLOSSARY["EE-R"].label, summary.ee_r,
                   help=help_text("EE-R", "Only the collection's own queries have relevance labels."),
                   value=summary.ee_r_plug_in,
                   reason=summary.undefined.get("ee_r") or summary.undefined.get("ee_r_interval"), compact=bool(step))
    among = providers_among(in_pool, resources.collection_facts(settings.collection).providers, len(docs))
    tiles[2].metric(REGISTERED["providers_reached"].on_tile, f"{providers_reached} of {in_pool}",
                    help=help_text("providers reached", f"{among[0].upper()}{among[1:]} (raise K in the sidebar to "
                                   "sample from more)."))
    if not step:
        tiles[2].caption(f"{among[0].upper()}{among[1:]}.")
    tiles[3].metric("Distinct rankings", f"{distinct} of {settings.n_samples}",
                    help="Generation runs once per distinct ranking")
    if step:  # a presenter's step: the tiles, and on step 2 the sentence that says why EE-R moves
        why = explain.ee_r_direction(ranking, alpha_used) if step == 2 and ranking.labels is not None else ""
        if why:  # its first sentence: why EE-R moves here
            st.caption(why.split(". ", 1)[0].rstrip(".") + ".")
        return
    if distinct > 1 and distinct_sets == 1:
        st.caption(f"The {distinct} distinct rankings are orders of the same {settings.k} documents: the "
                   "generator reads the whole top k, so exposure — and EE-D — counts which documents are "
                   "shown, not their order.")
    if ranking.labels is None:
        st.caption("EE-R needs relevance labels: pick one of the collection's example queries to see it.")
    else:
        st.caption(explain.ee_r_direction(ranking, alpha_used))
    glossary_note(["EE-D", "EE-R", "providers reached"])
    explainer(explain.METRICS)


def _rankings_and_exposure(ranking, docs: list, distinct: int) -> None:
    """The sampled rankings grid (with its PNG and HTML downloads) beside, or on a projector under, the exposure
    chart by provider or by document."""
    # On a projector the grid shows titles in large type, past GRID_BESIDE_MAX_K columns ids no longer fit beside the
    # chart, and past TOP_PROVIDERS providers the exposure view adds their spread and a table: the grid takes the
    # full width (all k columns in view) and the exposure view goes under it, full width too.
    wide = ranking.rankings.shape[1] > GRID_BESIDE_MAX_K or len({d.provider for d in docs}) > TOP_PROVIDERS
    if step and not wide:  # a presenter's step: grid (ids, titles in tooltips) beside the exposure chart, one screen
        _step_rankings_and_exposure(ranking, docs, distinct)
        return
    left, right = (st.container(), st.container()) if presenter or wide else st.columns([3, 2])
    with left:
        st.subheader("Sampled rankings")
        # Deterministic: all N rows are the same list, so draw it once (the tile says how many samples).
        shown_rankings = ranking.rankings[:1] if distinct == 1 else ranking.rankings
        grid_args = ([d.doc_id for d in docs], [d.provider for d in docs], [d.title for d in docs], shown_rankings,
                     ranking.deterministic)
        with st.container(key="grid"):
            st.html(rankings_grid_html(*grid_args, max_rows=30, repeats=settings.n_samples if distinct == 1 else None,
                                       show_titles=presenter, font_px=18 if presenter else 12, fit=wide))
        with st.container(horizontal=True):  # the Plotly version, built only when asked for
            st.download_button("PNG", lambda: charts.figure_png(charts.rankings_grid(*grid_args, max_rows=50)),
                               file_name="sampled_rankings.png", mime="image/png", key="grid_png")
            st.download_button("HTML", lambda: charts.figure_html(charts.rankings_grid(*grid_args, max_rows=50)),
                               file_name="sampled_rankings.html", mime="text/html", key="grid_html")
        explainer(explain.RANKINGS)
    with right:
        st.subheader("Exposure")
        # A selector, not tabs: tabs would build (and the browser draw) both charts on every α move.
        view = st.segmented_control("Exposure view", ["By provider", "By document"], default="By provider",
                                    key="exposure_view", label_visibility="collapsed")
        if view == "By document":
            documents_table = ranking.documents_table()
            chart_with_downloads(charts.exposure_bars(documents_table, top=15), documents_table, "document_exposure",
                                 key="documents")
        else:
            providers_table = ranking.providers_table()
            chart_with_downloads(charts.provider_bars(providers_table), providers_table, "provider_exposure",
                                 key="providers")
            # thousands of providers (K = all on a large collection): their spread, and every one searchable
            many_providers(providers_table, column="provider", series=PROVIDER_SERIES, name="provider_exposure",
                           key="providers")
        explainer(explain.EXPOSURE)


def _step_rankings_and_exposure(ranking, docs: list, distinct: int) -> None:
    """Presenter steps 1, 2 and 4 at 1280×720: the grid's first rows in ids (a title per cell would be cut to a few
    letters at half the width; each cell's tooltip gives it) beside the provider exposure chart, no downloads."""
    left, right = st.columns([1, 1])
    with left, st.container(key="grid"):
        shown_rankings = ranking.rankings[:1] if distinct == 1 else ranking.rankings
        st.html(rankings_grid_html([d.doc_id for d in docs], [d.provider for d in docs], [d.title for d in docs],
                                   shown_rankings, ranking.deterministic, max_rows=3,
                                   repeats=settings.n_samples if distinct == 1 else None, font_px=15, fit=True))
    with right, st.container(key="exposure"):
        # 280–330 px: the series' key in one subtitle line instead of a legend, small provider names, no axis titles
        figure = charts.provider_bars(ranking.providers_table())
        key = " ".join(dict.fromkeys(f"<span style='color:{t.marker.color}'>■</span> {t.name}" for t in figure.data
                                     if t.name))
        figure.update_layout(height=330 if step == 1 else 280, margin={"t": 70, "b": 30, "r": 10}, showlegend=False,
                             title={"text": "Exposure by provider", "subtitle": {"text": key}})
        figure.update_yaxes(tickfont={"size": 11}, title_text="", dtick=1)  # every provider named
        figure.update_xaxes(title_text="")
        st.plotly_chart(figure, key="step_providers_chart", config={"displaylogo": False})


def _answers(ranking, scores: np.ndarray, alpha_used: float, distinct: int):
    """Generate answers as a background job and follow it; the finished run (a RagRun), or None while there is
    none (the job's progress, or what Generate would cost, is shown instead)."""
    if not step:
        st.divider()
        st.subheader("Answers and citations")
    run_key = (settings, ranking.query_text, alpha_used)
    runs = st.session_state["rag_runs"]
    job, partial = latest_answers_job(run_key)  # Generate runs as a background job (fairrag_studio/panels/answers.py)
    if run_key not in runs and partial is not None and "rag" in partial:
        runs[run_key] = partial["rag"]
    if (st.button("Generate answers", type="primary", key="generate") and run_key not in runs
            and (job is None or not job.active)):
        start_answers_job(
            run_key, f"Answers · {markdown_text(ranking.query_text[:40])} · "
                     f"{'deterministic' if math.isinf(alpha_used) else f'α = {alpha_used:g}'}",
            collection=collection, retriever=resources.retriever_for(settings),
            generator=resources.generator(settings.generator, settings.device, settings.prompt_style),
            attributor=resources.attributor(settings.attributor, settings.device), query=query,
            # No stochastic oracle here: it would double the generations of an interactive click. EU is
            # normalised by the best answer of this run instead (the sweep pages sample the oracle).
            config=RagConfig(alpha=alpha_used, n_samples=settings.n_samples, k=settings.k, seed=settings.seed,
                             candidates=settings.candidates, oracle=False,
                             **settings.citation.citation_fields()),
            scores=scores, total=distinct)
        # The sidebar's Jobs panel was drawn earlier in this run, before the job existed: without a rerun it would
        # not list the job, nor move, until the job ended (benchmarks/two_tabs_queue.py).
        st.rerun()
    if run_key not in runs and job is not None:
        if job.active:
            follow_answers(job, partial, lambda answer: answer_card(answer, ranking, collection, settings.n_samples,
                                                                    live=True))
            return None
        if job.error:
            st.error(job.error)
        elif job.status.value == "cancelled":
            st.info(stopped_text(partial, distinct))
            for answer in kept_answers(partial):  # the finished answers stay on the page
                answer_card(answer, ranking, collection, settings.n_samples, live=True)

    rag = runs.get(run_key)
    if rag is None:
        cost = preset_costs().get(settings.answers)
        shown_docs = len(np.unique(ranking.rankings))
        estimate = ""
        if cost:
            seconds = distinct * cost["seconds_per_answer"] + distinct * settings.k * cost["seconds_per_document"]
            took = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"
            estimate = (f" Expect about {took} for the answer" if distinct == 1 else
                        f" Expect about {took} for all {distinct} answers (first one after "
                        f"~{cost['first_answer_seconds']:.0f} s)") + f", as measured on {cost['machine']}."
        st.info(f"Press **Generate answers** to answer the query once per distinct ranking ({distinct} here, "
                f"{shown_docs} documents) with {settings.generator} and check its citations with "
                f"{settings.attributor}.{estimate}")
        if note := prepared_note():  # make class: which tour steps replay from the cache
            st.caption(note)
        if not step:
            explainer(explain.ANSWERS)
        return None
    return rag


def _answer_tiles(rag) -> None:
    """The answers' tiles (EU, EU normalised, EAR, EAE-D, EAE-D/cited) with their captions."""
    tiles = st.columns(5)
    metric_words = METRIC_WORDS.get(rag.metric.value, rag.metric.value)
    extra = {"eu": f"Here: {metric_words}.", "eae_d_per_cited": f"EE-D above: {rag.ee_d:.3f}."}
    for tile, key in zip(tiles, ("eu", "eu_normalised", "ear", "eae_d", "eae_d_per_cited"), strict=True):
        tile.metric(REGISTERED[key].on_tile, fmt(getattr(rag, key)), help=help_text(REGISTERED[key].label,
                                                                                    extra.get(key, "")))
    if step:  # a presenter's step 3: the tiles, then the answers
        return
    if rag.eae_d_per_cited is not None:
        relation = ("more concentrated than" if rag.eae_d_per_cited > rag.ee_d + 0.005 else
                    "more spread than" if rag.eae_d_per_cited < rag.ee_d - 0.005 else "as concentrated as")
        st.caption(f"Citations are {relation} retrieval: EAE-D/cited {rag.eae_d_per_cited:.3f} vs EE-D "
                   f"{rag.ee_d:.3f}. {HOW_TO_READ}.")
    glossary_note(["EU", "EU normalised", "EAR", "EAE-D", "EAE-D/cited"])
    if rag.eu is None:
        st.caption("EU needs a gold answer: pick one of the collection's example queries to see it.")
    else:
        st.caption(f"EU here: {metric_words}; a flagged (degenerate) answer scores 0.")
    for name, reason in rag.undefined.items():
        if name in ("eae_d", "eu_normalised"):  # shown as "—" in the tiles above (EAE-D/cited for the same reason)
            st.caption(f"{'EAE-D and EAE-D/cited' if name == 'eae_d' else 'EU normalised'} have no value: {reason}.")
    explainer(explain.ANSWERS)


def _answer_cards(rag, ranking) -> None:
    """Where the answers came from, the 20 most frequent answers' cards, retrieval against attributed exposure per
    document, and every answer as a table."""
    cached = sum(a.cached for a in rag.answers)
    prepared = prepared_class()
    source = (f"{cached} of {len(rag.answers)} answers came from the disk cache"
              + (f" (prepared with `make class` on {prepared.when})" if cached and prepared is not None else "")
              if cached else f"All {len(rag.answers)} answers were generated now")
    st.caption(f"{source}; made by **{markdown_text(display_name(rag.generator))}**, citations judged by "
               f"**{markdown_text(display_name(rag.attributor))}**.")
    ids = ranking.doc_ids
    shown = STEP_CARDS if step else 20
    for answer in rag.answers[:shown]:  # most frequent first
        answer_card(answer, ranking, collection, settings.n_samples)
    if len(rag.answers) > shown:
        st.caption(f"Showing the {f'{shown} ' if shown > 1 else ''}most frequent of {len(rag.answers)} distinct "
                   "answers" + (f" ({WHOLE_PAGE.lower()}: all of them)." if step else "."))
    if step:
        return

    attributed = pd.DataFrame({"doc_id": ids, "retrieval exposure": ranking.summary.exposure,
                               "attributed exposure": rag.attributed_exposure})
    attributed = attributed[attributed["retrieval exposure"] > 0].sort_values("retrieval exposure", ascending=False)
    st.markdown("**Retrieval vs attributed exposure per document**")
    # ~24 px per document: at a fixed 300 px the chart dropped every other document's label
    st.bar_chart(attributed.set_index("doc_id"), stack=False, height=max(300, 24 * len(attributed) + 60),
                 horizontal=True, sort=False)
    with st.expander("Answers as a table"):
        st.dataframe(rag.answers_table(), hide_index=True)


ranking_and_answers()
if st.session_state["alpha_animation"]:  # Animate α: the next stop after a pause
    time.sleep(ANIMATION_SECONDS)
    st.rerun()
