"""Run store: an embedded DuckDB file holding every saved run (its record, tidy rows and per-document details).

A run can be listed, reopened, compared and reproduced from its :class:`~fairrag_core.record.RunRecord`. The default
file is ``$FAIRRAG_RUNS`` or ``~/.cache/fairrag/runs.duckdb``. Rows live in one long table keyed by
``run_id``, so runs of different kinds share a schema (missing columns are NULL).
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ..errors import InvalidParameterError
from ..record import RunRecord, SweepRun

__all__ = ["RunStore", "default_store_path"]


def default_store_path() -> Path:
    env = os.environ.get("FAIRRAG_RUNS")
    return Path(env) if env else Path.home() / ".cache" / "fairrag" / "runs.duckdb"


def _cell(value):
    """JSON form of one table cell that ``to_json`` would get wrong (it writes ±inf as null)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if value is pd.NA or value is pd.NaT:
        return None
    raise TypeError(f"cannot store a value of type {type(value).__name__} in the run store")


def _records(table: pd.DataFrame) -> list[str]:
    """One JSON text per row; ±inf (the deterministic α) and NaN survive (DuckDB's JSON accepts them)."""
    return [json.dumps(row, default=_cell) for row in table.to_dict(orient="records")]


class RunStore:
    """Save, list, load and delete runs in a DuckDB file (created on first use)."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        import duckdb

        self.path = Path(path) if path else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = duckdb.connect(str(self.path))
        self._con.execute(
            "CREATE TABLE IF NOT EXISTS runs (run_id VARCHAR PRIMARY KEY, created TIMESTAMP, kind VARCHAR, "
            "collection VARCHAR, label VARCHAR, config JSON, n_rows INTEGER)"
        )
        self._con.execute("CREATE TABLE IF NOT EXISTS run_rows (run_id VARCHAR, row_index INTEGER, data JSON)")
        # Optional second table per run (e.g. per-document exposure behind an audit's ledger).
        self._con.execute("CREATE TABLE IF NOT EXISTS run_details (run_id VARCHAR, row_index INTEGER, data JSON)")

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def save(self, run: SweepRun, *, label: str = "") -> str:
        """Store ``run`` (its record, table and per-document details) in one transaction; return its new id."""
        run_id = uuid.uuid4().hex[:12]
        record = run.record
        records = _records(run.table)
        detail_records = _records(run.documents) if run.documents is not None and len(run.documents) else []
        self._con.execute("BEGIN")
        try:
            self._con.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                [run_id, datetime.now(UTC).replace(tzinfo=None), record.kind.value, record.collection,
                 label, json.dumps(record.to_dict()), len(records)],
            )
            if records:
                self._con.executemany("INSERT INTO run_rows VALUES (?, ?, ?)",
                                      [[run_id, i, r] for i, r in enumerate(records)])
            if detail_records:
                self._con.executemany("INSERT INTO run_details VALUES (?, ?, ?)",
                                      [[run_id, i, r] for i, r in enumerate(detail_records)])
            self._con.execute("COMMIT")
        except Exception:
            self._con.execute("ROLLBACK")
            raise
        return run_id

    def list(self) -> pd.DataFrame:
        """All runs, newest first: run_id, created, kind, collection, label, rows, and the key settings."""
        runs = self._con.execute(
            "SELECT run_id, created, kind, collection, label, n_rows AS rows, config FROM runs ORDER BY created DESC"
        ).df()
        if runs.empty:
            return runs.drop(columns=["config"])
        records = [RunRecord.from_dict(json.loads(c), kind=k) for c, k in zip(runs.pop("config"), runs["kind"])]
        runs["generator"] = [r.generator for r in records]
        runs["retriever"] = [r.retriever for r in records]
        runs["alphas"] = [list(getattr(r.config, "alphas", ())) for r in records]
        runs["n_samples"] = [getattr(r.config, "n_samples", None) for r in records]  # a log audit has no N
        runs["k"] = [getattr(r.config, "k", None) for r in records]
        runs["seed"] = [r.seed for r in records]
        return runs

    def load(self, run_id: str) -> SweepRun:
        """The stored run: its record, its table and its per-document details (empty when saved without)."""
        record = self.load_record(run_id)
        rows = self._con.execute("SELECT data FROM run_rows WHERE run_id = ? ORDER BY row_index", [run_id]).fetchall()
        details = self._con.execute("SELECT data FROM run_details WHERE run_id = ? ORDER BY row_index",
                                    [run_id]).fetchall()
        return SweepRun(record=record, table=pd.DataFrame([json.loads(r[0]) for r in rows]),
                        documents=pd.DataFrame([json.loads(r[0]) for r in details]), run_id=run_id)

    def load_record(self, run_id: str) -> RunRecord:
        found = self._con.execute("SELECT config, kind FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if found is None:
            raise InvalidParameterError(f"no run {run_id!r} in {self.path}; "
                                        "list runs with `python -m fairrag_core runs`")
        return RunRecord.from_dict(json.loads(found[0]), kind=found[1])

    def delete(self, run_id: str) -> None:
        self._con.execute("DELETE FROM run_details WHERE run_id = ?", [run_id])
        self._con.execute("DELETE FROM run_rows WHERE run_id = ?", [run_id])
        self._con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
