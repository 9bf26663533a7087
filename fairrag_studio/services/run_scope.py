"""Which stored runs a browser sees: the whole run store, or only the runs saved from that browser.

The app saves every run under the browser's owner key (:func:`fairrag_studio.services.state.owner_key`). Whether it
lists, reopens and deletes the whole store or only a browser's own runs depends on who can reach the app:

* **shared** when Streamlit listens on this machine only (``server.address`` is ``localhost``, ``127.0.0.1`` or
  ``::1``; ``make app``'s default): one user, whose runs from the CLI and from every browser tab are theirs.
* **per browser** otherwise (``make app ADDRESS=0.0.0.0`` serves a classroom network; no address listens on every
  interface): each browser sees only its own runs, never another user's uploaded log, queries or answers.

``$FAIRRAG_SHARED_STORE`` overrides the choice: ``1`` shares the store, ``0`` keeps each browser to its own runs.
The CLI (``python -m fairrag_core runs``) always lists the whole store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

from fairrag_core import InvalidParameterError
from fairrag_core.audit.store import RunStore
from fairrag_core.record import SweepRun
from fairrag_core.settings import Settings

__all__ = ["SHARED_ENV", "LOCAL_ADDRESSES", "shared_store", "BrowserRuns", "browser_runs"]

#: Environment variable that decides whether every browser sees the whole run store (1) or only its own runs (0).
SHARED_ENV = "FAIRRAG_SHARED_STORE"
#: Addresses that only this machine can reach: an app listening there has one user.
LOCAL_ADDRESSES = frozenset({"localhost", "127.0.0.1", "::1"})
_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def shared_store(address: str | None) -> bool:
    """Whether every browser sees the whole store: ``$FAIRRAG_SHARED_STORE`` when set, else whether the app listens
    on ``address`` for this machine only.

    >>> shared_store("localhost"), shared_store("0.0.0.0"), shared_store(None)
    (True, False, False)
    """
    value = os.environ.get(SHARED_ENV, "").strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    if value:
        raise InvalidParameterError(f"${SHARED_ENV} is {value!r}; set it to 1 (every browser sees the whole run store) "
                                    "or 0 (each browser only its own runs), or unset it to decide by the address "
                                    "the app listens on")
    return (address or "").strip().strip("[]").lower() in LOCAL_ADDRESSES


@dataclass(frozen=True)
class BrowserRuns:
    """The run store as one browser sees it: saves carry its ``owner`` key; unless ``shared``, lists, loads and
    deletes are limited to that owner's runs (another's run id is refused as if it did not exist)."""

    store: RunStore
    owner: str
    shared: bool

    @property
    def path(self):
        return self.store.path

    @property
    def _scope(self) -> str | None:
        return None if self.shared else self.owner

    def save(self, run: SweepRun, *, label: str = "") -> str:
        return self.store.save(run, label=label, owner=self.owner)

    def list(self) -> pd.DataFrame:
        return self.store.list(owner=self._scope)

    def load(self, run_id: str) -> SweepRun:
        return self.store.load(run_id, owner=self._scope)

    def delete(self, run_id: str) -> None:
        self.store.delete(run_id, owner=self._scope)

    def add_extra(self, run_id: str, key: str, value: object, *, config: Settings | None = None) -> None:
        """Keep ``value`` under ``key`` in a run's record (e.g. the what-if replay of a log audit), and ``config`` as
        its settings when given (:meth:`~fairrag_core.audit.store.RunStore.add_extra`)."""
        self.store.add_extra(run_id, key, value, config=config, owner=self._scope)

    def find(self, fingerprint: str, *, kind: str, collection: str | None = None) -> str | None:
        """The newest run this browser sees whose request had ``fingerprint`` (``record.extra["fingerprint"]``,
        :func:`fairrag_studio.services.identity.fingerprint`: the same inputs by sha256 and the same settings), or None.

        Only runs of ``kind`` (and of ``collection``, when given) are opened, one record each."""
        runs = self.list()
        if runs.empty:
            return None
        chosen = runs[runs["kind"] == kind]
        if collection is not None:
            chosen = chosen[chosen["collection"] == collection]
        for run_id in chosen["run_id"]:
            if self.store.load_record(run_id, owner=self._scope).extra.get("fingerprint") == fingerprint:
                return str(run_id)
        return None

    @property
    def caption(self) -> str:
        """What the Stored runs list holds, and who else sees it."""
        if self.shared:
            return (f"This is the whole run store ({self.path}): it is shared with the command line (`python -m "
                    "fairrag_core runs`) and with every browser that opens this app on this machine. An app served to "
                    f"a network lists each browser's own runs only (set ${SHARED_ENV}=0 to do that here).")
        return ("Only the runs saved from this browser are listed: this app is served to a network, so each browser "
                "sees its own runs (keep this page's address, which holds your key, to find them again). Runs "
                "saved by the command line or by other browsers are not shown here.")


def browser_runs() -> BrowserRuns:
    """This browser's view of the app's run store (its owner key; shared or not by the server's address)."""
    import streamlit as st

    from . import resources
    from .state import owner_key

    return BrowserRuns(resources.run_store(), owner_key(), shared_store(st.get_option("server.address")))
