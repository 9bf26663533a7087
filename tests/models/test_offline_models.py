"""The real offline models (MODELS.md): SmolLM2-135M generator, Qwen2.5-1.5B judge, via llama-cpp-python."""

import json
from pathlib import Path

import numpy as np
import pytest

from fairrag_core.models.catalog import load_language_model
from fairrag_core.models.llm import ChatPrompt
from fairrag_core.rag.attribution import NLI_CLASSES, default_attributor
from fairrag_core.rag.generation import Generator

pytestmark = pytest.mark.model

PAIRS = [json.loads(line) for line in (Path(__file__).parents[1] / "data" / "nli_pairs.jsonl").read_text().splitlines()]


def test_labelled_nli_set_is_balanced_and_large_enough():
    labels = [p["label"] for p in PAIRS]
    assert len(PAIRS) >= 40 and set(labels) == set(NLI_CLASSES) and min(map(labels.count, NLI_CLASSES)) >= 10


def test_smollm2_generator_answers_from_documents(shoes):
    model = load_language_model("smollm2-135m")
    assert model.backend == "llama-cpp" and model.device == "cpu"
    q = shoes.find_query("best shoes for a first marathon")
    useful = [shoes.documents[i] for i in np.flatnonzero(shoes.useful(q.query_id, min_rel=2))[:3]]
    first = Generator(model).answer_rankings(q.text, [useful])[0]
    again = Generator(model).answer_rankings(q.text, [useful])[0]  # fresh cache: the model itself is deterministic
    assert first == again and first.strip()
    assert any(w in first.lower() for w in ("cushion", "neutral", "trainer", "shoe", "size"))


def test_option_probabilities_are_a_distribution():
    model = load_language_model("smollm2-135m")
    probs = model.option_probabilities(ChatPrompt("", "Is Paris in France? Reply yes or no."), ["yes", "no"])
    assert probs.shape == (2,) and probs.sum() == pytest.approx(1.0)


def test_token_usage_counts_the_kv_prefix_llama_cpp_reuses():
    model = load_language_model("smollm2-135m")
    shared = "Documents:\n[1] " + "The Cadence is a neutral trainer with a soft midsole. " * 8
    first, second = ChatPrompt("Answer briefly.", shared + "\nQuestion: Is it soft?"), \
        ChatPrompt("Answer briefly.", shared + "\nQuestion: Is it neutral?")
    before = model.usage.snapshot()
    model.generate([first])
    one = model.usage - before
    model.generate([second])
    two = model.usage - before - one
    assert one.calls == two.calls == 1 and one.generated_tokens > 0
    # the second prompt is as long as the first; all but its last few tokens come from the KV cache
    assert two.prompt_tokens + two.reused_tokens == one.prompt_tokens + one.reused_tokens
    assert two.reused_tokens > 0.8 * (two.prompt_tokens + two.reused_tokens)


@pytest.mark.slow
def test_kept_document_states_give_the_judgements_of_a_fresh_evaluation():
    from fairrag_core.models.llama_cpp import LlamaCppModel
    from fairrag_core.rag.attribution import LLMJudgeAttributor

    model = default_attributor().model
    pairs = [(p["premise"], p["hypothesis"], p["question"]) for p in PAIRS[:2] + PAIRS[10:12]]
    # alternate the two documents so that each later claim needs a kept state (not the last prompt's cache)
    calls = [pairs[0], pairs[2], pairs[1], pairs[3]]
    kept = LLMJudgeAttributor(model)
    before = model.usage.snapshot()
    with_states = np.array([kept.class_probabilities([d], [h], contexts=[q])[0] for d, h, q in calls])
    used = model.usage - before
    fresh_model = LlamaCppModel(model.path, name=model.name, kept_states_mb=0)  # nothing kept
    fresh = LLMJudgeAttributor(fresh_model)
    for (d, h, q), row in zip(calls, with_states):
        fresh_model._load().reset()  # no cache at all: every prompt evaluated from its first token
        np.testing.assert_allclose(fresh.class_probabilities([d], [h], contexts=[q])[0], row, atol=0.02)
    # the third and fourth calls restored their document's state: only the claims were evaluated
    assert used.prompt_tokens < 0.75 * fresh_model.usage.prompt_tokens
    fresh_model.close()


@pytest.mark.slow
def test_qwen_judge_accuracy_on_the_labelled_set():
    """The judge on 44 hand-written (premise, answer, question) pairs, read as the product reads it: cited when
    P(supported) reaches the presets' threshold. Measured with the question-aware statement (docs/answers.md):
    precision 1.00, recall 0.72 at τ = 0.3; argmax 3-way accuracy 0.68 and entailment-vs-not 0.82 (the earlier
    statement, "<answer> (an answer to the question: …)": 0.80 and 0.93). The new statement is stricter with bare
    short answers ("4.25 percent", "dry leaves": P 0.2–0.4), the price of no longer crediting what a document merely
    mentions (the tour's carbon racers)."""
    from fairrag_core.rag.presets import FITTED_CITATION

    judge = default_attributor()
    probs = judge.class_probabilities([p["premise"] for p in PAIRS], [p["hypothesis"] for p in PAIRS],
                                      contexts=[p["question"] for p in PAIRS])
    truth = np.array([p["label"] == "entailment" for p in PAIRS])
    cited = probs[:, 0] >= FITTED_CITATION.entail_threshold
    precision, recall = (cited & truth).sum() / max(cited.sum(), 1), (cited & truth).sum() / truth.sum()
    three_way = np.mean([NLI_CLASSES[i] == p["label"] for i, p in zip(probs.argmax(axis=1), PAIRS)])
    print(f"\nqwen judge on {len(PAIRS)} pairs: at τ = {FITTED_CITATION.entail_threshold} precision {precision:.3f}, "
          f"recall {recall:.3f}; argmax 3-way accuracy {three_way:.3f}")
    assert precision >= 0.9 and recall >= 0.7  # the citation target, on these pairs
    assert three_way >= 0.6


@pytest.mark.slow
def test_rag_pipeline_with_the_offline_models(shoes, shoes_bm25):
    from fairrag_core.rag.attribution import load_attributor
    from fairrag_core.rag.pipeline import RagConfig, run_rag

    generator = Generator(load_language_model("smollm2-135m"))
    run = run_rag(shoes, shoes_bm25, generator, load_attributor("qwen-judge"), "best shoes for a first marathon",
                  RagConfig(alpha=4.0, n_samples=6, k=3, candidates=8, seed=11, oracle=False), n_boot=50)
    metrics = run.metrics()
    assert all(metrics[m] is not None and 0 <= metrics[m] <= 1 for m in ("ee_d", "ee_r", "eu", "ear", "eae_d"))
    assert run.eae_d <= run.ee_d + 1e-12
    table = run.answers_table()
    assert table["samples"].sum() == 6 and len(table) == len(run.answers) <= 6
    for ranking, cited in zip(table["ranking"], table["citations"]):
        assert set(cited) <= set(ranking)
    assert generator.cache.misses == len(run.answers)


def test_the_judge_cites_a_document_that_gives_the_answer_to_the_question_not_one_that_names_it(shoes):
    """The tour's failure (issue 21): "Stridewell Cadence 9" for *best shoes for a first marathon* was cited by the
    carbon racer's page, which names the Cadence 9 only as the trainer it beat; the Velocore Vanta Carbon was cited
    by its own racer page. Under the presets' rule, the real judge cites the Cadence 9's own page only."""
    from fairrag_core.rag.attribution import load_attributor
    from fairrag_core.rag.judging import JudgeItem, judge_answers
    from fairrag_core.rag.presets import FITTED_CITATION

    question = "best shoes for a first marathon"
    judge = load_attributor("qwen-judge")
    judge.disk = None  # judge now, not from an earlier run's cache
    documents = list(shoes.documents)
    at = shoes.index_of
    items = [JudgeItem("The Stridewell Cadence 9 is the best shoes for a first marathon.",
                       (at("rs-092"), at("rs-045")), question=question, context=question),
             JudgeItem("The best shoes for a first marathon are the Velocore Vanta Carbon.", (at("rs-020"),),
                       question=question, context=question)]
    (racer, trainer), (vanta,) = judge_answers(judge, documents, items, FITTED_CITATION)
    assert trainer.cited and not racer.cited and not vanta.cited
    assert racer.p_entail < 0.1 < 0.5 < trainer.p_entail  # measured: 0.02 and 0.60 (benchmarks/tour_citations.py)
