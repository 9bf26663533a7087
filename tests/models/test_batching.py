"""The batching engine (:mod:`fairrag_core.models.batching`) on the real SmolLM2-135M GGUF: its answers, its callers,
its shared prefixes, its queue and its errors; and its two pure functions (admission order, repetition penalty)."""

import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairrag_core.data import load_collection
from fairrag_core.data.demo import demo_folder
from fairrag_core.errors import InvalidParameterError
from fairrag_core.models.batching import admission_order, penalise
from fairrag_core.models.catalog import model_for
from fairrag_core.models.gguf import resolve_gguf
from fairrag_core.models.llama_cpp import LlamaCppModel
from fairrag_core.models.llm import ChatPrompt, Decoding, common_prefix
from fairrag_core.models.queue import model_queues, on_wait
from fairrag_core.rag.generation import PROMPT_STYLES, build_prompt

NAME = "smollm2-135m"


@pytest.fixture(scope="module")
def gguf_path():
    return resolve_gguf(model_for(NAME).weights)


@pytest.fixture
def make_model(gguf_path):
    """``make_model(slots)``: a fresh SmolLM2 model (its own engine and counters), closed after the test."""
    made = []

    def make(slots: int) -> LlamaCppModel:
        made.append(LlamaCppModel(gguf_path, name=NAME, slots=slots))
        return made[-1]

    yield make
    for model in made:
        model.close()


def _shoe_prompts(style) -> list[ChatPrompt]:
    """Six prompts of two queries, three documents each; the first two of each query share their first documents.
    Documents are cut to 30 words (about 170 tokens a prompt) to keep the file fast on 2 cores."""
    style = replace(style, max_doc_words=30)
    shoes = load_collection(demo_folder("running-shoes"))
    docs, (q0, q1) = shoes.documents, (shoes.queries[0].text, shoes.queries[1].text)
    picks = [(q0, (0, 1, 2)), (q0, (0, 1, 3)), (q0, (0, 4, 5)), (q1, (6, 7, 8)), (q1, (6, 7, 9)), (q1, (10, 11, 12))]
    return [build_prompt(q, [docs[i] for i in ids], style) for q, ids in picks]


def _wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def _idle(engine) -> bool:
    state = engine.state()
    return state.holder is None and not state.waiting


# ---- answers ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("style_name", ["short", "grounded"])
def test_the_engine_decodes_each_prompt_as_the_one_at_a_time_path(make_model, style_name):
    """Same tokens, stop strings, finish reasons and repetition penalty as llama-cpp-python's own loop (slots=1).
    "grounded" has repeat_penalty 1.3 and three stop strings: llama-cpp-python's penalty sees the generated tokens
    only, not the prompt (the engine once penalised the prompt's tokens too and answered otherwise)."""
    style = PROMPT_STYLES[style_name]
    decoding = replace(style.decoding, max_new_tokens=16)
    prompts = _shoe_prompts(style)
    reference = make_model(1).complete(prompts, decoding)
    model = make_model(8)
    alone = [model.complete([p], decoding)[0] for p in prompts]  # one at a time: the same KV layout as slots=1
    assert alone == reference
    assert [c.tokens for c in alone] == [c.tokens for c in reference]
    assert sum(bool(c.text) for c in alone) >= 4 and {c.finish_reason for c in alone} <= {"stop", "length"}
    assert model.usage.calls == len(prompts) and model.usage.generated_tokens == sum(c.tokens for c in alone)


def test_a_three_token_answer_ends_for_length_as_on_the_one_at_a_time_path(make_model):
    prompt = _shoe_prompts(PROMPT_STYLES["short"])[0]
    decoding = Decoding(max_new_tokens=3)
    got = make_model(8).complete([prompt], decoding)[0]
    assert got.finish_reason == "length" and got.tokens == 3
    assert got == make_model(1).complete([prompt], decoding)[0]


# ---- callers ---------------------------------------------------------------------------------------------------

#: Words SmolLM2 repeats back (alone and in a batch): each caller's answers must hold its own words and no others.
WORDS = [("lighthouse", "saxophone"), ("pineapple", "tornado"), ("banana", "rocket"), ("dolphin", "coffee")]


def _echo(word: str) -> ChatPrompt:
    return ChatPrompt("Repeat the word you are given, nothing else.", f"Word: {word}\nRepeat it:")


def test_four_callers_at_once_each_get_their_own_answers(make_model):
    model = make_model(8)
    decoding = Decoding(max_new_tokens=16)
    answers: dict[int, list] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(WORDS))

    def caller(n: int) -> None:
        try:
            start.wait()
            answers[n] = model.complete([_echo(w) for w in WORDS[n]], decoding)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=caller, args=(n,), name=f"caller-{n}") for n in range(len(WORDS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and sorted(answers) == list(range(len(WORDS)))
    every = {w for pair in WORDS for w in pair}
    for n, pair in enumerate(WORDS):
        for word, completion in zip(pair, answers[n]):
            text = completion.text.lower()
            assert word in text, (word, completion)
            assert not any(other in text for other in every - {word}), (word, completion)
    assert model.usage.calls == 2 * len(WORDS)
    assert model._engine.batched_tokens > 0  # the callers' answers shared steps
    # not compared with one-at-a-time answers word for word: which tokens share a step depends on the threads'
    # timing, and a batch moves logits a little (batching.py), so SmolLM2 once began "I'm going to repeat the
    # word" in one run and not in another


# ---- prefix sharing --------------------------------------------------------------------------------------------


def test_prompts_with_the_same_first_documents_evaluate_the_shared_part_once(make_model):
    style = PROMPT_STYLES["short"]
    prompts = _shoe_prompts(style)[:3]  # documents (0, 1, 2), (0, 1, 3), (0, 4, 5) of one query
    model = make_model(8)
    tokens = [model._prompt_tokens(p) for p in prompts]
    lengths = [len(t) for t in tokens]
    decoding = Decoding(max_new_tokens=4)
    model.complete(prompts, decoding)
    engine = model._engine
    assert engine.prompt_tokens + engine.reused_tokens == sum(lengths)
    # the second copies the system prompt and documents [1] and [2] of the first, the third its document [1]
    shared = common_prefix(tokens[0], tokens[1]) + common_prefix(tokens[0], tokens[2])
    assert shared > 150 and engine.reused_tokens == shared
    assert engine.prompt_tokens == sum(lengths) - shared
    before = (engine.prompt_tokens, engine.reused_tokens)
    model.complete(prompts[1:2], decoding)  # a repeat: all but its last token are in the cache
    assert (engine.prompt_tokens - before[0], engine.reused_tokens - before[1]) == (1, lengths[1] - 1)


# ---- streaming and cancel --------------------------------------------------------------------------------------


def test_streaming_yields_every_index_once_and_leaving_early_cancels_the_rest(make_model):
    """Streamed together, the six prompts share decoding steps. (Their greedy answers may differ from the
    one-at-a-time ones: the sums of a batch run in another order — see the module docstring.)"""
    style = PROMPT_STYLES["short"]
    prompts = _shoe_prompts(style)
    decoding = replace(style.decoding, max_new_tokens=8)
    model = make_model(8)
    streamed = list(model.complete_each(prompts, decoding))
    assert sorted(i for i, _ in streamed) == list(range(len(prompts)))
    assert all(c.text and 1 <= c.tokens <= 8 for _, c in streamed)
    assert model._engine.batched_tokens > 0  # steps that generated for more than one prompt
    assert model.usage.calls == 6 and model.usage.generated_tokens == sum(c.tokens for _, c in streamed)
    model = make_model(2)  # two slots: when the first answer is ready, most prompts still queue
    for _ in model.complete_each(prompts, decoding):
        break
    engine = model._engine
    _wait_until(lambda: _idle(engine))
    assert model.usage.calls < len(prompts)  # the cancelled ones were not answered
    assert all(slot.ticket is None for slot in engine._slots) and not engine._queue


# ---- the queue view --------------------------------------------------------------------------------------------


def test_a_waiting_caller_is_told_its_place_and_the_engine_is_listed(make_model):
    model = make_model(2)
    model._engine_for()
    engine = model._engine
    busy = threading.Thread(target=model.complete, name="busy-job",
                            args=([_echo(w) for pair in WORDS[:3] for w in pair], Decoding(max_new_tokens=24)))
    busy.start()
    _wait_until(lambda: engine.state().holder is not None and len(engine.state().waiting) >= 2)
    listed = [s for s in model_queues() if s.model == NAME and s.holder and s.holder.startswith("2 answers at once")]
    assert listed and listed[0].waiting[0][0] == "busy-job"
    reports = []
    with on_wait(lambda state, place: reports.append((state, place))):
        answer = model.complete([_echo("pencil")], Decoding(max_new_tokens=8))[0]
    busy.join(60)
    assert "pencil" in answer.text.lower()
    # the engine's reports (the model's lock may report too, while the caller's prompt is tokenized)
    waits = [(s, p) for s, p in reports if s is not None and s.holder and "at once" in s.holder]
    assert waits and all(s.model == NAME and p >= 1 for s, p in waits)
    assert reports[-1] == (None, 0)


# ---- pure functions --------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(queued=st.lists(st.sampled_from("abcd"), max_size=12),
       in_slots=st.dictionaries(st.sampled_from("abcd"), st.integers(0, 4)))
def test_admission_order_is_fair_by_owner_and_first_come_within_one(queued, in_slots):
    order = admission_order(queued, in_slots)
    assert sorted(order) == list(range(len(queued)))
    counts = dict(in_slots)
    for k, i in enumerate(order):
        still = {queued[j] for j in order[k:]}
        # no owner gets another slot while an owner still queued has fewer
        assert counts.get(queued[i], 0) == min(counts.get(o, 0) for o in still)
        counts[queued[i]] = counts.get(queued[i], 0) + 1
    for owner in set(queued):
        mine = [i for i in order if queued[i] == owner]
        assert mine == sorted(mine)  # one owner's prompts in arrival order


def _penalise_by_hand(logits, context, penalty):
    out = list(logits)
    for token in set(context):
        out[token] = out[token] / penalty if out[token] > 0 else out[token] * penalty
    return out


@settings(max_examples=200, deadline=None)
@given(logits=st.lists(st.floats(-30, 30, allow_nan=False), min_size=1, max_size=20), data=st.data(),
       penalty=st.sampled_from([1.0, 1.1, 1.3, 2.0]))
def test_penalise_matches_llama_cpps_rule(logits, data, penalty):
    context = data.draw(st.lists(st.integers(0, len(logits) - 1), max_size=10))
    array = np.array(logits)
    got = penalise(array, context, penalty)
    np.testing.assert_allclose(got, _penalise_by_hand(logits, context, penalty))
    assert array.tolist() == logits  # the caller's logits are left as they were


# ---- errors ----------------------------------------------------------------------------------------------------


def test_a_prompt_over_the_context_names_the_fix(make_model):
    model = make_model(2)
    too_long = ChatPrompt("Answer.", "Documents:\n[1] " + "The Cadence is a soft neutral trainer. " * 600)
    with pytest.raises(InvalidParameterError, match=r"over the context of 4096; use shorter documents or fewer"):
        model.complete([too_long], Decoding(max_new_tokens=4))


def test_closing_the_model_ends_the_waiting_prompts_with_an_error(make_model):
    model = make_model(2)
    engine = model._engine_for()
    tokens = [model._prompt_tokens(_echo(w)) for pair in WORDS for w in pair]
    tickets = [engine.submit(t, Decoding(max_new_tokens=24)) for t in tokens]
    closer = threading.Thread(target=model.close)
    closer.start()
    closer.join(10)
    assert not closer.is_alive()
    failed = 0
    for ticket in tickets:
        try:
            ticket.result(timeout=10)
        except RuntimeError as err:
            assert str(err) == f"the model {NAME} was closed"
            failed += 1
    assert failed >= len(tickets) - 2  # at most the two in slots could finish first
    with pytest.raises(RuntimeError, match="was closed"):
        engine.submit(tokens[0], Decoding())
