"""TREC Fair Ranking 2022's measures of a served run: nDCG@K as trec_eval and ir_measures compute it, TF22-nDCG@K
and AWRF@K as the track's scripts do (fair-trec/trec2022-fair-public), expected over each query's samples.
The two nDCGs' discounts and AWRF are in :mod:`fairrag_core.metrics.trec_fair`; runs and judgments are read as
:mod:`fairrag_core.audit.served` reads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .served import QrelsLike, RunLike, as_judgments, as_run, inputs_by_name

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["evaluate_run_awrf"]


@inputs_by_name("qrels", "run")
def evaluate_run_awrf(*, qrels: QrelsLike, run: RunLike, cutoff: int = 20, run_format: str = "auto",
                      groups_by: str = "provider") -> pd.DataFrame:
    """nDCG@K (trec_eval / ir_measures), TF22-nDCG@K and AWRF@K (TREC Fair 2022) of a served run, averaged over
    each query's samples (:mod:`fairrag_core.metrics.trec_fair` says how the two nDCGs differ).

    Per query with at least one relevant (grade > 0) judged document: the target is the group distribution of
    its relevant documents (each split equally among its groups); a ranked document's groups come from the
    query's qrels line, else ``Judgments.doc_groups`` (a collection's labels), else ``Unknown``. Unjudged and
    −1 documents gain 0. Columns ``nDCG@K``, ``TF22-nDCG@K``, ``AWRF@K``, ``TF22-nDCG*AWRF@K`` (expected over the
    samples), ``n_samples``, ``in_run``; a query the run lacks scores 0 nDCG and NaN AWRF. The inputs are taken by
    name, qrels first as in ``evaluate-run QRELS RUN --awrf K`` (:func:`~fairrag_core.audit.served.inputs_by_name`).

    >>> from fairrag_core.data.judgments import parse_judgments
    >>> qrels = parse_judgments("q1 f a 1\\nq1 m b 1\\nq1 m c 0\\n")
    >>> evaluate_run_awrf(qrels=qrels, run={"q1": [["a", "b"]]}, cutoff=2).loc["q1", ["nDCG@2", "AWRF@2"]].tolist()
    [1.0, 1.0]
    """
    import pandas as pd

    from ..metrics.trec_fair import TREC_EVAL, TREC_FAIR_2022, awrf_samples, measure_names, ndcg_samples

    ndcg_name, tf22_name, awrf_name, score_name = measure_names(cutoff)
    loaded, judged = as_run(run, run_format=run_format), as_judgments(qrels, groups_by=groups_by)
    rows = []
    for qid, grades in judged.relevance.items():
        relevant = [d for d, g in grades.items() if g > 0]
        if not relevant:
            continue
        ranked = loaded.queries.get(qid)
        if ranked is None:
            rows.append({"query_id": qid, ndcg_name: 0.0, tf22_name: 0.0, awrf_name: np.nan, score_name: 0.0,
                         "n_samples": 0, "in_run": False})
            continue
        docs = list(ranked.doc_ids) + [d for d in relevant if d not in set(ranked.doc_ids)]
        labels = [judged.group_of(qid, d) for d in docs]
        names = {g: i for i, g in enumerate(dict.fromkeys(g for gs in labels for g in gs))}
        member = np.zeros((len(docs), len(names)))
        for i, gs in enumerate(labels):
            member[i, [names[g] for g in gs]] = 1.0 / len(gs)
        index = {d: i for i, d in enumerate(docs)}
        target = member[[index[d] for d in relevant]].sum(axis=0)
        gains = np.array([max(grades.get(d, 0), 0) for d in docs], dtype=np.float64)
        judged_gains = np.array([max(g, 0) for g in grades.values()], dtype=np.float64)
        ndcg = ndcg_samples(ranked.positions, gains, judged_gains, cutoff, discount=TREC_EVAL)
        tf22 = ndcg_samples(ranked.positions, gains, judged_gains, cutoff, discount=TREC_FAIR_2022)
        awrf = awrf_samples(ranked.positions, member, target, cutoff)
        rows.append({"query_id": qid, ndcg_name: float(ndcg.mean()), tf22_name: float(tf22.mean()),
                     awrf_name: float(awrf.mean()), score_name: float((tf22 * awrf).mean()),
                     "n_samples": ranked.n_samples, "in_run": True})
    columns = ["query_id", ndcg_name, tf22_name, awrf_name, score_name, "n_samples", "in_run"]
    return pd.DataFrame(rows, columns=columns).set_index("query_id")
