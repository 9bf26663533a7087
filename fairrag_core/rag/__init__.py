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

from .attribution import (
    NLI_CLASSES,
    Attributor,
    CrossEncoderAttributor,
    LLMJudgeAttributor,
    default_attributor,
    load_attributor,
)
from .generation import AnswerCache, Generator, PromptStyle, build_closed_book_prompt, build_prompt
from .labels import UtilityLabelConfig, label_utility, load_utility_labels
from .pipeline import RagConfig, RagRun, oracle_rankings, run_rag
from .sweep import RagSweep, RagSweepConfig, rag_sweep
from .tables import disparity_quality_table, utility_by_disparity_table

__all__ = [
    "NLI_CLASSES", "Attributor", "CrossEncoderAttributor", "LLMJudgeAttributor", "default_attributor",
    "load_attributor", "AnswerCache", "Generator", "PromptStyle", "build_closed_book_prompt", "build_prompt",
    "UtilityLabelConfig", "label_utility", "load_utility_labels", "RagConfig", "RagRun", "oracle_rankings",
    "run_rag", "RagSweep", "RagSweepConfig", "rag_sweep", "disparity_quality_table", "utility_by_disparity_table",
]
