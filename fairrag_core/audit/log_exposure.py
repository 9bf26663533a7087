"""The per-query step of the log audit (:func:`~fairrag_core.audit.rag_log.audit_served`): each query's exposure,
EE-D and EE-R with their intervals, the attribution of each measured source, and the per-document parts that the
ledgers read.

It runs once per audit, after the judge (:func:`~fairrag_core.audit.rag_log.judge_log`), on the verdicts it is
given; the formulas are in :mod:`fairrag_core.audit.rag_log`'s docstring (Kim & Diaz 2025, Eq. 4–6, 8–11, 16, 28).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..metrics.attribution import attributed_exposure, eae_d_per_cited, eae_disparity, expected_attribution_rate
from ..metrics.bootstrap import line_intervals
from ..metrics.exposure import ee_disparity, ee_relevance, target_exposure
from ..seeds import derive_seed
from .log_shards import LogAggregate, served_exposure

if TYPE_CHECKING:
    import pandas as pd

    from ..data import Collection
    from ..data.log_columns import LogColumns

__all__ = ["measure_queries", "with_candidates", "CANDIDATE_COLUMNS"]


def _vector(values: np.ndarray, k: int) -> np.ndarray:
    """Exposure of the served documents, zero-padded to at least k entries (the metrics check k ≤ n)."""
    return np.pad(values, (0, max(0, k - values.size)))


def measure_queries(columns: LogColumns | LogAggregate, collection: Collection, k: int, slots: np.ndarray | None,
                    cited: np.ndarray | None, entailed: np.ndarray | None, *, min_rel: int, n_boot: int,
                    level: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The audit's ``table`` (one row per query) and ``documents`` (one row per (query, document)) of a log read as
    ``columns`` (``slots``: its lines' top-k collection positions; None for a sharded log's aggregates), with the
    ``(lines, k)`` verdicts ``cited`` (logged citations) and ``entailed`` (the judge), each None when that source is
    not measured; useful is grade ≥ ``min_rel``. The per-query intervals (``n_boot`` resamples at ``level``) draw
    from ``default_rng(derive_seed(seed, 1))``; the report bootstraps with the seed itself."""
    import pandas as pd

    rng = np.random.default_rng(derive_seed(seed, 1))
    aggregated = isinstance(columns, LogAggregate)
    if not aggregated:
        eligible = {"cited": columns.with_citations, "entailed": columns.answered}
        query_lines = columns.query_lines()
    texts = {x.query_id: x.text for x in collection.queries}
    providers = collection.providers
    doc_ids = np.array(collection.doc_ids, dtype=object)
    labelled = set(collection.qrels)
    rows, doc_parts = [], []
    for q, qid in enumerate(columns.query_ids):
        lines = None if aggregated else query_lines[q]
        served, local, counts, eps = columns.exposure(q, k) if aggregated else served_exposure(slots[lines])
        ee_d = ee_disparity(_vector(eps, k), k)
        row = {"query_id": qid,
               "query": columns.query_texts.get(qid) or texts.get(qid),
               "lines": columns.queries[q].n_lines if aggregated else lines.size, "k": k, "labelled": qid in labelled,
               "m": np.nan, "fairness_question": False, "ee_d": ee_d,  # bias-corrected below
               "ee_d_plug_in": ee_d, "ee_r": np.nan, "documents_reached": served.size,
               "providers_reached": int(np.unique(providers[served]).size),
               "ee_d_low": np.nan, "ee_d_high": np.nan, "ee_r_low": np.nan, "ee_r_high": np.nan}
        part = {"doc_ids": doc_ids[served], "exposure": eps, "target": np.full(served.size, np.nan)}
        relevance_weights = None
        if qid in labelled:
            useful = collection.useful(qid, min_rel=min_rel)
            m = int(useful.sum())
            row.update(m=m, fairness_question=m > 1)
            if m:
                full = np.zeros(len(collection))
                full[served] = eps
                row["ee_r"] = ee_relevance(full, useful, k)
                target = target_exposure(useful, k)
                relevance_weights = target[served] / (target @ target)
                part = {"doc_ids": doc_ids, "exposure": full, "target": target}
        if row["lines"] > 1:
            row.update(line_intervals(local, served.size, k, rng, n_boot, level, relevance_weights,
                                      multiplicity=counts))
        doc_part = pd.DataFrame({"query_id": qid, "doc_id": part["doc_ids"], "exposure": part["exposure"],
                                 "target_exposure": part["target"]})
        for name, verdicts in (("cited", cited), ("entailed", entailed)):
            row[f"ear_{name}"] = row[f"eae_d_{name}"] = row[f"eae_d_per_cited_{name}"] = np.nan
            row[f"{name}_lines"] = 0
            doc_part[f"{name}_exposure"] = np.nan
            if verdicts is None:
                continue
            keep = eligible[name][lines]
            row[f"{name}_lines"] = int(keep.sum())
            if not keep.any():
                continue
            empty_to_dummy = np.where(local[keep] >= 0, local[keep], served.size)  # one item past the served
            eps_a = attributed_exposure(empty_to_dummy, verdicts[lines][keep], served.size + 1)[:served.size]
            row[f"ear_{name}"] = expected_attribution_rate(verdicts[lines][keep])
            # nothing attributed for this query: EAE-D is undefined (NaN), not a "fair" 0
            row[f"eae_d_{name}"] = eae_disparity(_vector(eps_a, k), k) if eps_a.any() else np.nan
            row[f"eae_d_per_cited_{name}"] = eae_d_per_cited(eps_a) if eps_a.any() else np.nan
            credit = pd.Series(eps_a, index=doc_ids[served])
            doc_part[f"{name}_exposure"] = doc_part["doc_id"].map(credit).fillna(0.0).to_numpy()
        if cited is not None and entailed is not None:
            both = eligible["cited"][lines] & eligible["entailed"][lines]
            c, e = cited[lines][both], entailed[lines][both]
            row.update(cited_slots=int(c.sum()), entailed_slots=int(e.sum()), agreed_slots=int((c & e).sum()))
        rows.append(row)
        doc_parts.append(doc_part)
    return pd.DataFrame(rows), pd.concat(doc_parts, ignore_index=True)


#: The per-(query, document) columns of the logged candidate sets (:func:`with_candidates`).
CANDIDATE_COLUMNS = ("candidate", "candidate_score")


def with_candidates(documents: pd.DataFrame, log: object, collection: Collection) -> pd.DataFrame:
    """``documents`` (:func:`measure_queries`'s) with what each query's lines chose their rankings from, where the log
    says (:attr:`~fairrag_core.data.traces.LogEntry.candidates`: a reranker's input, a retriever's deeper list):

    * ``candidate`` — the share of the query's lines with logged candidates that list the document,
      ``(1/N^c_q) Σ_lines 1[d ∈ C_line]`` (the presence of Singh & Joachims' demographic parity, per query as the
      exposure ε is); NaN for a query without logged candidates;
    * ``candidate_score`` — its mean logged score over those lines (NaN where none was logged).

    A candidate never served gets a row with exposure 0 (and 0 attributed exposure where the query's attribution is
    measured). A line whose candidates name a document outside ``collection`` counts as one without candidates (the
    presence it would give is not known). ``documents`` comes back unchanged, without the two columns, when no line
    logged candidates (a JSONL log without them, a served run, a log read column-wise)."""
    import pandas as pd

    entries = getattr(log, "entries", None) or ()
    known = set(collection.doc_ids)
    lines: dict[str, int] = {}
    listed: dict[str, dict[str, int]] = {}
    scored: dict[str, dict[str, list[float]]] = {}
    for entry in entries:
        candidates = getattr(entry, "candidates", None)
        if not candidates or not known.issuperset(candidates):
            continue
        scores = getattr(entry, "candidate_scores", None) or (None,) * len(candidates)
        lines[entry.query_id] = lines.get(entry.query_id, 0) + 1
        counts, values = listed.setdefault(entry.query_id, {}), scored.setdefault(entry.query_id, {})
        for doc_id, score in zip(candidates, scores):
            counts[doc_id] = counts.get(doc_id, 0) + 1
            if score is not None and np.isfinite(score):
                values.setdefault(doc_id, []).append(float(score))
    if not lines:
        return documents
    rows = pd.DataFrame([(q, d, n / lines[q], np.mean(scored[q][d]) if scored[q].get(d) else np.nan)
                         for q, counts in listed.items() for d, n in counts.items()],
                        columns=["query_id", "doc_id", *CANDIDATE_COLUMNS])
    keys = ["query_id", "doc_id"]
    served = documents.merge(rows, on=keys, how="left")  # the served rows keep their order
    unseen = rows.merge(documents[keys].drop_duplicates(), on=keys, how="left", indicator=True)
    unseen = unseen[unseen["_merge"] == "left_only"].drop(columns="_merge").assign(exposure=0.0)
    for column in ("cited_exposure", "entailed_exposure"):  # 0 where the query's attribution was measured
        if column in documents:
            measured = documents[column].notna().groupby(documents["query_id"]).any()
            unseen[column] = np.where(unseen["query_id"].map(measured).fillna(False).astype(bool), 0.0, np.nan)
    return pd.concat([served, unseen], ignore_index=True)[[*documents.columns, *CANDIDATE_COLUMNS]]
