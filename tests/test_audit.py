import numpy as np
import pandas as pd
import pytest
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core import InvalidParameterError, load_collection
from fairrag_core.audit import LEDGER_COLUMNS, exposure_ledger, recommend_alpha
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.sweep import RagSweep, RagSweepConfig, rag_sweep
from fairrag_core.ranking.sweep import SweepConfig, exposure_sweep


@pytest.fixture(scope="module")
def people():
    return load_collection("people")


def test_ledger_sums_and_shares_by_provider_hand_computed(shoes):
    ids = shoes.doc_ids
    provider = dict(zip(ids, shoes.providers))
    a = ids[0]
    b = next(i for i in ids if provider[i] != provider[a])
    same_as_a = next(i for i in ids if provider[i] == provider[a] and i != a)
    docs = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": [a, b, same_as_a],
                         "exposure": [0.5, 0.25, 0.25], "attributed_exposure": [0.1, 0.3, 0.0],
                         "target_exposure": [0.2, 0.6, 0.2]})
    ledger = exposure_ledger(docs, shoes).set_index("group")
    assert list(ledger.reset_index().columns) == list(LEDGER_COLUMNS)
    pa, pb = provider[a], provider[b]
    assert ledger.loc[pa, "documents"] == 2 and ledger.loc[pa, "retrieval_exposure"] == pytest.approx(0.75)
    assert ledger.loc[pa, "retrieval_share"] == pytest.approx(0.75)
    assert ledger.loc[pb, "attributed_share"] == pytest.approx(0.75)
    assert ledger.loc[pa, "target_share"] == pytest.approx(0.4)
    assert ledger.loc[pa, "share_gap"] == pytest.approx(0.35)
    assert ledger.index[0] == pa  # largest retrieval exposure first


def test_ledger_by_category_puts_unlabelled_documents_in_unknown(people):
    genders = dict(zip(people.doc_ids, people.group_of("gender", fill="Unknown")))
    unknown = [d for d, g in genders.items() if g == "Unknown"]
    assert unknown, "the people collection ships documents without a gender label"
    docs = pd.DataFrame({"doc_id": [unknown[0], people.doc_ids[0]], "exposure": [1.0, 1.0]})
    ledger = exposure_ledger(docs, people, by="gender")
    assert "Unknown" in set(ledger["group"])
    assert ledger["retrieval_share"].sum() == pytest.approx(1.0)
    assert ledger["attributed_share"].isna().all() and ledger["target_share"].isna().all()


def test_ledger_rejects_bad_input(shoes):
    with pytest.raises(InvalidParameterError, match="unknown grouping 'colour'"):
        exposure_ledger(pd.DataFrame({"doc_id": [shoes.doc_ids[0]], "exposure": [1.0]}), shoes, by="colour")
    with pytest.raises(InvalidParameterError, match="not in 'running-shoes'"):
        exposure_ledger(pd.DataFrame({"doc_id": ["nope"], "exposure": [1.0]}), shoes)
    with pytest.raises(InvalidParameterError, match="doc_id and exposure"):
        exposure_ledger(pd.DataFrame({"doc_id": ["x"]}), shoes)


def test_ledger_of_a_real_sweep_sums_to_k_per_query(people):
    from fairrag_core.retrieval import BM25Retriever

    run = exposure_sweep(people, BM25Retriever(people.texts),
                         SweepConfig(alphas=(2.0, float("inf")), n_samples=30, k=4, seed=3,
                                     query_ids=("ppl-q01", "ppl-q02")))
    assert run.table["system"].tolist() == ["stochastic", "stochastic", "deterministic", "deterministic"]
    docs = run.documents
    assert docs.groupby(["query_id", "alpha"]).ngroups == 4
    for _, part in docs.groupby(["query_id", "alpha"]):
        assert part["exposure"].sum() == pytest.approx(4.0)
    ledger = exposure_ledger(docs[docs["alpha"] == 2.0], people, by="region")
    assert ledger["retrieval_exposure"].sum() == pytest.approx(8.0)


def _sweep_table(eu_by_alpha, ee_d_by_alpha, baseline=0.8):
    rows = [{"query_id": "q", "system": "stochastic", "alpha": a, "fairness_question": True,
             "ee_d": ee_d_by_alpha[a], "eu": u} for a, u in eu_by_alpha.items()]
    rows.append({"query_id": "q", "system": "deterministic", "alpha": np.inf, "fairness_question": True,
                 "ee_d": 1.0, "eu": baseline})
    return pd.DataFrame(rows)


def test_recommender_picks_fairest_alpha_within_tolerance():
    table = _sweep_table({0.0: 0.5, 1.0: 0.70, 2.0: 0.77, 8.0: 0.80}, {0.0: 0.1, 1.0: 0.2, 2.0: 0.35, 8.0: 0.9})
    rec = recommend_alpha(table, tolerance=0.05)
    assert rec.alpha == 2.0 and rec.threshold == pytest.approx(0.76) and rec.baseline_utility == pytest.approx(0.8)
    assert rec.per_alpha["eligible"].tolist() == [False, False, True, True]
    assert recommend_alpha(table, tolerance=0.15).alpha == 1.0
    assert recommend_alpha(table, tolerance=0.3, relative=False).alpha == 0.0


def test_recommender_keeps_deterministic_when_nothing_qualifies():
    rec = recommend_alpha(_sweep_table({0.0: 0.2, 4.0: 0.5}, {0.0: 0.1, 4.0: 0.6}), tolerance=0.0)
    assert rec.alpha is None and "keep the deterministic ranker" in rec.reason


def test_recommender_rejects_bad_input():
    table = _sweep_table({0.0: 0.5}, {0.0: 0.1})
    with pytest.raises(InvalidParameterError, match="tolerance"):
        recommend_alpha(table, tolerance=float("nan"))
    with pytest.raises(InvalidParameterError, match="tolerance"):
        recommend_alpha(table, tolerance=-0.1)
    with pytest.raises(InvalidParameterError, match=r"lacks \['eu'\]"):
        recommend_alpha(table.drop(columns=["eu"]))
    with pytest.raises(InvalidParameterError, match="deterministic baseline"):
        recommend_alpha(table[table["system"] == "stochastic"])


def test_step_wise_sweep_resumes_and_matches_the_one_shot_sweep(shoes, shoes_bm25):
    config = RagSweepConfig(alphas=(0.0, 4.0), n_samples=8, k=3, seed=11, candidates=10, usefulness="relevance",
                            query_ids=("rs-q01", "rs-q02"))
    whole = rag_sweep(shoes, shoes_bm25, Generator(FirstDocumentModel()), SubstringAttributor(), config).table
    sweep = RagSweep(shoes, shoes_bm25, Generator(FirstDocumentModel()), SubstringAttributor(), config)
    assert len(sweep.tasks) == 2 * 3  # two α values and the deterministic baseline, per query
    first = [sweep.run(t) for t in sweep.tasks[:2]]  # "stopped" after two tasks...
    partial = sweep.collect(first)
    assert partial.record.complete is False and len(partial.table) == 2
    rest = [sweep.run(t) for t in reversed(sweep.tasks[2:])]  # ...resumed, in any order
    finished = sweep.collect(first + rest)
    assert finished.record.complete is True
    table = finished.table
    cols = ["query_id", "system", "alpha", "ee_d", "eu", "ear", "eae_d", "seed"]
    pd.testing.assert_frame_equal(table[cols], whole[cols])
    docs = finished.documents
    per_run = docs.groupby(["query_id", "alpha"])
    assert per_run["exposure"].sum().round(9).eq(3.0).all()
    assert (per_run["attributed_exposure"].sum() <= 3.0 + 1e-9).all()
