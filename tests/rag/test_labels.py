import pytest
from fakes import FirstDocumentModel

from fairrag_core import Collection, Document, InvalidParameterError, Query
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.labels import (
    UtilityLabelConfig,
    label_utility,
    load_utility_labels,
    summarise_labels,
    useful_vector,
    write_utility_labels,
)
from fairrag_core.retrieval import BM25Retriever


@pytest.fixture()
def toy():
    docs = (Document("a", "shoes for marathon racing", title="Cushion King"),
            Document("b", "marathon shoes with cushion", title="Cushion King"),
            Document("c", "trail socks for winter", title="Sock Co"))
    queries = (Query("q1", "marathon shoes", answer="Cushion King"), Query("q2", "socks", answer="Sock Co"))
    return Collection("toy", docs, queries, {"q1": {"a": 1}})


def test_algorithm_1_labels(toy, tmp_path):
    gen = Generator(FirstDocumentModel())  # closed book → "no idea"; one document → its title
    table = label_utility(toy, gen, BM25Retriever(toy.texts), UtilityLabelConfig(metric="f1", depth=3))
    q1 = table[table.query_id == "q1"].set_index("doc_id")
    assert (q1["u0"] == 0.0).all() and q1.loc["a", "u"] == 1.0 and q1.loc["c", "u"] == 0.0
    assert q1["useful"].to_dict() == {"a": True, "b": True, "c": False}
    summary = summarise_labels(table).set_index("query_id")
    assert summary.loc["q1", "useful"] == 2 and summary.loc["q1", "fairness_question"]
    assert summary.loc["q2", "useful"] == 1 and not summary.loc["q2", "fairness_question"]  # flagged
    path = tmp_path / "utility.fake-first-doc.qrels"
    write_utility_labels(table, path, header=["made in a test"])
    assert path.read_text().startswith("# made in a test\n") and path.with_suffix(".tsv").is_file()
    qrels = load_utility_labels(toy, "fake-first-doc", folder=tmp_path)
    assert useful_vector(toy, qrels, "q1").tolist() == [True, True, False]


def test_missing_labels_and_answers_name_the_fix(toy, tmp_path):
    with pytest.raises(InvalidParameterError, match="label-utility --collection toy --generator nope"):
        load_utility_labels(toy, "nope", folder=tmp_path)
    no_answer = Collection("t", toy.documents, (Query("q", "x"),))
    with pytest.raises(InvalidParameterError, match="need an \"answer\""):
        label_utility(no_answer, Generator(FirstDocumentModel()), BM25Retriever(no_answer.texts))


def test_has_utility_labels_only_for_the_generator_that_made_them(tmp_path):
    from fairrag_core.rag.labels import has_utility_labels

    assert has_utility_labels("running-shoes", "smollm2-135m")
    assert has_utility_labels("running-shoes", "qwen2.5-0.5b")  # the Fast preset's generator (make labels)
    assert all(has_utility_labels(name, "qwen2.5-0.5b") for name in ("news", "people", "multi-faceted"))
    assert not has_utility_labels("running-shoes", "qwen2.5-1.5b")
    assert not has_utility_labels("no-such-collection", "smollm2-135m")
    assert not has_utility_labels(tmp_path, "smollm2-135m")
    (tmp_path / "utility.smollm2-135m.qrels").write_text("q1 0 d1 1\n")
    assert has_utility_labels(tmp_path, "smollm2-135m")


def test_the_shipped_fast_labels_use_short_answer_match_and_ask_a_fairness_question_on_the_tour_query():
    from fairrag_core import load_collection
    from fairrag_core.rag.labels import load_utility_labels, utility_qrels_path

    path = utility_qrels_path("running-shoes", "qwen2.5-0.5b")
    header = path.read_text(encoding="utf-8").splitlines()[0]
    assert "generator qwen2.5-0.5b, metric short_answer (--metric auto" in header
    labels = load_utility_labels(load_collection("running-shoes"), "qwen2.5-0.5b")
    useful = {q: sum(v.values()) for q, v in labels.items()}
    assert useful["rs-q01"] > 1  # the tour's query has several useful documents: a fairness question
    assert sum(n > 1 for n in useful.values()) >= 10


@pytest.mark.parametrize(("name", "metric", "fairness_questions"), [
    ("news", "short_answer", 28), ("people", "short_answer", 6), ("multi-faceted", "rougeL", 60)])
def test_every_collection_ships_fast_labels_made_with_the_metric_that_fits_it(name, metric, fairness_questions):
    """`make labels` (Algorithm 1 with the Fast preset's generator): short-answer match where the collection has short
    answers, ROUGE-L where it has only descriptive ones (multi-faceted). The counts are what the generator makes of
    each collection: on *people* it mostly repeats the prompt's instruction, so few queries ask a fairness question."""
    from fairrag_core import load_collection
    from fairrag_core.rag.labels import load_utility_labels, utility_qrels_path

    header = utility_qrels_path(name, "qwen2.5-0.5b").read_text(encoding="utf-8").splitlines()[0]
    assert f"generator qwen2.5-0.5b, metric {metric} (--metric auto" in header
    collection = load_collection(name)
    labels = load_utility_labels(collection, "qwen2.5-0.5b")
    assert set(labels) == {q.query_id for q in collection.queries}
    assert sum(sum(v.values()) > 1 for v in labels.values()) >= fairness_questions
