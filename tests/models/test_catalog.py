"""The model catalogue: one entry per set of weights, read by the loaders, run records, presets and the report."""

import dataclasses
import re
import sys
import types
from pathlib import Path

import pytest

from fairrag_core import InvalidParameterError, RagSweepConfig
from fairrag_core.cli import build_parser
from fairrag_core.errors import ModelUnavailableError
from fairrag_core.models import catalog, gguf, llama_cpp, transformers_lm
from fairrag_core.rag.attribution import load_attributor
from fairrag_core.rag.presets import PRESETS, presets_using
from fairrag_core.record import RunKind, RunRecord
from fairrag_studio.views.methodology import methodology_sections


class _NamedModel:
    """Stands in for a language model: the attributor only reads its name here."""

    def __init__(self, name: str, **_) -> None:
        self.name = name


@pytest.fixture()
def fake_models(monkeypatch):
    """load_language_model builds name-only models, in a shared-model table of this test's own."""
    monkeypatch.setattr(catalog, "_loaded", {})
    monkeypatch.setattr(catalog, "load_language_model", lambda name, device=None: _NamedModel(name))


def test_every_name_and_hub_id_resolves_to_one_entry():
    names = [(u.name, m) for m in catalog.CATALOG for u in m.uses] + [(m.hub_id, m) for m in catalog.CATALOG
                                                                      if m.hub_id]
    assert len({name for name, _ in names}) == len(names)
    assert all(catalog.model_for(name) is model for name, model in names)
    assert {*catalog.EMBEDDERS, *catalog.GENERATORS, *catalog.ATTRIBUTORS} == {u.name for m in catalog.CATALOG
                                                                               for u in m.uses}
    assert catalog.model_for("qwen-judge") is catalog.model_for("qwen2.5-1.5b") is catalog.QWEN_1_5B
    assert catalog.model_for("smollm2-135m-hf") is catalog.model_for("smollm2-135m") is catalog.SMOLLM2_135M
    # the names run records carry
    assert catalog.model_for("judge:qwen2.5-1.5b") is catalog.QWEN_1_5B
    assert catalog.model_for("nli:FacebookAI/roberta-large-mnli").key == "roberta-large-mnli"
    assert catalog.model_for("dense:minilm").key == "minilm"
    assert catalog.model_for("/a/local/folder") is None and catalog.model_for(None) is None


def test_a_name_given_to_two_models_is_refused(monkeypatch):
    monkeypatch.setattr(catalog, "CATALOG", (*catalog.CATALOG, dataclasses.replace(catalog.QWEN_0_5B, title="copy")))
    with pytest.raises(InvalidParameterError, match="'qwen2.5-0.5b' to Qwen2.5-Coder-0.5B-Instruct and copy"):
        catalog._index()


def test_the_menus_and_defaults_come_from_the_catalogue():
    assert catalog.GENERATORS == ("smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b", "smollm2-135m-hf", "flan-t5-small",
                                  "flan-t5-base", "flan-t5-large", "flan-t5-xl", "flan-t5-xxl", "flan-ul2")
    assert catalog.ATTRIBUTORS == ("qwen-judge", "roberta-large-mnli")
    assert catalog.EMBEDDERS == ("minilm", "contriever")
    assert catalog.HUB_NLI == {"roberta-large-mnli": "FacebookAI/roberta-large-mnli"}
    assert list(catalog.OFFLINE_LLMS) == ["smollm2-135m", "smollm2-135m-hf", "qwen2.5-0.5b", "qwen2.5-1.5b"]
    assert catalog.DEFAULTS == {"embedder": "minilm", "generator": "qwen2.5-0.5b", "attributor": "qwen-judge",
                                "judge": "qwen2.5-1.5b", "explorer": "qwen2.5-1.5b", "rich_writer": "smollm2-135m"}
    judge = catalog.describe_model("qwen-judge")
    assert (judge.source, judge.offline, judge.backend) == ("qwen2.5-1.5b", True, "llm-judge")
    assert catalog.describe_model("flan-t5-base").source == "google/flan-t5-base"
    assert catalog.describe_model("google/flan-t5-base").description == "Hugging Face hub id"


def test_loaders_read_the_catalogue(monkeypatch):
    built = []
    monkeypatch.setattr(catalog, "_loaded", {})
    monkeypatch.setattr(gguf, "resolve_gguf", lambda weights: gguf.cache_dir() / weights.file_name)
    monkeypatch.setattr(llama_cpp, "LlamaCppModel", lambda path, **kw: built.append(("llama", path.name, kw["name"])))
    monkeypatch.setattr(transformers_lm, "TransformersModel",
                        lambda source, **kw: built.append(("hf", source, kw.get("gguf_file"), kw["name"])))
    catalog.load_language_model("qwen-judge")
    catalog.load_language_model("qwen2.5-1.5b")  # the judge's model is the same shared one
    catalog.load_language_model("smollm2-135m-hf")
    catalog.load_language_model("flan-t5-base")
    assert built == [("llama", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-1.5b"),
                     ("hf", str(gguf.cache_dir()), "SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2-135m-hf"),
                     ("hf", "google/flan-t5-base", None, "flan-t5-base")]


@pytest.mark.parametrize("name", ["qwen-judge", "smollm2-135m", "qwen2.5-0.5b"])
def test_an_attributor_name_round_trips_through_a_run_record(name, fake_models):
    stored = load_attributor(name).name
    record = RunRecord(kind=RunKind.RAG_SWEEP, collection="running-shoes", retriever="bm25",
                       config=RagSweepConfig(alphas=(0.0,), k=5, seed=1), seed=1, generator="qwen2.5-0.5b",
                       attributor=stored)
    assert build_parser().parse_args(record.argv()).nli == name  # record → reproduce command → the same name
    assert catalog.attributor_option(stored) == name


def test_stored_attributor_names_read_as_before():
    assert catalog.attributor_option("judge:qwen2.5-1.5b") == "qwen-judge"
    assert catalog.attributor_option(None) == "qwen-judge"
    assert catalog.attributor_option("judge:smollm2-135m-hf") == "smollm2-135m-hf"
    assert catalog.attributor_option("nli:FacebookAI/roberta-large-mnli") == "FacebookAI/roberta-large-mnli"


def test_presets_using_a_model():
    assert presets_using("qwen2.5-1.5b") == presets_using("qwen-judge") == ("fast", "quality")
    assert presets_using("qwen2.5-0.5b") == ("fast",)
    assert presets_using("smollm2-135m") == presets_using("no-such-model") == ()


@pytest.mark.parametrize("preset", list(PRESETS.values()), ids=list(PRESETS))
def test_every_presets_models_are_pinned_in_the_reports_methodology(preset, shoes, fake_models):
    record = RunRecord(kind=RunKind.RAG_SWEEP, collection="running-shoes", retriever="bm25",
                       config=RagSweepConfig(alphas=(0.0, 2.0), k=5, seed=3), seed=3, generator=preset.generator,
                       attributor=load_attributor(preset.attributor).name)
    section = next(s for s in methodology_sections(record, shoes) if s.heading == "Models")
    rows = {row["role"]: row for row in section.table.to_dict("records")}
    for role, name in (("generator", preset.generator), ("NLI judge (attribution)", preset.attributor)):
        weights = catalog.model_for(name).weights
        assert weights is not None and re.fullmatch("[0-9a-f]{64}", weights.sha256)
        assert rows[role]["sha256"] == weights.sha256
        assert rows[role]["weights"].startswith(f"{weights.file_name} ({weights.packages[0].replace('_', '-')} ")
        assert rows[role]["weights"].endswith(f"; {weights.size:,} bytes)")


def test_every_package_that_carries_weights_is_pinned_in_the_requirements():
    root = Path(__file__).resolve().parents[2]
    pinned = {line.split("==")[0].strip().lower() for name in ("requirements.txt", "requirements-nodeps.txt")
              for line in (root / name).read_text().splitlines() if "==" in line and not line.startswith("#")}
    packages = {p.replace("_", "-") for m in catalog.CATALOG
                for p in (m.weights.packages if m.weights else (m.folder[0],) if m.folder else ())}
    assert len(packages) == 1 + 1 + 6 + 22  # MiniLM, SmolLM2, Qwen 0.5B in 6 parts, Qwen 1.5B in 22
    assert packages <= pinned, sorted(packages - pinned)


@pytest.mark.parametrize("preset", list(PRESETS.values()), ids=list(PRESETS))
def test_the_models_panel_names_each_presets_models_from_the_catalogue(preset, monkeypatch):
    from fairrag_studio.services.resources import models_panel_rows
    from fairrag_studio.services.state import Settings

    class _Loaded:
        loaded = True

    # the judge's language model is in memory: the attributor row says so under its alias
    monkeypatch.setattr(catalog, "_loaded", {(catalog.language_model_name(preset.attributor), None): _Loaded()})
    settings = Settings(collection="running-shoes", answers=preset.name, generator=preset.generator,
                        prompt_style=preset.style, attributor=preset.attributor, citation=preset.citation)
    rows = {row.role: row for row in models_panel_rows(settings)}
    for role, name in (("generator", preset.generator), ("NLI attributor", preset.attributor)):
        use = catalog.use_of(name)
        assert (rows[role].model, rows[role].backend, rows[role].offline) == (
            f"{catalog.display_name(name)} — {use.description}", use.backend, True)
    assert rows["NLI attributor"].model == "Qwen2.5-Coder-1.5B — qwen2.5-1.5b as a prompted 3-way NLI judge"
    assert rows["NLI attributor"].loaded
    assert rows["generator"].loaded == (catalog.language_model_name(preset.generator) == "qwen2.5-1.5b")


def test_roles_and_help_lists_come_from_the_catalogue():
    assert catalog.role_models(catalog.REFINER) == ("qwen2.5-1.5b", "smollm2-135m")  # the largest first
    assert catalog.role_models(catalog.EXPLORER) == ("qwen2.5-1.5b", "smollm2-135m")
    assert catalog.role_models(catalog.JUDGE) == ("qwen2.5-1.5b", "qwen2.5-0.5b", "smollm2-135m")
    assert catalog.offline_language_models() == ("smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b")
    assert catalog.listed(catalog.ATTRIBUTORS, "roberta-large-mnli", marked="paper") == \
        "roberta-large-mnli (paper), qwen-judge"
    assert catalog.listed(("a", "b")) == "a, b"


def test_the_cli_help_names_the_catalogues_models(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside a name (roberta-large-mnli)
    helps = {}
    for command in ("aspects", "fair-qr", "rag", "audit-log", "rich-eval"):
        with pytest.raises(SystemExit):
            build_parser(command).parse_args([command, "--help"])
        helps[command] = " ".join(capsys.readouterr().out.split())
    assert "explorer LLM: qwen2.5-1.5b (default), smollm2-135m, an HF id or folder" in helps["aspects"]
    assert "or an LLM: qwen2.5-1.5b, smollm2-135m, an HF id or a local folder" in helps["fair-qr"]
    assert "NLI attributor: qwen-judge (offline default), roberta-large-mnli, an HF id or folder (default " \
           "qwen-judge)" in helps["rag"]
    assert "NLI attributor for judge/both (default the offline qwen-judge)" in helps["audit-log"]
    assert "generator for --answers (default smollm2-135m)" in helps["rich-eval"]


def test_the_hub_error_names_the_offline_language_models(monkeypatch):
    def offline(*args, **kwargs):
        raise OSError("no hub")

    hub = types.SimpleNamespace(from_pretrained=offline)  # stand-ins: the error comes before any weights load
    fake = types.SimpleNamespace(AutoConfig=hub, AutoTokenizer=hub, AutoModelForCausalLM=hub,
                                 AutoModelForSeq2SeqLM=hub)
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace())
    monkeypatch.setattr(catalog, "_loaded", {})
    with pytest.raises(ModelUnavailableError, match=r"use an offline model \(smollm2-135m, qwen2.5-0.5b, "
                                                    r"qwen2.5-1.5b\) or a local folder"):
        catalog.load_language_model("no/such-model")._load()
