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
(drawers 28%, shelves 28%, cabinets 17%). At a location the agent reaches every receptacle there
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

Deviations, and why: lamps are placed on receptacles in
generated scenes so they can be found by looking (ALFRED floor lamps stand on the floor; a loaded
game keeps them on the floor, usable from the receptacle they stand next to); receptacle types
that ALFRED's ``-openable.json`` lacks get one instance (four stove burners), each at a location
of its own — the transcripts' rooms are reproduced exactly for FloorPlan21, 218 and 311 and
within 1-3 instances elsewhere.

>>> import agentgym
>>> env = agentgym.make("Household-v0")
>>> obs, info = env.reset(seed=0, options={"task": "household-valid_unseen-0000"})
>>> obs.splitlines()[-1]
'Your task is to: examine the bowl with the floorlamp.'
"""

from agentgym.envs.household.config import HouseholdConfig
from agentgym.envs.household.env import HouseholdEnv
from agentgym.envs.household.goals import TASK_TYPES, Goal, parse_goal
from agentgym.envs.household.pddl import load_game, load_game_files
from agentgym.envs.household.transcript import Replay, from_transcript, parse_transcript, replay

__all__ = [
    "TASK_TYPES",
    "Goal",
    "HouseholdConfig",
    "HouseholdEnv",
    "Replay",
    "from_transcript",
    "load_game",
    "load_game_files",
    "parse_goal",
    "parse_transcript",
    "replay",
]
