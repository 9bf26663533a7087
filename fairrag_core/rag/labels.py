"""Utility labels by Algorithm 1 of Kim & Diaz (2025), §3.1 and App. B.

A document is *useful* for a query when the generator's answer improves by giving it that document:

    u_0 = μ_u(y, G(φ_p(x, ∅)))          closed-book baseline
    u_j = μ_u(y, G(φ_p(x, [d_j])))      the document alone
    δ_j = u_j − u_0;  useful ⇔ δ_j > 0

The labels depend on the task and on the generator. Queries with at most one useful item carry
no fairness question, and the paper leaves them out of fairness analyses.

To keep the cost near the query count × first-stage depth, only *candidates* are labelled: the
top ``depth`` documents of the first-stage retriever plus every judged document. Unlabelled
documents count as not useful. The shipped files record the generator, metric and depth in
their header.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..checks import check_positive_int
from ..data import Collection, demo_folder, load_qrels
from ..errors import FairRAGError, InvalidParameterError
from ..metrics.utility import UtilityMetric, gold_for, resolve_metric
from ..retrieval import Retriever, top_candidates
from .degenerate import answer_flags
from .generation import Generator
from .pipeline import scored_utility

if TYPE_CHECKING:  # pandas is imported where it is used: start-up stays small (issue 22)
    import pandas as pd

__all__ = ["UtilityLabelConfig", "label_utility", "utility_qrels_path", "has_utility_labels", "load_utility_labels",
           "write_utility_labels"]


@dataclass(frozen=True)
class UtilityLabelConfig:
    metric: UtilityMetric = UtilityMetric.AUTO  # resolved over the collection (metrics.utility.resolve_metric)
    depth: int = 20  # first-stage candidates labelled per query (judged documents are always added)
    query_ids: tuple[str, ...] = ()


def label_utility(collection: Collection, generator: Generator, retriever: Retriever,
                  config: UtilityLabelConfig = UtilityLabelConfig(), *, progress=None) -> pd.DataFrame:
    """Run Algorithm 1 over the collection's candidates.

    Returns a table with one row per (query, candidate document) and these columns:
    ``query_id, doc_id, u0, u, delta, useful, answer, baseline_answer``.
    ``progress(done, total)`` is called after each query.
    """
    import pandas as pd

    queries = [collection.query(q) for q in config.query_ids] if config.query_ids else list(collection.queries)
    metric = resolve_metric(config.metric, collection.queries)
    missing = [q.query_id for q in queries if not gold_for(q, metric)]
    if missing:
        need = '"short_answers"' if metric is UtilityMetric.SHORT_ANSWER else 'an "answer"'
        raise InvalidParameterError(
            f"queries {missing[:5]} have no gold answer for {metric.value}; utility labels need {need} for every query"
        )
    check_positive_int(config.depth, "depth", hint="how many first-stage candidates to label per query")
    rows = []
    for done, query in enumerate(queries, 1):
        cand = top_candidates(retriever.score(query.text), config.depth).indices.tolist()
        judged = [collection.index_of(d) for d in collection.qrels.get(query.query_id, {})]
        indices = list(dict.fromkeys(cand + judged))
        gold = gold_for(query, metric)
        baseline = generator.answer_closed_book(query.text)
        u0 = scored_utility(baseline, gold, metric, answer_flags(baseline, question=query.text))
        answers = generator.answer_rankings(query.text, [[collection.documents[i]] for i in indices])
        for i, answer in zip(indices, answers):
            flags = answer_flags(answer, question=query.text, titles=[collection.documents[i].title],
                                 sources=[collection.documents[i].provider])
            u = scored_utility(answer, gold, metric, flags)  # a degenerate answer scores 0
            rows.append({"query_id": query.query_id, "doc_id": collection.documents[i].doc_id, "u0": u0, "u": u,
                         "delta": u - u0, "useful": bool(u - u0 > 0), "answer": answer, "baseline_answer": baseline})
        if progress is not None:
            progress(done, len(queries))
    return pd.DataFrame(rows)


def summarise_labels(table: pd.DataFrame) -> pd.DataFrame:
    """Useful items per query, with ``fairness_question`` False when m ≤ 1 (left out of fairness analyses)."""
    per_query = table.groupby("query_id", sort=False).agg(candidates=("doc_id", "size"), useful=("useful", "sum"),
                                                           u0=("u0", "first"), best_u=("u", "max"))
    per_query["fairness_question"] = per_query["useful"] > 1
    return per_query.reset_index()


def utility_qrels_path(collection: str | Path, generator: str) -> Path:
    """Where the utility qrels of ``collection`` for ``generator`` live (``<folder>/utility.<generator>.qrels``)."""
    folder = Path(collection)
    if not folder.is_dir():
        folder = demo_folder(str(collection))
    return folder / f"utility.{generator}.qrels"


def has_utility_labels(collection: str | Path, generator: str) -> bool:
    """Whether Algorithm 1's utility labels of ``generator`` exist for ``collection`` (a demo name or a folder).

    The shipped labels were made with SmolLM2-135M; another generator's usefulness has to be labelled first
    (``label-utility``), or relevance labels used instead.
    """
    try:
        return utility_qrels_path(collection, generator).is_file()
    except FairRAGError:
        return False


def write_utility_labels(table: pd.DataFrame, path: Path, *, header: Sequence[str] = ()) -> None:
    """Write TREC qrels (``qid 0 doc_id 0|1``) with ``#`` header lines, and the full table beside it as TSV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {h}" for h in header]
    lines += [f"{r.query_id} 0 {r.doc_id} {int(r.useful)}" for r in table.itertuples()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table.to_csv(path.with_suffix(".tsv"), sep="\t", index=False)


def load_utility_labels(collection: Collection, generator: str, *,
                        folder: Path | None = None) -> dict[str, dict[str, int]]:
    """Utility qrels for ``generator``, checked against the collection's documents.

    Raises:
        InvalidParameterError: no labels exist for this generator; the message gives the command that makes them.
    """
    path = (folder / f"utility.{generator}.qrels") if folder else utility_qrels_path(collection.name, generator)
    if not path.is_file():
        raise InvalidParameterError(
            f"no utility labels for generator {generator!r} in {path.parent}; make them with "
            f"`python -m fairrag_core label-utility --collection {collection.name} --generator {generator}` "
            "or use relevance labels (--labels relevance)"
        )
    qrels = load_qrels(path)
    for judged in qrels.values():
        for doc_id in judged:
            collection.index_of(doc_id)
    return qrels


def useful_vector(collection: Collection, qrels: dict[str, dict[str, int]], query_id: str) -> np.ndarray:
    """Boolean usefulness over all documents from a utility-qrels mapping (unlabelled → False)."""
    out = np.zeros(len(collection), dtype=bool)
    for doc_id, grade in qrels.get(query_id, {}).items():
        out[collection.index_of(doc_id)] = grade > 0
    return out
