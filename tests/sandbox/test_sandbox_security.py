"""Containment: no network, host invisible, fork bomb / memory hog / disk filler contained,
timeouts kill whole process trees (the kill -9 reaper test is in test_sandbox.py)."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest

from agentgym.sandbox import SandboxConfig, SandboxPool, get_provider, open_sandbox
from agentgym.sandbox.local import bwrap_works
from agentgym.sandbox.testing import require_docker

CONNECT = (
    "import socket; socket.create_connection(('{host}', {port}), timeout=3); print('connected')"
)


@pytest.fixture(scope="module")
def docker_pool():
    require_docker()
    pool = SandboxPool(
        get_provider("docker", SandboxConfig(memory="512m", pids=128)), size=1
    ).start()
    yield pool
    pool.close()


@pytest.fixture(params=["docker", "local"])
def box(request, docker_pool_lazy):
    if request.param == "docker":
        with docker_pool_lazy().acquire() as sb:
            yield sb
    else:
        if not bwrap_works():
            pytest.skip("bubblewrap is not usable here")
        with open_sandbox("local") as sb:
            yield sb


@pytest.fixture(scope="module")
def docker_pool_lazy(request):
    return lambda: request.getfixturevalue("docker_pool")


@pytest.fixture(scope="module")
def host_marker():
    path = Path(f"/tmp/agentgym-host-marker-{uuid.uuid4().hex}")
    path.write_text("host secret")
    yield path
    path.unlink()


def test_no_network(box):
    for target in ("1.1.1.1', 53", "127.0.0.1', 1"):
        host, port = target.split("', ")
        r = box.exec(["python3", "-c", CONNECT.format(host=host, port=port)])
        assert r.returncode != 0 and "connected" not in r.stdout
    assert box.exec("ls /sys/class/net 2>/dev/null || echo none").stdout.split() in (
        ["lo"],
        ["none"],
        [],
    )
    r = box.exec(["python3", "-c", "import socket; socket.getaddrinfo('pypi.org', 443)"])
    assert r.returncode != 0


def test_host_files_are_invisible(box, host_marker):
    r = box.exec(
        f"cat {host_marker} /root/.bash_history /etc/shadow 2>&1; ls /home /work/main 2>&1"
    )
    assert "host secret" not in r.stdout
    assert box.exec(["ls", str(Path(__file__).resolve().parents[1])]).returncode != 0  # the repo
    assert (
        box.exec("hostname").stdout.strip() in ("sandbox", "") and socket.gethostname() != "sandbox"
    )


def test_root_is_read_only_and_disk_fillers_hit_the_cap(box):
    for path in ("/usr/x", "/etc/x", "/x"):
        assert box.exec(["touch", path]).returncode != 0
    r = box.exec(
        "head -c 400000000 /dev/zero > /work/fill; echo rc=$?; df -k /work | tail -1", timeout=60
    )
    assert "rc=1" in r.stdout and "No space left" in r.stderr
    assert box.exec("echo alive").stdout == "alive\n"


def test_timeout_kills_the_whole_tree_even_a_new_session(box):
    with pytest.raises(TimeoutError):
        box.exec("setsid sleep 97 & (sleep 97 &) ; sleep 97", timeout=1)
    procs = box.exec(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"]).stdout
    assert "sleep 97" not in procs


def test_fork_bomb_is_contained(docker_pool):
    with docker_pool.acquire() as sb:
        try:
            r = sb.exec("bomb() { bomb | bomb & }; bomb", timeout=8)
            assert r.returncode is not None
        except TimeoutError:
            pass
        assert sb.exec("echo alive", timeout=30).stdout == "alive\n"
        assert int(sb.exec("ls /proc | grep -c '^[0-9]'").stdout) < 20  # the bomb is gone
    with docker_pool.acquire() as other:
        assert other.exec("echo ok").stdout == "ok\n"


def test_memory_hog_is_killed_not_the_sandbox(docker_pool):
    hog = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 2**20))"
    with docker_pool.acquire() as sb:
        r = sb.exec(["python3", "-c", hog], timeout=60)
        assert r.returncode in (-9, 137, 1) and r.returncode != 0  # OOM-killed (or MemoryError)
        assert sb.exec("echo alive").stdout == "alive\n"


def test_network_is_an_explicit_opt_in():
    require_docker()
    provider = get_provider("docker", SandboxConfig(network=True))
    try:
        sb = provider.create()
        with sb:
            assert "eth0" in sb.exec("ls /sys/class/net").stdout.split()
    finally:
        provider.close_all()
