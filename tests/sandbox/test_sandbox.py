"""The sandbox contract (self_check) on every provider, the warm pool, the reaper, errors, the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.sandbox import (
    OutputLimitExceeded,
    SandboxConfig,
    SandboxError,
    SandboxPool,
    get_provider,
    open_sandbox,
    provider_names,
    self_check,
)
from agentgym.sandbox.channel import Channel
from agentgym.sandbox.client import ServerSandbox
from agentgym.sandbox.local import bwrap_works
from agentgym.sandbox.selfcheck import CHECKS, SelfCheckError
from agentgym.sandbox.testing import require_docker

needs_bwrap = pytest.mark.skipif(
    not bwrap_works() and not os.environ.get("CI"), reason="bubblewrap is not usable here"
)


@pytest.fixture(scope="module")
def docker_pool():
    """One warm docker pool for this module (containers start once)."""
    require_docker()
    pool = SandboxPool(get_provider("docker"), size=2).start()
    yield pool
    pool.close()


# ---------------------------------------------------------------------- conformance
@needs_bwrap
def test_local_provider_passes_self_check():
    with open_sandbox("local") as sb:
        results = self_check(sb)
    assert set(results) == {c.__name__ for c in CHECKS} and set(results.values()) == {"ok"}


def test_docker_provider_passes_self_check(docker_pool):
    with docker_pool.acquire() as sb:
        assert set(self_check(sb).values()) == {"ok"}


def test_unsafe_subprocess_fallback_passes_the_contract_and_warns(monkeypatch):
    import agentgym.sandbox.local as local

    monkeypatch.setattr(local, "bwrap_works", lambda: False)
    with pytest.raises(SandboxError, match="allow_unsafe=True"):
        local.LocalProvider()
    provider = local.LocalProvider(allow_unsafe=True)
    with pytest.warns(local.UnsafeSubprocessWarning, match="WITHOUT ISOLATION"):
        sb = provider.create()
    with sb:
        results = self_check(sb, raise_on_failure=False)
    # Unisolated, a subprocess can write outside its folder and may run as root: those two
    # checks are exactly what the fallback gives up; the rest of the contract holds.
    failing = {k for k, v in results.items() if v != "ok"}
    assert failing <= {"check_file_errors", "check_not_root"}, results


def test_self_check_reports_a_broken_provider():
    class Broken:
        workdir = "/work"

        def exec(self, *a, **k):
            raise SandboxError("engine down")

        def read_file(self, *a, **k):
            raise SandboxError("engine down")

        def write_file(self, *a, **k):
            raise SandboxError("engine down")

    with pytest.raises(SelfCheckError, match="check_exec_basics: SandboxError: engine down"):
        self_check(Broken())  # type: ignore[arg-type]


# ---------------------------------------------------------------------- limits and errors
@needs_bwrap
def test_read_limit_and_output_cap():
    cfg = SandboxConfig(max_output=2048, max_read=4096)
    with open_sandbox("local", cfg) as sb:
        r = sb.exec(["python3", "-c", "print('y' * 10000)"])
        assert r.truncated and len(r.stdout) == 2048
        sb.write_file("big", "z" * 5000)
        with pytest.raises(OutputLimitExceeded) as e:
            sb.read_file("big")
        assert e.value.limit == 4096
        sb.write_file("small", b"\x00\xff" * 2000)
        assert sb.read_file("small", text=False) == b"\x00\xff" * 2000


def test_bad_config_and_provider_names_are_explained():
    with pytest.raises(ValueError, match="non-root"):
        SandboxConfig(user="0:0")
    with pytest.raises(ValueError, match="k/m/g suffix"):
        SandboxConfig(memory="lots")
    with pytest.raises(ValueError, match="absolute path"):
        SandboxConfig(workdir="relative")
    with pytest.raises(ValueError, match="use one of docker, local"):
        get_provider("podman")
    assert {"docker", "local"} <= set(provider_names())


@needs_bwrap
def test_bad_commands_are_explained():
    with open_sandbox("local") as sb:
        with pytest.raises(ValueError, match="non-empty list of strings"):
            sb.exec([1, 2])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="timeout must be positive"):
            sb.exec("true", timeout=0)
    with pytest.raises(SandboxError, match="closed"):
        sb.exec("true")


# ---------------------------------------------------------------------- warm pool
def test_pool_hands_out_clean_sandboxes_fast(docker_pool):
    with docker_pool.acquire() as sb:
        sb.write_file("leftover.txt", "secret")
        sb.exec("sleep 300 > /dev/null 2>&1 &")
        sb.exec("echo x > /tmp/t")
    deadline = time.monotonic() + 30
    while docker_pool.idle() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    start = time.perf_counter()
    leases = [docker_pool.acquire(), docker_pool.acquire()]
    assert time.perf_counter() - start < 1.0  # warm: no container starts here
    for sb in leases:
        listing = sb.exec("ls -A /work /tmp; ps -eo comm").stdout
        assert "leftover.txt" not in listing and "sleep" not in listing and "\nt\n" not in listing
        sb.close()
    with pytest.raises(SandboxError, match="lease is closed"):
        leases[0].exec("true")


def test_pool_replaces_a_sandbox_that_died(docker_pool):
    lease = docker_pool.acquire()
    inner = lease._inner
    docker_pool.provider.client.api.kill(inner.handle)
    with pytest.raises(SandboxError):
        lease.exec("true", timeout=5)
    lease.close()
    with docker_pool.acquire() as fresh:
        assert fresh.exec("echo ok").stdout == "ok\n"


def test_pool_and_provider_work_for_local():
    if not bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    with SandboxPool(get_provider("local"), size=1) as pool:
        with pool.acquire() as sb:
            sb.write_file("a", "1")
        with pool.acquire() as sb:
            assert sb.exec("ls -A").stdout == ""


# ---------------------------------------------------------------------- reaper and CLI
KILLED_OWNER = """
import sys, time
from agentgym.sandbox import open_sandbox
sb = open_sandbox("docker")
print(sb.handle, flush=True)
time.sleep(600)
"""


def test_kill_9_of_the_owner_leaves_no_container(docker_pool):
    client = docker_pool.provider.client
    proc = subprocess.Popen([sys.executable, "-c", KILLED_OWNER], stdout=subprocess.PIPE, text=True)
    cid = proc.stdout.readline().strip()
    assert cid and client.api.inspect_container(cid)["State"]["Running"]
    proc.kill()
    proc.wait()
    from agentgym.sandbox.reaper import reap_orphans

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        reap_orphans(client)  # the reaper; stdin EOF usually stopped the container already
        # the low-level list: the high-level one inspects each container and races auto-removal
        if not client.api.containers(all=True, filters={"id": cid}):
            break
        time.sleep(0.5)
    assert not client.api.containers(all=True, filters={"id": cid})


def test_cleanup_cli_removes_orphans_only(docker_pool):
    client = docker_pool.provider.client
    provider = docker_pool.provider
    spec = provider.container_spec(["sleep", "600"])
    host = __import__("socket").gethostname()
    spec["labels"] = {**spec["labels"], "agentgym.owner": f"{host}:999999:1"}  # no such process
    spec["stdin_open"] = False
    orphan = client.api.create_container(**spec)["Id"]
    client.api.start(orphan)
    with docker_pool.acquire() as mine:
        result = CliRunner().invoke(app, ["sandbox", "cleanup"])
        assert result.exit_code == 0, result.output
        assert "owner process is gone" in result.output
        assert not client.api.containers(all=True, filters={"id": orphan})
        assert mine.exec("echo alive").stdout == "alive\n"  # a live owner's container stays


def test_doctor_reports_each_provider():
    result = CliRunner().invoke(app, ["sandbox", "doctor"])
    assert result.exit_code == 0
    for row in ("bubblewrap", "docker engine", "debootstrap"):
        assert row in result.output
    row = next(line for line in result.output.splitlines() if "debootstrap" in line)
    found = shutil.which("debootstrap")  # the detail is what was found, or how to install it
    assert (found in row and " ok " in row) if found else ("apt-get" in row and " no " in row)


class _ScriptedChannel(Channel):
    """Replies with the server's hello at once, then reports the process gone."""

    def __init__(self, lines: list[bytes]) -> None:
        super().__init__()
        self.lines = lines

    def _write(self, data: bytes) -> None:
        pass

    def recv_line(self) -> bytes:
        return self.lines.pop(0) if self.lines else b""

    def close(self) -> None:
        pass


def test_ready_reply_that_arrives_before_wait_ready_is_not_lost():
    """The reply reader may take the hello before the caller waits for it (seen in CI)."""
    sandbox = ServerSandbox(_ScriptedChannel([b'{"id": 0, "ok": true}\n']), lambda s: None)
    time.sleep(0.2)  # the reader has answered the hello and seen the process exit
    sandbox.wait_ready(1.0)


def test_server_that_dies_before_wait_ready_is_a_sandbox_error():
    sandbox = ServerSandbox(_ScriptedChannel([]), lambda s: None)
    time.sleep(0.2)
    with pytest.raises(SandboxError, match="exited"):
        sandbox.wait_ready(1.0)
