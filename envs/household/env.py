"""``HouseholdEnv``: the ALFWorld text game as an agentgym ``TextEnv`` (see the package docstring)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from agentgym.env import ResetNeeded, StepResult, TextEnv
from agentgym.envs.household import text
from agentgym.envs.household.config import HouseholdConfig
from agentgym.envs.household.engine import (
    Command,
    admissible,
    execute,
    lookup,
    normalize,
    placed_count,
    won,
)
from agentgym.envs.household.expert import expert_command
from agentgym.envs.household.goals import parse_goal
from agentgym.envs.household.scene import IS_TOGGLED, LOOK, TWO, Scene, State, compile_scene
from agentgym.task import Task, TaskSuite

SYSTEM_PROMPT = """\
You are in a household and must complete a task, e.g. "put a clean mug in coffeemachine.".
Reply with exactly one command per turn:
  look, inventory, help, go to (receptacle), open (receptacle), close (receptacle),
  take (object) from (receptacle), put (object) in/on (receptacle), examine (something),
  use (object), heat (object) with (receptacle), clean (object) with (receptacle),
  cool (object) with (receptacle), slice (object) with (object).
Name things exactly as the game does ("cabinet 3", "apple 1"). You can hold one object; you must
go to a receptacle (and open it if it is closed) before taking from or putting into it. Clean at
a sinkbasin, heat with a microwave, cool with a fridge. A command that does nothing answers
"Nothing happens.". info["available_actions"] lists every command that does something."""

_VALIDATED: OrderedDict[int, tuple[Task, HouseholdConfig]] = OrderedDict()
"""Validated configs by task identity: the runner resets the same Task objects many times."""
_LOCK = threading.Lock()


class HouseholdEnv(TextEnv):
    """ALFWorld-compatible household text game (six task types, real ALFRED floor plans)."""

    one_line_actions = True
    action_max_tokens = 48
    demo_suite = "household/train"

    config_model = HouseholdConfig
    default_suite = "household/valid_unseen"
    system_prompt = SYSTEM_PROMPT

    config: HouseholdConfig
    state: State

    def __init__(
        self,
        suite: str | TaskSuite | None = None,
        render_mode: str | None = None,
        shaped_reward: bool = False,
    ) -> None:
        super().__init__(suite, render_mode)
        self.shaped_reward = shaped_reward
        """Give 1/k reward per subgoal reached (k subgoals, the last is winning); off: 1 on win."""
        self._scene: Scene | None = None
        self._cmds: dict[str, Command] = {}
        self._actions: list[str] = []

    @classmethod
    def validate_task(cls, task: Task) -> HouseholdConfig:
        """Validate the config and check the instruction states the config's goal (cached)."""
        with _LOCK:
            hit = _VALIDATED.get(id(task))
        if hit is not None and hit[0] is task:
            return hit[1]
        config = HouseholdConfig.model_validate(task.config)
        stated = parse_goal(task.instruction)
        if stated != config.goal():
            raise ValueError(
                f"instruction {task.instruction!r} states {stated}, but the config's goal is "
                f"{config.goal()}"
            )
        with _LOCK:
            _VALIDATED[id(task)] = (task, config)
            if len(_VALIDATED) > 4096:
                _VALIDATED.popitem(last=False)
        return config

    # ------------------------------------------------------------------ episode
    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.state = compile_scene(self.config).initial_state()
        self._rebuild(task)
        return text.intro(self.scene, task.instruction), {"available_actions": list(self._actions)}

    def _rebuild(self, task: Task) -> None:
        """The compiled scene (cached by config identity) and the state's admissible commands."""
        self._scene = compile_scene(self.config)
        self._refresh()

    def _refresh(self) -> None:
        scene = self._scene
        assert scene is not None
        self._cmds = admissible(scene, self.state)
        self._actions = sorted(self._cmds)

    def _step(self, action: str) -> StepResult:
        scene, state = self._scene, self.state
        assert scene is not None
        state.turn += 1
        cmd, other_verb = lookup(self._cmds, normalize(action))
        if cmd is None:
            return self._outcome(text.NOTHING_HAPPENS, 0.0, valid=False)
        observation = execute(scene, state, cmd, other_verb)
        self._refresh()
        reward = 0.0
        if won(scene, state):
            state.won = True
            reward = 1.0
        if self.shaped_reward:
            reward = self._shaped(scene, state)
        return self._outcome(observation, reward, valid=True)

    def _step_invalid(self, message: str) -> StepResult:
        """Non-text actions use a turn too, so a broken agent still reaches the limit."""
        self.state.turn += 1
        return self._outcome(f"{message} {text.NOTHING_HAPPENS}", 0.0, valid=False)

    def _outcome(self, observation: str, reward: float, valid: bool) -> StepResult:
        state = self.state
        info: dict[str, Any] = {
            "valid": valid,
            "turn": state.turn,
            "available_actions": list(self._actions),
        }
        truncated = not state.won and state.turn >= self.config.max_turns
        if state.won or truncated:
            info["success"] = state.won
            info["score"] = 1.0 if state.won else 0.0
        return observation, reward, state.won, truncated, info

    def _shaped(self, scene: Scene, state: State) -> float:
        """Reward for subgoals reached for the first time; they sum to 1 on winning."""
        reached = set(state.reached)
        if state.held in scene.goal_objs:
            reached.add("hold")
        if scene.goal_required and any(
            state.flags[o] & scene.goal_required for o in scene.goal_objs
        ):
            reached.add("treat")
        if scene.goal_kind == LOOK and any(state.flags[lp] & IS_TOGGLED for lp in scene.lamps):
            reached.add("lamp")
        if scene.goal_kind == TWO and any(placed_count(scene, state, r) for r in scene.goal_recs):
            reached.add("one")
        total = 2 if scene.goal_kind not in (LOOK, TWO) and not scene.goal_required else 3
        if state.won:
            reached = {"hold", "treat", "lamp", "one", "won"}
        new = min(len(reached), total) - min(len(state.reached), total)
        state.reached = reached
        return new / total

    # ------------------------------------------------------------------ oracle and branching
    def expert_action(self) -> str:
        """The planner's next command (see :mod:`agentgym.envs.household.expert`)."""
        if self._scene is None or self.task is None:
            raise ResetNeeded("call reset() before expert_action()")
        return expert_command(self._scene, self.state)

    @property
    def scene(self) -> Scene:
        """The compiled scene of the current episode."""
        if self._scene is None:
            raise ResetNeeded("call reset() first")
        return self._scene
