"""`agentgym env serve` through other stacks' own OpenEnv code: verifiers 0.4's OpenEnv taskset
(`vf-eval @ config.toml`) and TRL's OpenEnv harness module, on the installed openenv."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("openenv")
pytest.importorskip("verifiers")

import agentgym  # noqa: E402
from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings  # noqa: E402
from agentgym.task import TaskSuite  # noqa: E402

TASKS = ["clarify-products-test-0000", "clarify-products-test-0001"]
VF_EVAL = "import sys; from verifiers.v1.cli.eval.main import main; sys.exit(main())"


@pytest.mark.slow
def test_verifiers_openenv_taskset_plays_clarify_over_env_serve(served, tmp_path):
    """verifiers' own OpenEnv taskset, configured by a TOML file (verifiers 0.4.0's CLI flags
    cannot name it: `--env.taskset.id openenv` builds the config without ``base_url`` first and
    fails), plays 2 Clarify episodes (sent as task objects) against the served env with the tiny
    model; each episode's replies, replayed on a local env, give the observations and the reward
    verifiers recorded, and the episode ends in the env (or on an empty reply)."""
    import tomli_w
    from verifiers.v1.tasksets.openenv.taskset import parse_action

    suite = agentgym.make("Clarify-v0").unwrapped.suite
    by_id = {task.id: task for task in suite.tasks}
    tasks = {  # 2 turns, so the tiny model's context holds every turn's observation
        t: by_id[t].model_copy(update={"config": {**by_id[t].config, "max_turns": 2}})
        for t in TASKS
    }
    server = EnvServerThread(ServeSettings("Clarify-v0"), max_sessions=2)
    try:
        resets = [{"task": task.model_dump(mode="json"), "seed": 0} for task in tasks.values()]
        config = tmp_path / "openenv.toml"
        taskset = {"id": "openenv", "base_url": server.url, "resets": resets}
        config.write_text(tomli_w.dumps({"env": {"taskset": taskset}}))
        command = [sys.executable, "-c", VF_EVAL, "@", str(config), "-n", str(len(TASKS)),
                   "--env.player.harness.id", "null", "--env.player.runtime.type", "subprocess",
                   "--no-push", "--client.base-url", served, "--client.api-key-var",
                   "OPENAI_API_KEY", "--model", "tiny", "-c", "1", "-o", str(tmp_path / "out"),
                   "--sampling.temperature", "1.0", "--sampling.max-tokens", "8"]  # fmt: skip
        env = {**os.environ, "OPENAI_API_KEY": "unused"}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in next(tmp_path.rglob("traces.jsonl")).open()]
    assert [row["ok"] for row in rows] == [True] * len(TASKS), [row["errors"] for row in rows]
    traces = [trace for row in rows for trace in row["traces"]]
    assert sorted(t["task"]["data"]["reset"]["task"]["id"] for t in traces) == TASKS
    for trace in traces:
        task = tasks[trace["task"]["data"]["reset"]["task"]["id"]]
        messages = [node["message"] for node in trace["nodes"]]
        payloads = [json.loads(m["content"]) for m in messages if m["role"] == "user"]
        replies = [m["content"] for m in messages if m["role"] == "assistant"]
        schema = payloads[0]["action_schema"]
        assert schema["required"] == ["message"]
        local = agentgym.make("Clarify-v0")
        obs, _ = local.reset(seed=0, options={"task": task})
        assert payloads[0]["observation"]["text"] == obs
        total, steps, ended = 0.0, 0, False
        for reply, payload in zip(replies, [*payloads[1:], None], strict=True):
            if not reply.strip():  # verifiers ends the run on an empty reply, unsent
                assert trace["stop_condition"] == "empty_action"
                break
            obs, reward, terminated, truncated, _ = local.step(
                parse_action(reply, schema)["message"]
            )
            total, steps, ended = total + reward, steps + 1, terminated or truncated
            if payload is not None:
                assert payload["observation"]["text"] == obs
        local.close()
        assert steps > 0 and (ended or trace["stop_condition"] == "empty_action")
        assert trace["rewards"]["openenv_reward"]["score"] == pytest.approx(total)


def test_trl_openenv_harness_imports():
    """TRL's OpenEnv harness imports what it names from the installed openenv (openenv-core 0.3
    has no ``TraceEntry``)."""
    pytest.importorskip("trl")
    from openenv.core.harness import TraceEntry
    from trl.experimental.async_grpo import openenv_harness

    assert openenv_harness.TraceEntry is TraceEntry


def test_harness_sessions_play_an_agentgym_env_through_both_halves_of_the_contract():
    """OpenEnv's harness contract on a local env: the chat-loop adapter's opaque path (the
    env's expert) and a tool-speaking adapter's path (``initial_messages``, the ``act`` tool)
    end with the env's own reward in ``verify``; a task of another type is one clear error."""
    from agentgym.integrations.openenv.harness import AgentgymSessionFactory, ChatLoopAdapter

    factory = AgentgymSessionFactory("Clarify-v0")
    task = TaskSuite.load("clarify/test").tasks[0]
    session = factory.create(task.id, seed=0)
    result = ChatLoopAdapter().run_black_box(session)
    verdict = session.verify(result.messages)
    session.close()
    assert result.done and result.metrics["success"]
    assert verdict.env_reward == session.episode.reward > 0

    tools = factory.create(task.model_dump(mode="json"), seed=0)
    opening = tools.initial_messages()
    assert opening[0]["role"] == "system" and opening[-1]["role"] == "user"
    assert tools.call_tool("shell", {"action": "ls"}).error
    rewards = []
    while not tools.done:
        answer = tools.call_tool("act", {"action": tools.env.unwrapped.expert_action()})
        rewards.append(answer.metadata["reward"])
    assert tools.verify([]).env_reward == sum(rewards) == verdict.env_reward
    tools.close()
    with pytest.raises(TypeError, match="a task id, a Task or its dict, got int"):
        factory.create(7)
