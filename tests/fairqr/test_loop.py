import json

import numpy as np
import pytest

from fairrag_core import Collection, Document, InvalidParameterError, Query
from fairrag_core.fairqr import FairQRConfig, Refiner, fair_qr
from fairrag_core.fairqr.refiners import Refinement, RefinementRequest
from fairrag_core.metrics.group_fairness import kl_divergence
from fairrag_core.metrics.group_targets import TargetKind
from fairrag_core.retrieval import BM25Retriever


class ScriptedRefiner(Refiner):
    """Returns the scripted keywords in order and records every request."""

    name = "scripted"

    def __init__(self, *keywords: str) -> None:
        self.keywords = list(keywords)
        self.requests: list[RefinementRequest] = []

    def refine(self, request):
        self.requests.append(request)
        return Refinement(keywords=self.keywords.pop(0), raw="scripted")


@pytest.fixture()
def toy():
    """Six jazz documents by men rank first for "jazz piano"; one woman's document also says "trio"."""
    docs = [Document(f"m{i}", f"jazz piano jazz piano player {'x' * i}", groups={"gender": "male"}) for i in range(6)]
    docs += [Document("f0", "jazz piano trio leader", groups={"gender": "female"}),
             Document("f1", "jazz piano leader", groups={"gender": "female"}),
             Document("u0", "jazz piano notes", groups={})]  # no label: the group "Unknown"
    docs += [Document(f"o{i}", f"gardening tips trio {'z' * i}", groups={"gender": "female"}) for i in range(4)]
    qrels = {"q": {"m0": 1, "m1": 1, "f0": 1, "f1": 1}}
    collection = Collection("toy", tuple(docs), (Query("q", "jazz piano"),), qrels)
    return collection, BM25Retriever(collection.texts)


def test_loop_keeps_the_best_list_stops_when_delta_rises_and_reranks_with_the_original_query(toy):
    collection, bm25 = toy
    refiner = ScriptedRefiner("trio", "notes")
    result = fair_qr(collection, bm25, refiner, "jazz piano", FairQRConfig(categories=("gender",), top_k=4))
    assert [it.query for it in result.iterations] == ["jazz piano", "jazz piano trio", "jazz piano trio notes"]
    assert result.target == {"Unknown": 0.0, "female": 0.5, "male": 0.5}
    first, second, third = result.iterations
    assert first.distribution == {"Unknown": 0.0, "female": 0.0, "male": 1.0}
    assert first.under_represented == "female"
    assert first.delta == pytest.approx(kl_divergence(result.target, first.distribution))
    assert second.delta < first.delta and third.delta >= second.delta
    assert result.chosen == 1 and result.refinements == 1 and "stopped decreasing at refinement 2" in result.stop_reason
    assert result.without_rerank == second.retrieved
    scores = dict(zip(collection.doc_ids, bm25.score("jazz piano")))
    assert [scores[d] for d in result.reranked] == sorted((scores[d] for d in second.retrieved), reverse=True)
    assert set(result.reranked) == set(second.retrieved)
    request = refiner.requests[0]
    assert request.group == "female" and request.current_query == "jazz piano" and request.top_k == 4
    assert json.loads(result.to_json())["iterations"][1]["added_keywords"] == "trio"


def test_loop_stops_at_max_iterations_and_when_nothing_is_proposed(toy):
    collection, bm25 = toy
    capped = fair_qr(collection, bm25, ScriptedRefiner("trio"), "jazz piano",
                     FairQRConfig(categories=("gender",), top_k=4, max_iterations=1))
    assert len(capped.iterations) == 2 and "maximum of 1" in capped.stop_reason
    empty = fair_qr(collection, bm25, ScriptedRefiner(""), "jazz piano", FairQRConfig(categories=("gender",), top_k=4))
    assert len(empty.iterations) == 1 and empty.chosen == 0 and "no usable keywords" in empty.stop_reason
    none = fair_qr(collection, bm25, ScriptedRefiner(), "jazz piano",
                   FairQRConfig(categories=("gender",), top_k=4, max_iterations=0))
    assert none.refinements == 0 and len(none.iterations) == 1


def test_a_list_already_on_target_is_not_refined(toy):
    collection, bm25 = toy
    target = {"male": 1.0}
    result = fair_qr(collection, bm25, ScriptedRefiner("never used"), "jazz piano",
                     FairQRConfig(categories=("gender",), top_k=4, target=TargetKind.CUSTOM, custom_target=target,
                                  smoothing=0.0))
    assert result.iterations[0].delta == 0.0 and "already matches" in result.stop_reason


def test_bad_settings_name_the_fix(toy):
    collection, bm25 = toy
    with pytest.raises(InvalidParameterError, match="at least one fairness category"):
        fair_qr(collection, bm25, ScriptedRefiner(), "jazz", FairQRConfig(categories=()))
    with pytest.raises(InvalidParameterError, match="top_k must be between 1 and the 13"):
        fair_qr(collection, bm25, ScriptedRefiner(), "jazz", FairQRConfig(categories=("gender",), top_k=99))
    with pytest.raises(InvalidParameterError, match="query is empty"):
        fair_qr(collection, bm25, ScriptedRefiner(), "  ", FairQRConfig(categories=("gender",)))
    with pytest.raises(InvalidParameterError, match="max_iterations"):
        fair_qr(collection, bm25, ScriptedRefiner(), "jazz",
                FairQRConfig(categories=("gender",), top_k=4, max_iterations=-1))


def test_a_refinement_that_lowers_relevance_is_refused_and_says_so():
    """Issue 31: keywords that pull less useful documents into the list are not kept, and the step says what they
    would cost; the final list keeps the original's useful documents."""
    docs = (Document("m0", "jazz piano", groups={"gender": "male"}),
            Document("m1", "jazz piano", groups={"gender": "male"}),
            Document("f0", "jazz gardening gardening", groups={"gender": "female"}),
            Document("f1", "jazz gardening gardening", groups={"gender": "female"}),
            *(Document(f"o{i}", f"other text {i}", groups={"gender": "male"}) for i in range(12)))
    collection = Collection("toy", docs, (Query("q", "jazz piano"),), {"q": {"m0": 1, "m1": 1}})
    bm25 = BM25Retriever(collection.texts)
    config = FairQRConfig(categories=("gender",), top_k=2, target=TargetKind.UNIFORM, relevance_cutoff=2)
    result = fair_qr(collection, bm25, ScriptedRefiner("gardening"), "jazz piano", config)
    said = "adding 'gardening' would lower the useful documents in the top 2 from 2 to 0"
    assert set(result.iterations[1].retrieved) == {"f0", "f1"}
    assert result.stop_reason == f"refinement 1 was refused: {said}" and result.iterations[1].note == \
        f"kept the query: {said}"
    assert result.chosen == 0 and result.reranked == ("m0", "m1")
    assert result.config["relevance_cutoff"] == 2


def test_without_labels_a_keyword_unrelated_to_the_query_is_refused(toy):
    """A free query has no qrels: a keyword that occurs in none of the documents matching the query is refused
    (as it is with qrels)."""
    collection, bm25 = toy
    config = FairQRConfig(categories=("gender",), top_k=4, target=TargetKind.UNIFORM)
    result = fair_qr(collection, bm25, ScriptedRefiner("trio", "gardening"), "piano player", config)
    assert [it.added_keywords for it in result.iterations] == ["", "trio", "gardening"]
    assert result.stop_reason == "refinement 2 was refused: 'gardening' occurs in none of the 9 documents that " \
                                 "match the query best"
    assert result.iterations[2].note == "kept the query: 'gardening' occurs in none of the 9 documents that match " \
                                        "the query best"
    assert result.chosen == 1


def test_the_tours_fair_qr_query_keeps_its_useful_documents():
    """Issue 31, What did not 6: 'award-winning film directors' (people, region) gained 'french european poetry' and
    'american mexico paz' and ended with 4 useful documents of 10. Whatever the refiner proposes — the corpus
    keywords, or a model that suggests nothing, or one that suggests those words — the final top 10 keeps at least
    the original query's useful documents, and an unrelated suggestion is refused in words."""
    from fairrag_core import load_collection
    from fairrag_core.fairqr.refiners import CorpusKeywordRefiner, LLMRefiner
    from fairrag_core.models.llm import Completion, LanguageModel

    class Canned(LanguageModel):
        backend, name = "fake", "canned"

        def __init__(self, reply):
            self.reply = reply

        @property
        def device(self):
            return "cpu"

        def complete(self, prompts, decoding=None):
            return [Completion(self.reply, "stop") for _ in prompts]

        def option_probabilities(self, prompt, options, *, keep_prefix=""):
            raise NotImplementedError

    people = load_collection("people")
    bm25 = BM25Retriever(people.texts)
    query = "award-winning film directors"
    useful = {d for d, grade in people.qrels[people.find_query(query).query_id].items() if grade > 0}
    config = FairQRConfig(categories=("region",))
    corpus = CorpusKeywordRefiner(people, "region", bm25)
    top10 = [people.doc_ids[i] for i in np.argsort(-bm25.score(query), kind="stable")[:10]]
    original = len(useful & set(top10))
    assert original == 5
    runs = {name: fair_qr(people, bm25, refiner, query, config)
            for name, refiner in {"corpus": corpus, "silent model": LLMRefiner(Canned(""), fallback=corpus),
                                  "paz": ScriptedRefiner("latin brazilian castellanos", "american mexico paz")}.items()}
    for name, result in runs.items():
        assert len(useful & set(result.reranked[:10])) >= original, name
    assert runs["corpus"].iterations[1].added_keywords == "latin brazilian castellanos"
    kept = runs["corpus"]
    assert kept.chosen >= 2 and kept.iterations[kept.chosen].delta < 0.5 * kept.iterations[0].delta
    assert "the model suggested no keyword" in runs["silent model"].iterations[1].note
    paz = runs["paz"]
    assert paz.chosen == 1 and paz.iterations[2].note == ("kept the query: 'paz' occurs in none of the 60 "
                                                          "documents that match the query best")
