"""tau2's dual control: user tools and user state, user turns that are tool calls, both sides graded."""

import pytest

import agentgym
from agentgym.envs.tooluse.env import TauEnv
from agentgym.envs.tooluse.plan import ASK_USER
from agentgym.envs.tooluse.reward import gold_world, tau2_reward
from agentgym.envs.tooluse.tasks import TauConfig, TauGold
from agentgym.envs.tooluse.users import STOP, LLMUser
from agentgym.envs.tooluse.world import World, get_domain
from agentgym.task import Task
from agentgym.testing import ScriptedClient


def play_expert(env, task, max_steps=60):
    env.reset(seed=0, options={"task": task})
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            return obs, reward, terminated, info
    raise AssertionError("expert did not finish")


def dual_task():
    """A mock task whose gold path has a user-side action and user-side initialisation."""
    return Task(
        id="dual-1",
        env="agentgym/TauMock-v0",
        split="test",
        instruction="Serve the customer.",
        config={
            "domain": "mock",
            "user_scenario": "Mark task_1 done, then dismiss your notifications.",
            "opening": "Please mark task_1 as completed.",
            "initial_state": {
                "initialization_actions": [
                    {
                        "env_type": "user",
                        "func_name": "add_notification",
                        "arguments": {"notification_id": "notif_2", "message": "Reminder"},
                    },
                    {
                        "env_type": "assistant",
                        "func_name": "create_task",
                        "arguments": {"user_id": "user_1", "title": "Review"},
                    },
                ]
            },
        },
        gold={
            "actions": [
                {"name": "update_task_status", "arguments": {"task_id": "task_1", "status": "completed"}},
                {"name": "dismiss_notification", "arguments": {"notification_id": "notif_2"}, "requestor": "user"},
                {"name": "update_task_status", "arguments": {"task_id": "task_2", "status": "completed"}},
            ],
            "reward_basis": ["DB", "ACTION"],
        },
    )  # fmt: skip


def test_mock_expert_solves_the_task_whose_assertion_needs_more_than_the_gold_actions():
    """history_and_env_assertions has no gold action; its assertion names the write to make."""
    env = agentgym.make("TauMock-v0")
    _, reward, terminated, info = play_expert(
        env, "tau2-mock-update_task_with_history_and_env_assertions"
    )
    assert (reward, terminated) == (1.0, True), info["reward_info"]
    assert ("update_task_status", {"task_id": "task_2", "status": "completed"}, "assistant") in (
        env.state.calls
    )


def test_gold_user_calls_its_tool_instead_of_repeating_its_scenario():
    env = agentgym.make("TauMock-v0")
    obs, reward, terminated, info = play_expert(env, "tau2-mock-update_task_with_user_tools")
    user_calls = [c for c in env.state.calls if c[2] == "user"]
    assert user_calls == [("dismiss_notification", {"notification_id": "notif_1"}, "user")]
    assert env.state.world.user_db["notifications"].peek("notif_1").status == "read"
    said = [m["content"] for m in env.state.transcript if m["role"] == "user" and m["content"]]
    assert not any("check_notifications tool" in text for text in said)
    tool_turn = next(m for m in env.state.transcript if m["role"] == "user" and m.get("tool_calls"))
    assert tool_turn["tool_calls"][0]["requestor"] == "user"
    # tau2's own grade of this trajectory: the assertion holds, the agent's action matches, and
    # the user DB differs from the gold replay's (which has no user action): reward 0.
    assert terminated and obs == STOP and reward == 0.0
    assert info["reward_info"]["components"] == {"DB": 0.0, "ENV_ASSERTION": 1.0, "ACTION": 1.0}


def test_user_gold_actions_are_played_by_the_gold_user_and_graded_on_both_sides():
    env = TauEnv(suite="tooluse/mock")
    task = dual_task()
    obs, reward, terminated, info = play_expert(env, task)
    assert (reward, terminated) == (1.0, True), info["reward_info"]
    assert [c[2] for c in env.state.calls] == ["assistant", "user", "assistant"]
    assert env.state.plan[1] == ASK_USER.format(
        calls='{"name": "dismiss_notification", "arguments": {"notification_id": "notif_2"}}'
    )
    # the user acted only once the agent action before it was done
    user_turn = env.state.transcript.index(
        next(m for m in env.state.transcript if m["role"] == "user" and m.get("tool_calls"))
    )
    first_agent_call = next(
        i
        for i, m in enumerate(env.state.transcript)
        if m["role"] == "assistant" and m.get("tool_calls")
    )
    assert first_agent_call < user_turn


def test_without_the_users_action_db_and_action_fail():
    env = TauEnv(suite="tooluse/mock")
    env.reset(seed=0, options={"task": dual_task()})
    env.step(
        '{"name": "update_task_status", "arguments": {"task_id": "task_2", "status": "completed"}}'
    )
    env.step(
        '{"name": "update_task_status", "arguments": {"task_id": "task_1", "status": "completed"}}'
    )
    _, reward, terminated, _, info = env.step(STOP)
    assert terminated and reward == 0.0
    assert info["reward_info"]["components"] == {"DB": 0.0, "ACTION": 0.0}


def test_action_reward_is_all_or_nothing_as_in_tau2():
    task = dual_task()
    config, gold = TauConfig.model_validate(task.config), TauGold.model_validate(task.gold)
    domain = get_domain("mock")
    world = World(domain)
    world.apply_initial_state(config.initial_state)
    calls = [("update_task_status", {"task_id": "task_1", "status": "completed"}, "assistant")]
    info = tau2_reward(world, gold_world(domain, config, gold), gold, [], calls, [])
    assert info.components["ACTION"] == 0.0  # two of three matched is a miss, not 2/3


def test_user_side_initialisation_actions_reach_the_user_db():
    env = TauEnv(suite="tooluse/mock")
    env.reset(seed=0, options={"task": dual_task()})
    notifications = env.state.world.user_db["notifications"]
    assert (
        notifications.peek("notif_2").message == "Reminder"
        and "task_2" in env.state.world.db["tasks"]
    )


def test_a_user_gold_action_must_be_a_user_tool():
    bad = dual_task()
    bad.gold["actions"][1]["name"] = "update_task_status"  # an agent tool, claimed by the user
    with pytest.raises(ValueError, match="'update_task_status' is not a user tool of mock"):
        TauEnv.validate_task(bad)


def test_llm_user_tool_calls_are_part_of_the_episode_and_graded():
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "dismiss_notification", "arguments": '{"notification_id": "notif_1"}'},
    }
    client = ScriptedClient(
        [
            {"role": "assistant", "content": "Please mark task_1 as completed."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "assistant", "content": f"Thanks! {STOP}"},
        ]
    )
    env = TauEnv(suite="tooluse/mock", user=LLMUser(client))
    env.reset(seed=0, options={"task": "tau2-mock-update_task_with_user_tools"})
    assert "Your messages when performing tool calls" in client.requests[0].messages[0]["content"]
    env.step(
        '{"name": "update_task_status", "arguments": {"task_id": "task_1", "status": "completed"}}'
    )
    obs, reward, terminated, _, info = env.step("Done. Please dismiss the notification.")
    assert terminated and obs.startswith("Thanks!")
    assert ("dismiss_notification", {"notification_id": "notif_1"}, "user") in env.state.calls
    assert info["reward_info"]["components"]["ENV_ASSERTION"] == 1.0
    tool_message = client.requests[2].messages[-1]
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Notification notif_1 dismissed",
    }
