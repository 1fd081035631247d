"""ALFWorld's observation strings, from the feedback templates of its ``alfred.twl2`` grammar.

Lists follow TextWorld's list rule (``a``; ``a, and b``; ``a, b, and c``; empty: ``nothing``).
The help text is the grammar's, with its ``move`` line in the form the game's version admits.
"""

from __future__ import annotations

from agentgym.envs.household.scene import (
    IS_CLEAN,
    IS_COOL,
    IS_HOT,
    IS_SLICED,
    IS_TOGGLED,
    RECOBJ,
    SLICEABLE,
    TOGGLE,
    Scene,
    State,
)

NOTHING_HAPPENS = "Nothing happens."
BANNER = "-= Welcome to TextWorld, ALFRED! =-"
HELP_LINES = [
    "",
    "Available commands:",
    "  look:                             look around your current location",
    "  inventory:                        check your current inventory",
    "  go to (receptacle):               move to a receptacle",
    "  open (receptacle):                open a receptacle",
    "  close (receptacle):               close a receptacle",
    "  take (object) from (receptacle):  take an object from a receptacle",
    "{put}",
    "  examine (something):              examine a receptacle or an object",
    "  use (object):                     use an object",
    "  heat (object) with (receptacle):  heat an object using a receptacle",
    "  clean (object) with (receptacle): clean an object using a receptacle",
    "  cool (object) with (receptacle):  cool an object using a receptacle",
    "  slice (object) with (object):     slice an object using a sharp object",
    "",
]
HELP_PUT = {
    "move": "  move (object) to (receptacle):  place an object in or on a receptacle",
    "put": "  put (object) in/on (receptacle):  place an object in or on a receptacle",
}


def help_text(put_verb: str) -> str:
    """The ``help`` observation."""
    return "\n".join(HELP_LINES).replace("{put}", HELP_PUT[put_verb])


def listing(items: list[str]) -> str:
    """TextWorld's list: ``nothing``, ``a``, ``a, and b``, ``a, b, and c``."""
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + ", and " + items[-1]


def overview(scene: Scene) -> str:
    """``You are in the middle of a room. Looking quickly around you, you see ...``."""
    seen = listing([f"a {scene.r_names[i]}" for i in scene.r_order])
    return f"You are in the middle of a room. Looking quickly around you, you see {seen}."


def intro(scene: Scene, instruction: str) -> str:
    """The first observation: the room overview and the task line."""
    task = f"Your task is to: {instruction}"
    if scene.config.intro == "raw":
        return f"{BANNER}\n\n{overview(scene)}\n\n{task}"
    return f"{overview(scene)}\n{task}"


MIDDLE_LOOK = "You are in the middle of a room. Looking quickly around you, you see nothing."
"""``look`` away from every receptacle: the grammar lists receptacles *at the agent's location*
(none there), unlike the intro, which lists them all (as the real game prints it)."""


def look(scene: Scene, state: State) -> str:
    """``look``: every receptacle at the agent's location, and what stands next to them.

    ``You are facing the cabinet 2, and cabinet 1.``: the grammar's ``look-variations`` lists the
    receptacles at the location (names without article, print order). ``Next to it`` lists the
    grammar's ``list_objects_on_the_floor``: objects at the location that are not in some
    receptacle there, one entry per such receptacle. In TextWorld's state that receptacle test
    only holds after the object was taken from it (``not_inreceptacle`` facts exist only as
    effects), so what shows, besides the scene's ``floor`` objects (a loaded game's floor lamps),
    is an object taken from one receptacle of a shared location and put in another one there.
    """
    loc = state.loc
    if loc < 0:
        return MIDDLE_LOOK
    recs = scene.loc_recs[loc]
    facing = listing([scene.r_names[r] for r in recs])
    near = [o for r in recs for o in scene.floor_at[r] if state.where[o] == -2 - r]
    if len(recs) > 1:
        mask = sum(1 << r for r in recs)
        for o, left in enumerate(state.left):
            if left & mask and state.where[o] >= 0 and scene.r_loc[state.where[o]] == loc:
                near += [o] * (left & mask).bit_count()
    near.sort(key=scene.o_rank.__getitem__)
    seen = listing([scene.o_listed[o] for o in near])
    return f"You are facing the {facing}. Next to it, you see {seen}."


def examine_receptacle(scene: Scene, state: State, r: int) -> str:
    """What ``go to``/``open``/``examine`` show of a receptacle."""
    name = scene.r_names[r]
    if scene.r_openable[r]:
        if not state.opened[r]:
            return f"The {name} is closed."
        seen = listing([scene.o_listed[o] for o in state.contents[r]])
        return f"The {name} is open. In it, you see {seen}."
    seen = listing([scene.o_listed[o] for o in state.contents[r]])
    return f"On the {name}, you see {seen}."


def arrive(scene: Scene, state: State, r: int) -> str:
    """``go to`` feedback, with the prefix of the configured game version."""
    style = scene.config.arrive
    body = examine_receptacle(scene, state, r)
    if style == "none":
        return body
    where = scene.r_names[r] if style == "name" else f"loc {scene.loc_numbers[r]}"
    return f"You arrive at {where}. {body}"


def inventory(scene: Scene, state: State) -> str:
    """``inventory``."""
    if state.held < 0:
        return "You are not carrying anything."
    return f"You are carrying: {scene.o_listed[state.held]}."


_STATES = [
    (IS_CLEAN | IS_HOT | IS_SLICED, "This is a hot and clean sliced {}."),
    (IS_CLEAN | IS_COOL | IS_SLICED, "This is a cool and clean sliced {}."),
    (IS_CLEAN | IS_SLICED, "This is a clean sliced {}."),
    (IS_HOT | IS_SLICED, "This is a hot sliced {}."),
    (IS_COOL | IS_SLICED, "This is a cool sliced {}."),
    (IS_CLEAN | IS_HOT, "This is a hot and clean {}."),
    (IS_CLEAN | IS_COOL, "This is a cool and clean {}."),
    (IS_HOT, "This is a hot {}."),
    (IS_CLEAN, "This is a clean {}."),
    (IS_COOL, "This is a cold {}."),
]


def examine_object(scene: Scene, state: State, o: int) -> str:
    """``examine`` an object: the first matching rule of ``examineObject.feedback``."""
    name, caps, flags = scene.o_names[o], scene.o_caps[o], state.flags[o]
    if caps & RECOBJ:
        return f"This is a normal {name}. In it, you see nothing."
    for need, template in _STATES:
        if flags & need == need:
            return template.format(name)
    if caps & TOGGLE:
        return f"This {name} is {'on' if flags & IS_TOGGLED else 'off'}."
    if caps & SLICEABLE and flags & IS_SLICED:
        return f"This is a sliced {name}."
    return f"There's nothing special about {name}."
