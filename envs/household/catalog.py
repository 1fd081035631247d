"""What ALFRED's object and receptacle types can do, read once from ``data/alfred.json``.

The tables come from ALFWorld's ``gen/constants.py`` (MIT): which receptacle type can hold which
object type (the PDDL ``canContain``), which types can be heated, cooled, cleaned, sliced,
toggled, opened. Names are ALFWorld's display names: the type in lower case (``CellPhone`` ->
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
    return json.loads(resources.files(DATA).joinpath("data", name).read_text(encoding="utf-8"))


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
    display: dict[str, str]
    """Display name -> ALFRED type name (``cellphone`` -> ``CellPhone``)."""
    raw: dict[str, Any]
    """The whole data file (placement tables, rooms, splits) for the generator."""

    def fits(self, receptacle_type: str, object_type: str) -> bool:
        """Whether ``put`` of this object type into this receptacle type is allowed."""
        return object_type in self.can_contain.get(receptacle_type, frozenset())


def _lower_set(names: list[str]) -> frozenset[str]:
    return frozenset(n.lower() for n in names)


@cache
def catalog() -> Catalog:
    """The capability tables (read once)."""
    raw = read_data("alfred.json")
    names = {n for key in ("heatable", "coolable", "cleanable", "pickupable") for n in raw[key]}
    names |= set(raw["can_contain"]) | set(raw["decor"]) | set(raw["openable"])
    names |= {n for v in raw["can_contain"].values() for n in v}
    return Catalog(
        can_contain={k.lower(): _lower_set(v) for k, v in raw["can_contain"].items()},
        heatable=_lower_set(raw["heatable"]),
        coolable=_lower_set(raw["coolable"]),
        cleanable=_lower_set(raw["cleanable"]),
        toggleable=_lower_set(raw["toggleable"]),
        sliceable=_lower_set(raw["sliceable"]),
        sharp=_lower_set(raw["sharp"]),
        openable=_lower_set(raw["openable"]),
        receptacle_objects=_lower_set(raw["receptacle_objects"]),
        pickupable=_lower_set(raw["pickupable"]),
        display={n.lower(): n for n in sorted(names)},
        raw=raw,
    )
