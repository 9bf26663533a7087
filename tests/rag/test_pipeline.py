import itertools
import math

import numpy as np
import pytest
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core import Collection, Document, InvalidParameterError, Query
from fairrag_core.metrics.utility import rouge
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.pipeline import AnswerStream, RagConfig, oracle_rankings, run_rag
from fairrag_core.retrieval import BM25Retriever


@pytest.fixture()
def toy():
    docs = tuple(Document(f"d{i}", f"shoe review {'marathon ' * (6 - i)}", title=f"Brand{i}", provider=f"B{i % 3}")
                 for i in range(6))
    query = Query("q1", "marathon shoe", answer="Brand0")
    collection = Collection("toy", docs, (query,), {"q1": {"d0": 1, "d1": 1}})
    return collection, BM25Retriever(collection.texts)


def test_metrics_match_hand_computation(toy):
    collection, retriever = toy
    model, attributor = FirstDocumentModel(), SubstringAttributor()
    run = run_rag(collection, retriever, Generator(model), attributor, "marathon shoe",
                  RagConfig(alpha=1.0, n_samples=200, k=3, seed=4), n_boot=20)
    rankings = run.ranking.rankings
    ids = run.ranking.doc_ids
    first = np.array([ids[r[0]] for r in rankings])
    # the fake generator answers the first document's title; only that document contains it
    assert run.ear == pytest.approx(1 / 3)
    eps_a = np.array([np.mean(first == d) for d in ids])
    np.testing.assert_allclose(run.attributed_exposure, eps_a)
    assert run.eae_d == pytest.approx(eps_a @ eps_a / 3)
    assert run.eae_d <= run.ee_d
    utils = np.array([rouge(f"Brand{d[1:]}", "Brand0") for d in first])
    assert run.eu == pytest.approx(utils.mean())
    assert run.u_max == 1.0 and run.eu_normalised == pytest.approx(run.eu)  # the oracle puts d0/d1 first
    oracle = oracle_rankings(run.ranking.labels, 200, 3, np.random.default_rng([run.ranking.seed, 1]))
    distinct = {tuple(map(int, r)) for r in rankings} | {tuple(map(int, r)) for r in oracle}
    assert model.prompts_seen == len(distinct)  # each distinct list generated once, run and oracle together
    assert sum(g.count for g in run.answers) == 200
    table = run.answers_table()
    assert table["samples"].sum() == 200 and all(len(c) == 1 for c in table["citations"])


def test_deterministic_run_generates_once(toy):
    collection, retriever = toy
    model = FirstDocumentModel()
    run = run_rag(collection, retriever, Generator(model), SubstringAttributor(), "marathon shoe",
                  RagConfig(alpha=math.inf, n_samples=50, k=2, seed=0, oracle=False), n_boot=10)
    assert len(run.answers) == 1 and model.prompts_seen == 1
    assert run.ee_d == 1.0 and run.eae_d == pytest.approx(0.5)  # one credited document of k = 2
    assert run.answers_table()["ranking"][0] == [run.ranking.doc_ids[i] for i in run.ranking.deterministic]


def test_free_query_has_no_utility(toy):
    collection, retriever = toy
    run = run_rag(collection, retriever, Generator(FirstDocumentModel()), SubstringAttributor(), "review",
                  RagConfig(alpha=0, n_samples=10, k=2, seed=1), n_boot=10)
    assert run.eu is None and run.eu_normalised is None and run.ee_r is None and 0 <= run.ear <= 1


def test_attribution_is_cached_per_pair(toy):
    collection, retriever = toy
    attributor = SubstringAttributor()
    gen = Generator(FirstDocumentModel())
    config = RagConfig(alpha=8.0, n_samples=30, k=2, seed=2, oracle=False)
    run_rag(collection, retriever, gen, attributor, "marathon shoe", config, n_boot=10)
    scored = attributor.scored
    run_rag(collection, retriever, gen, attributor, "marathon shoe", config, n_boot=10)
    assert attributor.scored == scored  # same lists, same answers: nothing scored twice


def test_oracle_rankings_put_useful_first():
    labels = np.array([0, 1, 0, 1, 0], dtype=bool)
    rows = oracle_rankings(labels, 500, 3, 0)
    assert set(map(int, np.unique(rows[:, :2]))) == {1, 3}
    assert set(map(int, np.unique(rows[:, 2]))) == {0, 2, 4}


def test_retrieval_prompt_order_shares_generations_between_permutations(toy):
    collection, retriever = toy
    sampled, ordered = FirstDocumentModel(), FirstDocumentModel()
    config = {"alpha": 0.0, "n_samples": 300, "k": 3, "seed": 5, "oracle": False}
    a = run_rag(collection, retriever, Generator(sampled), SubstringAttributor(), "marathon shoe",
                RagConfig(**config), n_boot=10)
    b = run_rag(collection, retriever, Generator(ordered), SubstringAttributor(), "marathon shoe",
                RagConfig(**config, prompt_order="retrieval"), n_boot=10)
    assert np.array_equal(a.ranking.rankings, b.ranking.rankings)
    assert ordered.prompts_seen == len(b.answers) <= 20 < sampled.prompts_seen  # C(6,3) = 20 sets vs 120 orders
    assert a.ee_d == b.ee_d
    with pytest.raises(InvalidParameterError, match="prompt_order=.random. is not one of: sampled, retrieval"):
        run_rag(collection, retriever, Generator(sampled), SubstringAttributor(), "marathon shoe",
                RagConfig(alpha=1.0, prompt_order="random"), n_boot=10)


def test_progress_reports_each_chunk_and_interrupted_runs_resume_from_the_caches(toy):
    collection, retriever = toy
    config = RagConfig(alpha=0.0, n_samples=40, k=3, seed=9, oracle=False)
    whole = run_rag(collection, retriever, Generator(FirstDocumentModel()), SubstringAttributor(), "marathon shoe",
                    config, n_boot=10)
    model, attributor = FirstDocumentModel(), SubstringAttributor()
    generator = Generator(model)
    calls = []

    def stop_after_first_chunk(stage, done, total):
        calls.append((stage, done, total))
        if len(calls) == 1:
            raise KeyboardInterrupt  # what a Streamlit "Stop" does between two progress updates

    with pytest.raises(KeyboardInterrupt):
        run_rag(collection, retriever, generator, attributor, "marathon shoe", config, n_boot=10,
                stream=AnswerStream(progress=stop_after_first_chunk, chunk=2))
    assert calls == [("generate", 1, len(whole.answers))] and model.prompts_seen == 1  # progress after each answer
    seen: list = []
    resumed = run_rag(collection, retriever, generator, attributor, "marathon shoe", config, n_boot=10,
                      stream=AnswerStream(progress=lambda *a: seen.append(a), chunk=2))
    assert model.prompts_seen == len(whole.answers)  # the two finished answers came from the cache
    n = len(whole.answers)
    assert [a for a in seen if a[0] == "generate"][-1] == ("generate", n, n)
    assert [a for a in seen if a[0] == "attribute"][-1] == ("attribute", n, n)
    assert resumed.metrics() == whole.metrics()
    streamed: list = []
    again = run_rag(collection, retriever, generator, attributor, "marathon shoe", config, n_boot=10,
                    stream=AnswerStream(chunk=1, on_answer=streamed.append))
    assert tuple(streamed) == again.answers and again.metrics() == whole.metrics()
    chunks: list = []
    grown = run_rag(collection, retriever, generator, attributor, "marathon shoe", config, n_boot=10,
                    stream=AnswerStream(chunk=1, growing=True, progress=lambda stage, done, total: chunks.append(done)
                                        if stage == "generate" else None))
    assert chunks == list(range(1, n + 1))  # one report per answer, whatever the chunks (1, 1, 2, 4, …)
    assert grown.metrics() == whole.metrics()
    with pytest.raises(InvalidParameterError, match="chunk=0; chunk must be a positive integer"):
        run_rag(collection, retriever, generator, attributor, "marathon shoe", config, stream=AnswerStream(chunk=0))


def test_progress_moves_once_per_answer_and_per_judged_document_whatever_the_chunks(toy):
    collection, retriever = toy
    config = RagConfig(alpha=0.0, n_samples=40, k=3, seed=9, oracle=False)
    seen: list = []
    run = run_rag(collection, retriever, Generator(FirstDocumentModel()), SubstringAttributor(), "marathon shoe",
                  config, n_boot=10, stream=AnswerStream(chunk=1, growing=True, progress=lambda *a: seen.append(a)))
    generated = [done for stage, done, _ in seen if stage == "generate"]
    assert generated == list(range(1, len(run.answers) + 1))
    judged = [(done, total) for stage, done, total in seen if stage == "judge"]
    # each chunk's judging reports 0 first, then after every judge call (one document and the chunk's claims
    # about it), rising to the chunk's total of (document, claim) pairs
    starts = [i for i, (done, _) in enumerate(judged) if done == 0]
    assert len(starts) == len([s for s, *_ in seen if s == "attribute"])  # one block per chunk
    for a, b in zip(starts, [*starts[1:], len(judged)]):
        done = [d for d, _ in judged[a:b]]
        assert all(x < y for x, y in itertools.pairwise(done)) and done[-1] == judged[a][1]
    distinct_documents = len({p for a in run.answers for p in a.positions})
    assert len(judged) - len(starts) >= distinct_documents  # every document was judged at least once, each reported


def test_ticks_come_before_every_model_call_so_a_stop_is_quick(toy):
    collection, retriever = toy
    config = RagConfig(alpha=0.0, n_samples=40, k=3, seed=9, oracle=False)
    model, attributor = FirstDocumentModel(), SubstringAttributor()
    ticks = []
    run = run_rag(collection, retriever, Generator(model), attributor, "marathon shoe", config, n_boot=10,
                  stream=AnswerStream(chunk=4, tick=lambda: ticks.append(1)))
    distinct_documents = len({p for a in run.answers for p in a.positions})
    assert len(ticks) >= len(run.answers) + distinct_documents  # one per answer, at least one per judged document

    class Stop(Exception):
        pass

    def stop_after(n):
        def tick():
            ticks.append(1)
            if len(ticks) > n:
                raise Stop
        return tick

    ticks.clear()
    fresh = FirstDocumentModel()
    with pytest.raises(Stop):
        run_rag(collection, retriever, Generator(fresh), attributor, "marathon shoe", config, n_boot=10,
                stream=AnswerStream(chunk=8, tick=stop_after(2)))
    assert fresh.prompts_seen == 2  # stopped after two answers, not after the chunk of eight


class _UnsupportedModel(FirstDocumentModel):
    """Answers something no document contains: nothing is ever cited."""

    def complete(self, prompts, decoding=None):
        return [type(c)("zebra crossing", c.finish_reason) for c in super().complete(prompts, decoding)]


def test_nothing_cited_leaves_eae_d_undefined(toy):
    collection, retriever = toy
    run = run_rag(collection, retriever, Generator(_UnsupportedModel()), SubstringAttributor(), "marathon shoe",
                  RagConfig(alpha=1.0, n_samples=20, k=3, seed=4), n_boot=20)
    assert run.ear == 0.0 and not run.attributed_exposure.any()
    assert run.eae_d is None  # it read 0.0, "perfectly fair", with nothing cited
    assert "no answer cites any" in run.undefined["eae_d"]
    # every answer scores 0 against the gold answer: normalised EU is 0/0
    assert run.eu == 0.0 and run.eu_normalised is None and "0/0" in run.undefined["eu_normalised"]
    assert run.metrics()["eae_d"] is None
