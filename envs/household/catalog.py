"""What ALFRED's object and receptacle types can do, read once from ``data/alfred.json``.

The tables come from ALFWorld's ``gen/constants.py`` (MIT): which receptacle type can hold which
object type (the PDDL ``canContain``), which types can be heated, cooled, cleaned, sliced,
toggled, opened. Pickupable objects that table never places (paper towel rolls, scrub brushes,
teddy bears, boots) may go back to the receptacles the ``decor`` table stands them on, so
picking one up is never a dead end. Names are ALFWorld's display names: the type in lower case (``CellPhone`` ->
``cellphone``), which is how the text game names things (``cellphone 2``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

DATA = "agentgym.envs.household"


def read_data(name: str) -> Any:
    """A JSON file of the package's ``data/`` folder."""
    return json.loads(
        resources.files(DATA).joinpath("data").joinpath(name).read_text(encoding="utf-8")
    )


@dataclass(frozen=True)
class Catalog:
    """Capabilities by display type name (``apple``, ``sinkbasin``)."""

    can_contain: dict[str, frozenset[str]]
    """Receptacle type -> object types it accepts."""
    heatable: frozenset[str]
    coolable: frozenset[str]
    cleanable: frozenset[str]
    toggleable: frozenset[str]
    sliceable: frozenset[str]
    sharp: frozenset[str]
    openable: frozenset[str]
    receptacle_objects: frozenset[str]
    pickupable: frozenset[str]
    accepted_by: dict[str, frozenset[str]]
    """Object type -> receptacle types that accept it (``can_contain`` inverted)."""
    display: dict[str, str]
    """Display name -> ALFRED type name (``cellphone`` -> ``CellPhone``)."""
    raw: dict[str, Any]
    """The whole data file (placement tables, rooms, splits) for the generator."""

    def fits(self, receptacle_type: str, object_type: str) -> bool:
        """Whether ``put`` of this object type into this receptacle type is allowed."""
        return object_type in self.can_contain.get(receptacle_type, frozenset())

    def homes(self, object_type: str) -> frozenset[str]:
        """Receptacle types that accept this object type."""
        return self.accepted_by.get(object_type, frozenset())


def _lower_set(names: list[str]) -> frozenset[str]:
    return frozenset(n.lower() for n in names)


def _invert(can_contain: dict[str, set[str]]) -> dict[str, frozenset[str]]:
    homes: dict[str, set[str]] = {}
    for receptacle, objects in can_contain.items():
        for obj in objects:
            homes.setdefault(obj, set()).add(receptacle)
    return {k: frozenset(v) for k, v in homes.items()}


@cache
def catalog() -> Catalog:
    """The capability tables (read once)."""
    raw = read_data("alfred.json")
    names = {n for key in ("heatable", "coolable", "cleanable", "pickupable") for n in raw[key]}
    names |= set(raw["can_contain"]) | set(raw["decor"]) | set(raw["openable"])
    names |= {n for v in raw["can_contain"].values() for n in v}
    can_contain = {k.lower(): set(_lower_set(v)) for k, v in raw["can_contain"].items()}
    pickupable = _lower_set(raw["pickupable"])
    for obj, homes in raw["decor"].items():  # pickupable decor can go back where it stands
        if obj.lower() in pickupable:
            for home in homes:
                can_contain[home.lower()].add(obj.lower())
    return Catalog(
        can_contain={k: frozenset(v) for k, v in can_contain.items()},
        heatable=_lower_set(raw["heatable"]),
        coolable=_lower_set(raw["coolable"]),
        cleanable=_lower_set(raw["cleanable"]),
        toggleable=_lower_set(raw["toggleable"]),
        sliceable=_lower_set(raw["sliceable"]),
        sharp=_lower_set(raw["sharp"]),
        openable=_lower_set(raw["openable"]),
        receptacle_objects=_lower_set(raw["receptacle_objects"]),
        pickupable=pickupable,
        accepted_by=_invert(can_contain),
        display={n.lower(): n for n in sorted(names)},
        raw=raw,
    )
