"""The offline tau users follow tau2's protocol: the request first, identity when asked, nothing else."""

import json
import re
from pathlib import Path

import pytest

import agentgym
from agentgym.envs.tooluse.data import read_json
from agentgym.envs.tooluse.generate import ACTION_TAG, INACTION_TAG
from agentgym.envs.tooluse.opening import first_person, split_instruction
from agentgym.envs.tooluse.users import STOP
from agentgym.task import TaskSuite

SUITES = ["tooluse/retail-test", "tooluse/airline-test", "tooluse/tau-bench-retail-test"]
MANIFEST = Path(agentgym.__file__).resolve().parents[1] / "tasks" / "tooluse" / "manifest.json"
IDENTITY = re.compile(r"@|\b[a-z]+_[a-z]+_\d{4}\b|\bzip ?code\b", re.I)


def test_v1_instruction_splits_into_request_and_identity():
    instruction = read_json("tau_bench/retail/tasks_test.json")[0]["instruction"]
    opening, known = split_instruction(instruction)
    assert opening.startswith("I received my order #W2378156 and wish to exchange")
    assert "Yusuf" not in opening and "19122" not in opening
    assert "detail-oriented" not in opening and "If there is no keyboard" not in opening
    assert known == "I am Yusuf Rossi in 19122."


def test_first_person():
    assert first_person("You want to know how much balance your gift card has.") == (
        "I want to know how much balance my gift card has."
    )
    assert first_person("If the agent asks you, say that you have 3.") == (
        "If the agent asks me, say that I have 3."
    )


def raw_scenarios(suite):
    """The original scenario of every task of the suite, by task id."""
    if "tau-bench" in suite:
        rows = read_json("tau_bench/retail/tasks_test.json")
        return {f"tau-bench-retail-test-{i:03d}": r["instruction"] for i, r in enumerate(rows)}
    domain = suite.split("/")[1].split("-")[0]
    rows = read_json(f"tau2/{domain}/tasks.json")
    return {f"tau2-{domain}-{r['id']}": r["user_scenario"]["instructions"] for r in rows}


@pytest.mark.parametrize("suite", SUITES)
def test_openings_state_the_request_only(suite):
    raw = raw_scenarios(suite)
    for task in TaskSuite.load(suite):
        opening, scenario = task.config["opening"], raw[task.id]
        assert not re.search(r"\b(You|you|Your|your)\b", opening), (task.id, opening)
        if isinstance(scenario, str):  # tau-bench v1: one instruction, identity split off
            assert not IDENTITY.search(opening), (task.id, opening)
            assert opening != first_person(scenario), task.id
            continue
        # tau2: the reason for the call, never the identity, conditions or what is withheld
        assert opening == first_person(scenario["reason_for_call"]), task.id
        for hidden in ("known_info", "unknown_info", "task_instructions"):
            text = first_person(scenario.get(hidden) or "")
            if len(text) > 3 and text not in first_person(scenario["reason_for_call"]):
                assert text not in opening, (task.id, hidden)


def test_gold_user_opens_with_the_request_and_answers_identity_from_known_info():
    env = agentgym.make("TauRetail-v0", suite="tooluse/retail-train")
    obs, _ = env.reset(seed=0, options={"task": "tau2-retail-0"})
    task = env.task
    assert obs.endswith("user: " + task.config["opening"])
    assert "Yusuf" not in obs.split("# Conversation", 1)[1]
    reply = env.step("Can you tell me your name and zip code so I can find your account?")[0]
    assert reply == "I am Yusuf Rossi in zip code 19122."
    reply = env.step("What is the weather like where you are?")[0]
    assert "email" not in reply and "detail-oriented" not in reply
    assert reply == f"I'm not sure. What I need is this: {task.config['opening']}"


def test_gold_user_without_known_info_says_it_does_not_know():
    env = agentgym.make("TauMock-v0")
    env.reset(seed=0, options={"task": "tau2-mock-update_task_1"})
    assert env.step("What is your user id?")[0] == "I'm sorry, I don't have that information."


def test_v1_gold_user_never_hands_over_the_instruction():
    env = agentgym.make("TauBenchRetail-v0")
    obs, _ = env.reset(seed=0, options={"task": "tau-bench-retail-test-003"})
    instruction = env.task.config["user_scenario"]
    conversation = obs.split("# Conversation", 1)[1]
    assert "private person" not in conversation and instruction not in conversation
    reply = env.step("Please tell me your name and zip code.")[0]
    assert reply == "I am Yusuf Rossi in 19122."


@pytest.mark.parametrize("suite", SUITES)
def test_manifest_lists_where_doing_nothing_succeeds_and_tags_both_groups(suite):
    name = suite.split("/", 1)[1]
    listed = set(json.loads(MANIFEST.read_text())["suites"][name]["inaction_succeeds"])
    env = agentgym.make(TaskSuite.load(suite).tasks[0].env)
    for task in TaskSuite.load(suite):
        env.reset(seed=0, options={"task": task})
        _, reward, terminated, _, _ = env.step(STOP)  # the agent ends it without doing anything
        assert terminated and (reward == 1.0) == (task.id in listed), task.id
        assert (INACTION_TAG in task.tags) == (task.id in listed)
        assert (ACTION_TAG in task.tags) == (task.id not in listed)
    assert listed  # every one of these suites has some (tau2 grades them 1 on inaction too)
