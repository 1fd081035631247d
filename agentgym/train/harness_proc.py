"""One harness program's process: its own process group, a bounded stderr tail, killed whole.

The program runs in a new session (``start_new_session``), so a timeout or the trainer's exit
kills the whole group it made (its children and theirs), not only the direct child; a program
that exits leaving children behind has them killed too. Its stderr goes through a pipe of which
only the last :data:`TAIL_BYTES` are kept, however much it writes. A process that starts its own
session (``setsid``) leaves the group and is out of reach: run untrusted programs in a sandbox.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

TAIL_BYTES = 8192
"""Bytes of a program's stderr kept (the rest is read and dropped as it comes)."""
CHUNK = 65536


class AgentProcess:
    """A program started in its own process group, its stderr's tail kept in memory."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str | Path | None = None
    ) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.killed = False
        """The group was killed while the program still ran (a timeout, the trainer closing)."""
        self._tail = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr as pipe:
            while chunk := pipe.read1(CHUNK):
                self._tail += chunk
                if len(self._tail) > 2 * TAIL_BYTES:
                    del self._tail[:-TAIL_BYTES]

    def poll(self) -> int | None:
        """The exit code once the program has exited (its group is then killed), else None."""
        code = self.proc.poll()
        if code is not None:
            self._kill_group()
        return code

    def kill(self) -> int:
        """Kill the program and its whole group; its exit code."""
        if self.proc.poll() is None:
            self.killed = True
        self._kill_group()
        return self.proc.wait()

    def stderr_tail(self, chars: int) -> str:
        """The last ``chars`` characters of what the program wrote to stderr (once it ended)."""
        self._reader.join(timeout=5)
        return bytes(self._tail[-TAIL_BYTES:]).decode("utf-8", "replace")[-chars:]

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
