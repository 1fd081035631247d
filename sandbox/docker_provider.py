"""The docker provider: one locked-down container per sandbox, driven over its attached streams.

Each container runs the command server as its main process (behind ``docker-init``), with no
network (unless the config opts in), memory/CPU/pids limits, a non-root user, all capabilities
dropped, a read-only root and size-capped tmpfs for the workdir and ``/tmp``. Commands travel over
the container's attached stdin/stdout, so a command costs a message round trip, not a
``docker exec``.

Containers never outlive their owner: stdin is attached once with ``StdinOnce``, so when the
owning process dies (even by ``kill -9``) the server reads EOF and exits and the container,
created with auto-remove, disappears; every container also carries an owner label that the reaper
(:mod:`agentgym.sandbox.reaper`, run when a provider starts and by ``agentgym sandbox cleanup``)
checks against live processes.
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from agentgym.extras import refusal
from agentgym.sandbox.base import SandboxError
from agentgym.sandbox.channel import AttachChannel
from agentgym.sandbox.client import ServerSandbox, server_command, server_source_line
from agentgym.sandbox.config import LABEL, SCRATCH_DIRS, SandboxConfig
from agentgym.sandbox.reaper import OWNER_LABEL, owner_id, reap_orphans

T = TypeVar("T")
RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0)
"""Back-off between attempts after a transient engine error (5xx, connection reset)."""
_reaped = False


def docker_client(timeout: int = 120) -> Any:
    """A Docker SDK client, or a ``SandboxError`` that says how to get Docker working."""
    try:
        import docker
    except ImportError as e:  # the project's one-line refusal: pip install ".[sandbox]"
        raise SandboxError(str(refusal("the docker provider", ["docker"]))) from e
    try:
        _check_local_socket(timeout)
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client
    except Exception as e:
        raise SandboxError(
            f"Docker is not reachable ({e}); start dockerd or check DOCKER_HOST "
            "(`agentgym sandbox doctor` says what works here)"
        ) from e


def _check_local_socket(timeout: float) -> None:
    """Connect to the local engine's socket (``DOCKER_HOST`` unset or ``unix://``) and close it.

    With dockerd stopped the socket file stays behind; the SDK's client then fails inside its
    constructor and leaks the socket it opened (a ResourceWarning in every caller).
    """
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(host.removeprefix("unix://"))


def is_transient(e: BaseException) -> bool:
    """Engine errors worth retrying: server-side 5xx (not 'no such image'), dropped connections."""
    import docker.errors
    import requests

    if isinstance(e, docker.errors.ImageNotFound):
        return False
    if isinstance(e, docker.errors.APIError):
        return e.status_code is None or e.status_code >= 500 or e.status_code == 409
    return isinstance(e, (requests.exceptions.ConnectionError, requests.exceptions.Timeout))


def retry(fn: Callable[[], T]) -> T:
    """Run ``fn``, retrying transient engine errors with back-off; other errors pass through."""
    for delay in (*RETRY_DELAYS, None):
        try:
            return fn()
        except Exception as e:
            if delay is None or not is_transient(e):
                raise
            time.sleep(delay)
    raise AssertionError("unreachable")


class DockerProvider:
    """Creates and destroys docker sandboxes for one :class:`SandboxConfig`."""

    name = "docker"

    def __init__(self, config: SandboxConfig | None = None, client: Any = None) -> None:
        global _reaped
        self.config = config or SandboxConfig()
        self.client = client or docker_client()
        self.live: dict[str, ServerSandbox] = {}
        self._lock = threading.Lock()
        if not _reaped:  # once per process: remove containers whose owners died
            _reaped = True
            reap_orphans(self.client)
        atexit.register(self.close_all)

    def create(self) -> ServerSandbox:
        """Start a new container and wait for its server (cold start, a few hundred ms)."""
        return retry(self._create_once)

    def _create_once(self) -> ServerSandbox:
        cfg = self.config
        channel, cid = self.spawn(self.server_command())
        channel.send_line(server_source_line())
        sandbox = ServerSandbox(
            channel,
            self.destroy,
            workdir=cfg.workdir,
            max_output=cfg.max_output,
            max_read=cfg.max_read,
            name=f"docker:{cid[:12]}",
        )
        sandbox.handle = cid
        try:
            sandbox.wait_ready(cfg.start_timeout)
        except BaseException:
            self.remove(cid)
            raise
        with self._lock:
            self.live[cid] = sandbox
        return sandbox

    def server_command(self) -> list[str]:
        """The command server, its workdir, and the scratch folders ``reset`` empties."""
        return server_command("python3", [self.config.workdir, "--own-pidns", *SCRATCH_DIRS])

    def spawn(self, command: list[str]) -> tuple[AttachChannel, str]:
        """Start a locked-down container running ``command``; return its attached streams and id.

        The env worker uses this directly: any line-speaking program can be the main process.
        """
        api = self.client.api
        name = f"agentgym-{uuid.uuid4().hex[:12]}"
        cid = retry(lambda: api.create_container(name=name, **self.container_spec(command))["Id"])
        try:
            sock = api.attach_socket(
                cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            api.start(cid)
        except BaseException:
            self.remove(cid)
            raise
        return AttachChannel(getattr(sock, "_sock", sock)), cid

    def container_spec(self, command: list[str]) -> dict[str, Any]:
        """``create_container`` arguments: ``command`` as main process, and every limit."""
        cfg = self.config
        uid, gid = cfg.user.split(":")
        tmpfs_opts = f"uid={uid},gid={gid},mode=0755,exec"
        host_config = self.client.api.create_host_config(
            network_mode="bridge" if cfg.network else "none",
            mem_limit=cfg.memory,
            memswap_limit=cfg.memory,
            nano_cpus=int(cfg.cpus * 1e9),
            pids_limit=cfg.pids,
            read_only=True,
            tmpfs={
                cfg.workdir: f"size={cfg.workdir_size},{tmpfs_opts}",
                "/tmp": f"size={cfg.tmp_size},mode=1777,exec",
            },
            shm_size=cfg.shm_size,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            init=True,
            auto_remove=True,
        )
        return {
            "image": cfg.image,
            "command": command,
            "user": cfg.user,
            "working_dir": cfg.workdir,
            "hostname": "sandbox",
            "environment": {"HOME": cfg.workdir, "PYTHONDONTWRITEBYTECODE": "1"},
            "labels": {LABEL: "1", OWNER_LABEL: owner_id()},
            "stdin_open": True,  # with detach=False: StdinOnce, our lifeline
            "detach": False,
            "tty": False,
            "host_config": host_config,
        }

    def destroy(self, sandbox: ServerSandbox) -> None:
        """Stop and remove the container (idempotent)."""
        cid = sandbox.handle
        with self._lock:
            self.live.pop(cid, None)
        sandbox.shutdown_channel()
        self.remove(cid)

    def remove(self, cid: str) -> None:
        """Force-remove a container (idempotent)."""
        import docker.errors

        try:
            retry(lambda: self.client.api.remove_container(cid, force=True))
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if "already in progress" not in str(e):
                raise

    def close_all(self) -> None:
        """Destroy every container this provider started (also run at interpreter exit)."""
        with self._lock:
            boxes = list(self.live.values())
        for sb in boxes:
            try:
                self.destroy(sb)
            except Exception:  # keep removing the others; the reaper gets what is left
                continue
