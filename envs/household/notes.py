"""Household notes for the bounded context: what the agent has learnt of the room so far.

A bounded prompt (:mod:`agentgym.bounded_context`) shows the last few steps, so the room's
overview and the receptacles searched ten turns ago scroll out of it. The observation-grounded
searcher decides from its whole history (where it has been, where it saw the goal's objects,
what it holds); a policy shown two steps cannot, and after SFT it loops (a ``go to`` of where it
stands, again and again). The notes carry that state in a few lines, rebuilt every turn from the
agent's own observations and commands with the searcher's reader (:func:`read_history`), so they
tell nothing the agent was not shown:

``Notes: at R; holding O (cleaned); task things here: O, R; seen elsewhere: O in R, ...; not
visited yet: R, R, ...``

``task things here`` are the objects of the types the task names (the goal object, the lamp) in
the receptacles where the agent stands, and those receptacles if they are the task's destination
type or its appliance (sinkbasin, microwave, fridge); ``seen elsewhere``, such objects where they
were last seen elsewhere; ``not visited yet`` keeps the overview's listing order, the order the
searcher searches in. The first version of these notes (commit a08c752) had no ``task things
here``: SmolLM2 after SFT on it copied names well but never chose ``take``, ``put`` or ``use``
(the verb is the one hard token; docs/results.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentgym.envs.household.searcher import TREAT, read_history, type_of

_TREATED = {"clean": "cleaned", "heat": "heated", "cool": "cooled"}


def room_notes(observations: Sequence[str], actions: Sequence[str]) -> str:
    """The notes line after ``actions[i]`` was answered by ``observations[i + 1]``."""
    k = read_history(observations, actions)
    parts = []
    if k.at is not None:
        also = f" (also here: {', '.join(k.here[1:])})" if len(k.here) > 1 else ""
        parts.append(f"at {k.at}{also}")
    if k.held is not None:
        done = [_TREATED[v] for v, objs in k.treated.items() if k.held in objs]
        parts.append(f"holding {k.held}" + (f" ({', '.join(done)})" if done else ""))
    wanted = {k.goal.object, k.goal.lamp} - {None}
    places = {k.goal.receptacle, TREAT.get(k.goal.task_type, ("", None))[1]} - {None}
    here = [o for r in k.here for o in k.seen.get(r, []) if type_of(o) in wanted]
    here += [r for r in k.here if type_of(r) in places]
    parts.append("task things here: " + (", ".join(here) or "none"))
    seen = [
        f"{o} in {r}"
        for r in k.receptacles
        if r not in k.here
        for o in k.seen.get(r, [])
        if type_of(o) in wanted
    ]
    parts.append("seen elsewhere: " + (", ".join(seen) or "nothing wanted"))
    left = [r for r in k.receptacles if r not in k.visited]
    parts.append("not visited yet: " + (", ".join(left) or "none"))
    return "Notes: " + "; ".join(parts)
