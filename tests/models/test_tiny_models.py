"""Plumbing of the transformers backends with tiny random-weight models built from configs (no download)."""

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaForSequenceClassification,
    T5Config,
    T5ForConditionalGeneration,
)

from fairrag_core import InvalidParameterError
from fairrag_core.models.llm import ChatPrompt
from fairrag_core.models.transformers_lm import TransformersModel
from fairrag_core.rag.attribution import CrossEncoderAttributor

WORDS = ("the a shoe shoes marathon runner cushioned neutral trainer rain paris fell monday it rained sunny dry "
         "yes no entailment neutral contradiction question answer document claim brand price miles").split()


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {tok: i for i, tok in enumerate(["<pad>", "<unk>", "<s>", "</s>", *WORDS])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def nli_model(tokenizer):
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=80, pad_token_id=0, num_labels=3,
                           id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
                           label2id={"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2})
    return RobertaForSequenceClassification(config).eval()


@pytest.mark.parametrize(
    ("id2label", "columns"),
    [
        ({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, [2, 1, 0]),  # roberta-large-mnli
        ({0: "entailment", 1: "neutral", 2: "contradiction"}, [0, 1, 2]),  # deberta-style
        ({0: "entailment", 1: "not_entailment"}, [0, 1, None]),  # two-class NLI
    ],
)
def test_class_columns_from_id2label(id2label, columns):
    assert CrossEncoderAttributor.class_columns(id2label) == columns


def test_class_columns_refuse_a_non_nli_head():
    with pytest.raises(InvalidParameterError, match="entailment class"):
        CrossEncoderAttributor.class_columns({0: "LABEL_0", 1: "LABEL_1"})


def test_cross_encoder_maps_labels_and_keeps_premise_hypothesis_order(nli_model, tokenizer):
    seen = []
    hook = nli_model.register_forward_pre_hook(lambda mod, args, kwargs: seen.append(kwargs["input_ids"].clone()),
                                               with_kwargs=True)
    try:
        att = CrossEncoderAttributor("tiny", model=nli_model, tokenizer=tokenizer, max_length=12, batch_size=4)
        premises = ["rain fell in paris on monday " * 5, "the shoe"]
        hypotheses = ["it rained in paris", "cushioned neutral trainer"]
        probs = att.class_probabilities(premises, hypotheses)
    finally:
        hook.remove()
    assert probs.shape == (2, 3) and np.allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    ids = seen[0]
    hyp0 = tokenizer("it rained in paris", add_special_tokens=False)["input_ids"]
    row0 = [t for t in ids[0].tolist() if t != tokenizer.pad_token_id]
    assert len(row0) == 12 and row0[-len(hyp0):] == hyp0  # the long premise was cut, never the hypothesis
    assert row0[0] == tokenizer("rain", add_special_tokens=False)["input_ids"][0]  # premise first
    with torch.no_grad():
        logits = nli_model(**tokenizer(premises, hypotheses, truncation="only_first", max_length=12, padding=True,
                                       return_tensors="pt")).logits
    expected = torch.softmax(logits, -1).numpy()
    np.testing.assert_allclose(probs[:, 0], expected[:, 2], atol=1e-5)  # ENTAILMENT is column 2
    np.testing.assert_allclose(probs[:, 2], expected[:, 0], atol=1e-5)  # CONTRADICTION is column 0


def test_cross_encoder_batching_and_cache(nli_model, tokenizer):
    premises = [f"the shoe {w}" for w in WORDS[:9]]
    hypotheses = ["marathon runner"] * 9
    one = CrossEncoderAttributor("tiny", model=nli_model, tokenizer=tokenizer, batch_size=1)
    many = CrossEncoderAttributor("tiny", model=nli_model, tokenizer=tokenizer, batch_size=4)
    np.testing.assert_allclose(one.probabilities(premises, hypotheses), many.probabilities(premises, hypotheses),
                               atol=1e-5)
    calls = []
    hook = nli_model.register_forward_hook(lambda *a: calls.append(1))
    try:
        many.probabilities(premises, hypotheses)
    finally:
        hook.remove()
    assert calls == []  # every pair came from the cache
    assert many.entails(["x"], [""]) == [False]  # an empty answer entails nothing


def test_mismatched_pairs(nli_model, tokenizer):
    att = CrossEncoderAttributor("tiny", model=nli_model, tokenizer=tokenizer)
    with pytest.raises(InvalidParameterError, match="one premise per hypothesis"):
        att.entails(["a", "b"], ["c"])


@pytest.fixture(scope="module")
def causal_dir(tmp_path_factory, tokenizer):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256, pad_token_id=0,
                         bos_token_id=2, eos_token_id=3)
    folder = tmp_path_factory.mktemp("tiny-causal")
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_causal_backend_batches_deterministically(causal_dir):
    model = TransformersModel(str(causal_dir), batch_size=3)
    prompts = [ChatPrompt("", "the shoe"), ChatPrompt("answer", "marathon runner rain paris fell monday"),
               ChatPrompt("", "yes"), ChatPrompt("", "the cushioned neutral trainer")]
    batched = model.generate(prompts, max_new_tokens=5)
    single = [TransformersModel(str(causal_dir), batch_size=1).generate([p], max_new_tokens=5)[0] for p in prompts]
    assert batched == single  # left padding and length-sorted batches do not change greedy outputs
    assert model.generate(prompts, max_new_tokens=5) == batched
    assert model.device == "cpu"


def test_causal_option_probabilities(causal_dir):
    model = TransformersModel(str(causal_dir))
    probs = model.option_probabilities(ChatPrompt("", "document claim"), ["entailment", "neutral", "contradiction"])
    assert probs.shape == (3,) and probs.sum() == pytest.approx(1.0)
    with pytest.raises(InvalidParameterError, match="share a first token"):
        model.option_probabilities(ChatPrompt("", "x"), ["yes", "yes"])


def test_seq2seq_backend(tmp_path, tokenizer):
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=3)
    T5ForConditionalGeneration(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model = TransformersModel(str(tmp_path), batch_size=2)
    out = model.generate([ChatPrompt("", "the shoe"), ChatPrompt("", "rain paris")], max_new_tokens=4)
    assert len(out) == 2 and all(isinstance(o, str) for o in out)
    assert model.is_seq2seq
    assert model.option_probabilities(ChatPrompt("", "q"), ["yes", "no"]).sum() == pytest.approx(1.0)


def test_unreachable_model_names_the_offline_alternatives(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from fairrag_core import ModelUnavailableError
    from fairrag_core.models import catalog

    monkeypatch.setattr(catalog, "_loaded", {})
    with pytest.raises(ModelUnavailableError, match=r"offline model \(smollm2-135m, qwen2.5-0.5b, qwen2.5-1.5b\)"):
        catalog.load_language_model("google/flan-t5-small").generate([ChatPrompt("", "q")])
    with pytest.raises(ModelUnavailableError, match="Without the Hugging Face hub use a local folder$"):
        TransformersModel("google/flan-t5-small").generate([ChatPrompt("", "q")])  # built by hand: no catalogue


def test_loaded_reports_whether_the_weights_are_in_memory(tmp_path):
    from fairrag_core.models.transformers_lm import TransformersModel

    model = TransformersModel(str(tmp_path / "nowhere"), device="cpu")
    assert model.loaded is False and model.device == "cpu"
