"""``HouseholdEnv``: the ALFWorld text game as an agentgym ``TextEnv`` (its card: the class docstring)."""

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
    """Household: an ALFWorld-compatible text game (pick, clean, heat, cool, examine, put two).

    The agent is in a room of an ALFRED floor plan, full of numbered receptacles (``cabinet 3``,
    ``fridge 1``) holding objects (``apple 2``), and must reach a goal phrased as ALFWorld phrases it
    (``put a hot apple in fridge.``). Rules are ALFWorld's PDDL domain; every observation string is
    the real game's (checked by replaying ALFWorld transcripts character for character).

    =====================  =========================================================================
    Id                     ``agentgym/Household-v0`` (``agentgym.make("Household-v0")``)
    Class                  :class:`agentgym.envs.household.env.HouseholdEnv`
    Actions                ALFWorld's commands: ``look``, ``inventory``, ``help``, ``go to R``,
                           ``open R``, ``close R``, ``take O from R``, ``put O in/on R`` (also
                           ``move O to R``), ``examine X``, ``use O``, ``clean O with R``,
                           ``heat O with R``, ``cool O with R``, ``slice O with K``; case and spaces
                           do not matter. ``info["available_actions"]`` = ALFWorld's admissible
                           commands (sorted)
    Observations           the game's text: first the room overview and ``Your task is to: ...``;
                           then the command's feedback (``You open the fridge 1. The fridge 1 is
                           open. In it, you see a cup 1, and a egg 1.``). A command that does
                           nothing answers ``Nothing happens.`` with ``info["valid"] = False``
    Reward                 1.0 on the step the goal first holds (ALFWorld's ``won``), else 0.
                           ``HouseholdEnv(shaped_reward=True)``: 1/k per subgoal reached (hold the
                           object, treat it / light the lamp / place the first, win), summing to 1
    Episode end            the goal holds (terminated) or ``max_turns`` actions (default 50, valid
                           or not) were taken (truncated). Final ``info`` has ``success``, ``score``
    Task types             ``pick_and_place_simple``, ``pick_clean_then_place_in_recep``,
                           ``pick_heat_then_place_in_recep``, ``pick_cool_then_place_in_recep``,
                           ``look_at_obj_in_light``, ``pick_two_obj_and_place`` (tags ``put``,
                           ``clean``, ``heat``, ``cool``, ``examine``, ``puttwo`` and the room type)
    Splits                 ``household/train`` 3,553, ``household/valid_seen`` 140 (the 96 training
                           floor plans), ``household/valid_unseen`` 134 (the 24 floor plans ALFRED
                           holds out, never in train); ALFWorld's sizes and counts per type
    Expert                 ``expert_action()``: a planner that knows the scene (fetch, open, take,
                           treat, place / use the lamp); solves 100% of every split, 6.3 steps on
                           average; ``Task.difficulty`` is its step count
    Random baseline        uniform over ``available_actions``: 0-2% on ``valid_unseen`` (by seed)
    Importers              :func:`from_transcript` (a task from a transcript of the real game),
                           :func:`replay` (play it back and compare every answer), :func:`load_game`
                           (ALFWorld's ``initial_state.pddl`` + ``traj_data.json``)
    Data                   ALFRED floor plans and ALFWorld's PDDL domain, grammar and type tables
                           (MIT, ``data/LICENSE-alfworld``); ``data/layouts.json`` holds the 120
                           floor plans' receptacles, shared locations and object types
    Regenerate             ``python -m agentgym.envs.household.layouts --data ../shared/data`` then
                           ``python -m agentgym.envs.household.generate``
    =====================  =========================================================================

    Config (``Task.config``, :class:`HouseholdConfig`): ``task_type``, ``object``, ``receptacle`` or
    ``lamp``, the scene (``floorplan`` or ``receptacles``; ``contents``; optional ``floor``,
    ``start``, ``allow``, ``shared``), ``max_turns`` and the text style of the game version
    (``arrive``: ``none``/``name``/``loc``; ``intro``: ``react``/``raw``; ``put_verb``:
    ``put``/``move``). The scene encoding is the game's own naming, e.g. ``"countertop 1: apple 1,
    knife 2; fridge 1: egg 1"``; ``*`` after a receptacle name marks it openable (all start closed).

    Locations are ALFWorld's: receptacles stand at locations (``receptacleAtLocation``), one each
    except the ``shared`` groups (``"cabinet 1, cabinet 2; drawer 2, drawer 3"``), which stand at one.
    A floor plan brings its own groups: the receptacles ALFRED reaches from one pose (its
    ``-openable.json``, which ALFWorld turns into locations), 16% of them in 67 of the 120 floor plans
    (drawers 28%, shelves 28%, cabinets 17%; ``python -m agentgym.envs.household.layouts --data
    ../shared/data --rates``). At a location the agent reaches every receptacle there
    (open, take, put, use, clean/heat/cool); ``go to`` one of them answers ``Nothing happens.``;
    ``look`` names them all (``You are facing the cabinet 2, and cabinet 1. Next to it, you see
    nothing.``). The importers keep them: game files from ``receptacleAtLocation``, transcripts from
    what they show (a ``go to`` that does nothing, ``look`` facing several, one ``loc N`` for two).

    Text as the real game prints it: lists are TextWorld's (``a x``, ``a x, and a y``, ``a x, a y,
    and a z``, ``nothing``), always with the article ``a``, sorted by type name and then by number
    from high to low (``a bowl 2, a bowl 1, a bread 1``). ``go to`` answers with what the receptacle
    shows; ReAct and AgentGym strip the game's ``You arrive at loc N.`` prefix and so does the
    default ``arrive="none"``. ``look`` away from every receptacle lists none (``... you see
    nothing.``: the grammar lists receptacles at the agent's location); at a location it lists what
    TextWorld's query finds next to it (floor objects; where receptacles share a location, also an
    object taken from one of them and put in another). ``use`` a lamp always answers ``You turn on
    the ...`` (ALFWorld's grammar tests ``isToggled``, which stays true). Going to where you stand
    (to any receptacle there), taking from a closed receptacle or with full hands, putting where the
    type does not fit (ALFRED's ``canContain``): ``Nothing happens.``

    Commands are matched against ALFWorld's admissible commands for the current state, as the real
    game does, not parsed: one that is not admissible answers ``Nothing happens.``. The transcript
    replay holds one known difference, a hand edit in ReAct's prompt file (``act_put_0`` /
    ``react_put_0``, cabinet 1), which the fidelity test lists.

    Deviations, and why: lamps are placed on receptacles in
    generated scenes so they can be found by looking (ALFRED floor lamps stand on the floor; a loaded
    game keeps them on the floor, usable from the receptacle they stand next to); receptacle types
    that ALFRED's ``-openable.json`` lacks get one instance (four stove burners), each at a location
    of its own — the transcripts' rooms are reproduced exactly for FloorPlan21, 218 and 311 and
    within 1-3 instances elsewhere.
    """

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
