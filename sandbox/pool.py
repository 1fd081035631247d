"""A warm pool: sandboxes started ahead of time, reset between episodes, handed out in milliseconds.

``acquire`` takes a ready sandbox off a queue (starting one only when the queue is empty); closing
the lease resets the sandbox in the background (every process killed, workdir and ``/tmp``
emptied: with a read-only root nothing else is writable) and puts it back, or destroys and
replaces it when the reset fails or it has served ``max_uses`` episodes. Creation errors are
retried by the provider; a sandbox that died while idle is replaced on the next ``acquire``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from agentgym.sandbox.base import Command, ExecResult, Sandbox, SandboxError
from agentgym.sandbox.client import ServerSandbox


class Provider(Protocol):
    """What a pool needs from a provider (docker, local, or a plugin)."""

    name: str

    def create(self) -> ServerSandbox: ...
    def destroy(self, sandbox: ServerSandbox) -> None: ...
    def close_all(self) -> None: ...


class Lease(Sandbox):
    """One episode's use of a pooled sandbox; ``close`` gives it back (reset) instead of destroying."""

    def __init__(self, pool: SandboxPool, inner: ServerSandbox) -> None:
        self._pool, self._inner, self.closed = pool, inner, False
        self.workdir = inner.workdir

    def _box(self) -> ServerSandbox:
        if self.closed:
            raise SandboxError("this sandbox lease is closed; acquire a new one from the pool")
        return self._inner

    def exec(
        self,
        cmd: Command,
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        return self._box().exec(cmd, input, cwd, env, timeout)

    def read_file(self, path: str, text: bool = True) -> Any:
        return self._box().read_file(path, text)  # type: ignore[call-overload]

    def write_file(self, path: str, contents: str | bytes) -> None:
        self._box().write_file(path, contents)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._pool.release(self._inner)


class SandboxPool:
    """Keeps ``size`` sandboxes of one provider warm; ``with SandboxPool(...) as pool`` closes all.

    The pool owns its provider: ``close`` destroys every sandbox the provider started.
    """

    def __init__(
        self,
        provider: Provider,
        size: int = 4,
        max_uses: int = 100,
        workers: int = 4,
        grow: bool = False,
        max_size: int = 256,
    ) -> None:
        if size < 0:
            raise ValueError(f"pool size must be >= 0, got {size}")
        self.provider, self.size, self.max_uses = provider, size, max_uses
        self.grow, self.max_size = grow, max_size
        """With ``grow``, an acquire that finds the pool empty raises ``size`` by one (up to
        ``max_size``), so a pool shared by N concurrent episodes settles at N warm sandboxes."""
        self._ready: queue.Queue[ServerSandbox] = queue.Queue()
        self._uses: dict[int, int] = {}
        self._jobs = ThreadPoolExecutor(
            max_workers=max(1, workers), thread_name_prefix="sandbox-pool"
        )
        self._closed = False
        self._lock = threading.Lock()
        self._filling = 0
        self.last_error: BaseException | None = None
        """The latest failure to start a sandbox (shown when ``acquire`` times out)."""

    # ------------------------------------------------------------------ filling
    def start(self, wait: bool = True) -> SandboxPool:
        """Start sandboxes until ``size`` are ready (blocking by default)."""
        futures = [
            self._spawn() for _ in range(max(0, self.size - self._ready.qsize() - self._filling))
        ]
        for fut in futures if wait else []:
            fut.result()
        return self

    def _spawn(self) -> Future[None]:
        with self._lock:
            self._filling += 1
        return self._jobs.submit(self._fill_one)

    def _fill_one(self) -> None:
        try:
            box = self.provider.create()
        except BaseException as e:
            self.last_error = e
            raise
        finally:
            with self._lock:
                self._filling -= 1
        if self._closed:
            self.provider.destroy(box)
        else:
            self._ready.put(box)

    # ------------------------------------------------------------------ leases
    def acquire(self, timeout: float = 120.0) -> Lease:
        """A ready sandbox (milliseconds when the pool is warm); starts one if none is ready."""
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        deadline = time.monotonic() + timeout
        while True:
            try:
                box = self._ready.get_nowait()
            except queue.Empty:
                box = self._wait_for_one(deadline)
            if not box.closed and box._dead is None:
                self._uses[id(box)] = self._uses.get(id(box), 0) + 1
                return Lease(self, box)
            self._discard(box)

    def _wait_for_one(self, deadline: float) -> ServerSandbox:
        if self.grow and self.size < self.max_size:
            self.size += 1
            self._spawn()
        elif self._filling == 0:  # nobody is starting one for us
            self._spawn()
        try:
            return self._ready.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            why = f": last start failure: {self.last_error}" if self.last_error else ""
            raise SandboxError(f"no sandbox became ready in time{why}") from self.last_error

    def release(self, box: ServerSandbox) -> None:
        """Reset ``box`` in the background and return it to the pool (or replace it)."""
        if self._closed:
            self._discard(box, refill=False)
            return
        self._jobs.submit(self._recycle, box)

    def _recycle(self, box: ServerSandbox) -> None:
        if self._uses.get(id(box), 0) >= self.max_uses or self._ready.qsize() >= self.size:
            self._discard(box, refill=self._ready.qsize() < self.size)
            return
        try:
            box.reset()
        except (SandboxError, OSError, TimeoutError):
            self._discard(box)
            return
        self._ready.put(box)

    def _discard(self, box: ServerSandbox, refill: bool = True) -> None:
        self._uses.pop(id(box), None)
        try:
            self.provider.destroy(box)
        finally:
            if refill and not self._closed:
                self._spawn()

    # ------------------------------------------------------------------ lifecycle
    def idle(self) -> int:
        """Sandboxes ready to hand out right now."""
        return self._ready.qsize()

    def close(self) -> None:
        """Destroy every sandbox of the pool, leased or idle."""
        self._closed = True
        self._jobs.shutdown(wait=True, cancel_futures=True)
        while True:
            try:
                self.provider.destroy(self._ready.get_nowait())
            except queue.Empty:
                break
        self.provider.close_all()

    def __enter__(self) -> SandboxPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
