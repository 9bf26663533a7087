"""Hub access policy for every ``from_pretrained`` call: never run remote code, and stay on local files when
``HF_HUB_OFFLINE=1`` (the offline default)."""

from __future__ import annotations

import os

__all__ = ["hub_load_kwargs"]


def hub_load_kwargs() -> dict[str, bool]:
    """Keyword arguments for every ``from_pretrained`` call: never run remote code, and stay on local files
    when ``HF_HUB_OFFLINE=1`` (the offline default)."""
    return {"trust_remote_code": False, "local_files_only": os.environ.get("HF_HUB_OFFLINE") == "1"}
