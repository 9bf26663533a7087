"""Model wrappers: the only part of fairrag_core that imports torch or llama-cpp (lazily, on first use).

Every role of the Fair RAG pipeline (Kim & Diaz 2025, §3) has a model behind one small interface:

* :mod:`.llm` — :class:`LanguageModel` (greedy ``generate``, next-token ``option_probabilities``) with the
  backends :mod:`.llama_cpp` (GGUF: the offline SmolLM2 and Qwen) and :mod:`.transformers_lm` (any HF id);
* :mod:`.nli` — sequence-classification NLI cross-encoders (the paper's roberta-large-mnli);
* :mod:`.embedder` — sentence-transformers embedders for dense retrieval (offline MiniLM);
* :mod:`.catalog` — the one catalogue of models, keyed by their weights (names and aliases per role, packages,
  files and sha256, the offline defaults), and the process-wide shared instances;
* :mod:`.gguf` — the bundled GGUF weights located, joined and sha256-verified; :mod:`.device` and :mod:`.hub` —
  device choice (cuda → mps → cpu) and the hub policy (never remote code; local files only when offline).
"""

from .catalog import ATTRIBUTORS, DEFAULTS, EMBEDDERS, GENERATORS, ModelSpec, describe_model, resolve_embedder
from .device import resolve_device

__all__ = ["ATTRIBUTORS", "DEFAULTS", "EMBEDDERS", "GENERATORS", "ModelSpec", "describe_model", "resolve_embedder",
           "resolve_device"]
