"""Fixtures the app's tests share."""

from __future__ import annotations

import pytest


@pytest.fixture()
def fresh_run_store(tmp_path, monkeypatch):
    """A fresh run store per test, and no cached store from an earlier test."""
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    resources.run_store.clear()
    yield
    resources.run_store.clear()
