"""Finding and removing sandbox leftovers whose owner process is gone.

Every container carries ``agentgym.sandbox=1`` and ``agentgym.owner=<host>:<pid>:<start ticks>``.
The start time makes a recycled pid harmless: a container belongs to a live owner only if a
process with that pid exists *and* started at that moment. The local provider's ``/etc`` folders
(``agentgym-bwrap-etc-<pid>-<start ticks>-*`` in the temporary folder) name their owner the same
way; an owner killed with -9 never removes them, so the next provider does.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.sandbox.config import LABEL

OWNER_LABEL = "agentgym.owner"


def _start_ticks(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def owner_id(pid: int | None = None) -> str:
    """This process as a container owner: host, pid and the pid's start time."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}"


ETC_PREFIX = "agentgym-bwrap-etc-"
_ETC_OWNER = re.compile(rf"^{ETC_PREFIX}(\d+)-(\d+)-")


def local_folder_prefix() -> str:
    """Prefix of a local provider's ``/etc`` folder: this process as its owner."""
    pid = os.getpid()
    return f"{ETC_PREFIX}{pid}-{_start_ticks(pid)}-"


def reap_local_folders(tmp: str | None = None) -> list[Path]:
    """Remove local-provider folders whose owner process is gone; returns those removed.

    Folders without an owner in their name (older versions) are left alone: nothing says whose.
    """
    removed = []
    for folder in Path(tmp or tempfile.gettempdir()).glob(f"{ETC_PREFIX}*"):
        match = _ETC_OWNER.match(folder.name)
        if match is None or _start_ticks(int(match[1])) == match[2]:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


def owner_alive(owner: str) -> bool | None:
    """True/False for owners on this host; None when the owner is on another host (unknown)."""
    host, _, rest = owner.partition(":")
    pid, _, ticks = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return _start_ticks(int(pid)) == ticks


@dataclass(frozen=True)
class Reaped:
    name: str
    owner: str
    status: str
    reason: str


def reap_orphans(
    client: Any, everything: bool = False, older_than_s: float | None = None
) -> list[Reaped]:
    """Remove agentgym containers whose owner died (or all of them, or those older than a limit)."""
    removed = []
    # ignore_removed: auto-removing containers may vanish between the listing and its inspect calls
    for c in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}, ignore_removed=True):
        reason = _why_remove(c, everything, older_than_s)
        if reason is None:
            continue
        try:
            c.remove(force=True)
        except Exception as e:  # already gone, or being removed by auto-remove
            if "No such container" in str(e) or "already in progress" in str(e):
                continue
            raise
        removed.append(Reaped(c.name, c.labels.get(OWNER_LABEL, "?"), c.status, reason))
    return removed


def _why_remove(c: Any, everything: bool, older_than_s: float | None) -> str | None:
    if everything:
        return "cleanup --all"
    owner = c.labels.get(OWNER_LABEL, "")
    if owner_alive(owner) is False:
        return "owner process is gone"
    if c.status in ("exited", "dead", "created") and owner_alive(owner) is not True:
        return f"container is {c.status}"
    if older_than_s is not None:
        created = c.attrs.get("Created", "")
        age = time.time() - _parse_time(created)
        if age > older_than_s:
            return f"older than {older_than_s:.0f}s"
    return None


def _parse_time(iso: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return time.time()
