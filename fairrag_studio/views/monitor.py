"""What the Monitor page shows: a ``collect`` store audited window by window, as ``audit-log STORE --window``
audits it (:func:`fairrag_core.audit.monitor.monitor_store`), read with the providers the page names. Pure (no
Streamlit)."""

from __future__ import annotations

import os

import pandas as pd

from fairrag_core.audit.monitor import MonitorResult, monitor_store
from fairrag_core.audit.rag_log import LogAuditConfig
from fairrag_core.data.store_window import StoreWindow, load_store
from fairrag_core.data.traces import ProviderSource, documents_from_log

__all__ = ["monitor_served", "windows_table", "findings_by_window", "changes_table"]


def monitor_served(path: str | os.PathLike, *, window: str, service: str | None = None,
                   provider_from: str | None = None, collection=None, n_boot: int = 1000,
                   seed: int = 0) -> MonitorResult:
    """The store at ``path`` monitored per ``window``, each window read as audit-log reads it: against
    ``collection``, or (None) with the documents' providers from the log (``provider_from``, as
    ``--provider-from``)."""
    config = LogAuditConfig(log=str(path), service=service, window=window, provider_from=provider_from,
                            n_boot=n_boot, seed=seed)

    def read(cfg):
        log = load_store(path, StoreWindow.of(cfg), collection=collection)
        if collection is not None:
            return log, collection, list(log.notes)
        documents = documents_from_log(log, provider_from=ProviderSource.parse(provider_from))
        return log, documents.collection, [*log.notes, *documents.notes]

    return monitor_store(path, config, read=read)


def windows_table(result: MonitorResult) -> pd.DataFrame:
    """One row per window for readers: start, requests, queries, EE-D with its interval (and EE-R where labelled),
    and the deployment's α and retriever where the traces logged them."""
    table = result.headline_table()
    table = table.dropna(axis=1, how="all")
    return table.rename(columns={"window": "window (UTC)", "ee_d": "EE-D", "ee_d_low": "EE-D low",
                                 "ee_d_high": "EE-D high", "ee_r": "EE-R", "ee_r_low": "EE-R low",
                                 "ee_r_high": "EE-R high", "deployed_alpha": "α", "deployed_retriever": "retriever"})


def findings_by_window(result: MonitorResult) -> list[tuple[str, list[str]]]:
    """``[(window start, ["[severity] sentence", …]), …]``: each window's findings, most severe first."""
    return [(w.start, [f"[{f.severity.value}] {f.text}" for f in w.findings]) for w in result.windows]


def changes_table(result: MonitorResult) -> pd.DataFrame:
    """The deployment changes: when, what, and whether the traces or the user's list said so."""
    return pd.DataFrame([{"at (UTC)": c.at, "change": c.label,
                          "from": "the traces" if c.source == "traces" else "your list"} for c in result.changes],
                        columns=["at (UTC)", "change", "from"])
