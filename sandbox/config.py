"""Sandbox settings shared by every provider: limits, network, image, folders."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentgym.sandbox.base import DEFAULT_MAX_OUTPUT, DEFAULT_MAX_READ

IMAGE = "agentgym-sandbox:latest"
"""The image ``agentgym sandbox build`` makes (python3, git, pytest, the agentgym worker code)."""
LABEL = "agentgym.sandbox"
"""Every container we start carries this label; ``cleanup`` and the reaper look only at those."""
SCRATCH_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")
"""Every writable place of a sandbox besides its workdir (private, size-capped tmpfs; POSIX
message queues): a reset empties them all, as it removes the System V IPC objects."""
SIZE_RE = re.compile(r"^\d+[kmg]?$", re.IGNORECASE)


class SandboxConfig(BaseModel):
    """How a sandbox is built. Defaults are the safe ones: no network, small limits, non-root."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str = IMAGE
    """Docker image (docker provider only)."""
    network: bool = False
    """Give the sandbox a network. Off by default; turning it on is an explicit opt-in."""
    memory: str = "1g"
    """Memory limit, docker syntax (``512m``, ``2g``); processes past it are OOM-killed."""
    cpus: float = Field(default=1.0, gt=0)
    """CPU share (docker ``--cpus``)."""
    pids: int = Field(default=256, ge=16)
    """Most processes and threads at once (stops fork bombs)."""
    workdir: str = "/work"
    """Writable folder (a size-capped tmpfs); the rest of the file system is read-only."""
    workdir_size: str = "256m"
    """Size of the workdir tmpfs (stops disk fillers)."""
    tmp_size: str = "64m"
    """Size of the ``/tmp`` tmpfs."""
    shm_size: str = "16m"
    """Size of the sandbox's private ``/dev/shm`` (the rest of ``/dev`` is read-only)."""
    user: str = "1000:1000"
    """uid:gid the commands run as (never root)."""
    max_output: int = Field(default=DEFAULT_MAX_OUTPUT, ge=1024)
    """Bytes kept of each of stdout/stderr per command."""
    max_read: int = Field(default=DEFAULT_MAX_READ, ge=1024)
    """Largest file ``read_file`` returns."""
    start_timeout: float = Field(default=60.0, gt=0)
    """Seconds to wait for a new sandbox's server to say it is ready."""

    @field_validator("memory", "workdir_size", "tmp_size", "shm_size")
    @classmethod
    def _size(cls, v: str) -> str:
        if not SIZE_RE.match(v):
            raise ValueError(
                f"size {v!r} must be a number with an optional k/m/g suffix, e.g. 512m"
            )
        return v.lower()

    @field_validator("workdir")
    @classmethod
    def _abs(cls, v: str) -> str:
        if not v.startswith("/") or v.rstrip("/") in ("", "/proc", "/dev", "/sys", "/usr", "/etc"):
            raise ValueError(f"workdir {v!r} must be an absolute path outside the system folders")
        return v.rstrip("/")

    @field_validator("user")
    @classmethod
    def _user(cls, v: str) -> str:
        if not re.fullmatch(r"\d+:\d+", v) or v.split(":")[0] == "0":
            raise ValueError(f"user {v!r} must be a non-root numeric uid:gid such as 1000:1000")
        return v


def size_bytes(size: str) -> int:
    """``"256m"`` -> 268435456."""
    unit = size[-1].lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(unit, 1)
    return int(size.rstrip("kmgKMG")) * mult
