"""Answers and NLI judgements persist on disk: a second generator, attributor, run or process never recomputes them.

Stand-in models from ``tests/fakes.py`` count their calls; "another process" is a fresh generator and attributor
with empty memory caches on the same cache file, and (slow) a real second Python process.
"""

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core import Collection, Document, Query
from fairrag_core.data.disk_cache import DiskCache
from fairrag_core.models.llm import ChatPrompt, Completion, LanguageModel
from fairrag_core.rag.attribution import LLMJudgeAttributor
from fairrag_core.rag.generation import AnswerCache, Generator, PromptStyle
from fairrag_core.rag.pipeline import RagConfig, run_rag
from fairrag_core.retrieval import BM25Retriever

ROOT = Path(__file__).resolve().parents[2]


def _generator(path, model=None, **kwargs) -> Generator:
    return Generator(model or FirstDocumentModel(), cache=AnswerCache(disk=DiskCache(path)), **kwargs)


def _attributor(path) -> SubstringAttributor:
    attributor = SubstringAttributor()
    attributor.disk = DiskCache(path)
    return attributor


@pytest.fixture()
def toy():
    docs = tuple(Document(f"d{i}", f"shoe review {'marathon ' * (6 - i)}", title=f"Brand{i}", provider=f"B{i % 3}")
                 for i in range(6))
    collection = Collection("toy", docs, (Query("q1", "marathon shoe", answer="Brand0"),), {"q1": {"d0": 1, "d1": 1}})
    return collection, BM25Retriever(collection.texts)


def test_a_fresh_generator_reads_answers_from_disk(tmp_path):
    path = tmp_path / "cache.sqlite"
    prompts = [ChatPrompt("sys", f"Documents:\n[1] Brand{i}: text\n\nQuestion: q\nAnswer:") for i in range(4)]
    first = _generator(path)
    made = first.complete_prompts(prompts + prompts[:1])
    assert first.model.prompts_seen == 4 and first.cache.misses == 4 and first.cache.disk_hits == 0
    assert not any(c.cached for c in made)  # the repeat inside one request shares this call's generation
    again = _generator(path)  # another process: empty memory, same file
    served = again.complete_prompts(prompts)
    assert again.model.calls == 0 and again.cache.disk_hits == 4 and again.cache.misses == 0
    assert served == made[:4] and all(c.cached for c in served)
    assert served[2] == Completion("Brand2", "stop")
    assert DiskCache(path).stats().by_model == {("answer", "tests.fakes.FirstDocumentModel:fake-first-doc"): 4}


def test_the_key_is_the_model_identity_the_decoding_and_the_prompt(tmp_path):
    path = tmp_path / "cache.sqlite"
    prompts = [ChatPrompt("sys", "Documents:\n[1] A: x\n\nQuestion: q\nAnswer:")]
    _generator(path).complete_prompts(prompts)
    other_decoding = _generator(path, max_new_tokens=7)
    other_decoding.complete_prompts(prompts)
    other_model = _generator(path, model=FirstDocumentModel("another-fake"))
    other_model.complete_prompts(prompts)
    other_prompt = _generator(path, style=PromptStyle(name="x", system="another system"))
    other_prompt.complete_prompts([ChatPrompt("another system", prompts[0].user)])
    assert [g.model.calls for g in (other_decoding, other_model, other_prompt)] == [1, 1, 1]
    assert DiskCache(path).stats().entries == {"answer": 4}


def test_a_model_without_identity_stays_in_memory(tmp_path):
    class Anonymous(FirstDocumentModel):
        pass

    model = Anonymous()
    del model.identity
    path = tmp_path / "cache.sqlite"
    gen = _generator(path, model=model)
    gen.complete_prompts([ChatPrompt("s", "u")])
    assert gen.identity is None and DiskCache(path).stats().total == 0


def test_judgements_persist_per_premise_hypothesis_and_context(tmp_path):
    path = tmp_path / "cache.sqlite"
    premises, hypotheses = ["Brand0 runs well", "nothing here", "doc"], ["Brand0", "Brand0", ""]
    first = _attributor(path)
    rows = first.class_probabilities(premises, hypotheses, contexts=["q", "q", "q"])
    assert first.scored == 2 and first.model_pairs == 2
    again = _attributor(path)
    back = again.class_probabilities(premises, hypotheses, contexts=["q", "q", "q"])
    assert again.scored == 0 and again.disk_hits == 2
    np.testing.assert_array_equal(back, rows)  # bit for bit
    again.class_probabilities(premises[:1], hypotheses[:1], contexts=["another question"])
    assert again.scored == 1
    assert DiskCache(path).stats().entries == {"nli": 3}  # the empty hypothesis is never stored (nor judged)


def test_the_judge_is_keyed_by_its_model_and_prompt(tmp_path):
    class Judge(LanguageModel):
        backend, name = "fake", "judge"

        def __init__(self, identity):
            self.identity, self.calls = identity, 0

        device = "cpu"

        def complete(self, prompts, decoding=None):
            raise AssertionError

        def option_probabilities(self, prompt, options, *, keep_prefix=""):
            self.calls += 1
            return np.array([0.7, 0.2, 0.1])

    path = tmp_path / "cache.sqlite"
    judges = [LLMJudgeAttributor(Judge(i)) for i in ("w1", "w1", "w2")]
    for judge in judges:
        judge.disk = DiskCache(path)
        judge.entails(["a document"], ["a claim"])
    assert [j.model.calls for j in judges] == [1, 0, 1]
    identity = judges[0].cache_identity()
    assert identity.startswith("judge:w1:prompt-") and identity.endswith(":premise-words=220")
    assert LLMJudgeAttributor(Judge(None)).cache_identity() is None


def test_a_second_run_recomputes_nothing_and_says_its_answers_were_cached(tmp_path, toy):
    collection, retriever = toy
    path = tmp_path / "cache.sqlite"
    config = RagConfig(alpha=1.0, n_samples=50, k=3, seed=4)
    runs, models = [], []
    for _ in range(2):
        gen, attributor = _generator(path), _attributor(path)
        runs.append(run_rag(collection, retriever, gen, attributor, "marathon shoe", config, n_boot=20))
        models.append((gen.model.prompts_seen, attributor.scored))
    assert models[0][0] > 0 and models[0][1] > 0 and models[1] == (0, 0)
    assert not any(a.cached for a in runs[0].answers) and all(a.cached for a in runs[1].answers)
    assert runs[0].metrics() == runs[1].metrics()
    assert [a.answer for a in runs[0].answers] == [a.answer for a in runs[1].answers]


def test_an_unusable_cache_file_is_logged_and_the_run_goes_on(tmp_path, toy, caplog):
    collection, retriever = toy
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"not a database " * 100)
    gen, attributor = _generator(path), _attributor(path)
    with caplog.at_level(logging.WARNING):
        run = run_rag(collection, retriever, gen, attributor, "marathon shoe",
                      RagConfig(alpha=1.0, n_samples=10, k=2, seed=1), n_boot=10)
    assert run.answers and gen.model.calls > 0
    assert "answer cache not read" in caplog.text and "judgement cache not read" in caplog.text


_ONE_RUN = """
import json, sys
sys.path.insert(0, sys.argv[2])
from fakes import FirstDocumentModel, SubstringAttributor
from fairrag_core import load_collection
from fairrag_core.retrieval import BM25Retriever
from fairrag_core.rag.generation import Generator
from fairrag_core.rag.pipeline import RagConfig, run_rag

shoes = load_collection("running-shoes")
gen, attributor = Generator(FirstDocumentModel()), SubstringAttributor()  # the default cache: $FAIRRAG_CACHE_DB
run = run_rag(shoes, BM25Retriever(shoes.texts), gen, attributor, shoes.queries[0].text,
              RagConfig(alpha=2.0, n_samples=20, k=5, seed=42, candidates=20), n_boot=20)
print(json.dumps({"prompts": gen.model.prompts_seen, "pairs": attributor.scored, "eu": run.eu, "ear": run.ear,
                  "cached": [a.cached for a in run.answers], "disk_hits": gen.cache.disk_hits}))
"""


@pytest.mark.slow
def test_another_process_recomputes_nothing(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAIRRAG_CACHE_DB": str(tmp_path / "cache.sqlite")}

    def one_process():
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(_ONE_RUN), "", str(ROOT / "tests")],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first, second = one_process(), one_process()
    assert first["prompts"] > 0 and first["pairs"] > 0 and not any(first["cached"])
    assert second["prompts"] == 0 and second["pairs"] == 0 and all(second["cached"])
    assert second["disk_hits"] == first["prompts"]
    assert (second["eu"], second["ear"]) == (first["eu"], first["ear"])


_SWEEP = """
import json, sys
sys.path.insert(0, sys.argv[2])
from fakes import SlowFirstDocumentModel, SubstringAttributor
from fairrag_core import load_collection
from fairrag_core.retrieval import BM25Retriever
from fairrag_core.rag import Generator, RagSweepConfig, rag_sweep

shoes = load_collection("running-shoes")
gen, attributor = Generator(SlowFirstDocumentModel()), SubstringAttributor()  # slow enough to be killed midway
config = RagSweepConfig(alphas=(0.0, 2.0), n_samples=10, k=3, seed=11, candidates=15, usefulness="relevance",
                        query_ids=tuple(q.query_id for q in shoes.queries[:4]))
rag_sweep(shoes, BM25Retriever(shoes.texts), gen, attributor, config,
          progress=lambda done, total: print("PROGRESS", done, total, flush=True))
print(json.dumps({"prompts": gen.model.prompts_seen, "disk_hits": gen.cache.disk_hits}), flush=True)
"""


@pytest.mark.slow
def test_a_sigkilled_sweep_resumes_without_recomputing_finished_answers(tmp_path):
    import signal

    path = tmp_path / "cache.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAIRRAG_CACHE_DB": str(path)}
    argv = [sys.executable, "-c", textwrap.dedent(_SWEEP), "", str(ROOT / "tests")]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in first.stdout:
            if line.startswith("PROGRESS") and int(line.split()[1]) >= 3:
                break
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL
    kept = DiskCache(path).stats().entries.get("answer", 0)
    assert kept > 0

    def finish():
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    second = finish()
    assert second["disk_hits"] == kept and second["prompts"] > 0  # the finished answers were not generated again
    assert DiskCache(path).stats().entries["answer"] == kept + second["prompts"]
    third = finish()
    assert third["prompts"] == 0 and third["disk_hits"] == kept + second["prompts"]
