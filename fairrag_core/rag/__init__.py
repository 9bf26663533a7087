"""RAG: from sampled rankings to answers, citations and the paper's metrics (Kim & Diaz 2025, §3.3–§5).

* :mod:`.generation` — the prompt φ_p(x, π) with numbered documents, a generator with deduplicated, cached
  answers (identical top-k lists give identical answers);
* :mod:`.attribution` — NLI attribution: does a retrieved document entail the answer (LLM judge offline,
  cross-encoders such as roberta-large-mnli when reachable)?
* :mod:`.labels` — utility labels by Algorithm 1 (useful ⇔ the document alone improves the answer);
* :mod:`.pipeline` — one query end to end: EE-D, EE-R, EU, normalised EU, EAR and EAE-D;
* :mod:`.sweep` — the collection × α grid through the pipeline, task by task (resumable);
* :mod:`.tables` — the paper's Table 1 (slope, AUC) and Table 2 (EU by EE-D interval, Welch t-test).
"""

from __future__ import annotations

from ..lazy import lazy_exports

#: Where each public name lives, imported on first use (PEP 562): one rag module does not import them all.
_EXPORTS: dict[str, str] = {
    "NLI_CLASSES": ".attribution",
    "Attributor": ".attribution",
    "CrossEncoderAttributor": ".attribution",
    "LLMJudgeAttributor": ".attribution",
    "default_attributor": ".attribution",
    "load_attributor": ".attribution",
    "AnswerCache": ".generation",
    "Generator": ".generation",
    "PromptStyle": ".generation",
    "build_closed_book_prompt": ".generation",
    "build_prompt": ".generation",
    "UtilityLabelConfig": ".labels",
    "label_utility": ".labels",
    "load_utility_labels": ".labels",
    "RagConfig": ".pipeline",
    "RagRun": ".pipeline",
    "oracle_rankings": ".pipeline",
    "run_rag": ".pipeline",
    "RagSweep": ".sweep",
    "RagSweepConfig": ".sweep",
    "rag_sweep": ".sweep",
    "disparity_quality_table": ".tables",
    "utility_by_disparity_table": ".tables",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


__all__ = [
    "NLI_CLASSES", "Attributor", "CrossEncoderAttributor", "LLMJudgeAttributor", "default_attributor",
    "load_attributor", "AnswerCache", "Generator", "PromptStyle", "build_closed_book_prompt", "build_prompt",
    "UtilityLabelConfig", "label_utility", "load_utility_labels", "RagConfig", "RagRun", "oracle_rankings",
    "run_rag", "RagSweep", "RagSweepConfig", "rag_sweep", "disparity_quality_table", "utility_by_disparity_table",
]
