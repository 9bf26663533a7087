"""Commands through the whole RAG pipeline: ``rag`` (one query), ``label-utility`` (Algorithm 1) and ``sweep``
(the α grid with the paper's Tables 1–2). Kim & Diaz (2025), §3–5."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path

from ..data.export import HEADER_KEY, write_table
from ..options import (
    GENERATOR,
    NLI,
    PROMPT_STYLE,
    Entry,
    add_option,
    argv,
    setting_entries,
)
from ..rag.pipeline import AnswerSettings, RagConfig
from ..rag.sweep import RagSweepConfig
from ..ranking.sweep import left_out, unjudged_queries
from ..settings import SamplingSettings
from .backend_options import add_backend, inputs_spec, models_spec, on_backend
from .common import (
    add_command,
    add_common,
    add_settings,
    add_store,
    fmt,
    id_list,
    keep_run,
    load_inputs,
    load_models,
    positive_arg,
    print_json,
    print_undefined,
    records,
    settings,
    stderr_progress,
)
from .ranking import QUERY, rank_payload, retrieval_inputs

__all__ = ["register"]


def register(sub) -> None:
    """Add ``rag``, ``label-utility`` and ``sweep`` to the command parser ``sub``."""
    p = add_command(sub, "rag", _cmd_rag, help="one query end to end: sampled rankings → answers → NLI citations → "
                                               "EE-D, EE-R, EU, EAR, EAE-D",
                    description="Retrieve, sample N rankings at α, generate one answer per distinct top-k list, "
                                "attribute it with the NLI model, and report all six metrics of the Fair RAG paper. "
                                "Offline by default: SmolLM2-135M generates, Qwen2.5-1.5B judges entailment.")
    add_common(p, RagConfig, models=True, skip=("oracle",))  # one query always answers the oracle's lists
    add_option(p, QUERY)

    p = add_command(sub, "label-utility", _cmd_label_utility, help="Algorithm 1: label each candidate useful when it "
                                                                   "improves the generator's answer",
                    description="For every query: the closed-book answer gives u0; each candidate alone gives u; δ = "
                                "u − u0 > 0 means useful. Writes utility.<generator>.qrels (+ .tsv with u0, u, δ, "
                                "answers).")
    add_common(p, SamplingSettings, models=True, attributor=False)
    add_settings(p, AnswerSettings, only=("metric", "prompt_order"))
    p.add_argument("--depth", type=positive_arg, default=20,
                   help="first-stage candidates labelled per query (default 20)")
    p.add_argument("--queries", default=None, help="comma-separated query ids (default: all)")
    p.add_argument("--out-dir", default=None, help="folder for the qrels (default: the collection's folder)")
    add_backend(p, unit="query")

    p = add_command(sub, "sweep", _cmd_rag_sweep, help="collection × α grid × N × k through the whole RAG pipeline → "
                                                       "Tables 1–2, figure data, run store",
                    description="Run the RAG pipeline for every query and α (plus the deterministic baseline), then "
                                "print the paper's Table 1 (slope and AUC of EE-R vs EE-D) and Table 2 (EU difference "
                                "from the deterministic baseline per EE-D interval, Welch t-test). Saves CSV/Parquet "
                                "and the run store.")
    add_common(p, RagSweepConfig, models=True)
    p.add_argument("--output", default=None, help="write the per-query table to this path (.csv and .parquet)")
    add_store(p, "the run")
    add_backend(p, unit="(query, α) with its own seeds")


def rag_command(run, args) -> str:
    """The ``rag`` command that reproduces ``run`` (a :class:`~fairrag_core.rag.RagRun`), from the option declarations
    of its inputs and of :class:`~fairrag_core.rag.pipeline.RagConfig`: the collection, retriever and models as this
    command line named them, the question, the seed the run drew, and the settings (citation rule included) that
    differ from the command line's defaults. ``rag`` answers the oracle's lists always, so ``--no-oracle`` is none of
    its options."""
    ranking = run.ranking
    inputs = retrieval_inputs(ranking) + [Entry(GENERATOR, args.generator), Entry(NLI, args.nli),
                                          Entry(PROMPT_STYLE, args.prompt_style), Entry(QUERY, ranking.query_text)]
    words = argv(inputs + setting_entries(ranking.config, values={"seed": ranking.seed}, skip=("oracle",)))
    return shlex.join(["python", "-m", "fairrag_core", "rag", *words])


def _rag_payload(run, args) -> dict:
    ids = run.ranking.doc_ids
    docs = run.ranking.collection.documents
    cand = run.ranking.candidate_indices
    payload = rank_payload(run.ranking)
    payload.pop("documents")
    payload["command"] = rag_command(run, args)  # rank's payload, but this command (rank has no citation rule)
    return payload | {
        "generator": run.generator, "attributor": run.attributor, "metric": run.metric.value,
        "gold_answer": run.ranking.query.answer if run.ranking.query else None,
        "short_answers": list(run.ranking.query.short_answers) if run.ranking.query else [],
        "metrics": run.metrics(), "u_max": run.u_max, "oracle_eu": run.oracle_eu, "timings": run.timings,
        "answers": [
            {"samples": g.count, "ranking": [ids[p] for p in g.positions], "answer": g.answer, "utility": g.utility,
             "attribution_rate": g.attribution_rate, "finish_reason": g.finish_reason,
             "flags": [f.value for f in g.flags],
             "citations": [{"doc_id": ids[p], "provider": docs[cand[p]].provider, "p_entail": round(pr, 4),
                            **({"support": round(g.support[j], 4)} if g.support else {})}
                           for j, (p, e, pr) in enumerate(zip(g.positions, g.entails, g.entail_probability)) if e],
             "not_entailing": [ids[p] for p, e in zip(g.positions, g.entails) if not e]}
            for g in run.answers
        ],
        "attributed_exposure": {ids[i]: float(v) for i, v in enumerate(run.attributed_exposure) if v > 0},
        "undefined": run.undefined,
    }


def _cmd_rag(args, out) -> int:
    from ..rag import run_rag

    config = settings(RagConfig, args)  # checked before any model loads
    collection, retriever = load_inputs(args)
    generator, attributor = load_models(args)
    run = run_rag(collection, retriever, generator, attributor, args.query, config)
    payload = _rag_payload(run, args)
    if args.json:
        return print_json(payload, out, indent=2, ensure_ascii=False)
    print(f"Query: {run.ranking.query_text}   gold answer: {payload['gold_answer'] or 'n/a'}", file=out)
    print(f"{collection.name}, {run.ranking.retriever}, k={config.k}, N={config.n_samples}, α={config.alpha:g}, "
          f"seed={run.ranking.seed}; generator {run.generator}, NLI {run.attributor}", file=out)
    print(f"\n{len(run.answers)} distinct top-{config.k} lists → {len(run.answers)} generations "
          f"(instead of {config.n_samples})\n", file=out)
    for a in payload["answers"][:8]:
        cites = ", ".join(f"{c['doc_id']} ({c['provider']})" for c in a["citations"]) or "none"
        flagged = f"  [degenerate: {', '.join(a['flags'])}]" if a["flags"] else ""
        print(f"  ×{a['samples']:<3} {a['answer']!r}{flagged}", file=out)
        print(f"        utility {'flagged (0)' if a['flags'] else fmt(a['utility'])}  cited: {cites}  not entailing: "
              f"{', '.join(a['not_entailing']) or 'none'}", file=out)
    m = run.metrics()
    print(f"\nEE-D {fmt(m['ee_d'])}  EE-R {fmt(m['ee_r'])}  EU ({run.metric.value}) {fmt(m['eu'])}  normalised EU "
          f"{fmt(m['eu_normalised'])}  EAR {fmt(m['ear'])}  EAE-D {fmt(m['eae_d'])}  "
          f"degenerate answers {m['degenerate_share']:.0%} of samples", file=out)
    print_undefined(run.undefined, out)
    print("Timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in run.timings.items()), file=out)
    return 0


def _cmd_label_utility(args, out) -> int:
    from ..metrics.utility import resolve_metric
    from ..rag.labels import (
        UtilityLabelConfig,
        label_utility,
        summarise_labels,
        utility_qrels_path,
        write_utility_labels,
    )

    collection, retriever = load_inputs(args)
    generator, _ = load_models(args, attributor=False)
    config = UtilityLabelConfig(metric=args.metric, depth=args.depth, query_ids=id_list(args.queries))
    progress = stderr_progress("labelled {done}/{total} queries")

    def remote(backend):
        from ..backends.workloads import LabelSpec, cache_setting, label_utility_on

        spec = LabelSpec(inputs_spec(args), models_spec(args), config, cache_db=cache_setting())
        return label_utility_on(backend, spec, progress=progress)

    table = on_backend(args, lambda: label_utility(collection, generator, retriever, config, progress=progress),
                       remote)
    path = utility_qrels_path(args.collection, generator.name)
    if args.out_dir:
        path = Path(args.out_dir) / path.name
    metric = getattr(args.metric, "value", args.metric)  # the option's Enum, as typed on a command line
    command = (f"python -m fairrag_core label-utility --collection {collection.name} --generator {generator.name} "
               f"--retriever {args.retriever} --depth {args.depth} --metric {metric}")
    write_utility_labels(table, path, header=[
        f"Utility labels (Kim & Diaz 2025, Algorithm 1) for {collection.name}, generator {generator.name}, "
        f"metric {resolve_metric(args.metric, collection.queries).value} (--metric {metric}; degenerate "
        "answers score 0)", f"Candidates: top {args.depth} by {retriever.name} plus judged documents; "
        "unlisted documents count as not useful", f"Regenerate with: {command}"])
    summary = summarise_labels(table)
    if args.json:
        return print_json({"path": str(path), "queries": records(summary)}, out, indent=2)
    print(summary.to_string(index=False), file=out)
    flagged = summary.loc[~summary["fairness_question"], "query_id"].tolist()
    print(f"\nWrote {path} ({len(table)} labels). Queries with ≤ 1 useful item (left out of fairness "
          f"analyses): {', '.join(flagged) or 'none'}", file=out)
    return 0


def _cmd_rag_sweep(args, out) -> int:
    from ..rag import disparity_quality_table, rag_sweep, utility_by_disparity_table
    from ..rag.labels import has_utility_labels

    # settings are checked before any model loads (a typo in N should not cost a model load)
    config = settings(RagSweepConfig, args, usefulness=args.usefulness or "relevance")
    collection, retriever = load_inputs(args)
    generator, attributor = load_models(args)
    if args.usefulness is None and has_utility_labels(args.collection, generator.name):
        config = replace(config, usefulness="utility")  # without --labels: utility labels when there are some
    elif args.usefulness is None:  # the config's relevance labels stay
        print(f"No utility labels for {generator.name} on {collection.name}: EE-R and the oracle use relevance "
              f"labels (make utility labels with `label-utility --generator {generator.name}`).",
              file=sys.stderr)
    progress = stderr_progress("{done}/{total} (query, α) runs")

    def remote(backend):
        from ..backends.workloads import RagSweepSpec, cache_setting, rag_sweep_on

        spec = RagSweepSpec(inputs_spec(args), models_spec(args), config, cache_db=cache_setting())
        return rag_sweep_on(backend, spec, progress=progress)

    run = on_backend(args, lambda: rag_sweep(collection, retriever, generator, attributor, config,
                                             progress=progress), remote)
    table, record = run.table, run.record
    table1 = disparity_quality_table(table)
    table2 = utility_by_disparity_table(table)
    base = Path(args.output).with_suffix("") if args.output else None
    paths = [base.with_suffix(".csv"), base.with_suffix(".parquet")] if base else []  # write_table: by suffix
    header = record.header()
    outputs = [(str(path), lambda path=path: write_table(table, path, header=header)) for path in paths]
    kept = keep_run(args, run, outputs=outputs)
    omitted = left_out(table, unjudged_queries(collection, table["query_id"].unique()), labelled="EE-R and the oracle",
                       kept_for="Tables 1–2", everyone="the means per α")
    if args.json:
        return print_json({**kept.to_dict(), HEADER_KEY: header, "config": record.to_dict(),
                           "command": record.command(), "rows": records(table), "table1": records(table1),
                           "table2": records(table2), "left_out": omitted}, out, indent=2)
    print(f"RAG sweep on {record.collection_name}: {record.generator} + {record.attributor}, k={config.k}, "
          f"N={config.n_samples}, labels={config.usefulness.value}, seed={record.seed}", file=out)
    print(f"{record.sampled_rankings} sampled rankings → {record.generator_calls} generator calls, "
          f"{record.wall_seconds:.0f} s", file=out)
    means = table.groupby(["system", "alpha"])[["ee_d", "ee_r", "eu", "eu_normalised", "ear", "eae_d"]].mean()
    print("\nMean per α (all queries):", file=out)
    print(means.round(3).to_string(), file=out)
    print(f"\n{omitted}", file=out)
    print("\nTable 1 — disparity vs quality (queries with ≥ 2 useful items):", file=out)
    print(table1.round(3).to_string(index=False), file=out)
    print(f"\nTable 2 — EU minus deterministic EU ({table2.attrs['baseline_mean']:.3f}) per EE-D interval:", file=out)
    print(table2.round(3).to_string(index=False), file=out)
    kept.print_text(out)
    print(f"Made by {header['package']} {header['version']}, commit {header['commit']}", file=out)
    print(f"Reproduce with: {record.command()}", file=out)
    return 0
