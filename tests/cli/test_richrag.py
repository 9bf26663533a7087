"""The RichRAG commands: aspects (explorer, fallbacks, user aspects) and rich-rank (pool, lists, NCOM), --json."""

import io
import json

import numpy as np
import pytest

from fairrag_core.cli import main
from fairrag_core.models.llm import Completion, LanguageModel

COMPOST = ["--query", "How do I start composting at home?"]


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


class BracketModel(LanguageModel):
    backend, name = "fake", "fake-explorer"

    @property
    def device(self):
        return "cpu"

    def complete(self, prompts, decoding=None):
        return [Completion("```\n[bins and scraps] [greens and browns] [bins and scraps]\n```", "stop")] * len(prompts)

    def option_probabilities(self, prompt, options, *, keep_prefix=""):
        return np.full(len(options), 1 / len(options))


def test_aspects_from_the_llm_with_the_raw_reply(monkeypatch):
    monkeypatch.setattr("fairrag_core.models.catalog.load_language_model", lambda name, **kw: BracketModel())
    code, text = run(["aspects", *COMPOST, "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["aspects"] == ["bins and scraps", "greens and browns"]
    assert payload["source"] == "llm" and "repeated" in payload["note"] and "[bins and scraps]" in payload["raw"]


def test_aspects_fall_back_visibly_and_accept_the_users_own():
    code, text = run(["aspects", *COMPOST, "--explorer", "none"])
    assert code == 0 and "(collection)" in text and "[s4] how long until compost is ready" in text
    code, text = run(["aspects", "--query", "How do I fix a bike puncture?", "--explorer", "none", "--json"])
    assert json.loads(text)["source"] == "keywords"
    code, text = run(["aspects", *COMPOST, "--aspects", "bins; smells", "--json"])
    assert json.loads(text)["aspects"] == ["bins", "smells"] and json.loads(text)["source"] == "user"


def test_rich_rank_lists_every_baseline_with_ncom_and_the_oracle_on_top():
    code, text = run(["rich-rank", *COMPOST, "-k", "4", "--ranker", "none", "--json"])
    payload = json.loads(text)
    assert code == 0 and payload["query_id"] == "mf-q01" and payload["aspect_source"] == "collection"
    assert set(payload["lists"]) == {"relevance", "mmr", "round-robin", "oracle"}
    assert all(len(ids) == 4 for ids in payload["lists"].values())
    assert payload["ncom"]["oracle"] == pytest.approx(1.0) and 0 < payload["ncom"]["mmr"] <= 1.2
    assert 1 <= len(payload["pool"]) <= 40 and payload["pool_settings"] == {"per_aspect": 10, "capacity": 40}
    code, text = run(["rich-rank", *COMPOST, "-k", "3", "-N", "3", "-M", "5", "--ranker", "none"])
    assert code == 0 and "pool: 5 documents" in text and "NCOM" in text and "oracle" in text


def test_rich_rank_of_a_new_query_says_there_is_no_ncom(capsys):
    code, text = run(["rich-rank", "--query", "How do I fix a bike puncture?", "--aspects", "tools; patching",
                      "--ranker", "none"])
    assert code == 0 and "no sub-answers" in text and "NCOM" not in text.split("ranked lists")[1].split("note")[0]
    code, _ = run(["rich-rank", "--query", "  ", "--ranker", "none"])
    assert code == 2 and "query is empty" in capsys.readouterr().err
