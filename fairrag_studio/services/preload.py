"""Warm the default answer preset's models in the background as soon as the app is first opened.

On a 2-core CPU, loading the Fast preset's generator and judge takes ~13 s; without this the first *Generate
answers* of a class pays it. ``make app`` sets ``FAIRRAG_PRELOAD=1``; tests and ``streamlit run app.py`` without
it load nothing until asked. The models are the process-wide shared ones (:func:`fairrag_core.models.catalog.shared`),
so the page's ``resources.generator``/``resources.attributor`` find them loaded; a click during the preload waits
on the model's lock instead of loading a second copy.
"""

from __future__ import annotations

import logging
import os
import threading

__all__ = ["preload_requested", "start_preload"]

_log = logging.getLogger(__name__)
_started = threading.Event()
_lock = threading.Lock()


def preload_requested() -> bool:
    """Whether ``FAIRRAG_PRELOAD`` asks for it (``1``, ``true``, ``yes``)."""
    return os.environ.get("FAIRRAG_PRELOAD", "").strip().lower() in ("1", "true", "yes")


def start_preload() -> bool:
    """Start loading the default preset's generator and judge in a daemon thread, once per process; ``True`` if
    this call started it."""
    if not preload_requested():
        return False
    with _lock:
        if _started.is_set():
            return False
        _started.set()
    threading.Thread(target=_warm, name="fairrag-preload", daemon=True).start()
    return True


def _warm() -> None:
    from fairrag_core.models.catalog import load_language_model
    from fairrag_core.models.llm import ChatPrompt
    from fairrag_core.rag.attribution import load_attributor
    from fairrag_core.rag.prepared import default_preset
    from fairrag_core.rag.presets import PRESETS

    preset = PRESETS[default_preset()]  # a prepared class's preset (make class), else the default
    try:
        # one token each: loads the weights and touches every page of the memory-mapped file
        load_language_model(preset.generator).generate([ChatPrompt("", "Hello")], max_new_tokens=1)
        judge = load_attributor(preset.attributor)
        model = getattr(judge, "model", None)
        if model is not None:
            model.generate([ChatPrompt("", "Hello")], max_new_tokens=1)
        _log.info("preloaded %s and %s", preset.generator, preset.attributor)
    except Exception as err:  # a missing model is reported where it is used, with its fix
        _log.warning("models not preloaded: %s", err)
