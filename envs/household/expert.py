"""The expert: a planner with full knowledge of the scene, like ALFWorld's hand-coded expert.

From any state it returns the next command of a shortest-minded plan: fetch a goal object (go,
open if closed, take), treat it at the appliance if the task asks (clean/heat/cool), then go to a
destination (open if closed) and put it there; for ``look_at_obj_in_light`` carry the object to
the lamp and use it. Anything else in hand is put down first. It never needs to search, so it is
a few dict lookups per step.
"""

from __future__ import annotations

from agentgym.envs.household.engine import placed_count
from agentgym.envs.household.scene import LOOK, PICK, TWO, Scene, State


class ExpertStuck(RuntimeError):
    """No plan reaches the goal from this state (a scene the expert cannot solve)."""


def expert_command(scene: Scene, state: State) -> str:
    """The next command toward the goal (always admissible in ``state``)."""
    h = state.held
    if h >= 0 and h not in scene.goal_objs:
        return _put_down(scene, state, h)
    if scene.goal_kind == LOOK:
        return _to_lamp(scene, state) if h >= 0 else _fetch(scene, state, -1)
    dest = _destination(scene, state)
    if h < 0:
        return _fetch(scene, state, dest)
    need = scene.goal_required
    if state.flags[h] & need != need:
        return _treat(scene, state, h)
    return _place(scene, state, h, dest)


def _destination(scene: Scene, state: State) -> int:
    """Goal receptacle to fill: one already holding a goal object (pick two), else the easiest."""
    if scene.goal_kind == TWO:
        for r in scene.goal_recs:
            if placed_count(scene, state, r) == 1:
                return r
    return min(scene.goal_recs, key=lambda r: (scene.r_openable[r], r))


def _fetch(scene: Scene, state: State, dest: int) -> str:
    """Go to the nearest-to-hand goal object not already where it belongs, open, take."""
    need = scene.goal_required
    candidates = [
        o
        for o in scene.goal_objs
        if scene.o_caps[o] & PICK
        and state.where[o] >= 0
        and not (state.where[o] == dest and state.flags[o] & need == need)
    ]
    if not candidates:
        raise ExpertStuck(f"no {scene.goal.object} left to take")
    o = min(candidates, key=lambda o: _cost(scene, state, state.where[o]))
    return _reach(scene, state, state.where[o]) or (
        f"take {scene.o_names[o]} from {scene.r_names[state.where[o]]}"
    )


def _cost(scene: Scene, state: State, r: int) -> tuple[int, int, int]:
    return (scene.r_loc[r] != state.loc, scene.r_openable[r] and not state.opened[r], r)


def _reach(scene: Scene, state: State, r: int, need_open: bool = True) -> str | None:
    """``go to``/``open`` needed before acting on receptacle ``r``, or None when ready (standing
    at its location, which other receptacles may share)."""
    if scene.r_loc[r] != state.loc:
        return f"go to {scene.r_names[r]}"
    if need_open and scene.r_openable[r] and not state.opened[r]:
        return f"open {scene.r_names[r]}"
    return None


def _treat(scene: Scene, state: State, h: int) -> str:
    appliance = min(scene.appliances, key=lambda r: (scene.r_loc[r] != state.loc, r))
    verb = {"sinkbasin": "clean", "microwave": "heat", "fridge": "cool"}[scene.r_types[appliance]]
    return _reach(scene, state, appliance, need_open=False) or (
        f"{verb} {scene.o_names[h]} with {scene.r_names[appliance]}"
    )


def _place(scene: Scene, state: State, h: int, dest: int) -> str:
    return _reach(scene, state, dest) or _put_text(scene, h, dest)


def _put_text(scene: Scene, o: int, r: int) -> str:
    if scene.config.put_verb == "move":
        return f"move {scene.o_names[o]} to {scene.r_names[r]}"
    return f"put {scene.o_names[o]} in/on {scene.r_names[r]}"


def _to_lamp(scene: Scene, state: State) -> str:
    lamp = min(scene.lamps, key=lambda lp: (scene.location_of(state, lp) != state.loc, lp))
    where = scene.receptacle_of(state, lamp)
    return _reach(scene, state, where, need_open=False) or f"use {scene.o_names[lamp]}"


def _put_down(scene: Scene, state: State, h: int) -> str:
    """Free the hand: put the object back somewhere it fits, here if possible."""
    spots = [r for r in range(len(scene.r_names)) if scene.fits(h, r)]
    if not spots:
        raise ExpertStuck(f"{scene.o_names[h]} fits in no receptacle")
    r = min(spots, key=lambda r: _cost(scene, state, r))
    return _reach(scene, state, r) or _put_text(scene, h, r)
