"""Model identity: which weights made an output (the disk cache's key), without loading any model."""

import dataclasses
import hashlib

from fairrag_core.models import catalog, gguf
from fairrag_core.models.identity import file_sha256, model_identity, source_identity
from fairrag_core.models.llama_cpp import LlamaCppModel
from fairrag_core.models.transformers_lm import TransformersModel


def test_a_gguf_model_is_its_file_hash(tmp_path):
    one, two = tmp_path / "one.gguf", tmp_path / "two.gguf"
    one.write_bytes(b"weights A")
    two.write_bytes(b"weights B")
    ident = model_identity(LlamaCppModel(one, name="same-name"))
    assert ident == f"llama-cpp:gguf-sha256:{hashlib.sha256(b'weights A').hexdigest()}"
    assert model_identity(LlamaCppModel(two, name="same-name")) != ident  # same name, other weights
    assert model_identity(LlamaCppModel(one, name="other-name")) == ident  # renamed, same weights


def test_verified_bundled_weights_use_the_pinned_digest_without_hashing(tmp_path, monkeypatch):
    path = tmp_path / catalog.SMOLLM2_135M.weights.file_name
    path.write_bytes(b"x" * 10)
    pinned = dataclasses.replace(catalog.SMOLLM2_135M.weights, size=10)
    monkeypatch.setattr(catalog, "CATALOG", (dataclasses.replace(catalog.SMOLLM2_135M, weights=pinned),))
    assert file_sha256(path) == hashlib.sha256(b"x" * 10).hexdigest()  # not verified: hashed
    monkeypatch.setattr(gguf, "_verified", {path})
    monkeypatch.setattr(gguf, "sha256_of", lambda p: (_ for _ in ()).throw(AssertionError("hashed")))
    assert file_sha256(path) == pinned.sha256


def test_transformers_models_by_folder_hub_commit_and_decoding(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"a": 1}')
    (folder / "model.safetensors").write_bytes(b"w" * 100)
    first = model_identity(TransformersModel(str(folder)))
    assert first.startswith("transformers:folder-sha256:") and first.endswith(":beams=1:max_input=2048")
    assert model_identity(TransformersModel(str(folder), num_beams=4)) != first
    (folder / "model.safetensors").write_bytes(b"v" * 100)
    assert model_identity(TransformersModel(str(folder))) != first

    import huggingface_hub.constants

    hub = tmp_path / "hub"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    assert source_identity("google/flan-t5-small") == "hf:google/flan-t5-small@unknown-revision"
    ref = hub / "models--google--flan-t5-small" / "refs" / "main"
    ref.parent.mkdir(parents=True)
    ref.write_text("0123abcd\n")
    assert source_identity("google/flan-t5-small") == "hf:google/flan-t5-small@0123abcd"
    assert model_identity(TransformersModel("google/flan-t5-small")).startswith(
        "transformers:hf:google/flan-t5-small@0123abcd:")
    (folder / "m.gguf").write_bytes(b"g")
    assert source_identity(str(folder), gguf_file="m.gguf") == f"gguf-sha256:{hashlib.sha256(b'g').hexdigest()}"


def test_unknown_models_have_no_identity_unless_they_name_one():
    class Anonymous:
        name = "x"

    class Named:
        identity = "mine:v1"

    assert model_identity(Anonymous()) is None
    assert model_identity(Named()) == "mine:v1"
