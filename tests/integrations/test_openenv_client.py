"""``openenv:URL`` env ids: any OpenEnv server as an agentgym env, in make, eval and rollouts."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("openenv")

import httpx  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

import agentgym  # noqa: E402
from agentgym.cli import app  # noqa: E402
from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings  # noqa: E402
from agentgym.store import Store  # noqa: E402
from agentgym.task import Task, TaskSuite  # noqa: E402


@pytest.fixture(scope="module")
def household():
    """``agentgym env serve Household-v0 --expert``, in this process."""
    server = EnvServerThread(ServeSettings("Household-v0", expert=True), max_sessions=8)
    yield f"openenv:{server.url}"
    server.stop()


@pytest.fixture(scope="module")
def echo_env(tmp_path_factory):
    """The echo env that ``openenv init`` writes (the env openenv-core ships as its template),
    served by uvicorn as its own README says; yields its URL."""
    from openenv.cli.commands.init import init

    root = tmp_path_factory.mktemp("openenv")
    init("echo_env", str(root))  # `openenv init echo_env -o ROOT`
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "server.app:app", "--port", str(port)],
        cwd=root / "echo_env",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "echo env did not start"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_make_gives_the_remote_env_with_its_traits(household):
    env = agentgym.make(household)
    local = agentgym.make("Household-v0")
    assert env.spec.id == household
    assert env.system_prompt == local.system_prompt
    assert env.one_line_actions == local.one_line_actions
    assert env.default_suite == local.default_suite
    task = local.suite.tasks[1]
    remote_ep = agentgym.rollout(env, agentgym.ExpertAgent(env), task, seed=3)
    local_ep = agentgym.rollout(local, agentgym.ExpertAgent(local), task, seed=3)
    assert remote_ep.status == "completed" and remote_ep.success
    assert remote_ep.first_observation == local_ep.first_observation
    assert [s.observation for s in remote_ep.steps] == [s.observation for s in local_ep.steps]
    assert [s.reward for s in remote_ep.steps] == [s.reward for s in local_ep.steps]
    env.close()


def test_eval_through_openenv_stores_what_the_in_process_eval_stores(household, tmp_path):
    """`agentgym eval SUITE --env openenv:URL`: the same per-task outcomes as in process, for
    the expert and for the seeded random agent; a rerun resumes (adds nothing)."""
    runner = CliRunner()
    args = ["eval", "household/valid_unseen", "--limit", "6", "-a", "expert", "-a", "random"]
    args += ["--max-steps", "15", "-c", "3"]
    here = runner.invoke(app, [*args, "--db", str(tmp_path / "local.db")])
    assert here.exit_code == 0, here.output
    remote_args = [*args, "--db", str(tmp_path / "remote.db"), "--env", household]
    there = runner.invoke(app, remote_args)
    assert there.exit_code == 0, there.output

    def outcomes(db: str) -> dict:
        store = Store(tmp_path / db)
        out = {}
        for run in store.runs():
            for row in store.episode_rows(run["id"]):
                out[(run["agent"], row["task_id"])] = (row["success"], row["score"], row["status"])
        store.close()
        return out

    local, remote = outcomes("local.db"), outcomes("remote.db")
    assert len(local) == 12 and remote == local
    assert {s for s, _, _ in local.values()} == {True, False}  # the random agent fails some
    again = runner.invoke(app, remote_args)
    assert again.exit_code == 0, again.output
    assert outcomes("remote.db") == remote


def test_unknown_server_is_one_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ValueError, match=f"no OpenEnv server answers at http://127.0.0.1:{port}"):
        agentgym.make(f"openenv:http://127.0.0.1:{port}")
    with pytest.raises(ValueError, match="write openenv:http://HOST:PORT"):
        agentgym.make("openenv:localhost")
    done = CliRunner().invoke(
        app, ["eval", "clarify/test", "-a", "expert", "--env", f"openenv:http://127.0.0.1:{port}"]
    )
    assert done.exit_code == 2 and "no OpenEnv server answers" in done.output


def test_isolate_is_refused_for_a_remote_env(household):
    with pytest.raises(ValueError, match="on a server of its own"):
        agentgym.make(household, isolate="local")


def test_the_echo_env_openenv_ships_plays_as_an_agentgym_env(echo_env, tmp_path):
    """A foreign OpenEnv server: its one text action field takes the action, its one text
    observation field is the observation, its other fields the info; eval stores it."""
    env = agentgym.make(f"openenv:{echo_env}")
    assert env.action_field == "message" and not env.agentgym_server
    obs, info = env.reset(seed=0)
    assert obs == "Echo Env environment ready!" and info["message_length"] == 0
    obs, reward, terminated, truncated, info = env.step("hello")
    assert (obs, reward, terminated, truncated) == ("hello", pytest.approx(0.5), False, False)
    assert info["message_length"] == 5
    env.close()

    suite = TaskSuite("echo", [Task(id="say", env=f"openenv:{echo_env}", instruction="echo")])
    result = agentgym.evaluate(suite, "random", db=tmp_path / "echo.db", max_steps=3)
    (row,) = result.episode_rows()
    assert row["status"] == "limit" and row["steps"] == 3
    result.store.close()


def test_env_id_schemes_are_registry_entries():
    """``openenv:`` is one registered scheme; another distribution's scheme works the same way,
    and an id with an unregistered scheme is an unknown env id as before."""
    from agentgym.registry import SCHEMES, EnvSpec, scheme_of, spec

    calls = []

    def local_alias(env_id: str) -> EnvSpec:
        calls.append(env_id)
        base = spec(env_id.split(":", 1)[1])
        return EnvSpec(env_id, base.entry_point, {}, "alias", target=base.load())

    SCHEMES.register("alias", local_alias)
    try:
        env = agentgym.make("alias:TauMock-v0")
        assert env.spec.id == "alias:TauMock-v0" and env.reset(seed=0)[0]
        agentgym.make("alias:TauMock-v0")
        assert calls == ["alias:TauMock-v0"]  # resolved once per process
        assert scheme_of("openenv:http://x") == "openenv"
    finally:
        SCHEMES.items.pop("alias")
    assert scheme_of("nope:TauMock-v0") is None
    with pytest.raises(KeyError, match="no environment 'nope:TauMock-v0'"):
        agentgym.make("nope:TauMock-v0")
