"""``streamlit run app.py`` with a generator whose model call blocks like llama.cpp's (test_shutdown.py's server).

Nothing here is a test. Run as ``python tests/studio/slow_app.py run app.py [streamlit options]``: it installs the
stand-in models in :mod:`fairrag_studio.services.resources` (as the AppTests' fixtures do), then hands over to
Streamlit's own command line in this process. The stand-in generator's call holds a lock for ``$SLOW_APP_SECONDS``
(default 60) and cannot be interrupted from Python, and its ``close`` (registered at exit, as the model catalog
registers the real models') takes that lock: exactly what kept a stopped server alive until the generation in
progress ended. It touches ``$SLOW_APP_MARKER`` when a call starts, so the test knows a job is inside one.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the fakes
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core.rag.generation import Generator
from fairrag_studio.services import resources


class BlockingModel(FirstDocumentModel):
    """A model call that Python cannot cut short, under a lock that ``close`` takes too (as LlamaCppModel's)."""

    def __init__(self) -> None:
        super().__init__("slow-app")
        self._lock = threading.Lock()

    def complete(self, prompts, decoding=None):
        with self._lock:
            Path(os.environ["SLOW_APP_MARKER"]).touch()
            time.sleep(float(os.environ.get("SLOW_APP_SECONDS", "60")))
            return super().complete(prompts, decoding)

    def close(self) -> None:
        with self._lock:
            pass


def main() -> int:
    """Install the stand-ins, then run Streamlit's command line (``run app.py …`` from ``sys.argv``)."""
    from streamlit.web import cli

    model = BlockingModel()
    atexit.register(model.close)
    generator, attributor = Generator(model), SubstringAttributor()
    resources.generator = lambda name, device, style="short": generator
    resources.attributor = lambda name, device: attributor
    return cli.main(prog_name="streamlit")


if __name__ == "__main__":  # only then: pytest's doctest collection imports this file too
    sys.exit(main())
