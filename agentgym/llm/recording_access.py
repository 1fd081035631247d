"""Who may record: a session's key, and one recording server per file.

A session is bound to the secret its opener sent (``X-Session-Key``); the file keeps only the
key's SHA-256, compared in constant time. A recording server holds an exclusive ``flock`` on
``FILE-lock`` while it runs, so two processes never count one session's calls apart.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
from pathlib import Path

KEY_HEADER = "x-session-key"
MIN_KEY = 16
"""Fewest characters of a session key (``secrets.token_urlsafe()`` makes 43)."""
MAX_KEY = 200


class RecordingBusy(ValueError):
    """Another process records to the file: two would each count their own limits and seqs."""


class RecordingError(Exception):
    """A request recording refuses: the HTTP status and one line saying what to do."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def key_hash(key: str) -> str:
    """What the file keeps of a session key (never the key)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def check_session_key(session: str, expected: str | None, key: str | None) -> None:
    """A 401 without a key, a 403 for a key that is not the session's (compared in constant
    time); a session recorded before sessions had keys takes no more calls."""
    if key is None:
        raise RecordingError(
            401,
            f"session {session!r} is bound to a key: send the one it was opened with in the "
            "X-Session-Key header",
            "session_key_missing",
        )
    if expected is None or not hmac.compare_digest(expected, key_hash(key)):
        raise RecordingError(
            403,
            f"the X-Session-Key sent is not session {session!r}'s: a session takes calls only "
            "with the key it was opened with (start a session of your own)",
            "session_key_mismatch",
        )


def check_key(key: str | None, session: str | None = None) -> None:
    if key is None:
        raise RecordingError(
            401,
            f"opening session {session!r} needs a key: send a secret of at least {MIN_KEY} "
            "characters in the X-Session-Key header (every later call of the session sends it)",
            "session_key_missing",
        )
    if not MIN_KEY <= len(key) <= MAX_KEY or not key.isprintable():
        raise RecordingError(
            400,
            f"X-Session-Key: use {MIN_KEY} to {MAX_KEY} printable characters "
            "(secrets.token_urlsafe() makes one)",
        )


def lock_file(path: Path) -> int:
    """Hold ``PATH-lock`` exclusively for this recorder's life; refuse if another holds it."""
    fd = os.open(f"{path}-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RecordingBusy(
            f"{path} is being recorded by another process: give each server its own --record "
            "file (one file counts each session's calls and numbers them in one place)"
        ) from None
    return fd
