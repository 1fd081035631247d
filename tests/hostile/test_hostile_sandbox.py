"""Hostile tenants against the sandbox: files a reset must not leave to
the next lease, and reads that must stay linear and capped. Each probe failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgym.sandbox.local import bwrap_works
from agentgym.sandbox.testing import started_pool

PLACES = "/tmp /dev/shm /work"
HIDE = (  # folders their owner cannot enter or empty: rmtree(ignore_errors=True) left them whole
    f"for d in {PLACES}; do mkdir -p $d/d/e; echo SECRET > $d/d/s; echo SECRET > $d/d/e/s;"
    f" chmod 000 $d/d/e; chmod 500 $d/d; done; ls -A {PLACES} | grep -c '^d$'"
)
SEEK = (
    f"for d in {PLACES}; do chmod 700 $d/d $d/d/e 2>/dev/null; cat $d/d/s $d/d/e/s 2>/dev/null;"
    f" done; ls -A {PLACES} | grep -c '^d$'"
)


@pytest.mark.parametrize("provider", ["docker", "local"])
def test_a_folder_its_owner_locked_is_gone_after_a_reset(provider):
    with started_pool(provider) as pool:
        with pool.acquire() as first:
            assert first.exec(["sh", "-c", HIDE]).stdout.split() == ["3"]
            handle = first._inner.handle
        with pool.acquire() as second:  # the same sandbox, reset (not replaced)
            assert second._inner.handle == handle
            seen = second.exec(["sh", "-c", SEEK])
            assert "SECRET" not in seen.stdout and seen.stdout.split() == ["0"], seen.stdout


@pytest.mark.parametrize("provider", ["docker", "local"])
def test_the_issue_probe_a_locked_folder_in_tmp_alone(provider):
    """The probe as filed: only /tmp, which the reset did not check, so the box was reused."""
    with started_pool(provider) as pool:
        with pool.acquire() as first:
            first.exec(["sh", "-c", "mkdir /tmp/d; echo SECRET > /tmp/d/s; chmod 500 /tmp/d"])
        with pool.acquire() as second:
            seen = second.exec(["sh", "-c", "chmod 700 /tmp/d; cat /tmp/d/s; ls -A /tmp"])
            assert seen.stdout == "", seen.stdout


DEEP = (  # deeper than PATH_MAX: removal by path fails, so the reset must not pass
    "cd /tmp; n=$(printf 'd%.0s' $(seq 200)); for i in $(seq 40); do mkdir $n && cd $n || break;"
    " done; echo SECRET > s; chmod 500 ."
)


@pytest.mark.parametrize("provider", ["docker", "local"])
def test_a_tree_too_deep_to_remove_is_not_lent_again(provider):
    with started_pool(provider) as pool:
        with pool.acquire() as first:
            first.exec(["sh", "-c", DEEP])
            handle = first._inner.handle
        with pool.acquire() as second:
            assert second._inner.handle != handle  # replaced, not reset
            assert second.exec(["ls", "-A", "/tmp"]).stdout == ""


def test_a_reset_that_cannot_empty_a_place_replaces_the_sandbox():
    """What a reset cannot remove, in any writable place, it names, and the pool then replaces the
    sandbox instead of lending it again (``SandboxPool._recycle``). Here the command server runs
    as nobody beside a scratch folder holding a file nobody may remove."""
    import os
    import sys
    import tempfile

    from agentgym.sandbox.channel import ProcessChannel
    from agentgym.sandbox.client import ServerSandbox, server_command, server_source_line

    if os.geteuid() == 0:
        wrap = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    else:
        wrap = []
    with tempfile.TemporaryDirectory() as root:
        work, scratch = os.path.join(root, "work"), os.path.join(root, "scratch")
        os.makedirs(work)
        os.makedirs(os.path.join(scratch, "theirs"))
        Path(scratch, "theirs", "s").write_text("SECRET")
        os.chmod(root, 0o755)
        os.chmod(work, 0o777)
        os.chmod(scratch, 0o755)  # the server's user may not remove what is in here
        channel = ProcessChannel([*wrap, *server_command(sys.executable, [work, scratch])])
        channel.send_line(server_source_line())
        box = ServerSandbox(channel, on_close=lambda b: b.shutdown_channel())
        box.wait_ready(30)
        try:
            with pytest.raises(Exception, match=r"reset left files behind: .*scratch.*theirs"):
                box.reset()
        finally:
            box.close()


# ---------------------------------------------------------------------------- 5: reads
@pytest.mark.parametrize("provider", ["docker", "local"])
def test_reading_dev_zero_is_an_output_limit_error_and_the_sandbox_lives_on(provider):
    from agentgym.sandbox import OutputLimitExceeded

    with started_pool(provider) as pool, pool.acquire() as box:
        with pytest.raises(OutputLimitExceeded, match=r"/dev/zero: more than 104857600 bytes"):
            box.read_file("../../../../dev/zero")  # Swe's `view ../../../../dev/zero`
        box.exec(["mkfifo", "pipe"])
        with pytest.raises(OSError, match="pipe is not a regular file"):
            box.read_file("pipe")  # opening a FIFO would wait for a writer forever
        box.exec(["sh", "-c", "head -c 50000000 /dev/zero | tr '\\0' x > big"])
        assert box.read_file("big") == "x" * 50_000_000  # large reads still arrive whole
        assert box.exec(["echo", "alive"]).stdout == "alive\n"


def _attach_pair(max_line: int):
    import socket

    from agentgym.sandbox.channel import AttachChannel

    ours, theirs = socket.socketpair()
    channel = AttachChannel(ours)
    channel.max_line = max_line
    return channel, theirs


def _frames(data: bytes, size: int = 32 << 10) -> bytes:
    """``data`` as the Docker engine multiplexes stdout: 8-byte headers, frames of ``size``."""
    import struct

    return b"".join(
        b"\1\0\0\0" + struct.pack(">I", len(data[i : i + size])) + data[i : i + size]
        for i in range(0, len(data), size)
    )


def test_attach_channel_reads_a_long_line_in_frames_and_refuses_one_past_its_cap():
    import contextlib
    import threading

    channel, theirs = _attach_pair(max_line=8 << 20)
    line = b"a" * (6 << 20) + b"\n"
    stream = _frames(b"one\ntwo\n" + line + b"x" * (9 << 20) + b"\nlost\n")

    def send() -> None:
        with contextlib.suppress(OSError):  # the channel stops reading past its cap
            theirs.sendall(stream)

    threading.Thread(target=send, daemon=True).start()
    assert [channel.recv_line(), channel.recv_line()] == [b"one\n", b"two\n"]
    assert channel.recv_line() == line
    assert channel.recv_line() == b""  # past the cap: the channel gives up, memory stays bounded
    assert channel.failure == f"a line of more than {8 << 20} bytes came from the sandbox"
    theirs.close()


# ---------------------------------------------------------------------------- 8: worker mounts
WORKER_PROBE = """
import json, sys
from agentgym.sandbox.local import LocalProvider
import agentgym
provider = LocalProvider()
look = "import os, sys; print(os.path.exists(sys.argv[1]), os.path.exists(sys.argv[2]))"
channel, handle = provider.spawn([sys.executable, "-c", look, sys.argv[1], sys.argv[2]])
seen = channel.recv_line().decode().split()
provider.remove(handle)
print(json.dumps(seen), flush=True)
env = agentgym.make("agentgym/Clarify-v0", isolate="local")
obs, _ = env.reset(seed=0)
env.close()
print(json.dumps(bool(obs)))
"""


def test_an_env_worker_sees_neither_the_current_folder_nor_pythonpath_folders(tmp_path):
    """``python -m`` puts the current folder on sys.path, and PYTHONPATH adds its folders: the
    worker used to get every one of them mounted, and read a secret.txt there."""
    import json
    import os
    import subprocess
    import sys

    if not bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    here, extra = tmp_path / "here", tmp_path / "extra"
    here.mkdir()
    extra.mkdir()
    (here / "secret.txt").write_text("SECRET")
    (extra / "secret.txt").write_text("SECRET")
    (here / "probe.py").write_text(WORKER_PROBE)
    checkout = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([checkout, str(extra)]))
    args = [str(here / "secret.txt"), str(extra / "secret.txt")]
    r = subprocess.run([sys.executable, "-m", "probe", *args], cwd=here, env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert json.loads(r.stdout.splitlines()[0]) == ["False", "False"]  # cwd, PYTHONPATH folder
    assert r.returncode == 0 and json.loads(r.stdout.splitlines()[-1]) is True, r.stderr[-3000:]
