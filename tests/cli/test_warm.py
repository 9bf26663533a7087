"""``warm``: precompute answers and judgements into the disk cache with the Playground's settings (stand-in models)."""

import io
import json
import re

import pytest
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core import load_collection
from fairrag_core.cli import main
from fairrag_core.data.disk_cache import DiskCache
from fairrag_core.models import catalog
from fairrag_core.rag import attribution
from fairrag_core.rag.generation import AnswerCache, Generator
from fairrag_core.rag.pipeline import AnswerStream, RagConfig, run_rag
from fairrag_core.retrieval import BM25Retriever
from fairrag_studio.services.state import Settings


@pytest.fixture()
def fakes(monkeypatch, tmp_path):
    made = {"models": [], "attributors": []}

    def model(name, device=None):
        made.setdefault("names", []).append(name)
        made["models"].append(FirstDocumentModel("fake-gen"))
        return made["models"][-1]

    def attributor(name=None, device=None):
        made["attributors"].append(SubstringAttributor())
        return made["attributors"][-1]

    monkeypatch.setattr(catalog, "load_language_model", model)
    monkeypatch.setattr(attribution, "load_attributor", attributor)
    monkeypatch.setenv("FAIRRAG_CACHE_DB", str(tmp_path / "cache.sqlite"))
    return made


def run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_warm_then_warm_again_computes_nothing(fakes, tmp_path, capsys):
    argv = ["warm", "--collection", "running-shoes", "--queries", "rs-q01,rs-q02", "--json"]
    code, text = run(argv)
    assert code == 0
    first = json.loads(text)
    assert first["alphas"] == [2.0, "inf"] and (first["k"], first["n_samples"], first["candidates"], first["seed"]) \
        == (5, 20, 20, 42)  # the Playground's defaults
    assert len(first["tasks"]) == 4 and first["answers"] > 0 and first["judgements"] > 0
    # a (document, answer) pair met again in another list is judged once: the repeats count as cached
    assert first["answers_cached"] == 0 and 0 < first["judgements_cached"] < first["judgements"]
    computed = first["judgements"] - first["judgements_cached"]
    assert first["cache_entries"] == {"answer": first["answers"], "nli": computed}
    progress = capsys.readouterr().err
    assert re.search(r"\[1/4\] rs-q01 α=2: 20 answers \(0 cached\), \d+ judgements \(\d+ cached\), ", progress)
    assert re.search(r"\[4/4\] rs-q02 α=det: 1 answers \(0 cached\), \d+ judgements \(", progress)

    code, text = run(argv)
    again = json.loads(text)
    assert fakes["models"][-1].calls == 0 and fakes["attributors"][-1].scored == 0
    assert again["answers_cached"] == again["answers"] == first["answers"]
    assert again["judgements_cached"] == again["judgements"] == first["judgements"]
    assert again["cache_bytes"] > 0


def test_the_playground_finds_everything_warm_made(fakes, tmp_path):
    assert run(["warm", "--queries", "rs-q01", "--alphas", "2"])[0] == 0
    shoes = load_collection("running-shoes")
    cache = DiskCache(tmp_path / "cache.sqlite")
    model, judge = FirstDocumentModel("fake-gen"), SubstringAttributor()
    judge.disk = cache
    # what app_pages/playground.py runs on Generate answers with the sidebar's defaults
    settings = Settings(collection="running-shoes")
    style = {"style": settings.prompt_style} if hasattr(settings, "prompt_style") else {}
    policy = getattr(settings, "citation", None)
    citation = {} if policy is None else policy.citation_fields()  # as the page builds its RagConfig
    config = RagConfig(alpha=2.0, n_samples=settings.n_samples, k=settings.k, seed=settings.seed,
                       candidates=settings.candidates, oracle=False, **citation)
    rag = run_rag(shoes, BM25Retriever(shoes.texts), Generator(model, cache=AnswerCache(disk=cache), **style), judge,
                  shoes.query("rs-q01").text, config, n_boot=300,
                  stream=AnswerStream(chunk=1, growing=True, tick=lambda: None))
    assert model.calls == 0 and judge.scored == 0 and all(a.cached for a in rag.answers)


def test_readable_summary_and_the_oracle(fakes):
    code, text = run(["warm", "--queries", "rs-q01", "--alphas", "0", "--oracle", "-N", "5"])
    assert code == 0 and "Warmed running-shoes for 1 queries × α 0 (k=5, N=5, K=20, seed 42)" in text
    assert "answers:" in text and "already cached" in text
    assert re.search(r"^Prepared 10 answers and \d+ judgements \(\d+(\.\d)? kB on disk, in .*cache\.sqlite\)$", text,
                     re.M)
    code, text = run(["warm", "--queries", "rs-q01", "--alphas", "0", "--oracle", "-N", "5"])
    assert " 0 generated" in text and " 0 computed" in text


def test_warm_without_a_cache_says_how_to_turn_it_on(fakes, monkeypatch, capsys):
    monkeypatch.setenv("FAIRRAG_CACHE_DB", "off")
    assert run(["warm", "--queries", "rs-q01"])[0] == 2
    assert "the disk cache is off (FAIRRAG_CACHE_DB=off)" in capsys.readouterr().err


def test_an_explicit_cache_file(fakes, tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRRAG_CACHE_DB", "off")
    path = tmp_path / "class.sqlite"
    assert run(["warm", "--queries", "rs-q01", "--alphas", "inf", "--cache", str(path)])[0] == 0
    entries = DiskCache(path).stats().entries
    # the answer is document [1]'s title: under the fitted rule (lexical support) only the documents holding its
    # words are sent to the judge — here document [1] alone
    assert entries["answer"] == 1 and entries["nli"] == 1


def test_make_class_records_the_preset_and_the_app_starts_on_it(fakes, tmp_path):
    from fairrag_core.rag.prepared import default_preset, prepared_class
    from fairrag_core.rag.presets import DEFAULT_PRESET, PRESETS

    cache = tmp_path / "cache.sqlite"
    assert prepared_class(cache) is None and default_preset(cache) == DEFAULT_PRESET
    code, text = run(["warm", "--collection", "running-shoes", "--queries", "rs-q01", "--alphas", "2,inf",
                      "--preset", "quality", "--mark-class", "--json"])
    assert code == 0
    payload = json.loads(text)
    assert payload["preset"] == "quality" and payload["prepared_class"] == str(tmp_path / "prepared_class.json")
    prepared = prepared_class(cache)
    assert (prepared.preset, prepared.collection, prepared.query_ids, prepared.k, prepared.n_samples) == \
        ("quality", "running-shoes", ("rs-q01",), 5, 20)
    assert prepared.alphas[0] == 2.0 and prepared.alphas[1] == float("inf")
    assert default_preset(cache) == "quality"
    assert fakes["names"] == [PRESETS["quality"].generator]  # the preset chose the generator (faked here)
    (tmp_path / "prepared_class.json").write_text("{not json", encoding="utf-8")  # a damaged record costs nothing
    assert prepared_class(cache) is None and default_preset(cache) == DEFAULT_PRESET


def test_one_line_per_answer_and_judgement_with_an_estimate(fakes, capsys):
    code, text = run(["warm", "--queries", "rs-q01", "--alphas", "2,inf"])
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "reading running-shoes, its retriever and the models' files …"
    assert err[1] == "21 answers to prepare, none in the cache yet"
    answers = [line for line in err if line.startswith("answer ")]
    assert len(answers) == 21  # the real pipeline's stream: one line per distinct list generated
    assert answers[0].startswith("answer 1/21 (rs-q01 α = 2, list 1 of 20) 0.0 s · ~")
    assert answers[19].startswith("answer 20/21 (rs-q01 α = 2, list 20 of 20) ")
    assert answers[20].startswith("answer 21/21 (rs-q01 α = det, list 1 of 1) ") and answers[20].endswith(" left")
    judged = [re.match(r"judgements? (\d+)(?:–(\d+))?/(\d+) \(rs-q01 α = (2|det)\) (0\.0 s|cached)", line)
              for line in err if line.startswith("judgement")]
    assert judged and all(judged)
    last = {m.group(4): (int(m.group(2) or m.group(1)), int(m.group(3))) for m in judged}
    assert all(done == total for done, total in last.values())  # every (query, α)'s judgements counted to the end
    assert re.search(r"^Prepared 21 answers and \d+ judgements \(\d+(\.\d)? kB on disk, in .*cache\.sqlite\)$",
                     text, re.M)


def test_a_rerun_resumes_and_says_so(fakes, capsys):
    assert run(["warm", "--queries", "rs-q01", "--alphas", "2,inf"])[0] == 0
    capsys.readouterr()
    assert run(["warm", "--queries", "rs-q01", "--alphas", "2,inf"])[0] == 0
    err = capsys.readouterr().err
    assert "21 answers already prepared; 0 to do" in err
    assert fakes["models"][-1].calls == 0 and fakes["attributors"][-1].scored == 0
    units = [line for line in err.splitlines() if line.startswith(("answer ", "judgement"))]
    assert len(units) > 21 and all(") cached · ~0 s left" in line for line in units)
    assert "answer 21/21 (rs-q01 α = det, list 1 of 1) cached" in err


def test_ctrl_c_says_how_far_it_got_and_a_rerun_resumes(fakes, monkeypatch, tmp_path, capsys):
    class Interrupted(FirstDocumentModel):
        def complete(self, prompts, decoding=None):
            if self.calls == 4:
                raise KeyboardInterrupt
            return super().complete(prompts, decoding)

    fixture = catalog.load_language_model
    monkeypatch.setattr(catalog, "load_language_model", lambda name, device=None: Interrupted("fake-gen"))
    assert run(["warm", "--queries", "rs-q01", "--alphas", "2,inf"])[0] == 130
    monkeypatch.setattr(catalog, "load_language_model", fixture)
    err = capsys.readouterr().err
    home = str(tmp_path / "cache.sqlite")
    assert f"Stopped after 4 of 21 answers (0 of 2 queries × α done) in 0 s. What was made is saved in {home}: run " \
           "the same command again to resume where it stopped." in err
    assert run(["warm", "--queries", "rs-q01", "--alphas", "2,inf"])[0] == 0  # the fixture's model again
    assert "4 answers already prepared; 17 to do" in capsys.readouterr().err
    assert fakes["models"][-1].prompts_seen == 17


def test_quiet_keeps_one_line_per_query_and_alpha(fakes, capsys):
    assert run(["warm", "--queries", "rs-q01", "--alphas", "2,inf", "--quiet"])[0] == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "21 answers to prepare, none in the cache yet"
    assert not [line for line in err if line.startswith(("answer ", "judgement", "reading"))]
    assert err[1].startswith("[1/2] rs-q01 α=2: 20 answers (0 cached), ") and err[2].startswith("[2/2] rs-q01 α=det: ")


def test_the_loading_line_names_the_model_and_its_size(tmp_path):
    from fairrag_core.cli.warm import _loading_line

    class Lazy:
        name, loaded, path = "qwen2.5-1.5b", False, tmp_path / "q.gguf"

    Lazy.path.write_bytes(b"x" * 1_234_567)
    assert _loading_line(Lazy()) == "loading qwen2.5-1.5b (1.2 MB) …"
    Lazy.n_threads = 1
    assert _loading_line(Lazy()) == "loading qwen2.5-1.5b (1.2 MB) on 1 thread …"
    Lazy.loaded = True
    assert _loading_line(Lazy()) is None and _loading_line(FirstDocumentModel()) is None
