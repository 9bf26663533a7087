import json

import numpy as np
import pytest

from fairrag_core import Collection, Document, InvalidParameterError, Query, load_collection
from fairrag_core.fairqr import CorpusKeywordRefiner, FairQRConfig, LLMRefiner, Refiner, fair_qr
from fairrag_core.fairqr.refiners import Refinement, RefinementRequest, refinement_prompt, sanitise_keywords
from fairrag_core.metrics.group_fairness import kl_divergence
from fairrag_core.metrics.group_targets import TargetKind
from fairrag_core.models.llm import LanguageModel
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


@pytest.mark.parametrize("raw, expected", [
    ("women composers", "women composers"),
    ("Refined keywords: female, woman pianist\nExplanation: because...", "female woman pianist"),
    ('"female" "women"', "female women"),
    ("```\nrm -rf /\n```\nwomen", "women"),
    ("<script>alert(1)</script> women", "women"),
    ("jazz pianists women", "women"),  # words already in the query are dropped
    ("the of and", ""),
    ("", ""),
    ("a" * 40 + " women", "women"),
    ("one two three four five six seven eight", "one two three four five six"),
    ("visit https://evil.example/x?q=1 now", "visit now"),
    ("mujeres pianistas\u200b", "mujeres pianistas"),
])
def test_hostile_or_off_format_llm_output_is_sanitised(raw, expected):
    assert sanitise_keywords(raw, current_query="jazz pianists") == expected


def test_sanitised_keywords_are_bounded():
    long = " ".join(f"word{i:02d}xxxxxxxxxxxx" for i in range(20))
    out = sanitise_keywords(long, max_words=6, max_chars=80)
    assert len(out) <= 80 and len(out.split()) <= 6 and out


def test_prompt_is_the_papers_with_the_values_filled_in():
    request = RefinementRequest(original_query="jazz", current_query="jazz piano", category="gender",
                                target={"female": 0.5, "male": 0.5}, current={"female": 0.0, "male": 1.0},
                                top_k=20, group="female", retrieved=())
    prompt = refinement_prompt(request)
    assert "retrieved documents of query: jazz piano are from diverse fairness groups" in prompt
    assert "target distribution: {'female': 0.50, 'male': 0.50}" in prompt
    assert "results of the first 20 documents with a fairness group distribution of: {'female': 0.00, " in prompt
    assert "it's the subgroup: female." in prompt and "different gender group" in prompt
    assert prompt.endswith("on one line, without explanation.")


class CannedModel(LanguageModel):
    backend = "fake"

    def __init__(self, reply: str) -> None:
        self.name, self.reply, self.prompts = "canned", reply, []

    @property
    def device(self):
        return "cpu"

    def generate(self, prompts, *, max_new_tokens=64):
        self.prompts += prompts
        return [self.reply for _ in prompts]

    def option_probabilities(self, prompt, options, *, keep_prefix: str = ""):
        return np.full(len(options), 1 / len(options))


def _request():
    return RefinementRequest(original_query="jazz piano", current_query="jazz piano", category="gender",
                             target={"female": 0.5, "male": 0.5}, current={"female": 0.0, "male": 1.0}, top_k=4,
                             group="female", retrieved=())


def test_llm_refiner_uses_the_reply_and_falls_back_visibly():
    good = LLMRefiner(CannedModel("Keywords: trio leader"))
    assert good.refine(_request()).keywords == "trio leader"
    assert "it's the subgroup: female" in good.model.prompts[0].user
    fallback = ScriptedRefiner("trio")
    refusal = LLMRefiner(CannedModel("I'm sorry, I cannot help with that."), fallback=fallback).refine(_request())
    assert refusal.keywords == "trio" and "used scripted instead" in refusal.note
    fallback.keywords.append("trio")
    silent = LLMRefiner(CannedModel("   "), fallback=fallback).refine(_request())
    assert silent.keywords == "trio" and "used scripted instead" in silent.note
    bare = LLMRefiner(CannedModel("the of")).refine(_request())
    assert bare.keywords == "" and "no usable keywords" in bare.note


def test_corpus_keyword_refiner_proposes_words_of_the_missing_group():
    people = load_collection("people")
    bm25 = BM25Retriever(people.texts)
    refiner = CorpusKeywordRefiner(people, "gender", bm25)
    request = RefinementRequest(original_query="jazz pianists", current_query="jazz pianists", category="gender",
                                target={}, current={}, top_k=20, group="female", retrieved=())
    first = refiner.refine(request)
    assert first == refiner.refine(request)  # deterministic
    words = first.keywords.split()
    assert 1 <= len(words) <= 3 and not {"jazz", "pianists"} & {w.lower() for w in words}
    female_text = " ".join(d.full_text.lower() for d, g in zip(people.documents, people.group_of("gender",
                                                                                                      fill="Unknown"))
                           if g == "female")
    assert all(w.lower() in female_text for w in words)


def test_win_tie_loss_and_table1_layout_on_a_hand_made_table():
    import pandas as pd

    from fairrag_core.fairqr.evaluate import paired_tests, table1, win_tie_loss

    rows = []
    for q, (bm25, fqr) in enumerate([(0.8, 0.9), (0.7, 0.7), (0.9, 0.85), (0.6, 0.8)]):
        for system, a in (("BM25", bm25), ("FAIR-QR", fqr)):
            rows.append({"query_id": f"q{q}", "category": "gender", "system": system, "ndcg": 1.0, "awrf": a,
                         "ndcg_x_awrf": a})
    results = pd.DataFrame(rows)
    counts = win_tie_loss(results).set_index("metric")
    assert counts.loc["awrf", ["better", "same", "worse"]].tolist() == [2, 1, 1]
    assert counts.loc["ndcg", ["better", "same", "worse"]].tolist() == [0, 4, 0]
    means = table1(results)
    assert means.loc["FAIR-QR", ("gender", "awrf")] == pytest.approx((0.9 + 0.7 + 0.85 + 0.8) / 4)
    tests = paired_tests(results).set_index("metric")
    from scipy import stats

    assert tests.loc["awrf", "p_value"] == pytest.approx(stats.ttest_rel([0.9, 0.7, 0.85, 0.8],
                                                                         [0.8, 0.7, 0.9, 0.6]).pvalue)
    assert tests.loc["ndcg", "p_value"] == 1.0  # identical: no test needed


def test_build_refiner_by_name():
    from fairrag_core.fairqr import KEYWORDS_REFINER, build_refiner

    people = load_collection("people")
    bm25 = BM25Retriever(people.texts)
    keywords = build_refiner(KEYWORDS_REFINER, people, "gender", bm25)
    assert isinstance(keywords, CorpusKeywordRefiner)
    llm = build_refiner("smollm2-135m", people, "gender", bm25)  # weights load on first use, not here
    assert isinstance(llm, LLMRefiner) and isinstance(llm.fallback, CorpusKeywordRefiner)
    assert llm.name == "llm:smollm2-135m"
