"""What every command shares: argument types (one α parser, one list parser), the common options, loading a
collection with its retriever, and small text renderers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..checks import parse_alpha, parse_alphas, parse_list
from ..data import DEMO_COLLECTIONS, Collection, load_collection
from ..errors import FairRAGError, InvalidParameterError, StoreError
from ..metrics.utility import UtilityMetric
from ..retrieval import Retriever, RetrieverKind, build_retriever
from ..seeds import MAX_SEED, check_seed

__all__ = ["alpha_arg", "alphas_arg", "positive_arg", "seed_arg", "whole_arg", "count_arg", "add_common", "add_models",
           "citation_settings", "keep_run", "Kept", "load_inputs", "id_list", "bar", "fmt", "fmt_ci", "print_undefined",
           "METRIC_NAMES"]


def _argument_type(parse, name: str):
    def convert(text: str):
        try:
            return parse(text)
        except InvalidParameterError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    convert.__name__ = name  # argparse names the type in its messages
    return convert


#: ``--alpha``: a number ≥ 0 or ``inf`` (the deterministic ranker); the app parses α the same way.
alpha_arg = _argument_type(parse_alpha, "alpha")
#: ``--alphas``: a comma-separated α grid.
alphas_arg = _argument_type(parse_alphas, "alphas")


def positive_arg(text: str) -> int:
    try:
        value = whole_arg(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def whole_arg(text: str) -> int:
    """A whole number written in ASCII digits, optionally signed (``int()`` would also take ``1_0`` and ``٣``)."""
    body = text.strip()
    digits = body[1:] if body[:1] in "+-" else body
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 19:
        raise argparse.ArgumentTypeError(f"expected a whole number (digits 0-9, at most 19), got {text!r}")
    return int(body)


def count_arg(text: str) -> int:
    """A whole number ≥ 0 (how many to show, folds, …)."""
    try:
        value = whole_arg(text)
    except argparse.ArgumentTypeError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, got {text!r}")
    return value


def seed_arg(text: str) -> int:
    """``--seed``: a whole number from 0 to 2**63 − 1 (:func:`fairrag_core.seeds.check_seed`)."""
    try:
        return check_seed(whole_arg(text))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {MAX_SEED} (e.g. --seed 42), got "
                                         f"{text!r}") from None
    except InvalidParameterError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def optional_float(text: str) -> float | None:
    """A number, or ``none`` for "no such rule"."""
    if text.strip().lower() in ("none", "off", "argmax"):
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'none', got {text!r}") from None


def id_list(text: str | None) -> tuple[str, ...]:
    """``--queries q1,q2`` → ``("q1", "q2")``; absent → ``()`` (every query)."""
    return parse_list(text)


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collection", default="running-shoes",
                        help=f"demo collection ({', '.join(DEMO_COLLECTIONS)}) or a folder with corpus.jsonl|csv, "
                             "queries.jsonl, qrels.txt (default: running-shoes)")
    parser.add_argument("--retriever", default="bm25", choices=[k.value for k in RetrieverKind],
                        help="first-stage scorer (default: bm25); dense uses the offline MiniLM unless --model")
    parser.add_argument("--model", default=None, help="dense model: short name (minilm), HF id or local folder")
    parser.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps (dense retriever only)")
    parser.add_argument("-k", type=positive_arg, default=5,
                        help="documents per ranking passed to the generator (default 5)")
    parser.add_argument("--samples", "-N", type=positive_arg, default=100, help="sampled rankings N (default 100)")
    parser.add_argument("--seed", type=seed_arg, default=None,
                        help="random seed, 0 to 2**63-1 (default: fresh, printed so you can rerun)")
    parser.add_argument("--candidates", type=positive_arg, default=None,
                        help="first-stage cut-off K: sample among the top K only (default: every document)")
    parser.add_argument("--min-rel", type=whole_arg, default=1,
                        help="qrels grade from which a document counts as useful for EE-R (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def add_models(parser: argparse.ArgumentParser, *, attributor: bool = True) -> None:
    from ..models.catalog import DEFAULTS, GENERATORS
    from ..rag.pipeline import PromptOrder

    parser.add_argument("--generator", default=DEFAULTS["generator"],
                        help=f"generator: {', '.join(GENERATORS)}, any HF id or folder "
                             f"(default {DEFAULTS['generator']})")
    if attributor:
        parser.add_argument("--nli", default=DEFAULTS["attributor"],
                            help="NLI attributor: qwen-judge (offline default), roberta-large-mnli, an HF id or folder")
    parser.add_argument("--prompt-order", default="sampled", choices=[o.value for o in PromptOrder],
                        help="order of the k documents in the prompt: as sampled (paper, default) or by retrieval "
                             "score (identical sets then share one generation)")
    parser.add_argument("--metric", default="rougeL", choices=[m.value for m in UtilityMetric],
                        help="utility metric against the gold answer (default rougeL)")
    from ..rag.generation import PROMPT_STYLES
    from ..rag.presets import DEFAULT_PRESET, PRESETS

    preset = PRESETS[DEFAULT_PRESET]
    parser.add_argument("--prompt-style", default=preset.style, choices=list(PROMPT_STYLES),
                        help=f"how the generator is asked (default {preset.style}; 'short' is the original few-word "
                             "prompt; docs/answers.md compares them)")
    if attributor:
        add_citation_rule(parser)


def add_citation_rule(parser: argparse.ArgumentParser, *, control: bool = True) -> None:
    """The citation rule's options, defaulting to the Fast preset's fitted rule (docs/answers.md); ``control``:
    offer the control-document margin (not for RAG logs, which have no retrieved pool)."""
    from ..rag.presets import DEFAULT_PRESET, PRESETS

    rule = PRESETS[DEFAULT_PRESET].citation
    parser.add_argument("--per-claim", action=argparse.BooleanOptionalAction, default=rule.per_claim,
                        help="judge each sentence of an answer; a document is cited when it entails one "
                             f"(default {'on' if rule.per_claim else 'off'})")
    parser.add_argument("--entail-threshold", type=optional_float, default=rule.threshold,
                        help=f"cite when P(entailment) reaches this (default {rule.threshold}; 'none': entailment "
                             "is the most likely class, as in the paper)")
    if control:
        parser.add_argument("--control-margin", type=optional_float, default=rule.control_margin,
                            help="cite only when P(entailment) beats an unseen on-topic control document by this "
                                 f"much (default {rule.control_margin}; 'none': no control document)")
    parser.add_argument("--min-support", type=optional_float, default=rule.min_support,
                        help="cite only when this share of the answer's own words (not the question's) occurs "
                             f"in the document (default {rule.min_support}; 'none': no lexical check)")
    parser.add_argument("--skip-degenerate", action=argparse.BooleanOptionalAction, default=rule.skip_degenerate,
                        help="a degenerate answer (empty, echo, loop, cut, pointing at the documents) cites "
                             f"nothing (default {'on' if rule.skip_degenerate else 'off'})")
    parser.add_argument("--paper-citations", action="store_true",
                        help="the paper's rule: the whole answer, entailment the most likely class, no control, "
                             "no lexical check")


def citation_settings(args) -> dict:
    """The citation rule of ``args`` (:func:`add_citation_rule`) as RagConfig / RagSweepConfig / LogAuditConfig
    keyword arguments."""
    from ..rag.citations import CitationPolicy, CitationSettings

    if getattr(args, "paper_citations", False):
        return CitationSettings.citation_fields(CitationPolicy())
    return CitationSettings.citation_fields(CitationPolicy(
        per_claim=args.per_claim, threshold=args.entail_threshold, control_margin=getattr(args, "control_margin", None),
        skip_degenerate=args.skip_degenerate, min_support=args.min_support))


@dataclass(frozen=True)
class Kept:
    """What became of a finished run's extras: the run store's id (None when not stored) and each failure to keep
    it (store, --output), in words that say why and what to do. The result itself is printed either way."""

    run_id: str | None = None
    problems: tuple[str, ...] = ()

    def report(self, out=None) -> None:
        """One warning line per problem on standard error (the result goes to standard output)."""
        for problem in self.problems:
            print(f"warning: {problem} (the finished result is printed all the same)", file=out or sys.stderr)

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "stored": self.run_id is not None, "problems": list(self.problems)}


def keep_run(args, run, *, label: str | None = None, outputs: Sequence[tuple[str, Callable[[], object]]] = ()) -> Kept:
    """Save a finished ``run`` in the run store (unless ``--no-store``) and write its ``--output`` files, never
    losing the run when one of them fails: a full disk, a read-only or damaged store, an unwritable path each
    becomes a problem line naming the fix, and the caller prints the result all the same (issue: a full store
    printed only the store's error after a finished audit)."""
    from ..audit.store import RunStore

    run_id, problems = None, []
    if not getattr(args, "no_store", False):
        try:
            with RunStore(args.store) as store:
                run_id = store.save(run, label=label)
        except StoreError as err:
            problems.append(f"the run was not stored: {err} (or rerun with --no-store)")
        except OSError as err:
            problems.append(f"the run was not stored ({err.strerror or err}); free space or fix the store's "
                            "permissions, or rerun with --store PATH or --no-store")
    for path, write in outputs:
        try:
            write()
        except (OSError, FairRAGError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            problems.append(f"{path} was not written ({reason}); pick a writable path with free space")
    return Kept(run_id, tuple(problems))


def load_inputs(args) -> tuple[Collection, Retriever]:
    """The collection and first-stage retriever named by the common options."""
    collection = load_collection(args.collection)
    retriever = build_retriever(args.retriever, collection.texts, model=args.model, device=args.device)
    return collection, retriever


def bar(value: float, scale: float, width: int = 24) -> str:
    filled = 0 if scale <= 0 else round(width * min(value / scale, 1.0))
    return "█" * filled + "·" * (width - filled)


def fmt_ci(ci) -> str:
    """``point (95% CI low–high; what they are)``: the estimate printed is always the one inside the interval
    (the bias-corrected estimate for EE-D, the plug-in for EE-R; see ``ConfidenceInterval``)."""
    return ci.describe()


def fmt(value) -> str:
    """A metric to three decimals, or "—" when it has no value (None or NaN: undefined, or not measured)."""
    return "—" if value is None or value != value else f"{value:.3f}"


#: How the text output names each metric (and interval) that may be left without a value.
METRIC_NAMES = {"ee_d": "EE-D", "ee_r": "EE-R", "eu": "EU", "eu_normalised": "normalised EU", "ear": "EAR",
                "eae_d": "EAE-D", "ee_d_interval": "EE-D's interval", "ee_r_interval": "EE-R's interval"}


def print_undefined(undefined: dict[str, str], out, *, names: dict[str, str] | None = None) -> None:
    """One line per metric shown as "—": its name and why it has no value."""
    for metric, reason in undefined.items():
        print(f"  — {(names or {}).get(metric, metric)}: {reason}", file=out)
