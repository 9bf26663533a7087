"""Commands about rankings and exposure: ``collections``, ``rank`` (one query) and ``exposure-sweep`` (a query set
× α grid). Kim & Diaz (2025), §3.2–3.3.

Both keep a record (:mod:`fairrag_core.record`): ``exposure-sweep`` is saved in the run store unless ``--no-store``;
``rank``, a quick look, only with ``--store [PATH]`` (:func:`rank_run`: its sampled and deterministic rows as a
sweep's). Their ``--json`` and ``--output`` carry the record's header (version, commit, inputs' sha256, settings).
"""

from __future__ import annotations

import numpy as np

from ..audit.ledger import TOP_PROVIDERS, TopGroups, top_with_others
from ..data import DEMO_COLLECTIONS, load_collection
from ..data.export import HEADER_KEY, write_table
from ..metrics.registry import METRICS
from ..option_types import count_arg
from ..options import COLLECTION, MODEL, QUERY, RETRIEVER, Entry, add_option
from ..ranking import (
    RankingConfig,
    RankingRun,
    SweepConfig,
    exposure_sweep,
    run_ranking,
    summarise_sweep,
)
from ..ranking.run import providers_among
from ..ranking.sweep import left_out, system_of
from ..record import RunKind, RunRecord, SweepRun
from .backend_options import add_backend, on_backend
from .common import (
    ALL_PROVIDERS_HINT,
    add_all_providers,
    add_command,
    add_common,
    add_store,
    bar,
    fmt,
    keep_run,
    load_inputs,
    print_json,
    print_undefined,
    records,
    settings,
)

__all__ = ["register", "rank_payload", "rank_command", "rank_run", "QUERY"]


def register(sub) -> None:
    """Add ``collections``, ``rank`` and ``exposure-sweep`` to the command parser ``sub``."""
    p = add_command(sub, "collections", _cmd_collections, help="list the demo collections and their sizes")
    p.add_argument("--json", action="store_true")

    p = add_command(sub, "rank", _cmd_rank, help="one query: deterministic vs sampled rankings, exposure per document "
                                                 "and provider, EE-D/EE-R",
                    description="Rank one query with the deterministic retriever and with the stochastic retriever at "
                                "α, and show who gets exposure. Lower α spreads exposure across more providers.")
    add_common(p, RankingConfig)
    add_option(p, QUERY)
    p.add_argument("--show", type=count_arg, default=5, help="sampled rankings to print (default 5)")
    add_all_providers(p)
    add_store(p, "the ranking", opt_in=True)

    p = add_command(sub, "exposure-sweep", _cmd_sweep, help="collection × α grid → EE-D/EE-R per query and α",
                    description="Sample rankings at each α for every query and report EE-D (every query) and EE-R "
                                "(the queries with relevance labels; the output names those left out and why): the "
                                "retrieval half of the paper's Figures 3 and 4. Saved in the run store.")
    add_common(p, SweepConfig)
    p.add_argument("--output", default=None, help="also write the per-query table to this .csv file (after '# key: "
                                                  "value' header lines: read it with pandas.read_csv(path, "
                                                  "comment='#')) or .parquet")
    add_store(p, "the sweep")
    add_backend(p, unit="α (all queries at once, from the α's own seeded stream)")


def rank_command(run: RankingRun) -> str:
    """The ``rank`` command that reproduces ``run``: its record's (:func:`rank_record`), from the option declarations
    of its inputs and :class:`~fairrag_core.ranking.RankingConfig` (collection as
    :func:`~fairrag_core.options.command_path` names it, the seed the run drew)."""
    return rank_record(run).command()


def rank_record(run: RankingRun) -> RunRecord:
    """The record of a ``rank`` run: its collection, retriever, settings, the seed it drew and the query (its text
    in ``extra["query"]``, its id in ``query_ids`` when it is one of the collection's)."""
    return RunRecord(kind=RunKind.RANK, collection=run.collection.source or run.collection.name,
                     retriever=run.retriever, config=run.config, seed=run.seed,
                     query_ids=(run.query.query_id,) if run.query else (), sampled_rankings=run.config.n_samples,
                     extra={"query": run.query_text, "candidates_used": int(run.candidate_indices.size)})


def rank_run(run: RankingRun) -> SweepRun:
    """A ``rank`` run as the run store keeps it: a sweep's rows (``query_id, system, alpha, n, m,
    fairness_question, ee_d, ee_d_low, ee_d_high, ee_d_plug_in, ee_r, providers_reached``) for the sampled ranker
    at α and the deterministic one (α = inf), and their per-candidate exposure as a sweep's documents, so that
    ``runs show``/``compare`` and the app's Audit page read it as they read a sweep."""
    import pandas as pd

    docs = run.documents_table()
    qid = run.query.query_id if run.query else None
    useful = 0 if run.labels is None else int(run.labels.sum())
    systems = [(run.config.alpha, run.summary, "exposure")]
    if not np.isinf(run.config.alpha):
        systems.append((float("inf"), run.deterministic_summary, "deterministic_exposure"))
    rows, documents = [], []
    for alpha, summary, column in systems:
        interval = summary.ee_d
        rows.append({"query_id": qid, "system": system_of(alpha), "alpha": alpha, "n": int(docs.shape[0]),
                     "m": useful, "fairness_question": useful > 1, "ee_d": summary.ee_d_value,
                     "ee_d_low": None if interval is None else interval.low,
                     "ee_d_high": None if interval is None else interval.high,
                     "ee_d_plug_in": summary.ee_d_plug_in,
                     "ee_r": np.nan if summary.ee_r is None and summary.ee_r_plug_in is None else (
                         summary.ee_r.estimate if summary.ee_r is not None else summary.ee_r_plug_in),
                     "providers_reached": int(docs.loc[docs[column] > 0, "provider"].nunique())})
        documents.append(pd.DataFrame({"query_id": qid, "alpha": alpha, "doc_id": docs["doc_id"],
                                       "exposure": docs[column], "target_exposure": docs["target_exposure"]}))
    return SweepRun(record=rank_record(run), table=pd.DataFrame(rows),
                    documents=pd.concat(documents, ignore_index=True))


def retrieval_inputs(run: RankingRun) -> list[Entry]:
    """The collection (as :func:`~fairrag_core.options.command_path` names it), the retriever and its model of a
    ranking run, as a reproduce command (``rank``, ``rag``) writes them."""
    kind, _, model = run.retriever.partition(":")
    return [Entry(COLLECTION, run.collection.source or run.collection.name), Entry(RETRIEVER, kind),
            Entry(MODEL, model or None)]


def rank_payload(run: RankingRun) -> dict:
    providers = run.providers_table()
    ids = run.doc_ids
    return {
        "collection": run.collection.name,
        "query": run.query_text,
        "query_id": run.query.query_id if run.query else None,
        "retriever": run.retriever,
        "alpha": run.config.alpha,
        "k": run.config.k,
        "n_samples": run.config.n_samples,
        "seed": run.seed,
        "n_candidates": int(run.candidate_indices.size),
        "n_useful": None if run.labels is None else int(run.labels.sum()),
        "min_rel": run.config.min_rel,
        "deterministic_ranking": [ids[i] for i in run.deterministic],
        "rankings": [[ids[i] for i in row] for row in run.rankings],
        # an interval object {estimate, low, high, …} (estimate inside it), or null with the reason in `undefined`
        "ee_d": None if run.summary.ee_d is None else run.summary.ee_d.to_dict(),
        "ee_d_plug_in": run.summary.ee_d_plug_in,
        "ee_d_unbiased": run.summary.ee_d_unbiased,
        "ee_r": None if run.summary.ee_r is None else run.summary.ee_r.to_dict(),
        "ee_r_plug_in": run.summary.ee_r_plug_in,
        "undefined": dict(run.summary.undefined),
        "deterministic_ee_d": run.deterministic_summary.ee_d_plug_in,
        "deterministic_ee_r": run.deterministic_summary.ee_r_plug_in,
        "providers_reached": int((providers["exposure"] > 0).sum()),
        "providers_total": int(providers.shape[0]),
        "documents": records(run.documents_table()),
        "providers": records(providers),
        "notes": list(run.notes),
        "command": rank_command(run),
        HEADER_KEY: rank_record(run).header(),
    }


def rank_providers(providers, *, every: bool = False) -> TopGroups:
    """The providers ``rank`` prints: the :data:`~fairrag_core.audit.ledger.TOP_PROVIDERS` with the most sampled
    exposure and the rest summed (``every``: all of them)."""
    return top_with_others(providers, group="provider", by="exposure", what="sampled exposure",
                           summed=("documents", "exposure", "deterministic_exposure", "target_exposure"),
                           n=None if every else TOP_PROVIDERS)


def _print_rank(run: RankingRun, show: int, out, *, every: bool = False) -> None:
    docs = run.documents_table()
    providers = run.providers_table()
    top = rank_providers(providers, every=every)
    k, n = run.config.k, run.candidate_indices.size
    labelled = run.labels is not None
    qid = f" [{run.query.query_id}]" if run.query else " (not in the query set: no relevance labels, EE-R n/a)"
    print(f"Query: {run.query_text}{qid}", file=out)
    print(f"Collection {run.collection.name}: {n} candidates, retriever {run.retriever}, k={k}, "
          f"N={run.config.n_samples}, α={run.config.alpha:g}, seed={run.seed}", file=out)
    if labelled:
        print(f"Useful candidates (qrels grade ≥ {run.config.min_rel}): {int(run.labels.sum())}", file=out)
    for note in run.notes:
        print(f"Note: {note}.", file=out)

    def label(i: int) -> str:
        d = docs.iloc[i]
        mark = (" ✓" if run.labels[i] else "  ") if labelled else ""
        return f"{d.doc_id:<10} {d.provider:<24.24} {d.score:8.3f}{mark}"

    print(f"\nDeterministic top-{k} (the same every time):", file=out)
    for r, i in enumerate(run.deterministic, 1):
        print(f"  {r}. {label(i)}", file=out)
    shown = min(show, run.rankings.shape[0])
    print(f"\nSampled rankings at α={run.config.alpha:g} ({shown} of {run.rankings.shape[0]}):", file=out)
    for s, row in enumerate(run.rankings[:shown], 1):
        print(f"  #{s:<3} " + " | ".join(f"{docs.iloc[i].provider}" for i in row), file=out)

    print("\nExposure by provider (expected number of its documents in the top k):", file=out)
    head = f"  {'provider':<24} {'docs':>4} {'sampled':>8} {'determ.':>8}"
    if top.truncated:
        print(f"  Showing {top.rule} ({ALL_PROVIDERS_HINT}).", file=out)
    print(head + (f" {'target':>7}" if labelled else ""), file=out)
    for row in top.shown.itertuples():
        line = f"  {row.provider:<24.24} {row.documents:>4} {row.exposure:8.2f} {row.deterministic_exposure:8.2f}"
        target = f" {row.target_exposure:7.2f}" if labelled else ""
        print(line + target + "  " + bar(row.exposure, max(1.0, providers["exposure"].max())), file=out)
    if top.truncated:
        rest = top.others
        target = f", target {rest['target_exposure']:.2f}" if labelled else ""
        print(f"  {top.with_others('provider')['provider'].iloc[-1]}: {int(rest['documents']):,} documents, sampled "
              f"{rest['exposure']:.2f} ({rest['exposure'] / max(providers['exposure'].sum(), 1e-12):.1%} of the "
              f"sampled exposure), deterministic {rest['deterministic_exposure']:.2f}{target}", file=out)
    reached = int((providers["exposure"] > 0).sum())
    det_reached = int((providers["deterministic_exposure"] > 0).sum())
    among = providers_among(providers.shape[0], len(set(run.collection.providers)), n)
    print(f"\nProviders reached: {reached} of {providers.shape[0]} (deterministic: {det_reached}); {among}", file=out)
    summary = run.summary
    # the estimate printed is always the one inside the interval (bias-corrected for EE-D, the plug-in for EE-R)
    ee_d = summary.ee_d.describe() if summary.ee_d is not None else f"{summary.ee_d_plug_in:.3f} (no interval)"
    print(f"{METRICS['ee_d'].label} (disparity, lower is fairer): {ee_d}   [deterministic 1.000, uniform {k / n:.3f}]",
          file=out)
    if summary.ee_d is not None:
        print(f"     plug-in over these N={run.config.n_samples} samples {summary.ee_d_plug_in:.3f} (biased upward by "
              "the finite N)", file=out)
    if labelled:
        ee_r = summary.ee_r.describe() if summary.ee_r is not None else (
            "—" if summary.ee_r_plug_in is None else f"{summary.ee_r_plug_in:.3f} (no interval)")
        det = run.deterministic_summary.ee_r_plug_in
        print(f"{METRICS['ee_r'].label} (exposure on useful docs):    {ee_r}   [deterministic {fmt(det)}]", file=out)
    print_undefined(summary.undefined, out)
    print(f"Reproduce with: {rank_command(run)}", file=out)


def _cmd_collections(args, out) -> int:
    rows = []
    for name in DEMO_COLLECTIONS:
        c = load_collection(name)
        rows.append({"collection": name, "documents": len(c), "providers": int(np.unique(c.providers).size),
                     "queries": len(c.queries), "judged_queries": len(c.qrels),
                     "categories": ",".join(c.categories())})
    if args.json:
        return print_json(rows, out, indent=2)
    print(_right_aligned(rows), file=out)
    return 0


def _right_aligned(rows: list[dict]) -> str:
    """A plain table, columns right-aligned under their names (what ``DataFrame.to_string`` prints, without
    importing pandas for four lines)."""
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    lines = ["  ".join(c.rjust(widths[c]) for c in columns)]
    lines += ["  ".join(str(r[c]).rjust(widths[c]) for c in columns) for r in rows]
    return "\n".join(lines)


def _cmd_rank(args, out) -> int:
    collection, retriever = load_inputs(args)
    run = run_ranking(collection, retriever, args.query, settings(RankingConfig, args))
    kept = keep_run(args, rank_run(run), label=run.query_text[:60])
    if args.json:
        stored = kept.to_dict() if args.store is not None else {}
        top = rank_providers(run.providers_table(), every=args.all_providers)
        # every provider is in "providers"; "providers_shown" names those the text prints, by "providers_rule"
        shown = {"providers_shown": top.shown["provider"].tolist(), "providers_rule": top.rule}
        return print_json({**rank_payload(run), **shown, **stored}, out, indent=2, ensure_ascii=False)
    _print_rank(run, args.show, out, every=args.all_providers)
    kept.print_text(out)
    return 0


def _cmd_sweep(args, out) -> int:
    collection, retriever = load_inputs(args)
    config = settings(SweepConfig, args)

    def remote(backend):
        from ..backends.workloads import exposure_sweep_on

        return exposure_sweep_on(backend, collection, retriever, config)

    run = on_backend(args, lambda: exposure_sweep(collection, retriever, config), remote)
    table, record = run.table, run.record
    summary = summarise_sweep(table)
    header = record.header()
    outputs = [(args.output, lambda: write_table(table, args.output, header=header))] if args.output else []
    kept = keep_run(args, run, outputs=outputs)
    unjudged = record.extra.get("unjudged_queries", ())
    if args.json:
        return print_json({**kept.to_dict(), HEADER_KEY: header, "config": record.to_dict(),
                           "command": record.command(), "rows": records(table), "summary": records(summary),
                           "left_out": left_out(table, unjudged)}, out, indent=2)
    print(f"Exposure sweep on {record.collection_name} ({record.retriever}, {record.extra['candidates_used']} "
          f"candidates, k={config.k}, N={config.n_samples}, seed={record.seed})\n", file=out)
    for note in record.extra.get("notes", ()):
        print(f"Note: {note}.\n", file=out)
    wide = table.pivot(index="query_id", columns="alpha", values=["ee_d", "ee_r"])
    wide.columns = [f"{metric.upper().replace('_', '-')} α={alpha:g}" for metric, alpha in wide.columns]
    print(wide.round(3).to_string(), file=out)
    print(f"\n{left_out(table, unjudged)}", file=out)
    print("Means per α (EE-D over every query, EE-R over ee_r_queries):", file=out)
    print(summary.round(3).to_string(index=False), file=out)
    if args.output and not any(p.startswith(f"{args.output} ") for p in kept.problems):
        print(f"\nPer-query table written to {args.output}", file=out)
    kept.print_text(out)
    print(f"Made by {header['package']} {header['version']}, commit {header['commit']}", file=out)
    print(f"Reproduce with: {record.command()}", file=out)
    return 0
