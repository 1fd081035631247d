"""`agentgym env serve` through openenv-core's own client (GenericEnvClient), unchanged."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("openenv")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402

import agentgym  # noqa: E402
from agentgym.agent import agent_factory  # noqa: E402
from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings  # noqa: E402

ENV_IDS = [s.id for s in agentgym.list_envs() if str(s.entry_point).startswith("agentgym.envs.")]
"""Every built-in env family (the wrapped other stacks' envs have tests of their own)."""
PLAYER = {
    "agentgym/Social-v0": "scripted:follower"
}  # an env without an expert: its scripted player


def local_run(env_id: str, task, seed: int, player: str = "expert"):
    """(first observation, [(action, observation, reward, done)]) of a local episode."""
    env = agentgym.make(env_id)
    agent = agent_factory(player)(env)
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.reset({**info, "seed": seed})
    first, steps = obs, []
    while True:
        action = agent.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((action, obs, reward, terminated or truncated))
        if terminated or truncated:
            break
    env.close()
    return first, steps, info


@pytest.fixture
def server(request):
    servers = []

    def start(env_id: str, **kwargs) -> EnvServerThread:
        settings = ServeSettings(env_id, **kwargs.pop("settings", {}))
        servers.append(EnvServerThread(settings, **kwargs))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_generic_client_plays_every_env_as_locally(server, env_id):
    """The first 3 tasks of each env's own suite: the expert's actions (the scripted player's
    where the env has no expert), sent through openenv-core's client, give the observations and
    rewards of a local run, and the expert's episodes end in success with a positive reward."""
    url = server(env_id, max_sessions=2).url
    suite = agentgym.make(env_id).suite
    player = PLAYER.get(env_id, "expert")
    with GenericEnvClient(base_url=url).sync() as client:
        for task in suite.tasks[:3]:
            first, steps, final_info = local_run(env_id, task, seed=0, player=player)
            result = client.reset(task=task.id, seed=0)
            assert result.observation["text"] == first
            assert result.observation["info"]["task_id"] == task.id
            assert result.done is False
            for action, obs, reward, done in steps:
                result = client.step({"message": action})
                assert result.observation["text"] == obs
                assert result.reward == pytest.approx(reward)
                assert result.done is done
            info = result.observation["info"]
            assert info.get("success") == final_info.get("success")
            assert info.get("score") == final_info.get("score")
            if player == "expert":
                assert info["success"] is True and result.reward > 0
            state = client.state()
            assert state["task_id"] == task.id and state["step_count"] == len(steps)


def test_schema_health_and_traits_describe_the_env(server):
    import httpx

    url = server("Clarify-v0").url
    schema = httpx.get(f"{url}/schema").json()
    assert schema["action"]["required"] == ["message"]
    assert schema["action"]["properties"]["message"]["type"] == "string"
    assert {"text", "info", "terminated", "truncated"} <= set(schema["observation"]["properties"])
    assert httpx.get(f"{url}/health").json() == {"status": "healthy"}
    traits = httpx.get(f"{url}/agentgym").json()
    assert traits["env_id"] == "agentgym/Clarify-v0"
    assert traits["system_prompt"] == agentgym.make("Clarify-v0").system_prompt
    assert traits["default_suite"] == "clarify/test"


def test_reset_by_seed_draws_as_a_local_env_does(server):
    url = server("Clarify-v0").url
    env = agentgym.make("Clarify-v0")
    with GenericEnvClient(base_url=url).sync() as client:
        for seed in (0, 7):
            obs, info = env.reset(seed=seed)
            result = client.reset(seed=seed)
            assert result.observation["text"] == obs
            assert result.observation["info"]["task_id"] == info["task_id"]


def test_64_concurrent_sessions_each_match_a_local_run(server):
    """64 sessions at once on one server, stepped in interleaved order: every session's
    trajectory is its own local run's (no session sees another's state)."""
    url = server("Clarify-v0", max_sessions=64).url
    tasks = agentgym.make("Clarify-v0").suite.tasks
    jobs = [(tasks[i % len(tasks)], i) for i in range(64)]
    expected = [local_run("Clarify-v0", task, seed) for task, seed in jobs]

    async def play(i: int) -> list[str]:
        task, seed = jobs[i]
        client = GenericEnvClient(base_url=url, message_timeout_s=120)
        async with client:
            seen = [(await client.reset(task=task.id, seed=seed)).observation["text"]]
            for action, *_ in expected[i][1]:
                await asyncio.sleep(0)  # let the other sessions step in between
                result = await client.step({"message": action})
                seen.append(result.observation["text"])
            return seen

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(play(i) for i in range(64)))

    seen = asyncio.run(main())
    for i, (first, steps, _) in enumerate(expected):
        assert seen[i] == [first] + [obs for _, obs, _, _ in steps], f"session {i}"


def test_bad_messages_get_protocol_errors_and_the_session_goes_on(server):
    from websockets.sync.client import connect

    srv = server("TauMock-v0", max_sessions=1)
    ws_url = srv.url.replace("http://", "ws://") + "/ws"
    with connect(ws_url) as ws:

        def ask(raw: str) -> dict:
            ws.send(raw)
            return json.loads(ws.recv(timeout=30))

        assert ask("not json")["data"]["code"] == "INVALID_JSON"
        assert ask(json.dumps({"type": "dance"}))["data"]["code"] == "UNKNOWN_TYPE"
        step_first = ask(json.dumps({"type": "step", "data": {"message": "hi"}}))
        assert "send reset" in step_first["data"]["message"]
        bad_action = ask(json.dumps({"type": "step", "data": {"text": "hi"}}))
        assert bad_action["type"] == "error"
        bad_reset = ask(json.dumps({"type": "reset", "data": {"level": 3}}))
        assert "reset got level" in bad_reset["data"]["message"]
        unknown_task = ask(json.dumps({"type": "reset", "data": {"task": "no-such-task"}}))
        assert "no-such-task" in unknown_task["data"]["message"]
        ok = ask(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert ok["type"] == "observation" and ok["data"]["observation"]["text"]


def test_a_client_that_drops_mid_episode_frees_its_session(server):
    """With one session allowed, a client that vanishes mid-episode must not keep the slot."""
    from websockets.sync.client import connect

    srv = server("TauMock-v0", max_sessions=1)
    with connect(srv.url.replace("http://", "ws://") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        ws.socket.shutdown(socket.SHUT_RDWR)  # gone without a close frame
        deadline = time.monotonic() + 20
        while srv.env_server.active_sessions and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.env_server.active_sessions == 0
    with GenericEnvClient(base_url=srv.url).sync() as client:
        assert client.reset(seed=0).observation["text"]


def test_an_idle_session_is_closed_and_the_next_client_served(server):
    from websockets.exceptions import ConnectionClosed

    srv = server("TauMock-v0", max_sessions=1, idle_timeout_s=0.5)  # reaped within ~5 s
    idle = GenericEnvClient(base_url=srv.url).sync()
    idle.connect()
    idle.reset(seed=0)
    deadline = time.monotonic() + 30
    while srv.env_server.active_sessions and time.monotonic() < deadline:
        time.sleep(0.1)
    assert srv.env_server.active_sessions == 0
    with pytest.raises((RuntimeError, ConnectionClosed), match="idle|closed|Closed|1000"):
        idle.step({"message": "hello"})
    idle.close()
    with GenericEnvClient(base_url=srv.url).sync() as client:  # the slot is free again
        assert client.reset(seed=0).observation["text"]


def test_isolated_sessions_run_in_the_sandbox_as_locally(server):
    """``--isolate local``: each session's env runs in a bubblewrap sandbox."""
    from agentgym.sandbox.providers import provider_names

    if "local" not in provider_names():
        pytest.skip("no local sandbox provider")
    url = server("Clarify-v0", settings={"isolate": "local"}, max_sessions=2).url
    task = agentgym.make("Clarify-v0").suite.tasks[0]
    first, steps, _ = local_run("Clarify-v0", task, seed=0)
    with GenericEnvClient(base_url=url, message_timeout_s=120).sync() as client:
        assert client.reset(task=task.id, seed=0).observation["text"] == first
        for action, obs, _, _ in steps:
            assert client.step({"message": action}).observation["text"] == obs


def test_cli_serves_until_sigterm_then_exits_cleanly(tmp_path):
    """`agentgym env serve` answers a client, and SIGTERM closes its sessions and exits 0."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym.cli", "env", "serve", "TauMock-v0", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "400"},
    )
    try:
        line = proc.stdout.readline()  # "serving ... at http://127.0.0.1:PORT ..."
        assert "serving agentgym/TauMock-v0 at http://127.0.0.1:" in line, line
        url = line.split(" at ")[1].split()[0]
        client = GenericEnvClient(base_url=url).sync()
        client.connect()
        assert client.reset(seed=0).observation["text"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "every session closed" in proc.stderr.read()
        with pytest.raises(Exception):  # noqa: B017 - the server is gone: any transport error
            client.step({"message": "hi"})
        client.close()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_cli_refuses_bad_arguments_in_one_line():
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "agentgym.cli", "env", "serve", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    for args, says in [
        (("Nope-v0",), "no environment 'Nope-v0'"),
        (("Clarify-v0", "-E", "bogus=1"), "has no option 'bogus'"),
        (("Clarify-v0", "--suite", "nope/x"), "no task suite 'nope/x'"),
        (("Clarify-v0", "--isolate", "vm"), "isolate='vm'"),
    ]:
        done = run(*args)
        assert done.returncode == 2, done.stderr
        assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
