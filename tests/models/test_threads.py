"""Threads for a CPU model: the free cores, not every core (llama.cpp's barrier spins against busy ones)."""

import pytest

from fairrag_core.models import threads
from fairrag_core.models.threads import free_threads, model_threads


@pytest.mark.parametrize(("cores", "load", "expected"), [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 1.4, 1), (2, 6.0, 1), (2, -1.0, 2),  # never below 1
    (16, 3.2, 8), (16, 10.0, 6), (1, 0.0, 1),  # at most MAX_THREADS
])
def test_one_thread_per_free_core(cores, load, expected):
    assert free_threads(cores, load) == expected


def test_the_environment_overrides_the_choice(monkeypatch):
    monkeypatch.setattr(threads, "_cores", lambda: 2)
    monkeypatch.setattr(threads, "other_busy_cores", lambda interval=0.2: 7.5)
    monkeypatch.delenv("FAIRRAG_THREADS", raising=False)
    assert model_threads() == 1
    monkeypatch.setattr(threads, "other_busy_cores", lambda interval=0.2: 0.2)
    assert model_threads() == 2
    monkeypatch.setenv("FAIRRAG_THREADS", "3")
    assert model_threads() == 3
    monkeypatch.setenv("FAIRRAG_THREADS", "0")  # 0 or empty: choose
    assert model_threads() == 2


def test_the_llama_cpp_model_takes_the_choice(monkeypatch, tmp_path):
    from fairrag_core.models.llama_cpp import LlamaCppModel

    monkeypatch.setenv("FAIRRAG_THREADS", "1")
    assert LlamaCppModel(tmp_path / "m.gguf").n_threads == 1
    assert LlamaCppModel(tmp_path / "m.gguf", n_threads=4).n_threads == 4
