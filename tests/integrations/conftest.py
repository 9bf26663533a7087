"""Haystack's usage telemetry off before any test here imports it (it reads the variable at import; no network)."""

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
