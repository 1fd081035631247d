"""Hostile actions become invalid-action observations in every env, never raise.

Each probe raised from ``agentgym.make(id).step(action)`` (or the ``snapshot()`` after it) before
the fix: Python's int-string limit on JSON integers of over 4,300 digits, 600-deep tool arguments
that overflow ``copy.deepcopy``, and Swe tool calls that the sandbox could not take.
"""

from __future__ import annotations

import json

import pytest

import agentgym
from agentgym.actionjson import MAX_DEPTH, check_depth, loads
from agentgym.registry import list_envs
from agentgym.rollout import rollout
from agentgym.sandbox.local import bwrap_works

BIG = "9" * 5000
DEEP = "[" * 600 + "]" * 600
HOSTILE = [
    '{"name": "get_user_details", "arguments": {"user_id": ' + BIG + "}}",
    '{"name": "x", "arguments": "{\\"a\\": ' + BIG + '}"}',
    "[" + BIG + "]",
    '{"action_type": "speak", "argument": ' + BIG + "}",
    '{"name": "get_user_details", "arguments": {"user_id": ' + DEEP + "}}",
    '{"name": "respond", "arguments": {"content": ' + DEEP + "}}",
]
ENVS = [s.id for s in list_envs() if not s.id.endswith("Swe-v0")]


def _call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def _raw_view(path: str, key: str, literal: str) -> str:
    """A view call whose ``key`` is a JSON literal json.dumps would not write (NaN, 1e999)."""
    return f'{{"name": "view", "arguments": {{"path": {json.dumps(path)}, "{key}": {literal}}}}}'


def _assert_invalid(env, action: str) -> str:
    obs, _, _, _, info = env.step(action)
    assert info["valid"] is False and isinstance(obs, str) and obs.strip()
    env.snapshot()  # deep arguments must not reach the state that snapshot() copies
    return obs


@pytest.mark.parametrize("env_id", ENVS)
def test_hostile_json_actions_are_invalid(env_id):
    env = agentgym.make(env_id)
    try:
        for action in HOSTILE:
            env.reset(seed=0)
            _assert_invalid(env, action)
    finally:
        env.close()


def test_action_json_errors_are_value_errors_that_say_why():
    with pytest.raises(ValueError, match="4,300 digits"):
        loads(BIG)
    with pytest.raises(ValueError, match=f"deeper than {MAX_DEPTH}"):
        loads(DEEP)
    with pytest.raises(ValueError, match="nested too deeply"):
        loads("[" * 100_000)
    check_depth(json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH))  # the limit itself is allowed


class _Says:
    """An agent whose one action is not text."""

    def __init__(self, action: object) -> None:
        self.action = action

    def reset(self, info: dict) -> None:
        pass

    def act(self, observation: str, info: dict) -> object:
        return self.action


@pytest.mark.parametrize("action", [42, None, ["go"], {"name": "x"}])
def test_non_text_actions_through_rollout_are_invalid_steps(action):
    env = agentgym.make("agentgym/Household-v0")
    episode = rollout(env, _Says(action), env.suite.tasks[0], max_steps=2)
    assert episode.status == "limit" and episode.error is None
    assert [s.valid for s in episode.steps] == [False, False]
    assert episode.steps[0].action == repr(action)


@pytest.mark.skipif(not bwrap_works(), reason="the Swe env runs in the bubblewrap sandbox")
def test_swe_tool_call_probes_are_observations():
    env = agentgym.make("agentgym/Swe-v0", sandbox="local")
    try:
        obs, _ = env.reset(seed=0)
        source = next(ln for ln in obs.splitlines() if ln.endswith(".py"))
        invalid = [
            _call("view", path=source, start="abc"),
            _raw_view(source, "start", "1e999"),
            _raw_view(source, "end", "NaN"),
            _raw_view(source, "start", BIG),
            _call("view", path=source, start=True),
            _call("view", path="a\x00b"),
            _call("view", path="\ud800"),
            _call("bash", command="echo \x00"),
            _call("bash", command="echo \ud800"),
            _call("edit", path="x.py", old="", new="\ud800"),
            _call("bash", command="echo " + "a" * (10 * 2**20)),
            "```bash\necho \x00\n```",
        ]
        for action in invalid:
            _assert_invalid(env, action)
        answered = {
            _call("edit", path=".", old="", new="x"): "directory",
            _call("edit", path="big.txt", old="", new="x" * (300 * 2**20)): "fit",
            _call("view", path="../../../../proc/self/mem"): "not a text file",
        }
        for action, says in answered.items():
            obs, _, _, _, info = env.step(action)
            assert info["valid"] is True and says in obs, obs[:200]
        assert "1\t" in env.step(_call("view", path=source, start=1.0, end="2"))[0]
        obs, _, terminated, truncated, info = env.step(_call("bash", command="kill -9 -1"))
        if truncated:  # the sandbox's server died with every process: the episode ends
            assert info["valid"] is False and info["success"] is False and "sandbox" in obs
    finally:
        env.close()
