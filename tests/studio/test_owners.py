"""Owner keys are issued by the server only (issue 19, item 10): a hand-picked key in the address is replaced, an
issued one is kept across reloads and restarts, and a key holds at least 122 random bits."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fairrag_studio.services import owners

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(autouse=True)
def _stores(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_JOBS", raising=False)
    resources.run_store.clear()
    yield
    resources.run_store.clear()


def open_app(owner: str | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if owner is not None:
        at.query_params["owner"] = owner
    at.run()
    assert not at.exception
    return at


@pytest.mark.parametrize("picked", ["00000000", "a" * 32, "0" * 48, "not a key"])
def test_a_hand_picked_key_in_the_address_is_replaced_by_an_issued_one(picked):
    at = open_app(picked)
    given = at.query_params["owner"]
    assert given != picked and owners.is_issued(given) and at.session_state["jobs_owner"] == given


def test_an_issued_key_is_kept_across_a_reload_and_a_restart_of_the_server():
    first = open_app(None).query_params["owner"]
    assert owners.is_issued(first)
    assert open_app(first).query_params["owner"] == first  # a reload: a new session, the same address
    owners._secrets.clear()  # a new server process reads the secret from its file again
    assert open_app(first).query_params["owner"] == first
    assert stat.S_IMODE(owners.secret_path().stat().st_mode) == 0o600


def test_a_forged_tag_or_another_servers_key_is_refused():
    key = owners.new_key()
    forged = key[:32] + ("0" if key[32] != "0" else "1") + key[33:]
    elsewhere = owners.sign(key[:32], secrets.token_bytes(32))
    for wrong in (forged, elsewhere, key.upper(), key + "0", key[:-1]):
        assert not owners.is_issued(wrong)
        assert open_app(wrong).query_params["owner"] not in (wrong, key)
    assert owners.is_issued(key)


def test_a_key_holds_128_random_bits(monkeypatch):
    owners.server_secret()  # made before the spy starts counting
    asked = []
    real = secrets.token_hex

    def spy(nbytes=None):
        asked.append(nbytes)
        return real(nbytes)

    monkeypatch.setattr(secrets, "token_hex", spy)
    keys = {owners.new_key() for _ in range(2000)}
    assert asked == [16] * 2000 and owners.RANDOM_BITS == 128 >= 122
    assert len(keys) == 2000 and all(len(k) == owners.KEY_LENGTH == 48 for k in keys)
    for position in range(32):  # every digit of the random part varies (each takes all 16 values here)
        assert len({k[position] for k in keys}) == 16


def test_two_processes_share_one_secret_and_a_short_file_is_replaced(tmp_path):
    path = tmp_path / "keys" / "owner-keys.secret"
    made = owners._read_or_create(path)
    assert len(made) == 32 and owners._read_or_create(path) == made
    assert sorted(os.listdir(path.parent)) == ["owner-keys.secret"]  # no draft left behind
    path.write_bytes(b"short")
    fresh = owners._read_or_create(path)
    assert len(fresh) == 32 and fresh != made and path.read_bytes() == fresh


def test_an_unwritable_folder_falls_back_to_a_secret_in_memory(tmp_path, monkeypatch, caplog):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(owners.os, "open", refuse)
    where = tmp_path / "ro" / "owner-keys.secret"
    secret = owners.server_secret(where)
    assert len(secret) == 32 and owners.server_secret(where) == secret and not where.exists()
    assert "kept in memory" in caplog.text
    assert owners.is_issued(owners.new_key(secret), secret)
