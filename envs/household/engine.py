"""The game rules: admissible commands, their effects and feedback, and the win condition.

Preconditions and effects are those of ALFWorld's PDDL domain (``alfred.pddl``): you act on a
receptacle only while standing at its location (``atLocation ?a ?l``, ``receptacleAtLocation ?r
?l``), so on every receptacle that shares the location, take and put only where it is open (or
not openable), hold one object, clean at a sink basin, heat with a microwave and cool with a
fridge (open or closed), and ``use`` a lamp standing where you are. ``go to`` a receptacle of the
location you stand at is not admissible. A command is valid exactly when it is admissible; any
other text answers ``Nothing happens.``, as the real game does.
"""

from __future__ import annotations

import re

from agentgym.envs.household import text
from agentgym.envs.household.scene import (
    CLEANABLE,
    COOLABLE,
    FRIDGE,
    HEATABLE,
    HELD,
    IS_CLEAN,
    IS_COOL,
    IS_HOT,
    IS_ON,
    IS_SLICED,
    IS_TOGGLED,
    LOOK,
    MICROWAVE,
    PICK,
    SHARP,
    SINK,
    SLICEABLE,
    TOGGLE,
    TWO,
    Scene,
    State,
)

Command = tuple[int, int, int]
"""(op, first argument, second argument) with objects and receptacles as indices."""
(GOTO, OPEN, CLOSE, TAKE, PUT, CLEAN, HEAT, COOL, USE, SLICE, EXAMINE_R, EXAMINE_O) = range(12)
LOOK_CMD, INVENTORY, HELP = 12, 13, 14
_MOVE = re.compile(r"^move (.+) to (.+)$")
_PUT = re.compile(r"^put (.+) in/on (.+)$")


def normalize(action: str) -> str:
    """Lower case, single spaces, no trailing period: how commands are matched."""
    return " ".join(action.lower().split()).removesuffix(".").rstrip()


def base_commands(scene: Scene) -> dict[str, Command]:
    """Commands available everywhere: look, inventory, help, and going to any receptacle (but
    those of the agent's location: :func:`admissible` drops them)."""
    cmds: dict[str, Command] = {
        "look": (LOOK_CMD, -1, -1),
        "inventory": (INVENTORY, -1, -1),
        "help": (HELP, -1, -1),
    }
    for r, name in enumerate(scene.r_names):
        cmds[f"go to {name}"] = (GOTO, r, -1)
    return cmds


def admissible(scene: Scene, state: State) -> dict[str, Command]:
    """Every command that does something in ``state``, mapped to what it does."""
    if not scene.base_cmds:
        scene.base_cmds.update(base_commands(scene))
    cmds = dict(scene.base_cmds)
    h = state.held
    if h >= 0:
        cmds[f"examine {scene.o_names[h]}"] = (EXAMINE_O, h, -1)
    if state.loc < 0:
        return cmds
    for r in scene.loc_recs[state.loc]:
        rname = scene.r_names[r]
        del cmds[f"go to {rname}"]
        cmds[f"examine {rname}"] = (EXAMINE_R, r, -1)
        is_open = state.opened[r]
        if scene.r_openable[r]:
            cmds[f"close {rname}" if is_open else f"open {rname}"] = (
                CLOSE if is_open else OPEN,
                r,
                -1,
            )
        reachable = is_open or not scene.r_openable[r]
        if reachable:
            _object_commands(scene, state, r, cmds)
        for o in scene.floor_at[r]:
            if scene.o_caps[o] & TOGGLE:
                cmds[f"use {scene.o_names[o]}"] = (USE, o, r)
        if h >= 0:
            _holding_commands(scene, r, h, reachable, cmds)
    return cmds


def _object_commands(scene: Scene, state: State, r: int, cmds: dict[str, Command]) -> None:
    rname, h = scene.r_names[r], state.held
    for o in state.contents[r]:
        name, caps = scene.o_names[o], scene.o_caps[o]
        cmds[f"examine {name}"] = (EXAMINE_O, o, -1)
        if caps & PICK and h < 0:
            cmds[f"take {name} from {rname}"] = (TAKE, o, r)
        if caps & TOGGLE:
            cmds[f"use {name}"] = (USE, o, r)
        if caps & SLICEABLE and h >= 0 and scene.o_caps[h] & SHARP:
            cmds[f"slice {name} with {scene.o_names[h]}"] = (SLICE, o, h)


def _holding_commands(
    scene: Scene, r: int, h: int, reachable: bool, cmds: dict[str, Command]
) -> None:
    rname, name, caps = scene.r_names[r], scene.o_names[h], scene.o_caps[h]
    if reachable and scene.fits(h, r):
        if scene.config.put_verb == "put":
            cmds[f"put {name} in/on {rname}"] = (PUT, h, r)
        else:
            cmds[f"move {name} to {rname}"] = (PUT, h, r)
    role = scene.r_role[r]
    if role == SINK and caps & CLEANABLE:
        cmds[f"clean {name} with {rname}"] = (CLEAN, h, r)
    elif role == MICROWAVE and caps & HEATABLE:
        cmds[f"heat {name} with {rname}"] = (HEAT, h, r)
    elif role == FRIDGE and caps & COOLABLE:
        cmds[f"cool {name} with {rname}"] = (COOL, h, r)


def lookup(cmds: dict[str, Command], action: str) -> tuple[Command | None, bool]:
    """The command an action names, and whether it used the other placing verb (put/move)."""
    cmd = cmds.get(action)
    if cmd is not None:
        return cmd, False
    m = _MOVE.match(action) or _PUT.match(action)
    if m is None:
        return None, False
    other = f"put {m[1]} in/on {m[2]}" if action.startswith("move") else f"move {m[1]} to {m[2]}"
    cmd = cmds.get(other)
    return (cmd, True) if cmd is not None and cmd[0] == PUT else (None, False)


def execute(scene: Scene, state: State, cmd: Command, other_verb: bool = False) -> str:
    """Apply an admissible command to ``state``; return the game's feedback."""
    op, a, b = cmd
    if op == GOTO:
        state.loc = scene.r_loc[a]
        return text.arrive(scene, state, a)
    if op == OPEN:
        state.opened[a] = True
        return f"You open the {scene.r_names[a]}. {text.examine_receptacle(scene, state, a)}"
    if op == CLOSE:
        state.opened[a] = False
        return f"You close the {scene.r_names[a]}."
    if op == TAKE:
        state.contents[b].remove(a)
        state.where[a], state.held = HELD, a
        state.left[a] |= 1 << b
        return f"You pick up the {scene.o_names[a]} from the {scene.r_names[b]}."
    if op == PUT:
        _insert(scene, state.contents[b], a)
        state.where[a], state.held = b, -1
        state.left[a] &= ~(1 << b)
        verb = scene.config.put_verb
        if (verb == "put") != other_verb:
            return f"You put the {scene.o_names[a]} in/on the {scene.r_names[b]}."
        return f"You move the {scene.o_names[a]} to the {scene.r_names[b]}."
    return _execute_other(scene, state, op, a, b)


def _execute_other(scene: Scene, state: State, op: int, a: int, b: int) -> str:
    names = scene.o_names
    if op == CLEAN:
        state.flags[a] |= IS_CLEAN
        return f"You clean the {names[a]} using the {scene.r_names[b]}."
    if op == HEAT:
        state.flags[a] = (state.flags[a] | IS_HOT) & ~IS_COOL
        return f"You heat the {names[a]} using the {scene.r_names[b]}."
    if op == COOL:
        state.flags[a] = (state.flags[a] | IS_COOL) & ~IS_HOT
        return f"You cool the {names[a]} using the {scene.r_names[b]}."
    if op == USE:
        state.flags[a] = (state.flags[a] ^ IS_ON) | IS_TOGGLED
        return f"You turn on the {names[a]}."
    if op == SLICE:
        state.flags[a] |= IS_SLICED
        return f"You sliced the {names[a]} with the {names[b]}."
    if op == EXAMINE_R:
        return text.examine_receptacle(scene, state, a)
    if op == EXAMINE_O:
        return text.examine_object(scene, state, a)
    if op == LOOK_CMD:
        return text.look(scene, state)
    if op == INVENTORY:
        return text.inventory(scene, state)
    return text.help_text(scene.config.put_verb)


def _insert(scene: Scene, items: list[int], o: int) -> None:
    rank = scene.o_rank[o]
    i = len(items)
    while i > 0 and scene.o_rank[items[i - 1]] > rank:
        i -= 1
    items.insert(i, o)


def placed_count(scene: Scene, state: State, r: int) -> int:
    """Goal objects in receptacle ``r`` with the treatment the goal asks for."""
    need, goal_objs, flags = scene.goal_required, scene.goal_objs, state.flags
    return sum(1 for o in state.contents[r] if o in goal_objs and flags[o] & need == need)


def won(scene: Scene, state: State) -> bool:
    """ALFWorld's goal test for the scene's task type."""
    if scene.goal_kind == LOOK:
        if state.held not in scene.goal_objs:
            return False
        return any(
            state.flags[lamp] & IS_TOGGLED and scene.location_of(state, lamp) == state.loc
            for lamp in scene.lamps
        )
    need = 2 if scene.goal_kind == TWO else 1
    return any(placed_count(scene, state, r) >= need for r in scene.goal_recs)
