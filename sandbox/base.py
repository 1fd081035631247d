"""The sandbox contract: three verbs (exec, read_file, write_file), built-in errors, capped output.

Verbs and lifecycle are separate: a provider (docker, local) creates and destroys sandboxes; a
``Sandbox`` only runs commands and moves files. Every verb has a sync face (envs step synchronously)
and an async face (``aexec`` ...) that runs the sync one in a worker thread.

Errors are built-in exceptions so callers need no provider-specific ``except``: ``TimeoutError``
(the command's whole process tree was killed), ``FileNotFoundError``, ``PermissionError``,
``IsADirectoryError``; plus :class:`OutputLimitExceeded` when a file is larger than the read cap
and :class:`SandboxError` when the sandbox itself is broken (its process died, the engine failed).
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, overload

DEFAULT_MAX_OUTPUT = 1 << 20
"""Bytes kept of each of stdout and stderr per command (1 MiB); the rest is dropped."""
DEFAULT_MAX_READ = 100 << 20
"""Largest file ``read_file`` returns (100 MiB)."""
DEFAULT_TIMEOUT = 600.0
"""Seconds a command may run when the caller gives no timeout."""


class SandboxError(RuntimeError):
    """The sandbox itself failed (engine error, its server process died); not the command."""


class OutputLimitExceeded(ValueError):
    """A file is larger than the read limit; ``limit`` says how many bytes are allowed."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True)
class ExecResult:
    """What a command did: exit code, captured output (capped), whether output was cut."""

    returncode: int
    """Exit status; negative ``-N`` when killed by signal N (137-style codes come from a shell)."""
    stdout: str
    """Standard output decoded as UTF-8 (undecodable bytes replaced), at most ``max_output`` bytes."""
    stderr: str
    """Standard error, same rules as ``stdout``."""
    truncated: bool = False
    """True when stdout or stderr was longer than the cap and its tail was dropped."""
    duration_s: float = 0.0
    """Wall time of the command inside the sandbox."""

    @property
    def success(self) -> bool:
        """Exit status 0."""
        return self.returncode == 0


Command = str | Sequence[str]
"""A list of arguments, or one string run by ``bash -c`` (``cd`` does not persist across calls)."""


def to_argv(cmd: Command) -> list[str]:
    """Normalise a command to an argument list; reject anything else with a clear error."""
    if isinstance(cmd, str):
        if not cmd.strip():
            raise ValueError("cmd is an empty string; give a shell command or a list of arguments")
        return ["bash", "-c", cmd]
    argv = list(cmd)
    if not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError(f"cmd must be a non-empty list of strings or one string, got {cmd!r}")
    return argv


class Sandbox(abc.ABC):
    """An isolated place to run commands; use as a (async) context manager or call ``close``."""

    workdir: str = "/work"
    """Writable directory; relative paths and the default ``cwd`` resolve against it."""

    @abc.abstractmethod
    def exec(
        self,
        cmd: Command,
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run ``cmd``; a non-zero exit is a result, not an error.

        Raises ``TimeoutError`` after ``timeout`` seconds (the command's process tree is killed),
        ``FileNotFoundError``/``PermissionError`` when the program or ``cwd`` is missing/forbidden.
        """

    @overload
    def read_file(self, path: str, text: Literal[True] = True) -> str: ...
    @overload
    def read_file(self, path: str, text: Literal[False]) -> bytes: ...
    @abc.abstractmethod
    def read_file(self, path: str, text: bool = True) -> str | bytes:
        """Contents of ``path`` (UTF-8 text or bytes); ``OutputLimitExceeded`` past the read cap."""

    @abc.abstractmethod
    def write_file(self, path: str, contents: str | bytes) -> None:
        """Create or replace ``path`` (parent folders are created)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the sandbox (destroy it, or return it to its pool). Idempotent."""

    # ------------------------------------------------------------------ async faces
    async def aexec(
        self,
        cmd: Command,
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Async face of :meth:`exec` (runs in a worker thread; sandboxes allow concurrent calls)."""
        return await asyncio.to_thread(self.exec, cmd, input, cwd, env, timeout)

    async def aread_file(self, path: str, text: bool = True) -> str | bytes:
        """Async face of :meth:`read_file`."""
        return await asyncio.to_thread(self.read_file, path, text)  # type: ignore[call-overload]

    async def awrite_file(self, path: str, contents: str | bytes) -> None:
        """Async face of :meth:`write_file`."""
        await asyncio.to_thread(self.write_file, path, contents)

    async def aclose(self) -> None:
        """Async face of :meth:`close`."""
        await asyncio.to_thread(self.close)

    # ------------------------------------------------------------------ context managers
    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
