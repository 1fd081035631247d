"""The ``openenv:`` client against hostile OpenEnv servers: real HTTP/WebSocket servers on
127.0.0.1 (FastAPI and uvicorn in a thread) that answer with extreme rewards, never end an
episode, send huge observations, malformed self-descriptions, or are full. Each becomes one clear
line (an error episode, or a refused env id) naming the server; a full server is waited for."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("openenv")

from fastapi import FastAPI, WebSocket  # noqa: E402
from fastapi.responses import HTMLResponse, JSONResponse  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402

import agentgym  # noqa: E402
from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings  # noqa: E402
from agentgym.llm.server import ServerThread  # noqa: E402
from agentgym.task import Task, TaskSuite  # noqa: E402

SCHEMA = {
    "action": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    }
}


@dataclass
class Hostile:
    """How the server misbehaves; tests change it between episodes."""

    step_answer: str = '{"observation": {"echo": "ok"}, "reward": 0.5, "done": false}'
    """The raw JSON of the ``data`` of every step's answer (a literal ``1e309`` parses to inf)."""
    schema: Any = field(default_factory=lambda: SCHEMA)
    schema_html: bool = False
    agentgym: Any = None
    """What ``GET /agentgym`` answers (None: 404, a foreign server)."""
    refuse: int = 0
    """How many new sessions to turn away before serving one."""
    refuse_code: int = 1013
    connections: int = 0


def hostile_app(h: Hostile) -> FastAPI:
    app = FastAPI()

    @app.get("/schema")
    def schema() -> Any:
        return HTMLResponse("<html><body>hi</body></html>") if h.schema_html else h.schema

    @app.get("/agentgym")
    def traits() -> Any:
        return JSONResponse(h.agentgym) if h.agentgym is not None else JSONResponse({}, 404)

    @app.websocket("/ws")
    async def ws(socket: WebSocket) -> None:
        await socket.accept()
        h.connections += 1
        if h.refuse > 0:
            h.refuse -= 1
            await socket.close(code=h.refuse_code, reason="server full: 1 sessions")
            return
        try:
            while True:
                message = json.loads(await socket.receive_text())
                if message["type"] == "close":
                    return
                data = (
                    '{"observation": {"echo": "ready"}, "reward": null, "done": false}'
                    if message["type"] == "reset"
                    else h.step_answer
                )
                await socket.send_text(f'{{"type": "observation", "data": {data}}}')
        except WebSocketDisconnect:
            return

    return app


@pytest.fixture
def hostile():
    h = Hostile()
    server = ServerThread(hostile_app(h))
    yield h, "openenv:" + server.url.removesuffix("/v1")
    server.stop()


def _episode(env_id: str, tmp_path, **options) -> tuple[dict, Any]:
    """One random-agent episode of ``env_id`` through ``agentgym.evaluate`` (no step limit):
    (row, episode)."""
    suite = TaskSuite("hostile", [Task(id="t", env=env_id, instruction="go")])
    result = agentgym.evaluate(
        suite, "random", db=tmp_path / "h.db", env_options=options, time_limit_s=120
    )  # the time limit only stops a regression from hanging the test run
    (row,) = result.episode_rows()
    (episode,) = result.store.episodes(result.run_id)
    result.store.close()
    return row, episode


def test_an_infinite_reward_is_an_error_episode_naming_the_server(hostile, tmp_path):
    h, env_id = hostile
    h.step_answer = '{"observation": {"echo": "x"}, "reward": 1e309, "done": true}'
    row, episode = _episode(env_id, tmp_path)
    assert row["status"] == "error"
    assert episode.error == (
        f"{env_id}'s reward is inf: refused, rewards are finite numbers in [-1e6, 1e6]"
    )


def test_success_as_text_is_refused_not_counted(hostile, tmp_path):
    h, env_id = hostile
    h.step_answer = '{"observation": {"metadata": {"success": "false"}}, "done": true}'
    row, episode = _episode(env_id, tmp_path)
    assert row["status"] == "error" and not row["success"]
    assert "info['success'] is 'false' (str): refused" in episode.error


@pytest.mark.parametrize("options, steps", [({}, 200), ({"max_steps": 7}, 7)])
def test_a_server_that_never_ends_an_episode_is_cut_at_max_steps(hostile, tmp_path, options, steps):
    """No ``--max-steps``: the client's own bound (200, or the env option) ends it, stored as a
    limit."""
    row, episode = _episode(hostile[1], tmp_path, **options)
    assert (row["status"], row["steps"]) == ("limit", steps)
    assert episode.steps[-1].truncated and not episode.steps[-1].terminated


def test_max_steps_must_be_positive(hostile):
    with pytest.raises(ValueError, match="max_steps=0: give a step count >= 1"):
        agentgym.make(hostile[1], max_steps=0)


def test_an_observation_over_the_limit_is_refused(hostile, tmp_path):
    h, env_id = hostile
    text = "x" * ((1 << 20) + 1)  # 1 Mi + 1 characters: a message under the 2 MiB bound
    h.step_answer = json.dumps({"observation": {"echo": text}, "reward": 0, "done": True})
    row, episode = _episode(env_id, tmp_path)
    assert row["status"] == "error"
    assert f"{env_id} sent an observation of 1048577 characters: refused" in episode.error
    assert episode.n_steps == 0


def test_a_message_over_the_transport_bound_closes_the_session(hostile, tmp_path):
    h, env_id = hostile
    h.step_answer = json.dumps({"observation": {"echo": "y" * (3 << 20)}, "done": True})
    row, episode = _episode(env_id, tmp_path)
    assert row["status"] == "error"
    assert f"{env_id} sent a message over 2 MiB" in episode.error
    assert "the session is closed" in episode.error


@pytest.mark.parametrize(
    "setup, words",
    [
        (dict(schema=[]), "/schema is a JSON list, not the object OpenEnv sends"),
        (dict(agentgym=[1, 2]), "/agentgym is a JSON list, not the object OpenEnv sends"),
        (dict(schema_html=True), "/schema is not JSON (it starts '<html><body>hi</body></html>')"),
        (dict(agentgym={"env_id": 5}), "/agentgym field 'env_id': Input should be a valid string"),
        (
            dict(agentgym={"env_id": "x", "action_max_tokens": "many"}),
            "/agentgym field 'action_max_tokens': Input should be a valid integer",
        ),
        (dict(schema={"action": {"required": "message"}}), "/schema action field 'required'"),
    ],
)
def test_a_malformed_self_description_is_one_line_naming_the_server(hostile, setup, words):
    h, env_id = hostile
    for k, v in setup.items():
        setattr(h, k, v)
    with pytest.raises(ValueError) as e:
        agentgym.make(env_id)
    message = str(e.value)
    assert message.startswith(f"{env_id}: ") and words in message and "\n" not in message


@pytest.mark.parametrize("code", [1013, 1000])
def test_a_full_server_is_waited_for(hostile, code):
    """Close code 1013, or a close before the first answer: the client tries again."""
    h, env_id = hostile
    h.refuse, h.refuse_code = 3, code
    env = agentgym.make(env_id)
    obs, _ = env.reset(seed=0)
    assert obs == "ready" and h.connections == 4
    env.close()


def test_a_server_that_stays_full_is_one_clear_error(hostile):
    h, env_id = hostile
    h.refuse = 10**6
    env = agentgym.make(env_id, full_wait_s=0.3)
    with pytest.raises(ConnectionError) as e:
        env.reset(seed=0)
    assert str(e.value) == (
        f"{env_id} is full (server full: 1 sessions) and no session freed up in 0.3 s "
        "(env option full_wait_s)"
    )


def test_a_policy_close_is_not_waited_for(hostile):
    h, env_id = hostile
    h.refuse, h.refuse_code = 10**6, 1008
    env = agentgym.make(env_id, full_wait_s=600)
    with pytest.raises(ConnectionError, match=r"closed the session \(close code 1008"):
        env.reset(seed=0)
    assert h.connections <= 2  # openenv's client reopens a socket closed before its first send


def test_the_agentgym_server_at_capacity_is_waited_for_until_a_session_frees():
    """``agentgym env serve --max-sessions 1`` with its one session taken: the reset waits for
    it rather than failing, and a session that never frees is a clear error."""
    server = EnvServerThread(ServeSettings("TauMock-v0"), max_sessions=1)
    try:
        held = GenericEnvClient(base_url=server.url).sync()
        held.connect()
        held.reset(seed=0)
        env_id = f"openenv:{server.url}"
        with pytest.raises(ConnectionError, match=f"{env_id} is full "):
            agentgym.make(env_id, full_wait_s=0.2).reset(seed=0)
        env = agentgym.make(env_id, full_wait_s=120)
        answer: list[Any] = []
        waiting = threading.Thread(target=lambda: answer.append(env.reset(seed=0)))
        waiting.start()
        time.sleep(1.0)  # the waiting reset has been turned away by now (not asserted)
        held.close()
        waiting.join(timeout=180)
        assert answer and answer[0][0]
        env.close()
    finally:
        server.stop()
