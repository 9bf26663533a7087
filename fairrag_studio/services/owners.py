"""Owner keys: the server, and only the server, issues each browser the key that names its jobs and stored runs.

A key is 128 random bits (32 hex digits, :func:`secrets.token_hex`) followed by a tag: the first 64 bits of
HMAC-SHA256 of those digits under a server secret (16 hex digits), 48 hex digits in all. The app accepts a key
from the address (``?owner=…``) only when its tag checks out (:func:`hmac.compare_digest`), so a hand-picked key
(``?owner=00000000``, or another user's guessed prefix) is replaced by a fresh one; guessing a live key means
guessing 128 random bits.

The secret is 32 random bytes in ``owner-keys.secret`` beside the run store (``$FAIRRAG_RUNS``' folder, default
``~/.cache/fairrag``), created with mode 0600 on first use, so keys (and with them a browser's jobs and runs)
survive a restart of the server. Where that folder cannot be written, the secret lives in memory for the life of
the process (a warning in the log): keys then last until the server stops. No Streamlit here.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import threading
from pathlib import Path

from fairrag_core.audit.store import default_store_path

__all__ = ["RANDOM_BITS", "KEY_LENGTH", "secret_path", "server_secret", "sign", "new_key", "is_issued"]

_log = logging.getLogger(__name__)

#: Random bits in a key (the issue asked for at least 122, a random UUID's).
RANDOM_BITS = 128
_TAG_HEX = 16  # 64 bits of HMAC-SHA256
#: Hex digits in a key: the random part, then the tag.
KEY_LENGTH = RANDOM_BITS // 4 + _TAG_HEX
_KEY = re.compile(rf"^[0-9a-f]{{{KEY_LENGTH}}}$")
_SECRET_BYTES = 32
_secrets: dict[Path, bytes] = {}
_lock = threading.Lock()


def secret_path() -> Path:
    """``owner-keys.secret`` beside the run store."""
    return default_store_path().with_name("owner-keys.secret")


def _read_or_create(path: Path) -> bytes:
    """The secret in ``path``; made (0600, published whole with a hard link, so a second process never reads half
    of it) when missing or too short."""
    try:
        found = path.read_bytes()
        if len(found) >= _SECRET_BYTES:
            return found[:_SECRET_BYTES]
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_bytes(_SECRET_BYTES)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    handle = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(fresh)
        try:
            os.link(draft, path)  # fails if another process made it first: use theirs
        except FileExistsError:
            found = path.read_bytes()
            if len(found) >= _SECRET_BYTES:
                return found[:_SECRET_BYTES]
            os.replace(draft, path)  # a damaged (short) secret: replace it
            return fresh
    finally:
        if draft.exists():
            draft.unlink()
    return fresh


def server_secret(path: str | os.PathLike | None = None) -> bytes:
    """The secret that signs owner keys (read once per process and file; see the module docstring)."""
    where = Path(path) if path is not None else secret_path()
    with _lock:
        if where not in _secrets:
            try:
                _secrets[where] = _read_or_create(where)
            except OSError as err:
                _log.warning("owner keys are signed with a secret kept in memory (%s could not be used: %s); "
                             "browsers get new keys when the app restarts", where, err.strerror or err)
                _secrets[where] = secrets.token_bytes(_SECRET_BYTES)
        return _secrets[where]


def sign(random_part: str, secret: bytes) -> str:
    """The key for ``random_part`` (32 hex digits): the digits followed by their tag under ``secret``."""
    tag = hmac.new(secret, random_part.encode("ascii"), hashlib.sha256).hexdigest()[:_TAG_HEX]
    return random_part + tag


def new_key(secret: bytes | None = None) -> str:
    """A fresh key: :data:`RANDOM_BITS` random bits and their tag."""
    return sign(secrets.token_hex(RANDOM_BITS // 8), server_secret() if secret is None else secret)


def is_issued(key: object, secret: bytes | None = None) -> bool:
    """Whether ``key`` is one this server issued (its tag checks out; compared in constant time)."""
    if not isinstance(key, str) or not _KEY.match(key):
        return False
    expected = sign(key[: RANDOM_BITS // 4], server_secret() if secret is None else secret)
    return hmac.compare_digest(expected, key)
