"""make app's background preload of the Fast preset's models (fairrag_studio/services/preload.py)."""

import threading

import fairrag_core.models.catalog as catalog
import fairrag_core.rag.attribution as attribution
from fairrag_core.rag.presets import DEFAULT_PRESET, PRESETS
from fairrag_studio.services import preload


class Recorder:
    def __init__(self, name, log, done=None):
        self.name, self.log, self.done = name, log, done

    def generate(self, prompts, *, max_new_tokens=64):
        self.log.append((self.name, max_new_tokens))
        if self.done is not None:
            self.done.set()
        return [""]


def test_preload_runs_once_only_when_asked(monkeypatch):
    log, done = [], threading.Event()
    monkeypatch.setattr(catalog, "load_language_model", lambda name, **_: Recorder(name, log))
    judge = type("Judge", (), {"model": Recorder("judge-model", log, done)})()
    monkeypatch.setattr(attribution, "load_attributor", lambda name, **_: judge)
    monkeypatch.setattr(preload, "_started", threading.Event())
    monkeypatch.delenv("FAIRRAG_PRELOAD", raising=False)
    assert not preload.start_preload() and log == []  # tests and plain `streamlit run` load nothing
    monkeypatch.setenv("FAIRRAG_PRELOAD", "1")
    assert preload.start_preload()
    assert done.wait(10)
    assert log == [(PRESETS[DEFAULT_PRESET].generator, 1), ("judge-model", 1)]
    assert not preload.start_preload()  # once per process


def test_a_failed_preload_is_logged_not_raised(monkeypatch, caplog):
    def broken(name, **_):
        raise RuntimeError("weights missing")

    monkeypatch.setattr(catalog, "load_language_model", broken)
    with caplog.at_level("WARNING"):
        preload._warm()
    assert "models not preloaded: weights missing" in caplog.text
