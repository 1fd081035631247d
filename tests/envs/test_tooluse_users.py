"""The LLM user simulator's prompt and turn machinery, driven by a scripted chat client."""

import json

import pytest

from agentgym.envs.tooluse.env import TauEnv
from agentgym.envs.tooluse.users import AGENT_GREETING, LLMUser, make_user
from agentgym.task import TaskSuite
from agentgym.testing import ScriptedClient


def text(content):
    return {"role": "assistant", "content": content}


def test_llm_user_is_prompted_with_guidelines_and_scenario_and_seeded():
    task = TaskSuite.load("tooluse/retail-test").tasks[0]
    client = ScriptedClient([text("Hi, I want to exchange two items."), text("###STOP###")])
    env = TauEnv(user=LLMUser(client))
    obs, info = env.reset(seed=7, options={"task": task})
    assert obs.endswith("user: Hi, I want to exchange two items.") and info["user"] == "llm"
    first = client.requests[0]
    system = first.messages[0]["content"]
    assert "User Simulation Guidelines" in system and "<scenario>" in system
    assert task.config["user_scenario"] in system
    assert first.messages[1:] == [{"role": "user", "content": AGENT_GREETING}]
    assert first.seed == 7 and first.tools is None
    _, reward, terminated, _, info = env.step("Thanks, goodbye.")
    assert terminated and reward == 0.0  # the user stopped before anything was exchanged
    roles = [m["role"] for m in client.requests[1].messages]
    assert roles == ["system", "user", "assistant", "user"]  # roles flipped as in tau2
    assert all(r.seed == 7 for r in client.requests)


def test_llm_user_calls_its_own_tools_in_the_mock_domain():
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "check_notifications", "arguments": "{}"},
    }
    client = ScriptedClient(
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            text("Please mark task_1 completed."),
        ]
    )
    env = TauEnv(suite="tooluse/mock", user=LLMUser(client))
    obs, _ = env.reset(seed=0, options={"task": "tau2-mock-update_task_with_user_tools"})
    assert obs.endswith("Please mark task_1 completed.")
    second = client.requests[1]
    assert [t["function"]["name"] for t in second.tools] == [
        "check_notifications",
        "dismiss_notification",
    ]
    tool_message = second.messages[-1]
    assert (
        tool_message["role"] == "tool"
        and json.loads(tool_message["content"])[0]["notification_id"] == "notif_1"
    )


def test_user_specs():
    assert make_user("gold").name == "gold" and make_user("uncooperative").name == "uncooperative"
    assert isinstance(make_user("llm:openai:gpt-4o-mini"), LLMUser)
    with pytest.raises(ValueError, match="unknown user 'robot'"):
        make_user("robot")
