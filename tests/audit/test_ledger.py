import pandas as pd
import pytest

from fairrag_core import InvalidParameterError, load_collection
from fairrag_core.audit import LEDGER_COLUMNS, exposure_ledger
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
