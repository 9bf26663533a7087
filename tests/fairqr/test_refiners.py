import numpy as np
import pytest

from fairrag_core import load_collection
from fairrag_core.fairqr import CorpusKeywordRefiner, LLMRefiner, Refiner
from fairrag_core.fairqr.refiners import Refinement, RefinementRequest, refinement_prompt, sanitise_keywords
from fairrag_core.models.llm import Completion, LanguageModel
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

    def complete(self, prompts, decoding=None):
        self.prompts += prompts
        return [Completion(self.reply, "stop") for _ in prompts]

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
    assert refusal.keywords == "trio" and refusal.note.startswith("the model suggested no keyword (")
    assert "used scripted instead" in refusal.note
    fallback.keywords.append("trio")
    silent = LLMRefiner(CannedModel("   "), fallback=fallback).refine(_request())
    assert silent.keywords == "trio" and "used scripted instead" in silent.note
    bare = LLMRefiner(CannedModel("the of")).refine(_request())
    assert bare.keywords == "" and bare.note == "the model suggested no keyword"


class KnownModel(CannedModel):
    """A canned model with an identity: its replies may persist on disk."""

    def __init__(self, reply: str) -> None:
        super().__init__(reply)
        self.identity = f"tests.KnownModel:{reply}"


def test_llm_refiner_replies_are_cached_on_disk_and_give_the_same_fair_qr_run(tmp_path):
    from fairrag_core.data.disk_cache import DiskCache
    from fairrag_core.fairqr import fair_qr
    from fairrag_core.fairqr.refiners import REFINEMENT_KIND, refinement_key
    from fairrag_core.rag.prepared import fairqr_showcase

    people = load_collection("people")
    query, config, _ = fairqr_showcase(people)
    assert query == "award-winning film directors" and config.categories == ("region",) and config.top_k == 20
    disk, bm25 = DiskCache(tmp_path / "cache.sqlite"), BM25Retriever(people.texts)
    first = LLMRefiner(KnownModel("Keywords: African Asian"), disk=disk)
    live = fair_qr(people, bm25, first, query, config)
    assert first.model_calls == len(first.model.prompts) == len(first.keys) >= 1
    assert first.keys[0] == refinement_key(first.model.identity, 32, first.model.prompts[0].user)
    assert disk.get_many(REFINEMENT_KIND, first.keys[:1]) == {first.keys[0]: "Keywords: African Asian"}
    second = LLMRefiner(KnownModel("Keywords: African Asian"), disk=disk)
    replayed = fair_qr(people, bm25, second, query, config)
    assert second.model_calls == 0 and second.model.prompts == [] and second.keys == first.keys
    assert replayed.iterations == live.iterations and replayed.reranked == live.reranked
    other = LLMRefiner(KnownModel("Keywords: Europe"), disk=disk)  # other weights: another key, the model runs
    fair_qr(people, bm25, other, query, config)
    assert other.model_calls >= 1
    anonymous = LLMRefiner(CannedModel("Keywords: African"), disk=disk)  # no identity: nothing kept on disk
    fair_qr(people, bm25, anonymous, query, config)
    assert anonymous.keys == [] and anonymous.model_calls >= 1


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


def test_build_refiner_by_name():
    from fairrag_core.fairqr import KEYWORDS_REFINER, build_refiner

    people = load_collection("people")
    bm25 = BM25Retriever(people.texts)
    keywords = build_refiner(KEYWORDS_REFINER, people, "gender", bm25)
    assert isinstance(keywords, CorpusKeywordRefiner)
    llm = build_refiner("smollm2-135m", people, "gender", bm25)  # weights load on first use, not here
    assert isinstance(llm, LLMRefiner) and isinstance(llm.fallback, CorpusKeywordRefiner)
    assert llm.name == "llm:smollm2-135m"


def test_corpus_keywords_come_only_from_the_groups_documents_that_match_the_query():
    """No document of the group matches the query: no keyword (words from the whole corpus were unrelated to the
    query: 'french european poetry' for 'award-winning film directors', issue 31), and the note says so."""
    people = load_collection("people")
    bm25 = BM25Retriever(people.texts)
    refiner = CorpusKeywordRefiner(people, "gender", bm25)
    request = RefinementRequest(original_query="qwertyuiop", current_query="qwertyuiop", category="gender",
                                target={}, current={}, top_k=20, group="female", retrieved=())
    assert refiner.refine(request) == Refinement(keywords="", raw="",
                                                 note="no female document matches the query: no keyword to add")
