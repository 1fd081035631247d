"""`agentgym env serve` through OpenEnv's own client (GenericEnvClient), unchanged."""

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

ENV_IDS = [s.id for s in agentgym.list_envs() if s.id.startswith("agentgym/")]
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
    # openenv 0.10's client opens a new session for a socket the server closed: one without
    # an episode, which says to reset first; the idle episode does not come back either way
    with pytest.raises((RuntimeError, ConnectionClosed), match="idle|closed|Closed|1000|reset"):
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


@pytest.mark.slow  # four CLI processes, one after another
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


# ------------------------------------------------------------------------- the gate: key, Host, Origin
KEY = "env-serve-key-0123456789"


def _ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def test_a_public_host_without_a_key_is_refused_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "agentgym.cli", "env", "serve", "Clarify-v0", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AGENTGYM_API_KEY": "", "COLUMNS": "400"},
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --host 0.0.0.0 is reachable"), lines
    assert "--api-key" in lines[0] and "AGENTGYM_API_KEY" in lines[0]


ROUTES = [
    ("GET", "/health"),
    ("GET", "/health/"),
    ("GET", "//health"),
    ("GET", "/HEALTH"),
    ("HEAD", "/health"),
    ("OPTIONS", "/health"),
    ("GET", "/schema"),
    ("GET", "/agentgym"),
    ("GET", "/state"),
    ("GET", "/metadata"),
    ("GET", "/docs"),
    ("GET", "/openapi.json"),
    ("POST", "/reset"),
    ("POST", "/step"),
    ("POST", "/mcp"),
    ("GET", "/ws"),
]


def test_with_a_key_every_route_and_the_websocket_want_it(server):
    import httpx
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    url = server("TauMock-v0", api_key=KEY).url
    for method, path in ROUTES:
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {KEY}"}):
            r = httpx.request(method, url + path, headers=headers, json={})
            assert r.status_code == 401, (method, path, headers, r.status_code)
        ok = httpx.request(method, url + path, headers={"Authorization": f"Bearer {KEY}"}, json={})
        assert ok.status_code != 401, (method, path)
    with pytest.raises(InvalidStatus) as refused:
        connect(_ws_url(url))
    assert refused.value.response.status_code == 401
    assert KEY not in refused.value.response.body.decode()
    with pytest.raises(ConnectionError):  # openenv-core's client without the key
        GenericEnvClient(base_url=url).sync().connect()
    with connect(_ws_url(url), additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"


def test_openenv_cores_client_and_agentgyms_pass_the_key(server, monkeypatch):
    """openenv-core's client sends the URL's password; ``openenv:URL`` sends $AGENTGYM_API_KEY
    (and the key shows in neither the env id nor an error)."""
    url = server("TauMock-v0", api_key=KEY).url
    keyed = url.replace("http://", f"http://agentgym:{KEY}@")
    with GenericEnvClient(base_url=keyed).sync() as client:
        assert client.reset(seed=0).observation["text"]
    monkeypatch.delenv("AGENTGYM_API_KEY", raising=False)
    with pytest.raises(ValueError, match="401"):
        agentgym.make(f"openenv:{url}")
    monkeypatch.setenv("AGENTGYM_API_KEY", KEY)
    env = agentgym.make(f"openenv:{url}")
    obs, _ = env.reset(seed=0)
    assert obs
    env.close()


def test_other_hosts_and_other_sites_get_no_answer_and_no_websocket(server):
    import httpx
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    url = server("TauMock-v0").url
    port = url.rsplit(":", 1)[1]
    assert httpx.get(f"{url}/health", headers={"Host": f"evil.example:{port}"}).status_code == 400
    for origin in ("http://evil.example", "null", f"http://localhost:{int(port) + 1}"):
        r = httpx.post(f"{url}/reset", json={"seed": 0}, headers={"Origin": origin})
        assert r.status_code == 403 and "Origin" in r.json()["detail"], origin
        with pytest.raises(InvalidStatus) as refused:  # a browser's cross-site WebSocket
            connect(_ws_url(url), origin=origin)
        assert refused.value.response.status_code == 403
    with pytest.raises(InvalidStatus) as rebound:  # DNS rebinding: the page's own name as Host
        connect(
            _ws_url(url),
            origin=f"http://evil.example:{port}",
            additional_headers={"Host": f"evil.example:{port}"},
        )
    assert rebound.value.response.status_code == 400
    same_site = httpx.post(f"{url}/reset", json={"seed": 0}, headers={"Origin": url})
    assert same_site.status_code == 200  # a page this server served (/docs) may use it
    with connect(_ws_url(url), origin=url) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"


# ------------------------------------------------------------------- bodies, client mistakes, /mcp
def test_bodies_over_8_mib_and_bodies_not_json_are_refused_before_they_are_read(server):
    import httpx

    url = server("TauMock-v0").url
    big = b'{"seed": 0, "task": "' + b"x" * (9 * 2**20) + b'"}'
    declared = httpx.post(f"{url}/reset", content=big, headers={"content-type": "application/json"})
    assert declared.status_code == 413 and "larger than" in declared.json()["detail"]

    def chunks():  # no Content-Length: refused as it streams in
        for start in range(0, len(big), 2**20):
            yield big[start : start + 2**20]

    streamed = httpx.post(
        f"{url}/step", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413
    for content_type in ("text/plain", "application/x-www-form-urlencoded", ""):
        r = httpx.post(
            f"{url}/reset", content=b'{"seed": 0}', headers={"content-type": content_type}
        )
        assert r.status_code == 415 and "must be JSON" in r.json()["detail"], content_type
    assert httpx.post(f"{url}/reset", json={"seed": 0}).status_code == 200


@pytest.mark.parametrize(
    ("route", "body", "says"),
    [
        ("/reset", {"task": "no-such-task"}, "no task 'no-such-task'"),
        ("/reset", {"level": 3}, "reset got level"),
        ("/reset", {"task": {"id": 1}}, "bad task object: id"),
        ("/reset", {"task": 7}, "task must be a task id or a task object"),
        ("/step", {"action": {"message": "hi"}}, "the HTTP /step is stateless"),
    ],
)
def test_http_client_mistakes_get_400_with_one_line(server, route, body, says):
    import httpx

    r = httpx.post(server("TauMock-v0").url + route, json=body)
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert says in detail and "\n" not in detail, detail


def test_http_mcp_takes_no_session_slot(server):
    """``POST /mcp openenv/session/create`` holds no slot (it has no connection to free it)."""
    import httpx

    srv = server("TauMock-v0", max_sessions=1)
    create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    for _ in range(3):
        answer = httpx.post(f"{srv.url}/mcp", json=create).json()
        assert "WebSocket" in answer["error"]["message"], answer
    assert srv.env_server.active_sessions == 0
    as_text = httpx.post(
        f"{srv.url}/mcp", content=json.dumps(create), headers={"content-type": "text/plain"}
    )
    assert as_text.status_code == 415
    with GenericEnvClient(base_url=srv.url).sync() as client:
        assert client.reset(seed=0).observation["text"]


def test_a_full_server_closes_with_1013_and_says_why(server):
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    srv = server("TauMock-v0", max_sessions=1)
    with connect(_ws_url(srv.url)) as first:
        first.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(first.recv(timeout=30))["type"] == "observation"
        with connect(_ws_url(srv.url)) as second:
            error = json.loads(second.recv(timeout=30))
            assert error["data"]["code"] == "CAPACITY_REACHED"
            assert error["data"]["message"].startswith("server full: 1 sessions")
            with pytest.raises(ConnectionClosed) as closed:
                second.recv(timeout=30)
        assert closed.value.rcvd.code == 1013
        assert closed.value.rcvd.reason.startswith("server full: 1 sessions")


# ------------------------------------------------------------- steps that run long, and shutdown
LONG_STEP = "```bash\nsleep 593\n```"
"""A step that runs 593 s, within the longest command a task may allow (600 s)."""


def _local_sandbox() -> None:
    from agentgym.sandbox.providers import provider_names

    if "local" not in provider_names():
        pytest.skip("no local sandbox provider")


def _swe_task(**config) -> dict:
    task = agentgym.make("Swe-v0").suite.tasks[0].model_dump(mode="json")
    task["config"].update(config)
    return task


def _running(command: str) -> bool:
    """Whether ``command`` runs on this machine (a local sandbox's process)."""
    found = subprocess.run(["pgrep", "-f", command], capture_output=True, text=True)
    return bool(found.stdout.strip())


def _sleeping() -> bool:
    """Whether the long step's ``sleep`` runs (in a sandbox of this machine)."""
    return _running("sleep 593")


def _wait_for(condition, what: str, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.1)


def test_a_clients_swe_task_cannot_ask_for_endless_commands(server):
    url = server("Swe-v0").url
    with GenericEnvClient(base_url=url).sync() as client:
        for field, limit in (("command_timeout", "600"), ("grade_timeout", "1800")):
            with pytest.raises(RuntimeError, match=f"{field}: .*less than or equal to {limit}"):
                client.reset(task=_swe_task(**{field: 1e9}))


def test_a_step_that_outlives_the_idle_timeout_frees_its_slot(server):
    """The idle reaper closes a session whose step runs past the timeout without waiting for
    the step (it waited for good), its sandboxed command is stopped, and the next client is
    served."""
    import threading

    _local_sandbox()
    srv = server(
        "Swe-v0", settings={"env_kwargs": {"sandbox": "local"}}, max_sessions=1, idle_timeout_s=1
    )
    stuck = GenericEnvClient(base_url=srv.url, message_timeout_s=900).sync()
    stuck.connect()
    stuck.reset(task=_swe_task(command_timeout=600))
    answer: list[object] = []

    def step() -> None:
        try:
            answer.append(stuck.step({"message": LONG_STEP}))
        except Exception as e:  # noqa: BLE001 - what the client was told
            answer.append(e)

    thread = threading.Thread(target=step, daemon=True)
    thread.start()
    _wait_for(_sleeping, "the long step")
    _wait_for(lambda: srv.env_server.active_sessions == 0, "the reaping of the running step")
    thread.join(timeout=60)
    assert "idle for more than 1 s" in str(answer[0])
    _wait_for(lambda: not _sleeping(), "the end of the closed session's command")
    with GenericEnvClient(base_url=srv.url).sync() as client:
        assert client.reset(seed=0).observation["text"]
    stuck.close()


def test_a_client_that_leaves_during_a_step_leaves_no_traceback(server, capfd):
    """The step's answer finds its client gone (a trainer stopping its rollout worker): the
    session ends and the server logs nothing (openenv's handler then fails to send its error)."""
    _local_sandbox()
    srv = server("Swe-v0", settings={"env_kwargs": {"sandbox": "local"}}, max_sessions=1)
    with connect_ws(srv.url) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"task": _swe_task()}}))
        assert json.loads(ws.recv(timeout=120))["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"message": "```bash\nsleep 2.593\n```"}}))
        _wait_for(lambda: _running("sleep 2.593"), "the step")
    _wait_for(lambda: not _running("sleep 2.593"), "the end of the step")
    _wait_for(lambda: srv.env_server.active_sessions == 0, "the end of the session")
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception in ASGI application" not in err, err


def test_sigterm_during_a_running_step_exits_cleanly(tmp_path):
    """SIGTERM while a session's step runs: the client is told, the step's command stops, the
    process exits 0 without a traceback (it waited for the step, and logged CancelledError)."""
    _local_sandbox()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym.cli", "env", "serve", "Swe-v0", "-E", "sandbox=local"]
        + ["--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "400"},
    )
    try:
        url = proc.stdout.readline().split(" at ")[1].split()[0]
        with connect_ws(url) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"task": _swe_task(command_timeout=600)}}))
            assert json.loads(ws.recv(timeout=120))["type"] == "observation"
            ws.send(json.dumps({"type": "step", "data": {"message": LONG_STEP}}))
            _wait_for(_sleeping, "the long step")
            proc.send_signal(signal.SIGTERM)
            told = json.loads(ws.recv(timeout=120))
            assert "shutting down" in told["data"]["message"]
        assert proc.wait(timeout=120) == 0
        err = proc.stderr.read()
        assert "Traceback" not in err and "CancelledError" not in err, err
        assert "every session closed" in err
        _wait_for(lambda: not _sleeping(), "the end of the step's command")
    finally:
        if proc.poll() is None:
            proc.kill()


def connect_ws(url: str):
    from websockets.sync.client import connect

    return connect(_ws_url(url))
