"""Answer presets: a generator, a prompt style, an NLI judge and a citation rule that were measured together.

The app and the CLI name two of them plainly (docs/answers.md has the measurements behind the choice):

* ``fast`` — seconds per answer on a 2-core CPU, for a live class;
* ``quality`` — the better model, for a review or a prepared demo.

What each preset costs on the machine it was measured on is in ``assets/answer_presets.json``, written by
``benchmarks/bench_generate.py --presets``; the app shows it before Generate is pressed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..data import assets_dir
from ..errors import InvalidParameterError
from ..models.catalog import DEFAULTS, display_name, model_for
from .citations import CitationPolicy

__all__ = ["AnswerPreset", "PRESETS", "DEFAULT_PRESET", "answer_preset", "preset_costs", "presets_using"]


@dataclass(frozen=True)
class AnswerPreset:
    """A measured combination of models, prompt and citation rule."""

    name: str
    title: str
    generator: str
    style: str
    attributor: str
    citation: CitationPolicy
    summary: str


#: The citation rule fitted on the training queries of the 443 labelled (document, generated answer) pairs of
#: ``tests/data/nli_generated.jsonl`` for the Qwen2.5-1.5B judge with its question-aware statement ("this document
#: recommends or states <answer> as the answer to <question>"; ``benchmarks/bench_judge.py``; docs/answers.md): the
#: whole answer, P(supported) at least 0.3, at least 60 % of the answer's own words in the document (lexical
#: support); no control document; degenerate answers not judged. Held-out (156 pairs, 40 entail) precision 0.94,
#: recall 0.80; 5-fold query cross-validation 0.83 / 0.90. assets/answer_presets.json holds the costs measured
#: under this rule.
FITTED_CITATION = CitationPolicy(per_claim=False, entail_threshold=0.3, control_margin=None, skip_degenerate=True,
                                 min_support=0.6)

PRESETS: dict[str, AnswerPreset] = {
    "fast": AnswerPreset(
        # the short prompt: on the same 55 lists Qwen-0.5B's grounded answers often filled in "the product is …,
        # person is …, team is not mentioned" as a form; short answers took ~3.5 s instead of ~13 s (docs/answers.md)
        name="fast", title="Fast", generator=DEFAULTS["generator"], style="short", attributor=DEFAULTS["attributor"],
        citation=FITTED_CITATION,
        summary=f"{display_name(DEFAULTS['generator'])} answers in a few words or one sentence; the "
                f"{display_name(DEFAULTS['judge'])} judge checks citations"),
    "quality": AnswerPreset(
        # the judge's own language model as generator
        name="quality", title="Quality", generator=DEFAULTS["judge"], style="grounded",
        attributor=DEFAULTS["attributor"], citation=FITTED_CITATION,
        summary=f"{display_name(DEFAULTS['judge'])} answers in one or two sentences; the same model checks "
                "citations"),
}
DEFAULT_PRESET = "fast"


def answer_preset(name: str) -> AnswerPreset:
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidParameterError(f"unknown answer preset {name!r}; use one of {', '.join(PRESETS)}") from None


def presets_using(model: str) -> tuple[str, ...]:
    """The presets whose generator or attributor runs ``model``'s weights (any of its catalogue names)."""
    entry = model_for(model)
    return tuple(p.name for p in PRESETS.values()
                 if entry is not None and entry in (model_for(p.generator), model_for(p.attributor)))


def preset_costs(path: Path | None = None) -> dict[str, dict]:
    """Measured costs per preset (seconds per answer, per judged document, first answer; the machine), or {}."""
    path = path or assets_dir() / "answer_presets.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))
