"""RichRAG ranker commands: ``train-ranker`` (SFT + DPO, weights + model card) and ``rich-eval`` (held-out NCOM and
Com-ROUGE of every system, with intervals; optionally k-fold, provider exposure and the EE-D vs NCOM curve).
Registered by :func:`fairrag_core.cli.richrag.register`."""

from __future__ import annotations

import argparse
import sys

from ..checks import parse_alphas
from ..models.catalog import DEFAULTS
from .common import add_command, alphas_arg, count_arg, positive_arg, print_json, records, seed_arg

__all__ = ["register"]


def register(sub) -> None:
    """Add ``train-ranker`` and ``rich-eval`` to the command parser ``sub``."""
    p = add_command(sub, "train-ranker", _cmd_train_ranker, help="train RichRAG's list-wise ranker (SFT on greedy "
                                                                 "silver lists, then DPO on US³ pairs)",
                    description="Train the generative list-wise ranker on the multi-faceted collection's fixed "
                                "training split (the held-out queries are never seen), write safetensors weights, "
                                "ranker.json (sha256, split, history) and the model card, then score NCOM on the "
                                "held-out queries. Deterministic: the same seed gives the same weights on the same "
                                "machine. About 5–15 minutes on a 2-core CPU.")
    p.add_argument("--seed", type=seed_arg, default=13, help="training seed (default 13, the shipped model's)")
    p.add_argument("--epochs", type=positive_arg, default=None, help="SFT epochs (default: the shipped config's)")
    p.add_argument("--output", default=None,
                   help="folder for the weights and card (default: assets/models/richrag-ranker, the shipped one)")
    p.add_argument("--device", default=None, help="auto (default: a GPU when present), cpu, cuda or mps")
    p.add_argument("--json", action="store_true", help="print the manifest and the evaluation as JSON")

    p = add_command(sub, "rich-eval", _cmd_rich_eval, help="held-out evaluation of the trained ranker against "
                                                           "relevance, MMR, round robin and the greedy oracle: NCOM@k "
                                                           "(and Com-ROUGE of rich answers) with intervals",
                    description="Score every system on queries the ranker never trained on: the shipped ranker's "
                                "held-out queries (default), or --folds K to retrain per fold and hold out every "
                                "query once. Means with 95% bootstrap intervals over queries and the paired "
                                "difference to ranker-dpo.")
    p.add_argument("--ranker-dir", default=None, help="trained ranker folder (default: the shipped one)")
    p.add_argument("-k", type=positive_arg, default=5, help="main cut-off (default 5; NCOM also at 3 and 10)")
    p.add_argument("--folds", type=count_arg, default=0,
                   help="K ≥ 2: K-fold cross-validation, a fresh ranker per fold (minutes per fold); 0 = the "
                        "fixed split (default)")
    p.add_argument("--answers", action="store_true",
                   help="also write a rich answer from every system's top k and score its Com-ROUGE (slow)")
    writer = DEFAULTS["rich_writer"]
    p.add_argument("--generator", default=writer, help=f"generator for --answers (default {writer})")
    p.add_argument("--answer-queries", type=positive_arg, default=0,
                   help="--answers on the first N evaluated queries only (default: all; about a minute per answer "
                        "on a busy 2-core CPU)")
    p.add_argument("--answer-systems", type=_systems_arg, default=(),
                   help="--answers for these systems only, comma-separated (default: all), e.g. "
                        "relevance,round-robin,ranker-dpo,oracle")
    p.add_argument("--fairness", action="store_true",
                   help="also print provider exposure and EE-D vs NCOM as α moves (Plackett-Luce)")
    p.add_argument("--alphas", type=alphas_arg, default=parse_alphas("0,1,2,4,8,16"),
                   help="α grid for --fairness (default 0,1,2,4,8,16)")
    p.add_argument("--seed", type=seed_arg, default=0, help="bootstrap / sampling seed (default 0)")
    p.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _systems_arg(text: str) -> tuple[str, ...]:
    from ..richrag.evaluate import System

    names = tuple(t.strip() for t in text.split(",") if t.strip())
    valid = {s.value for s in System}
    if not names or set(names) - valid:
        raise argparse.ArgumentTypeError(f"expected systems from {', '.join(s.value for s in System)}, got {text!r}")
    return names


def _log(args):
    return None if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))


def _cmd_train_ranker(args, out) -> int:
    from ..data import load_collection
    from ..richrag.ranker_runs import train_and_save
    from ..richrag.train import RankerTrainConfig

    overrides = {"seed": args.seed} | ({"sft_epochs": args.epochs} if args.epochs else {})
    config = RankerTrainConfig(**overrides)
    manifest, evaluation = train_and_save(load_collection("multi-faceted"), config, args.output, device=args.device,
                                          log=_log(args))
    if args.json:
        return print_json({"manifest": manifest, "evaluation": evaluation.to_dict() if evaluation else None}, out,
                          indent=1)
    w = manifest["weights"]
    print(f"trained in {manifest['seconds'].get('total', 0):.0f} s ({manifest['seconds']}) on {manifest['device']}",
          file=out)
    for stage in ("sft", "dpo"):
        print(f"  {stage}: {w[stage]['file']}  sha256 {w[stage]['sha256']}", file=out)
    if evaluation is not None:
        _print_table(evaluation, out)
    return 0


def _print_table(evaluation, out) -> None:
    from ..richrag.model_card import format_p

    def diff(r) -> str:  # the paired difference to ranker-dpo, when the row has one (not NaN)
        return (f"   Δ {r.ranker_minus:+.3f} ({r.diff_low:+.3f} … {r.diff_high:+.3f}), p {format_p(r.p_value)}"
                if hasattr(r, "ranker_minus") and r.ranker_minus == r.ranker_minus else "")

    print(f"\nNCOM@k on {evaluation.split} (mean, 95% bootstrap CI over queries; Δ = ranker-dpo − system, paired)",
          file=out)
    for r in evaluation.table.itertuples():
        print(f"  k={r.k:<3} {r.system:<12} {r.ncom:.3f} ({r.low:.3f}–{r.high:.3f}){diff(r)}", file=out)
    if evaluation.answer_table is not None:
        print(f"\nCom-ROUGE of rich answers from the top {evaluation.config.k} ({evaluation.config.generator})",
              file=out)
        for r in evaluation.answer_table.itertuples():
            print(f"  {r.metric:<4} {r.system:<12} {getattr(r, r.metric):.3f} ({r.low:.3f}–{r.high:.3f}){diff(r)}",
                  file=out)
    for note in evaluation.notes:
        print(f"note: {note}", file=out)


def _cmd_rich_eval(args, out) -> int:
    from ..data import load_collection
    from ..errors import InvalidParameterError
    from ..richrag.evaluate import RichEvalConfig
    from ..richrag.ranker_runs import cross_validate, evaluate_saved, fairness_tables

    collection = load_collection("multi-faceted")
    config = RichEvalConfig(k=args.k, answers=args.answers, generator=args.generator, seed=args.seed,
                            answer_queries=args.answer_queries, answer_systems=args.answer_systems)
    log = _log(args)
    if args.folds:
        if args.folds < 2:
            raise InvalidParameterError(f"--folds must be 0 (fixed split) or at least 2, got {args.folds}")
        from ..richrag.ranker import load_ranker
        from ..richrag.train import RankerTrainConfig

        train_config = RankerTrainConfig.from_dict(load_ranker(args.ranker_dir, device=args.device).manifest["config"])
        evaluation = cross_validate(collection, train_config, args.folds, config, device=args.device, log=log)
    else:
        evaluation = evaluate_saved(collection, args.ranker_dir, config, device=args.device, progress=log)
    payload = evaluation.to_dict()
    if args.fairness:
        providers, curve = fairness_tables(collection, args.ranker_dir, alphas=args.alphas, k=args.k, seed=args.seed,
                                           device=args.device)
        payload["providers"], payload["fairness_curve"] = records(providers), records(curve)
    if args.json:
        return print_json(payload, out, indent=1)
    _print_table(evaluation, out)
    if args.fairness:
        print("\nproviders in the top k (means over the held-out queries; HHI = Σ share², 1/k = all distinct)",
              file=out)
        print(providers.round(3).to_string(index=False), file=out)
        print("\nEE-D vs NCOM as α moves (Plackett-Luce over each system's scores; greedy = deterministic decoding)",
              file=out)
        print(curve.round(3).to_string(index=False), file=out)
    return 0

