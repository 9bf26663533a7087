import json

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
    refiner = ScriptedRefiner("trio", "gardening tips")
    result = fair_qr(collection, bm25, refiner, "jazz piano", FairQRConfig(categories=("gender",), top_k=4))
    assert [it.query for it in result.iterations] == ["jazz piano", "jazz piano trio", "jazz piano trio gardening tips"]
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
